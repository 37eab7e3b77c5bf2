// Incremental Server-Sent Events parsing for the upstream event stream (./hub.ts), on raw node:http chunks.
//
// It reads what OpenCode sends (`data: <json>\n\n` frames, comments, CRLF or LF line ends) the way the generated
// SSE client did: frames end at a blank line, the `data:` lines of a frame (leading whitespace after the colon
// removed) are joined with "\n", frames without data lines are skipped, and an unterminated frame at the end of
// the body is dropped. `event:`, `id:` and `retry:` are ignored (the hub reconnects on its own terms and OpenCode
// keeps no event log to resume from).
//
// `skip` drops whole frames that contain a marker before anything else is done with them: the hub uses it for
// OpenCode's `sync` frames (event-sourcing copies of events it receives anyway), about half of the frames of a
// turn. The marker is searched once per chunk, not per frame. Frames are found on the bytes and only the data of
// kept frames is decoded; input with CR line ends switches to decoding everything (OpenCode sends LF).
import { StringDecoder } from "node:string_decoder";

const LF = 10;
const CR = 13;
const FRAME_END = Buffer.from("\n\n");
const DATA = Buffer.from("data:");

export class SseFrames {
  readonly #skip: Buffer | undefined;
  /** Bytes of an unfinished frame (bytes mode). */
  #pending: Buffer = Buffer.alloc(0);
  /** Text mode, entered at the first "\r": CR and CRLF line ends are rewritten on decoded text. */
  #text = false;
  readonly #decoder = new StringDecoder("utf8");
  #buffer = "";
  /** Where the search for the next frame end resumes (everything before it has no "\n\n"). */
  #scanFrom = 0;
  /** The last chunk ended with "\r" (read as a line end): a "\n" starting the next one belongs to it. */
  #afterCR = false;

  constructor(
    private readonly onData: (data: string) => void,
    private readonly skip?: string,
  ) {
    this.#skip = skip === undefined ? undefined : Buffer.from(skip);
  }

  push(chunk: Buffer): void {
    if (!this.#text && chunk.includes(CR)) {
      // Line ends other than LF (OpenCode sends LF): carry on with decoded text from here.
      this.#text = true;
      this.#buffer = this.#decoder.write(this.#pending);
      this.#pending = Buffer.alloc(0);
      this.#scanFrom = 0;
    }
    if (this.#text) this.#pushText(chunk);
    else this.#pushBytes(chunk);
  }

  /** LF-only input: frames are found and `skip`ped on bytes; only the data of kept frames is decoded. */
  #pushBytes(chunk: Buffer): void {
    if (chunk.length === 0) return;
    const buf = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const skip = this.#skip;
    let start = 0;
    let end = buf.indexOf(FRAME_END, this.#scanFrom);
    let marker = end < 0 || skip === undefined ? -1 : buf.indexOf(skip);
    while (end >= 0) {
      if (marker >= 0 && marker < start) marker = buf.indexOf(skip!, start);
      if (!(marker >= start && marker < end)) this.#frameBytes(buf, start, end);
      start = end + 2;
      end = buf.indexOf(FRAME_END, start);
    }
    // A copy: the rest of a frame must not pin the whole chunk it arrived in.
    this.#pending = start === 0 ? buf : start < buf.length ? Buffer.from(buf.subarray(start)) : Buffer.alloc(0);
    // A "\n" at the very end may be the first half of the next frame end.
    this.#scanFrom = Math.max(0, this.#pending.length - 1);
  }

  #frameBytes(buf: Buffer, start: number, end: number): void {
    // The usual frame: one `data:` line. A frame ends in "\n\n", so it never splits a UTF-8 sequence.
    if (end - start >= DATA.length && buf.compare(DATA, 0, DATA.length, start, start + DATA.length) === 0) {
      const newline = buf.indexOf(LF, start);
      if (newline < 0 || newline >= end) {
        this.onData(buf.toString("utf8", start + DATA.length, end).trimStart());
        return;
      }
    }
    this.#frame(buf.toString("utf8", start, end));
  }

  #pushText(chunk: Buffer): void {
    let text = this.#decoder.write(chunk);
    if (text === "") return; // an incomplete UTF-8 sequence (or an empty chunk)
    if (this.#afterCR && text.startsWith("\n")) text = text.slice(1); // the "\n" of a CRLF split across chunks
    this.#afterCR = text.endsWith("\r");
    if (text.includes("\r")) text = text.replace(/\r\n?/g, "\n");
    if (text === "") return;
    const buf = this.#buffer === "" ? text : this.#buffer + text;
    let start = 0;
    let end = buf.indexOf("\n\n", this.#scanFrom);
    let marker = end < 0 || this.skip === undefined ? -1 : buf.indexOf(this.skip);
    while (end >= 0) {
      if (marker >= 0 && marker < start) marker = buf.indexOf(this.skip!, start);
      if (!(marker >= start && marker < end)) this.#frame(buf.slice(start, end));
      start = end + 2;
      end = buf.indexOf("\n\n", start);
    }
    this.#buffer = start === 0 ? buf : buf.slice(start);
    this.#scanFrom = Math.max(0, this.#buffer.length - 1);
  }

  #frame(frame: string): void {
    if (frame.startsWith("data:") && !frame.includes("\n")) {
      this.onData(frame.slice(5).trimStart());
      return;
    }
    const data: string[] = [];
    for (const line of frame.split("\n")) if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    if (data.length > 0) this.onData(data.join("\n"));
  }
}
