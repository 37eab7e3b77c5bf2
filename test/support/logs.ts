// A pino destination that keeps every log line in memory, for tests that read what the gateway logged.
import { Writable } from "node:stream";

export class Capture extends Writable {
  lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.lines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  }
  get text(): string {
    return this.lines.join("\n");
  }
}
