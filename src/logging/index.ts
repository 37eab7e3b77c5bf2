// Structured logs (pino) with secrets redacted wherever they could appear. JSON lines, or — for people at a
// terminal — pino-pretty's colored lines (A2A_LOG_FORMAT; pino-pretty is loaded only then).
import { createRequire } from "node:module";
import { pino, type Logger, type DestinationStream } from "pino";
import type { LogLevel } from "../config/index.js";

export type LogFormat = "auto" | "json" | "pretty";

export const REDACT_PATHS = [
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  'req.headers["proxy-authorization"]',
  "req.headers.cookie",
  'res.headers["set-cookie"]',
  "headers.authorization",
  'headers["x-api-key"]',
  "config.bearerToken",
  "config.credentials",
  "config.opencodePassword",
  "bearerToken",
  "credentials",
  "*.credentials",
  "apiKey",
  "*.apiKey",
  "token",
  "secret",
  "password",
  "*.token",
  "*.secret",
  "*.password",
];

/** Whether lines are pretty-printed: `pretty`, or `auto` with the log stream (stderr) on a terminal. */
export function prettyLogs(format: LogFormat, isTTY: boolean | undefined = process.stderr.isTTY): boolean {
  return format === "pretty" || (format === "auto" && isTTY === true);
}

/** pino-pretty's stream writing to `destination` (loaded here, synchronously, only when pretty logs are asked for). */
export function prettyStream(destination: number | NodeJS.WritableStream, colorize: boolean): DestinationStream {
  const require = createRequire(import.meta.url);
  const pretty = require("pino-pretty") as (options: Record<string, unknown>) => DestinationStream;
  return pretty({
    destination,
    colorize,
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,service",
    singleLine: false,
    sync: false,
  });
}

export function createLogger(level: LogLevel, destination?: DestinationStream, format: LogFormat = "json"): Logger {
  const pretty = destination === undefined && prettyLogs(format);
  return pino(
    {
      level,
      base: { service: "opencode-a2a" },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? (pretty ? prettyStream(2, process.stderr.isTTY === true) : pino.destination({ dest: 2, sync: false })),
  );
}
