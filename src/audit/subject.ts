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

/** The first non-empty string among `values`, capped. */
function first(...values: unknown[]): string | undefined {
  for (const v of values) if (typeof v === "string" && v !== "") return v.slice(0, AUDIT_SUBJECT_MAX_CHARS);
  return undefined;
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

  const task_id = first(p?.taskId, p?.task_id, message?.taskId, message?.task_id, p?.id, task?.id, reply?.taskId, reply?.task_id);
  const context_id = first(
    p?.contextId,
    p?.context_id,
    message?.contextId,
    message?.context_id,
    task?.contextId,
    task?.context_id,
    reply?.contextId,
    reply?.context_id,
    r?.contextId,
    r?.context_id,
  );
  const session_id = first(
    p?.session_id,
    p?.sessionId,
    sharedSessionId(p),
    sharedSessionId(message),
    sharedSessionId(task),
  );
  return {
    ...(task_id === undefined ? {} : { task_id }),
    ...(context_id === undefined ? {} : { context_id }),
    ...(session_id === undefined ? {} : { session_id }),
  };
}
