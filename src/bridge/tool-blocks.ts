// The tool calls and files of a turn (StreamMapper, ./stream-mapper.ts). A tool call is the artifact
// `<taskId>:tool:<callID>`: data `{call_id, tool, status, title?, subtitle?, input, output?, error?}`, sent (replacing
// the artifact, `append: false`) whenever its normalized JSON changes; compact JSON text instead of a data part when
// the client does not accept `application/json`. An OpenCode file (an assistant file part, or an attachment of a tool
// call) is the artifact `<taskId>:file:<partId>`, sent again only when it changes.
import type { Part as OcPart } from "../../generated/opencode/types.gen.js";
import type { Artifact, Part } from "../protocol/model.js";
import type { ArtifactOutput, MapperOutput, TurnWire } from "./turn-events.js";
import { isObject } from "../util/object.js";

/** Default of A2A_ARTIFACT_FILE_MAX_BYTES. */
export const DEFAULT_FILE_MAX_BYTES = 1024 * 1024;

/** The fields of an OpenCode file part (FilePart) the mapper reads. */
export interface OcFile {
  id: string;
  messageID?: string;
  mime?: string;
  filename?: string;
  url?: string;
  source?: unknown;
}

export type OcToolPart = Extract<OcPart, { type: "tool" }>;

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** JSON with object keys sorted (stable identity for "did this tool block change"). */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    isObject(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
  );
}

/** True when the modes admit `application/json` (empty list = no restriction). */
export function acceptsJson(modes: readonly string[]): boolean {
  if (modes.length === 0) return true;
  return modes.some((m) => {
    const type = (m.split(";")[0] ?? "").trim().toLowerCase();
    return type === "application/json" || type === "application/*" || type === "*/*" || type === "*";
  });
}

/** A tool call or file as last sent: its artifact, and the key that says whether an update changes it. */
interface Block {
  artifact: Artifact;
  key: string;
}

/** OpenCode's tools that write files (their changes show in the session diff). */
const FILE_TOOLS = new Set(["write", "edit", "multiedit", "patch", "apply_patch"]);

export class ToolBlocks {
  readonly #json: boolean;
  readonly #tools = new Map<string, Block>();
  /** A file-writing tool call completed in this turn. */
  #wroteFiles = false;
  /** A tool part (any tool, any state) came in this turn. */
  #ranTools = false;
  /** File artifacts (OpenCode file parts and tool attachments), by artifact id: the latest snapshot of each. */
  readonly #files = new Map<string, Block>();

  constructor(
    private readonly wire: TurnWire,
    private readonly taskId: string,
    acceptedOutputModes: readonly string[],
    private readonly fileMaxBytes: number,
  ) {
    this.#json = acceptsJson(acceptedOutputModes);
  }

  /** A tool part's new state, then its attachments. */
  /** Whether a file-writing tool call (write, edit, patch, ...) completed in this turn. */
  get wroteFiles(): boolean {
    return this.#wroteFiles;
  }

  /** Whether any tool call came in this turn. */
  get ranTools(): boolean {
    return this.#ranTools;
  }

  tool(part: OcToolPart, out: MapperOutput[]): void {
    this.#ranTools = true;
    const state: Record<string, unknown> = isObject(part.state) ? part.state : {};
    if (state.status === "completed" && typeof part.tool === "string" && FILE_TOOLS.has(part.tool)) this.#wroteFiles = true;
    const data: Record<string, unknown> = {
      call_id: part.callID,
      tool: part.tool,
      status: state.status,
      input: isObject(state.input) ? state.input : {},
    };
    for (const key of ["title", "subtitle", "output", "error"] as const) if (state[key] !== undefined && state[key] !== null) data[key] = state[key];
    const key = stableJson(data);
    const toolId = str(part.callID) ?? part.id;
    const sent = this.#tools.get(toolId);
    if (sent?.key !== key) {
      // A tool block is a snapshot of the call's state: every update replaces the lane's artifact (named by its first).
      const content: Part = this.#json ? { kind: "data", data } : { kind: "text", text: key };
      const name = sent?.artifact.name ?? `tool:${part.tool}`;
      this.#send(this.#tools, toolId, key, this.wire.artifact(`${this.taskId}:tool:${toolId}`, name, [content], false, "tool_call", "tool", part), out);
    }
    if (Array.isArray(state.attachments)) {
      for (const attachment of state.attachments) if (isObject(attachment) && typeof attachment.id === "string") this.file(attachment as unknown as OcFile, out);
    }
  }

  /** An OpenCode file (assistant file part or tool attachment) → a file artifact `<taskId>:file:<partId>`. */
  file(file: OcFile, out: MapperOutput[]): void {
    const part = openCodeFilePart(file, this.fileMaxBytes);
    const artifactId = `${this.taskId}:file:${file.id}`;
    const key = stableJson(part);
    if (this.#files.get(artifactId)?.key === key) return;
    this.#send(this.#files, artifactId, key, this.wire.artifact(artifactId, file.filename ?? "file", [part], false, "file", "opencode_file", file), out);
  }

  /** The artifacts at the end of the turn: tool calls, then files, each as last sent. */
  artifacts(): Artifact[] {
    return [...Array.from(this.#tools.values(), (b) => b.artifact), ...Array.from(this.#files.values(), (b) => b.artifact)];
  }

  #send(blocks: Map<string, Block>, id: string, key: string, output: ArtifactOutput, out: MapperOutput[]): void {
    blocks.set(id, { artifact: output.artifact, key });
    out.push(output);
  }
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*?)(;base64)?,(.*)$/s;

/**
 * An OpenCode file as an A2A file part: a `data:` URL up to `maxBytes` becomes inline bytes (base64); a larger one,
 * or any other URL, is carried by reference (`uri`: the OpenCode URL, or `file://` of its source path for an
 * oversize data URL) with `metadata.opencode {size, omitted: "size"}` saying why the bytes are not inline.
 */
export function openCodeFilePart(file: OcFile, maxBytes: number): Part {
  const mimeType = str(file.mime);
  const name = str(file.filename);
  const base = { ...(mimeType === undefined ? {} : { mimeType }), ...(name === undefined ? {} : { name }) };
  const url = str(file.url) ?? "";
  const data = DATA_URL.exec(url);
  if (data === null) return { kind: "file", file: { ...base, uri: url === "" ? `opencode:part/${file.id}` : url } };
  const payload = data[4] ?? "";
  const bytes = data[3] !== undefined ? Buffer.from(payload, "base64") : Buffer.from(decodeURIComponent(payload), "utf8");
  if (bytes.length <= maxBytes) return { kind: "file", file: { ...base, bytes: bytes.toString("base64") } };
  const source = isObject(file.source) ? str(file.source.path) : undefined;
  return {
    kind: "file",
    file: { ...base, uri: source === undefined ? `opencode:part/${file.id}` : `file://${source.startsWith("/") ? "" : "/"}${source}` },
    metadata: { opencode: { size: bytes.length, omitted: "size", max_bytes: maxBytes } },
  };
}
