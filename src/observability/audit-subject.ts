// What an audited call was about: the task, context and OpenCode session ids read from the common A2A and extension
// shapes of its params and result. Pure; only strings are taken, each capped at 256 characters.
import { isObject, type Obj } from "../util/object.js";

export interface AuditSubject {
  task_id?: string;
  context_id?: string;
  session_id?: string;
}

export const AUDIT_SUBJECT_MAX_CHARS = 256;

const obj = (v: unknown): Obj | undefined => (isObject(v) ? v : undefined);

/** `v` capped when it is a non-empty string, else undefined: chained with `??`, the first such value wins. */
function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v.slice(0, AUDIT_SUBJECT_MAX_CHARS) : undefined;
}

/** `metadata.shared.session.id` of an object. */
const sharedSessionId = (o: Obj | undefined): unknown => obj(obj(obj(o?.metadata)?.shared)?.session)?.id;

/** A Task (0.3 `kind: "task"`, or anything with an id and a status object). */
function taskLike(v: unknown): Obj | undefined {
  const o = obj(v);
  if (o === undefined || typeof o.id !== "string") return undefined;
  return o.kind === "task" || isObject(o.status) ? o : undefined;
}

/** A Message (0.3 `kind: "message"`, or anything with a messageId). */
function messageLike(v: unknown): Obj | undefined {
  const o = obj(v);
  if (o === undefined) return undefined;
  return o.kind === "message" || typeof o.messageId === "string" || typeof o.message_id === "string" ? o : undefined;
}

/**
 * The task/context/session a call was about. Params win over the result (they name what the caller addressed);
 * the result fills the gaps (e.g. the id of a task that `message/send` created). Among params, an explicit
 * `taskId`/`task_id` wins over `id` (1.0 push-config requests carry both, `id` being the config's).
 */
export function auditSubject(params: unknown, result: unknown): AuditSubject {
  const p = obj(params);
  const message = obj(p?.message);
  const r = obj(result);
  // 1.0 SendMessage answers { task } or { message }; 0.3 answers the Task or Message itself.
  const task = taskLike(r?.task) ?? taskLike(result);
  const reply = messageLike(r?.message) ?? messageLike(result);

  // Each chain reads its candidates in order and stops at the first non-empty string (it runs once per audited call).
  const task_id =
    str(p?.taskId) ?? str(p?.task_id) ?? str(message?.taskId) ?? str(message?.task_id) ?? str(p?.id) ?? str(task?.id) ??
    str(reply?.taskId) ?? str(reply?.task_id);
  const context_id =
    str(p?.contextId) ?? str(p?.context_id) ?? str(message?.contextId) ?? str(message?.context_id) ?? str(task?.contextId) ??
    str(task?.context_id) ?? str(reply?.contextId) ?? str(reply?.context_id) ?? str(r?.contextId) ?? str(r?.context_id);
  const session_id =
    str(p?.session_id) ?? str(p?.sessionId) ?? str(sharedSessionId(p)) ?? str(sharedSessionId(message)) ?? str(sharedSessionId(task));
  const out: AuditSubject = {};
  if (task_id !== undefined) out.task_id = task_id;
  if (context_id !== undefined) out.context_id = context_id;
  if (session_id !== undefined) out.session_id = session_id;
  return out;
}
