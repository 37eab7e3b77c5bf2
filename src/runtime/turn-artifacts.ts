// What a turn adds to its task at the end, read from OpenCode (the task runtime, ./turn.ts): the `changes` artifact
// (OpenCode's diff of each of the turn's user messages: one `text/x-diff` file part per changed file, or text parts
// when the client takes text only) and, when the message asked for them (`metadata.opencode.include_file_contents`),
// one file artifact per added or modified file. A failing read is logged and noted on the task, never fails the turn.
import path from "node:path";
import { pathToFileURL } from "node:url";
import * as sdk from "../../generated/opencode/sdk.gen.js";
import type { Routing } from "../bridge/directory.js";
import type { StreamMapper } from "../bridge/stream-mapper.js";
import { isTerminal, type ArtifactUpdateEvent, type Metadata, type Part } from "../protocol/model.js";
import { isObject } from "../util/object.js";
import { mergeOpencode } from "./lifecycle.js";
import type { LiveTask } from "./live-task.js";
import type { FileChange, RuntimeOptions } from "./options.js";
import { errorText } from "./task-error.js";

export const DIFF_MIME = "text/x-diff";

export class TurnArtifacts {
  constructor(private readonly opts: Pick<RuntimeOptions, "artifacts" | "upstream" | "metrics" | "log" | "routing">) {}

  /** OpenCode's diff of each of the turn's user messages, as one list. */
  async #diffs(live: LiveTask, mapper: StreamMapper, sessionId: string, routing: Routing): Promise<FileChange[]> {
    const diffs: FileChange[] = [];
    for (const messageID of mapper.userMessageIds) {
      const listed = await this.opts.upstream.call(
        "sessionDiff",
        (c) => sdk.sessionDiff({ ...c, path: { sessionID: sessionId }, query: { ...c.query, messageID } }),
        { ...routing, sessionId, signal: live.abort.signal },
      );
      if (Array.isArray(listed)) for (const d of listed) if (isObject(d) && typeof d.file === "string") diffs.push(d as FileChange);
    }
    return diffs;
  }

  /**
   * OpenCode's diff of the turn so far (none read when no tool ran). OpenCode records a message's diff a moment after the turn went idle: when a
   * file-writing tool ran and the diff is still empty, it is read again (bounded, about 3 s in all). Throws what
   * OpenCode answered.
   */
  async changes(live: LiveTask, mapper: StreamMapper, routing: Routing): Promise<FileChange[]> {
    const sessionId = live.turn?.sessionId;
    // A turn in which no tool ran (a plain answer) changed no file through OpenCode: its diff is not asked for (a
    // request to OpenCode per user message saved on most turns).
    if (sessionId === undefined || !mapper.ranTools) return [];
    let diffs = await this.#diffs(live, mapper, sessionId, routing);
    for (let wait = 100; diffs.length === 0 && mapper.wroteFiles && wait <= 1_600 && !isTerminal(live.state); wait *= 2) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      diffs = await this.#diffs(live, mapper, sessionId, routing);
    }
    return diffs;
  }

  /**
   * The turn's `changes` artifact and changed files, as events of the turn's sequence (none when off or unchanged).
   * `known`: the diff as already read after the turn's last idle (by its review), not read again.
   */
  async read(live: LiveTask, mapper: StreamMapper, routing: Routing, known?: FileChange[]): Promise<ArtifactUpdateEvent[]> {
    const options = this.opts.artifacts;
    const sessionId = live.turn?.sessionId;
    if (options === undefined || !options.changes || sessionId === undefined) return [];
    const out: ArtifactUpdateEvent[] = [];
    try {
      const diffs = known ?? (await this.changes(live, mapper, routing));
      if (diffs.length === 0) return out;
      out.push(mapper.artifactEvent(`${live.id}:changes`, "changes", changesParts(diffs, live.diffAsFile), "changes", "opencode_diff", changesSummary(diffs)));
      this.opts.metrics.turnArtifacts.inc({ kind: "changes" });
      if (live.includeFileContents) {
        for (const file of changedFiles(diffs)) {
          const part = await this.#fileContent(live, sessionId, routing, file, options.fileMaxBytes);
          out.push(mapper.artifactEvent(`${live.id}:file:${file}`, file, [part], "file", "opencode_file", { opencode: { file: { path: file } } }));
          this.opts.metrics.turnArtifacts.inc({ kind: "file" });
        }
      }
    } catch (error) {
      if (isTerminal(live.state)) return [];
      const message = errorText(error);
      this.opts.log.warn({ err: message, taskId: live.id, sessionId }, "could not read the turn's changes from OpenCode");
      live.update({ metadata: mergeOpencode(live.task.metadata, { changes_error: { message } }) });
    }
    return out;
  }

  /** One changed file's content from OpenCode: inline bytes up to `maxBytes`, else a `file://` reference. */
  async #fileContent(live: LiveTask, sessionId: string, routing: Routing, file: string, maxBytes: number): Promise<Part> {
    const read = await this.opts.upstream.call(
      "fileRead",
      (c) => sdk.fileRead({ ...c, query: { ...c.query, path: file } }),
      { ...routing, sessionId, signal: live.abort.signal },
    );
    const content = isObject(read) && typeof read.content === "string" ? read.content : "";
    const binary = isObject(read) && read.type === "binary";
    const bytes = binary ? Buffer.from(content, "base64") : Buffer.from(content, "utf8");
    const mimeType = isObject(read) && typeof read.mimeType === "string" ? read.mimeType : binary ? "application/octet-stream" : "text/plain";
    const name = file.split("/").at(-1) ?? file;
    if (bytes.length <= maxBytes) return { kind: "file", file: { bytes: bytes.toString("base64"), mimeType, name }, metadata: { opencode: { path: file, size: bytes.length } } };
    const root = "directory" in routing ? routing.directory : this.opts.routing.root;
    return {
      kind: "file",
      file: { uri: pathToFileURL(path.join(root, file)).href, mimeType, name },
      metadata: { opencode: { path: file, size: bytes.length, omitted: "size", max_bytes: maxBytes } },
    };
  }
}

/** The `changes` artifact's parts: one per changed file, a `text/x-diff` file part (or text when the client takes text only). */
function changesParts(diffs: FileChange[], asFile: boolean): Part[] {
  return diffs.map((d) => {
    const metadata = { opencode: { change: { path: d.file, status: d.status ?? "modified", additions: d.additions ?? 0, deletions: d.deletions ?? 0 } } };
    const patch = d.patch ?? "";
    return asFile
      ? { kind: "file" as const, file: { bytes: Buffer.from(patch, "utf8").toString("base64"), mimeType: DIFF_MIME, name: `${d.file}.diff` }, metadata }
      : { kind: "text" as const, text: patch, metadata };
  });
}

function changesSummary(diffs: FileChange[]): Metadata {
  const files = diffs.map((d) => ({ path: d.file, status: d.status ?? "modified", additions: d.additions ?? 0, deletions: d.deletions ?? 0 }));
  return {
    opencode: {
      changes: {
        mime_type: DIFF_MIME,
        files,
        additions: files.reduce((n, f) => n + f.additions, 0),
        deletions: files.reduce((n, f) => n + f.deletions, 0),
      },
    },
  };
}

/** Files the turn added or modified (once each, in diff order); deleted files have no content. */
function changedFiles(diffs: FileChange[]): string[] {
  const last = new Map<string, FileChange>();
  for (const d of diffs) {
    last.delete(d.file);
    last.set(d.file, d);
  }
  return [...last.values()].filter((d) => d.status !== "deleted").map((d) => d.file);
}
