/**
 * Prompting a session: the sync (`POST …/message`) and async (`…/prompt_async`) prompt, abort, commands (§7.7),
 * user shell commands (§7.6) and compaction (§7.10); the turns themselves run in ../turns.ts.
 */
import type { AssistantMessage, Part, TextPart, ToolPart, UserMessage } from "../../../../generated/opencode/types.gen.js";
import { badRequest, ev, isObject, newId, unexpected } from "../common.js";
import { RESPONDED, type Router } from "../openapi.js";
import type { MessageRecord } from "../state.js";
import { fakeBashOutput } from "../tools.js";
import { newAssistant, parsePrompt, PROMPT_TOKENS } from "../turns.js";
import { AGENTS, COMMANDS } from "./app.js";
import type { Parts } from "./index.js";
import { createSession } from "./sessions.js";

/** §7.7: a sub-agent command runs in a child session first; every command then answers like a prompt. */
async function command(parts: Parts, sessionID: string, body: unknown): Promise<MessageRecord> {
  const { state, turns } = parts;
  const rec = state.session(sessionID);
  if (!isObject(body) || typeof body.command !== "string") throw badRequest('Missing key\n  at ["command"]');
  if (typeof body.arguments !== "string") throw badRequest('Missing key\n  at ["arguments"]');
  const spec = COMMANDS.find((c) => c.name === body.command);
  if (spec === undefined) throw unexpected();
  const model = typeof body.model === "string" && body.model.includes("/") ? { providerID: body.model.split("/")[0]!, modelID: body.model.split("/").slice(1).join("/") } : undefined;
  const agent = typeof body.agent === "string" ? body.agent : undefined;
  const text = spec.template.replace("$ARGUMENTS", body.arguments);
  const input = { ...(model === undefined ? {} : { model }), ...(agent === undefined ? {} : { agent }) };
  if (spec.subtask === true) {
    const child = createSession(parts, { parentID: sessionID, title: `${spec.description} (@${agent ?? "build"} subagent)` }, rec.info.directory);
    child.info.permission = [
      { permission: "todowrite", pattern: "*", action: "deny" },
      { permission: "task", pattern: "*", action: "deny" },
    ];
    const reply = rec.script.shift();
    if (reply !== undefined) child.script.push(reply);
    await turns.prompt(child.info.id, { parts: [{ type: "text", text }], ...input });
    const subtask = { type: "subtask", prompt: text, description: spec.description, agent: agent ?? "build", command: spec.name };
    return turns.prompt(sessionID, { parts: [subtask], ...input });
  }
  return turns.prompt(sessionID, { parts: [{ type: "text", text }], ...input });
}

/** §7.6: no model request; a user message and an assistant message holding one completed bash tool part. */
function shell({ state, bus }: Parts, sessionID: string, body: unknown): MessageRecord {
  const rec = state.session(sessionID);
  if (!isObject(body) || typeof body.agent !== "string") throw badRequest('Missing key\n  at ["agent"]');
  if (typeof body.command !== "string") throw badRequest('Missing key\n  at ["command"]');
  if (!AGENTS.some(([name]) => name === body.agent)) throw unexpected();
  state.notBusy(rec);
  const model = isObject(body.model) && typeof body.model.providerID === "string" && typeof body.model.modelID === "string"
    ? { providerID: body.model.providerID, modelID: body.model.modelID }
    : { ...state.model };
  const now = Date.now();
  const user: UserMessage = { id: newId("msg"), sessionID, role: "user", time: { created: now }, agent: body.agent, model };
  const userText: TextPart = { id: newId("prt"), sessionID, messageID: user.id, type: "text", text: "The following tool was executed by the user", synthetic: true };
  rec.messages.push({ info: user, parts: [userText] });
  bus.message(rec, user);
  bus.part(rec, userText);
  const info = newAssistant(rec, user);
  const output = fakeBashOutput(body.command);
  const start = Date.now();
  const part: ToolPart = {
    id: newId("prt"),
    sessionID,
    messageID: info.id,
    type: "tool",
    callID: newId("prt").slice(4, 30).toUpperCase(),
    tool: "bash",
    state: { status: "completed", input: { command: body.command }, output, title: "", metadata: { output }, time: { start, end: Date.now() } },
  };
  info.time.completed = Date.now();
  const record: MessageRecord = { info, parts: [part] };
  rec.messages.push(record);
  bus.message(rec, info);
  bus.part(rec, part);
  state.touch(rec);
  bus.session(rec);
  return record;
}

/** §7.10: a user message with a compaction part, then an assistant summary (the next scripted reply's text). */
function summarize({ state, bus }: Parts, sessionID: string, body: unknown): boolean {
  const rec = state.session(sessionID);
  if (!isObject(body) || typeof body.providerID !== "string") throw badRequest('Missing key\n  at ["providerID"]');
  if (typeof body.modelID !== "string") throw badRequest('Missing key\n  at ["modelID"]');
  const model = { providerID: body.providerID, modelID: body.modelID };
  const now = Date.now();
  const user: UserMessage = { id: newId("msg"), sessionID, role: "user", time: { created: now }, agent: "build", model };
  const compaction = { id: newId("prt"), sessionID, messageID: user.id, type: "compaction", auto: body.auto === true } as Part;
  rec.messages.push({ info: user, parts: [compaction] });
  bus.message(rec, user);
  bus.part(rec, compaction);
  const reply = state.nextReply(rec);
  const summaryText = reply.kind === "text" ? reply.chunks.join("") : "Summary of the conversation.";
  const info: AssistantMessage = {
    id: newId("msg"),
    sessionID,
    role: "assistant",
    time: { created: Date.now(), completed: Date.now() },
    parentID: user.id,
    modelID: model.modelID,
    providerID: model.providerID,
    mode: "compaction",
    agent: "compaction",
    path: { cwd: rec.info.directory, root: rec.info.directory },
    summary: true,
    cost: 0,
    tokens: { input: PROMPT_TOKENS, output: 1, reasoning: 0, cache: { read: 0, write: 0 } },
    finish: "stop",
  };
  const part: TextPart = { id: newId("prt"), sessionID, messageID: info.id, type: "text", text: summaryText, time: { start: now, end: Date.now() } };
  rec.messages.push({ info, parts: [part] });
  bus.message(rec, info);
  bus.part(rec, part);
  bus.send(rec, ev("session.compacted", { sessionID }));
  state.touch(rec);
  bus.session(rec);
  return true;
}


export function promptRoutes(router: Router, parts: Parts): void {
  const { state, turns } = parts;
  router.on("session.prompt", ({ param, body }) => turns.prompt(param("sessionID"), body));
  router.on("session.prompt_async", ({ res, param, body }) => {
    const rec = state.session(param("sessionID"));
    const input = parsePrompt(body);
    res.writeHead(204, { vary: "Origin" });
    res.end();
    setImmediate(() => void turns.prompt(rec.info.id, input).catch(() => undefined));
    return RESPONDED;
  });
  router.on("session.abort", ({ param }) => turns.abort(param("sessionID")));
  router.on("session.command", ({ param, body }) => command(parts, param("sessionID"), body));
  router.on("session.shell", ({ param, body }) => shell(parts, param("sessionID"), body));
  router.on("session.summarize", ({ param, body }) => summarize(parts, param("sessionID"), body));
}
