/**
 * The tools of a scripted tool step, run the way the real server runs them: each call goes pending → running →
 * completed (or error) with the real tools' titles, outputs and metadata, after any permission or question it needs
 * is answered. Nothing is executed: bash echoes, write/edit only remember the text, read shows a placeholder.
 */
import { relative, resolve } from "node:path";
import type { Todo, ToolPart } from "../../../generated/opencode/types.gen.js";
import type { ToolCall } from "../script.js";
import { ev, newId, until } from "./common.js";
import type { EventBus } from "./events.js";
import type { Ask, Interactions } from "./interactions.js";
import type { Loop, MessageRecord, SessionRecord, StubState } from "./state.js";

type ToolResult = "ok" | "blocked";

/** Shell-ish split of a bash command into its simple commands (the patterns of a bash permission). */
function bashCommands(command: string): string[] {
  return command
    .split(/\s*(?:&&|\|\||;|\|)\s*/)
    .map((c) => c.trim())
    .filter((c) => c !== "");
}

/** Echo-ish bash output: `echo X` prints X; nothing is executed. */
export function fakeBashOutput(command: string): string {
  let out = "";
  for (const cmd of bashCommands(command)) {
    const match = /^echo(?:\s+(-n\s+)?(.*))?$/s.exec(cmd);
    if (match === null) continue;
    const text = (match[2] ?? "").replace(/^(['"])(.*)\1$/s, "$2");
    out += match[1] === undefined ? `${text}\n` : text;
  }
  return out;
}

function todosOf(args: Record<string, unknown>): Todo[] {
  return Array.isArray(args.todos) ? (args.todos as Todo[]) : [];
}

export class ToolRunner {
  constructor(
    private readonly state: StubState,
    private readonly bus: EventBus,
    private readonly interactions: Interactions,
  ) {}

  /**
   * Observed order per call: pending; [question.asked | bash rule permission.asked]; running;
   * [external_directory / other rule permission.asked]; then completion once answered. Calls run concurrently.
   */
  async run(rec: SessionRecord, loop: Loop, current: MessageRecord, calls: ToolCall[]): Promise<"tool-calls" | "blocked"> {
    const signal = loop.controller.signal;
    const jobs: Array<Promise<ToolResult>> = [];
    for (const call of calls) {
      const part: ToolPart = {
        id: newId("prt"),
        sessionID: rec.info.id,
        messageID: current.info.id,
        type: "tool",
        callID: call.id ?? `call_${++this.state.callCounter}`,
        tool: call.name,
        state: { status: "pending", input: {}, raw: "" },
      };
      current.parts.push(part);
      this.bus.part(rec, part);
      let ask: Ask | undefined;
      if (call.name === "question") ask = this.interactions.askQuestion(rec, part, call.args);
      else if (call.name === "bash") {
        const command = String(call.args.command ?? "");
        ask = this.interactions.checkRules(rec, part, "bash", bashCommands(command), { command });
      } else if (call.name === "todowrite") {
        // observed: todo.updated comes before the running state
        this.bus.send(rec, ev("todo.updated", { sessionID: rec.info.id, todos: todosOf(call.args) }));
      }
      const start = Date.now();
      part.state = { status: "running", input: call.args, time: { start } };
      this.bus.part(rec, part);
      if (ask === undefined && call.name !== "question" && call.name !== "bash") ask = this.interactions.checkFileAccess(rec, part, call);
      jobs.push(this.complete(rec, part, call, start, ask, signal));
    }
    const results = await Promise.all(jobs);
    return results.includes("blocked") ? "blocked" : "tool-calls";
  }

  private async complete(rec: SessionRecord, part: ToolPart, call: ToolCall, start: number, ask: Ask | undefined, signal: AbortSignal): Promise<ToolResult> {
    const input = call.args;
    // Let every call of the step reach "running" first, as the real (concurrent) tool runner does.
    await until(new Promise((r) => setImmediate(r)), signal);
    const fail = (error: string): void => {
      part.state = { status: "error", input, error, time: { start, end: Date.now() } };
      this.bus.part(rec, part);
    };
    let answers: string[][] | undefined;
    if (ask?.kind === "denied") {
      fail(`The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules ${JSON.stringify(ask.rules)}`);
      return "ok";
    }
    if (ask?.kind === "permission") {
      const decision = await until(ask.promise, signal);
      if (decision.reply === "reject") {
        if (decision.message === undefined) {
          fail("The user rejected permission to use this specific tool call.");
          return "blocked";
        }
        fail(`The user rejected permission to use this specific tool call with the following feedback: ${decision.message}`);
        return "ok";
      }
    }
    if (ask?.kind === "question") {
      const decision = await until(ask.promise, signal);
      if ("rejected" in decision) {
        fail("The user dismissed this question");
        return "blocked";
      }
      answers = decision.answers;
    }

    const end = (): { start: number; end: number } => ({ start, end: Date.now() });
    const rel = (file: string): string => relative(rec.info.directory, resolve(rec.info.directory, file));
    switch (call.name) {
      case "bash": {
        const command = String(input.command ?? "");
        const output = fakeBashOutput(command);
        // running with metadata.output "" and then once per output line (cumulative), like the real bash tool
        let shown = "";
        for (const line of ["", ...(output.match(/[^\n]*\n|[^\n]+$/g) ?? [])]) {
          shown += line;
          part.state = { status: "running", input, time: { start }, metadata: { output: shown } };
          this.bus.part(rec, part);
        }
        part.state = { status: "completed", input, output, metadata: { output, exit: 0, truncated: false }, title: command, time: end() };
        break;
      }
      case "question": {
        const questions = ask?.kind === "question" ? ask.questions : [];
        const given = answers ?? [];
        const pairs = questions.map((q, i) => `"${q.question}"="${(given[i] ?? []).join(", ") || "Unanswered"}"`).join(", ");
        const output = `User has answered your questions: ${pairs}. You can now continue with the user's answers in mind.`;
        const title = `Asked ${questions.length} question${questions.length === 1 ? "" : "s"}`;
        part.state = { status: "completed", input, output, metadata: { answers: given, truncated: false }, title, time: end() };
        break;
      }
      case "read": {
        const file = resolve(rec.info.directory, String(input.filePath ?? ""));
        const text = "(stub: file contents are not read)";
        const output = `<path>${file}</path>\n<type>file</type>\n<content>\n1: ${text}\n\n(End of file - total 1 lines)\n</content>`;
        const display = { type: "file", path: file, text, lineStart: 1, lineEnd: 1, totalLines: 1, truncated: false };
        part.state = { status: "completed", input, output, metadata: { preview: text, truncated: false, loaded: [], display }, title: rel(file), time: end() };
        break;
      }
      case "write":
      case "edit": {
        const file = resolve(rec.info.directory, String(input.filePath ?? ""));
        this.bus.send(rec, ev("file.edited", { file }));
        const output = call.name === "write" ? "Wrote file successfully." : "Edit applied successfully.";
        const before = this.state.files.get(file) ?? "";
        this.state.files.set(file, call.name === "write" ? String(input.content ?? "") : before.replace(String(input.oldString ?? ""), String(input.newString ?? "")));
        part.state = { status: "completed", input, output, metadata: {}, title: rel(file), time: end() };
        this.recordDiff(rec, part.messageID, rel(file), call.name, input);
        break;
      }
      case "todowrite": {
        const todos = todosOf(input);
        rec.todos = todos;
        const pendingCount = todos.filter((t) => t.status !== "completed").length;
        part.state = { status: "completed", input, output: JSON.stringify(todos, null, 2), metadata: { todos, truncated: false }, title: `${pendingCount} todos`, time: end() };
        break;
      }
      case "StructuredOutput":
        // the tool the real server adds for a prompt with `format: json_schema` (the loop then ends: ../turns.ts)
        part.state = { status: "completed", input, output: "Structured output captured successfully.", metadata: { valid: true }, title: "Structured Output", time: end() };
        break;
      default:
        part.state = { status: "completed", input, output: "", metadata: {}, title: call.name, time: end() };
    }
    this.bus.part(rec, part);
    return "ok";
  }

  /** A write/edit becomes a `summary.diffs` entry of the turn's user message (what `GET …/diff?messageID=` returns). */
  private recordDiff(rec: SessionRecord, assistantID: string, file: string, tool: string, input: Record<string, unknown>): void {
    const assistant = rec.messages.find((m) => m.info.id === assistantID)?.info;
    const parentID = assistant?.role === "assistant" ? assistant.parentID : undefined;
    const user = rec.messages.find((m) => m.info.id === parentID)?.info;
    if (user?.role !== "user") return;
    const lines = (v: unknown): string[] => (typeof v === "string" && v !== "" ? v.replace(/\n$/, "").split("\n") : []);
    const added = lines(tool === "write" ? input.content : input.newString);
    const removed = tool === "write" ? [] : lines(input.oldString);
    const patch =
      `Index: ${file}\n===================================================================\n--- ${file}\t\n+++ ${file}\t\n` +
      `@@ -${removed.length === 0 ? 0 : 1},${removed.length} +1,${added.length} @@\n` +
      [...removed.map((l) => `-${l}`), ...added.map((l) => `+${l}`)].join("\n") +
      "\n";
    user.summary ??= { diffs: [] };
    user.summary.diffs = user.summary.diffs.filter((d) => d.file !== file);
    user.summary.diffs.push({ file, patch, additions: added.length, deletions: removed.length, status: tool === "write" ? "added" : "modified" });
  }
}
