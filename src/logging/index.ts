// Structured logs (pino) with secrets redacted wherever they could appear.
import { pino, type Logger, type DestinationStream } from "pino";
import type { LogLevel } from "../config/index.js";

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

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: "opencode-a2a" },
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 2, sync: false }),
  );
}
