// Quiet hours of a push config (seed 004's `quietHoursStart` / `quietHoursEnd`, with our `quietHoursTimeZone`):
// a daily wall-clock window in an IANA time zone (default UTC) during which notifications are held, and the instant
// it ends. `start` is inclusive and `end` exclusive; a window whose end is before its start crosses midnight
// (`22:00`–`08:00`). The HH:MM syntax is the generated validators'; what they cannot say is checked here.
import { at, invalid } from "../protocol/codec/common.js";
import type { PushConfig } from "../protocol/model.js";

type QuietFields = Pick<PushConfig, "quietHoursStart" | "quietHoursEnd" | "quietHoursTimeZone">;

const formats = new Map<string, Intl.DateTimeFormat>();

/** A formatter giving the wall-clock parts of an instant in `zone`; throws RangeError for an unknown zone. */
function formatIn(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    formats.set(zone, f);
  }
  return f;
}

/**
 * The quiet hours fields as a whole, or INVALID_PARAMS naming the field (`field`: where the wire carries the config):
 * both ends or neither, two different times, a time zone only with them and one the runtime knows.
 */
export function checkQuietHours(config: QuietFields, field: string): void {
  const { quietHoursStart: start, quietHoursEnd: end, quietHoursTimeZone: zone } = config;
  if ((start === undefined) !== (end === undefined)) {
    const missing = start === undefined ? "quietHoursStart" : "quietHoursEnd";
    throw invalid(at(field, missing), "is required with quietHoursStart / quietHoursEnd (a window has both ends)");
  }
  if (start !== undefined && start === end) throw invalid(at(field, "quietHoursEnd"), "must differ from quietHoursStart (a window of no length)");
  if (zone === undefined) return;
  if (start === undefined) throw invalid(at(field, "quietHoursTimeZone"), "needs quietHoursStart and quietHoursEnd (it is the time zone of that window)");
  try {
    formatIn(zone);
  } catch {
    throw invalid(at(field, "quietHoursTimeZone"), "is not a known IANA time zone (e.g. Europe/Berlin, UTC)");
  }
}

const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** The wall-clock time of `t` in `zone`: seconds since local midnight, and the zone's offset from UTC (ms). */
function wallClock(t: number, zone: string): { seconds: number; offsetMs: number } {
  const parts: Record<string, number> = {};
  for (const p of formatIn(zone).formatToParts(new Date(t))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  const local = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!);
  return { seconds: parts.hour! * 3600 + parts.minute! * 60 + parts.second!, offsetMs: local - Math.floor(t / 1000) * 1000 };
}

function inside(seconds: number, start: number, end: number): boolean {
  const m = Math.floor(seconds / 60);
  return start < end ? m >= start && m < end : m >= start || m < end;
}

/**
 * When the config's quiet window that `now` falls in ends (epoch ms), or undefined when `now` is outside it (or the
 * config has no quiet hours). A change of the zone's offset before the end (daylight saving time) is taken into
 * account; an end that does not exist that day (skipped by the clock change) is the first minute after it.
 */
export function quietUntil(config: QuietFields, now: number): number | undefined {
  if (config.quietHoursStart === undefined || config.quietHoursEnd === undefined) return undefined;
  const zone = config.quietHoursTimeZone ?? "UTC";
  const start = minutesOf(config.quietHoursStart);
  const end = minutesOf(config.quietHoursEnd);
  const here = wallClock(now, zone);
  if (!inside(here.seconds, start, end)) return undefined;
  const wholeSecond = Math.floor(now / 1000) * 1000;
  let until = wholeSecond + (((end * 60 - here.seconds) % 86_400) + 86_400) % 86_400 * 1000;
  until -= wallClock(until, zone).offsetMs - here.offsetMs;
  // Still inside (the end fell into a skipped hour): the first minute outside, at most a day of minutes on.
  for (let i = 0; i < 1440 && inside(wallClock(until, zone).seconds, start, end); i++) until += 60_000;
  return until;
}
