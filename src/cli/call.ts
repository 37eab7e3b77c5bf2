// `opencode-a2a call <agent-url|card-url> <text>`: one outbound A2A call from the command line, through the same
// client as the gateway's `a2a_call` tool (src/client). Text mode streams the peer's answer to stdout as it grows
// and notes each state change on stderr; `--json` prints one line per event and a final result or error line (spec:
// CliCallLine in spec/extensions/opencode/peers.tsp, which also declares the exit codes). Settings and credentials
// come only from the A2A_CLIENT_* environment variables (not from flags, not from ./.env).
import { parseArgs } from "node:util";
import { StreamResponse } from "@a2a-js/sdk";
import type { A2aCallResult, CliCallLine, PeerTaskState } from "../../generated/types/extensions.js";
import { loadClientSettings } from "../config/client-settings.js";
import { ConfigError } from "../config/index.js";
import { variablesHelp } from "./help.js";
import { FINAL_STATES, PeerAnswer, PeerCallError, PeerClients, peerError, stateName, textOf, type PeerLine, type PeerMessage } from "../client/index.js";

/** The exit codes of `opencode-a2a call` (spec: CliCallLine). */
export const CALL_EXIT = {
  completed: 0,
  error: 1,
  usage: 2,
  unsuccessful: 3,
  waiting: 4,
  other: 5,
} as const;

export interface CallIO {
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Where the A2A_CLIENT_* settings come from; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Cancels the call (the command then fails with a2a_call_failed). */
  signal?: AbortSignal;
}

/** The most a task or context id may be (as the `a2a_call` tool's input). */
const MAX_ID = 200;
/** The most a status note on stderr shows of the peer's status message. */
const MAX_NOTE = 500;

/** Flags that would carry a credential: refused, credentials come from the environment only. */
const CREDENTIAL_FLAG = /^--?(token|bearer|bearer-token|basic|basic-auth|auth|authorization|password|user|username|api-key|header)(=|$)/;

const OPTIONS = {
  json: { type: "boolean" },
  task: { type: "string" },
  context: { type: "string" },
  line: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

export function callUsage(): string {
  return `opencode-a2a call: send one message to an A2A agent (a "peer") and print its answer

Usage:
  opencode-a2a call [options] <agent-url | card-url> <text>

  <agent-url>   the peer's base URL; its card is read from <agent-url>/.well-known/agent-card.json (then agent.json)
  <card-url>    or the URL of its agent card itself (a path ending in .json or under /.well-known/)
  <text>        the message (quote it: one argument)

The client picks one of the card's interfaces (A2A 1.0 or 0.3, JSON-RPC or HTTP+JSON; see A2A_CLIENT_SUPPORTED_TRANSPORTS
and A2A_CLIENT_USE_CLIENT_PREFERENCE), streams the message and prints the peer's answer on stdout as it grows, ending
with a newline. Each change of the task's state is noted on stderr, e.g. [working], [input-required] <question>.
Reasoning, tool calls and file changes the peer streams are not part of the answer.

Options:
  --task ID           continue the peer's task ID (e.g. answer its input-required question with <text>)
  --context ID        continue the peer's context ID (a new task in the same conversation)
  --line 0.3|1.0      use only the peer's interfaces of this A2A protocol line
  --json              print one JSON line per event, {"event": <A2A 1.0 StreamResponse JSON>}, then one
                      {"result": {url, task_id, context_id, state, text, question, protocol_version, transport}}
                      or {"error": {code, message, details}} line (spec: CliCallLine); the call's outcome,
                      a failure included, is on stdout only (usage errors stay on stderr)
  -h, --help          this help

Credentials come only from the environment, never from flags (--token, --basic and the like are refused):
A2A_CLIENT_BEARER_TOKEN or A2A_CLIENT_BASIC_AUTH, sent only to hosts listed in A2A_CLIENT_ALLOWED_HOSTS. A peer on
loopback or a private network needs A2A_CLIENT_ALLOW_PRIVATE_HOSTS=true. ./.env is not read.

Exit codes:
  0  the task completed (or the peer answered with a message)
  1  the call failed: [error <code>] <message> on stderr (codes: a2a_target_refused, a2a_peer_auth_failed,
     a2a_timeout, a2a_unavailable, ...; see PeerErrorCode)
  2  usage or configuration error (nothing was sent)
  3  the task ended failed, canceled or rejected
  4  the task waits for you (input-required, auth-required): its id is printed; answer with --task ID "<answer>"
  5  the call ended in another state (submitted, working: e.g. a peer that does not stream, without
     A2A_CLIENT_POLLING_FALLBACK_ENABLED=true, or polling that ran out of time)

Example:
  A2A_CLIENT_BEARER_TOKEN=... A2A_CLIENT_ALLOWED_HOSTS=127.0.0.1 A2A_CLIENT_ALLOW_PRIVATE_HOSTS=true \\
    opencode-a2a call http://127.0.0.1:8000 "Summarise README.md in one line"

Settings (environment variables):
${variablesHelp("A2A_CLIENT_")}`;
}

/** A usage or configuration problem (exit 2); the message never carries a secret. */
class UsageError extends Error {}

interface Parsed {
  target: string;
  message: PeerMessage;
  json: boolean;
  line?: PeerLine;
}

function parse(argv: string[]): Parsed | "help" {
  // A credential flag is refused by name only: its value is never echoed.
  const end = argv.indexOf("--");
  const credential = (end === -1 ? argv : argv.slice(0, end)).find((a) => CREDENTIAL_FLAG.test(a));
  if (credential !== undefined) {
    throw new UsageError(
      `${credential.split("=")[0]} is not an option: credentials come only from the environment (A2A_CLIENT_BEARER_TOKEN or A2A_CLIENT_BASIC_AUTH, sent only to hosts in A2A_CLIENT_ALLOWED_HOSTS)`,
    );
  }
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help === true) return "help";
  if (positionals.length < 2) throw new UsageError(positionals.length === 0 ? "missing <agent-url | card-url> and <text>" : "missing <text>");
  if (positionals.length > 2) throw new UsageError(`expected <agent-url | card-url> and one <text> argument, got ${positionals.length} arguments (quote the text)`);
  const [target, text] = positionals as [string, string];
  if (text.trim() === "") throw new UsageError("<text> is empty");
  if (values.line !== undefined && values.line !== "0.3" && values.line !== "1.0") throw new UsageError(`--line must be 0.3 or 1.0, not ${JSON.stringify(values.line)}`);
  for (const [flag, id] of [
    ["--task", values.task],
    ["--context", values.context],
  ] as const) {
    if (id !== undefined && (id.trim() === "" || id.length > MAX_ID)) throw new UsageError(`${flag} must be a non-empty id of at most ${MAX_ID} characters`);
  }
  return {
    target,
    message: { text, ...(values.task === undefined ? {} : { taskId: values.task }), ...(values.context === undefined ? {} : { contextId: values.context }) },
    json: values.json === true,
    ...(values.line === undefined ? {} : { line: values.line as PeerLine }),
  };
}

/** The exit code of a call that ended in `state`. */
export function exitCodeOf(state: PeerTaskState): number {
  switch (state) {
    case "completed":
      return CALL_EXIT.completed;
    case "failed":
    case "canceled":
    case "rejected":
      return CALL_EXIT.unsuccessful;
    case "input-required":
    case "auth-required":
      return CALL_EXIT.waiting;
    default:
      return CALL_EXIT.other;
  }
}

/** One line for stderr: newlines folded, at most MAX_NOTE characters. */
function oneLine(text: string): string {
  const flat = text.replace(/\s*\n\s*/g, " ").trim();
  return flat.length > MAX_NOTE ? `${flat.slice(0, MAX_NOTE)}…` : flat;
}

/** The state and status message an event carries (task snapshots and status updates), else undefined. */
function statusOf(event: StreamResponse): { state: PeerTaskState; message: string } | undefined {
  const p = event.payload;
  if (p?.$case === "task") return { state: stateName(p.value.status?.state), message: textOf(p.value.status?.message?.parts) };
  if (p?.$case === "statusUpdate") return { state: stateName(p.value.status?.state), message: textOf(p.value.status?.message?.parts) };
  return undefined;
}

/** Runs `opencode-a2a call <argv…>`; resolves to the exit code (spec: CliCallLine). */
export async function callCommand(argv: string[], io: CallIO = {}): Promise<number> {
  const out = io.stdout ?? ((t: string) => void process.stdout.write(t));
  const err = io.stderr ?? ((t: string) => void process.stderr.write(t));
  let args: Parsed;
  try {
    const parsed = parse(argv);
    if (parsed === "help") {
      out(`${callUsage()}\n`);
      return 0;
    }
    args = parsed;
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    err(`opencode-a2a call: ${error.message}\n\nRun \`opencode-a2a call --help\` for the options.\n`);
    return CALL_EXIT.usage;
  }
  let settings;
  try {
    settings = loadClientSettings(io.env ?? process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    err(`opencode-a2a call: ${error.message}\n\nRun \`opencode-a2a call --help\` for the A2A_CLIENT_* variables.\n`);
    return CALL_EXIT.usage;
  }

  const line = (value: CliCallLine): void => out(`${JSON.stringify(value)}\n`);
  const clients = new PeerClients(settings);
  // Text mode: what was written of the answer so far, the last state noted, and the note of a final state (written
  // after the answer, so it does not break the answer's last line).
  const shown = new PeerAnswer();
  let printed = "";
  let noted = "";
  let notedState: PeerTaskState | undefined;
  let finalNote: string | undefined;
  const onEvent = (event: StreamResponse): void => {
    if (args.json) {
      line({ event: StreamResponse.toJSON(event) as Record<string, unknown> });
      return;
    }
    shown.add(event);
    // The answer as it grows: what extends the text already printed (the increments PeerAnswer.add returns, joined
    // as PeerAnswer.text joins the artifacts).
    const text = shown.text;
    if (text.startsWith(printed) && text.length > printed.length) {
      out(text.slice(printed.length));
      printed = text;
    }
    const status = statusOf(event);
    if (status === undefined) return;
    const note = `[${status.state}]${status.message === "" ? "" : ` ${oneLine(status.message)}`}`;
    if (FINAL_STATES.has(status.state)) {
      finalNote = note;
    } else if (note !== noted) {
      // A note in the middle of the answer starts on a line of its own (stdout itself is left as it is).
      err(`${printed !== "" && !printed.endsWith("\n") ? "\n" : ""}${note}\n`);
      noted = note;
      notedState = status.state;
      finalNote = undefined;
    }
  };

  let result: A2aCallResult;
  try {
    const peer = await clients.get(args.target, args.line, io.signal);
    const answer = await peer.send(args.message, { onEvent, ...(io.signal === undefined ? {} : { signal: io.signal }) });
    result = peer.result(answer);
  } catch (error) {
    const failure = error instanceof PeerCallError ? error : peerError(error);
    if (args.json) line({ error: failure.toJSON() });
    else {
      if (printed !== "" && !printed.endsWith("\n")) out("\n");
      err(`[error ${failure.code}] ${failure.message}\n`);
    }
    return CALL_EXIT.error;
  } finally {
    await clients.close().catch(() => undefined);
  }

  const code = exitCodeOf(result.state);
  if (args.json) {
    line({ result });
    return code;
  }
  if (result.text !== printed) {
    // The peer replaced what was already streamed (a final snapshot that differs): the final answer in full.
    if (printed !== "") {
      if (!printed.endsWith("\n")) out("\n");
      err(`[the peer revised its answer; the final text follows]\n`);
    }
    out(result.text);
    printed = result.text;
  }
  if (printed !== "" && !printed.endsWith("\n")) out("\n");
  if (finalNote !== undefined) err(`${finalNote}\n`);
  else if (result.state !== notedState) err(`[${result.state}]\n`);
  if (code === CALL_EXIT.waiting && result.task_id !== undefined) {
    err(`the peer waits for an answer: opencode-a2a call --task ${result.task_id} ${quote(args.target)} "<answer>"\n`);
  } else if (code === CALL_EXIT.other && result.task_id !== undefined) {
    err(`the task ${result.task_id} is still ${result.state}\n`);
  }
  return code;
}

/** A shell word for the continuation hint. */
function quote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
