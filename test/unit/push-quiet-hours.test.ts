// Quiet hours (src/push/quiet-hours.ts): inside or outside a window, when it ends (across midnight, in a time zone,
// across daylight saving time changes), and the checks of its fields; and the typed events a state change yields
// against a config's mark (src/push/events.ts), with their coalescing.
import { describe, expect, it } from "vitest";
import { A2AError } from "../../src/contract/errors.js";
import { coalesced, eventsOf, markOf, UNSEEN } from "../../src/push/events.js";
import { checkQuietHours, quietUntil } from "../../src/push/quiet-hours.js";
import type { Task } from "../../src/protocol/model.js";

const window = (start: string, end: string, zone?: string) => ({ quietHoursStart: start, quietHoursEnd: end, ...(zone === undefined ? {} : { quietHoursTimeZone: zone }) });
const until = (config: ReturnType<typeof window>, iso: string): string | undefined => {
  const t = quietUntil(config, Date.parse(iso));
  return t === undefined ? undefined : new Date(t).toISOString();
};

describe("quietUntil", () => {
  it.each([
    ["22:00", "08:00", undefined, "2030-01-15T23:00:00Z", "2030-01-16T08:00:00.000Z"],
    ["22:00", "08:00", undefined, "2030-01-15T03:10:20.500Z", "2030-01-15T08:00:00.000Z"],
    ["22:00", "08:00", undefined, "2030-01-15T22:00:00Z", "2030-01-16T08:00:00.000Z"],
    ["22:00", "08:00", undefined, "2030-01-15T08:00:00Z", undefined],
    ["22:00", "08:00", undefined, "2030-01-15T12:00:00Z", undefined],
    ["09:00", "17:00", "Asia/Tokyo", "2030-01-15T01:00:00Z", "2030-01-15T08:00:00.000Z"],
    ["23:30", "06:15", "America/New_York", "2030-01-15T09:00:00Z", "2030-01-15T11:15:00.000Z"],
    ["23:30", "06:15", "America/New_York", "2030-01-15T04:00:00Z", undefined],
    // Berlin falls back on 2030-10-27 (03:00 CEST → 02:00 CET): 08:00 CET is 07:00Z.
    ["22:00", "08:00", "Europe/Berlin", "2030-10-26T21:00:00Z", "2030-10-27T07:00:00.000Z"],
    // Berlin springs forward on 2030-03-31 (02:00 CET → 03:00 CEST): 02:30 does not exist, the window ends at 03:00.
    ["22:00", "02:30", "Europe/Berlin", "2030-03-30T22:00:00Z", "2030-03-31T01:00:00.000Z"],
    ["01:00", "08:00", "Europe/Berlin", "2030-03-31T00:30:00Z", "2030-03-31T06:00:00.000Z"],
  ])("%s–%s %s at %s → %s", (start, end, zone, now, expected) => {
    expect(until(window(start, end, zone), now)).toBe(expected);
  });

  it("no quiet hours: never held", () => {
    expect(quietUntil({}, Date.parse("2030-01-15T23:00:00Z"))).toBeUndefined();
  });
});

describe("checkQuietHours", () => {
  const refused = (config: Record<string, string>): string => {
    try {
      checkQuietHours(config, "pushNotificationConfig");
    } catch (error) {
      expect(error).toBeInstanceOf(A2AError);
      return String((error as A2AError).data.field);
    }
    return "accepted";
  };
  it.each([
    [{ quietHoursStart: "22:00" }, "pushNotificationConfig.quietHoursEnd"],
    [{ quietHoursEnd: "08:00" }, "pushNotificationConfig.quietHoursStart"],
    [{ quietHoursStart: "08:00", quietHoursEnd: "08:00" }, "pushNotificationConfig.quietHoursEnd"],
    [{ quietHoursTimeZone: "UTC" }, "pushNotificationConfig.quietHoursTimeZone"],
    [{ quietHoursStart: "22:00", quietHoursEnd: "08:00", quietHoursTimeZone: "Nowhere/Else" }, "pushNotificationConfig.quietHoursTimeZone"],
    [{ quietHoursStart: "22:00", quietHoursEnd: "08:00", quietHoursTimeZone: "Europe/Berlin" }, "accepted"],
    [{}, "accepted"],
  ])("%j → %s", (config, field) => {
    expect(refused(config)).toBe(field);
  });
});

describe("eventsOf", () => {
  const task = (state: Task["status"]["state"], extra: Partial<Task> = {}): Task => ({ id: "t1", contextId: "c1", status: { state, timestamp: "2030-01-15T23:00:00.000Z" }, ...extra });
  const reply = { messageId: "m2", role: "agent" as const, parts: [{ kind: "text" as const, text: "done" }] };
  const asked = { messageId: "t1:interrupt:q1", role: "agent" as const, parts: [{ kind: "text" as const, text: "Pick a color?" }] };
  const file = { artifactId: "t1:file:a", name: "a.bin", parts: [{ kind: "file" as const, file: { bytes: Buffer.from("12345").toString("base64") } }] };

  it("the change to input-required: status_change, input_required, the question as a message", () => {
    const events = eventsOf({ ...UNSEEN, state: "working" }, task("input-required", { status: { state: "input-required", timestamp: "2030-01-15T23:00:00.000Z", message: asked } }));
    expect(events.map((e) => e.event)).toEqual([
      { event: "status_change", task_id: "t1", timestamp: "2030-01-15T23:00:00.000Z", data: { old_state: "working", new_state: "input-required" } },
      { event: "input_required", task_id: "t1", timestamp: "2030-01-15T23:00:00.000Z", data: { prompt: "Pick a color?", input_types: ["text/plain"] } },
      { event: "message", task_id: "t1", timestamp: "2030-01-15T23:00:00.000Z", data: { message_role: "assistant", message_content: "Pick a color?" } },
    ]);
  });

  it("the completion: the reply and each new artifact once; what the mark has seen is not told again", () => {
    const done = task("completed", { history: [{ messageId: "m1", role: "user", parts: [] }, reply], artifacts: [file] });
    const events = eventsOf({ state: "working", messages: [], artifacts: [] }, done);
    expect(events.map((e) => [e.key, e.event.event])).toEqual([
      ["status_change", "status_change"],
      ["message", "message"],
      ["artifact:t1:file:a", "artifact"],
    ]);
    expect(events[2]!.event.data).toEqual({ artifact_type: "file", artifact_name: "a.bin", artifact_size: 5 });
    expect(eventsOf(markOf(done), done)).toEqual([]);
  });

  it("coalescing: a status change runs from the first old state to the last new one; others are replaced", () => {
    const first = { event: "status_change" as const, task_id: "t1", timestamp: "a", data: { old_state: "submitted", new_state: "working" } };
    const last = { event: "status_change" as const, task_id: "t1", timestamp: "b", data: { old_state: "working", new_state: "completed" } };
    expect(coalesced(first, last)).toEqual({ ...last, data: { old_state: "submitted", new_state: "completed" } });
    const message = { event: "message" as const, task_id: "t1", timestamp: "c", data: { message_role: "assistant", message_content: "x" } };
    expect(coalesced(message, { ...message, data: { ...message.data, message_content: "y" } }).data.message_content).toBe("y");
  });
});
