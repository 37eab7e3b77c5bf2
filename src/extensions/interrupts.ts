// Extension family: interactive interrupts (issue 5 §3).
//
// The durable request bindings live in the registry (interrupt-registry.ts); this file maps the methods onto it.
//
// Methods:
//   a2a.interrupt.permission.reply   {request_id, reply: once|always|reject, message?} → {ok, request_id}
//   a2a.interrupt.question.reply     {request_id, answers: string[][]}                → {ok, request_id}
//   a2a.interrupt.question.reject    {request_id}                                     → {ok, request_id}
//   tasks/provideInputAndContinue    {taskId, input | permissionOptionId}             → the task (blocking)
//   opencode.permissions.list / opencode.questions.list                               → {items: [...]}
//   opencode.governance.history      {task_id}                                        → the task's governance trail
// Another principal's request is not found (an admin credential, whose trust level sees every principal, lists and
// answers every principal's requests), and so is an answered one or one of a canceled task; a request past its
// TTL is expired during the tombstone window, then not found; the wrong method for the request's type is a type
// mismatch; OpenCode answering 404 (it no longer knows the request) is not found and drops the binding. Replies go upstream to the instance (directory or
// workspace) the asking session runs in, whatever routing hints the caller sends (they are only validated).
import type { GovernanceHandlers, InteractiveInterruptHandlers, InterruptRecoveryHandlers } from "../../generated/types/methods.js";
import type { InterruptReplyResult, PermissionDecision } from "../../generated/types/extensions.js";
import { resolveRouting } from "../bridge/directory.js";
import { invalidParams } from "../contract/errors.js";
import type { Call } from "../operations/index.js";
import { codecFor } from "../protocol/codec/index.js";
import { filterTask, resultAccess } from "../runtime/result-scope.js";
import { isObject } from "../util/object.js";
import { taskProjection, type ExtensionDeps } from "./context.js";

export function handlers(deps: ExtensionDeps) {
  const registry = deps.interrupts;
  /** Routing hints are validated (bad values are invalid params) but replies go to the asking session's instance. */
  const checkRouting = (params: Record<string, unknown>): void => {
    if (params.metadata !== undefined) resolveRouting(isObject(params.metadata) ? params.metadata : {}, deps.routing);
  };
  const ok = (requestId: string): InterruptReplyResult => ({ ok: true, request_id: requestId });
  return {
    "a2a.interrupt.permission.reply": async (params, call) => {
      checkRouting(params);
      const requestId = String(params.request_id);
      const reply = String(params.reply).toLowerCase() as PermissionDecision;
      await registry.permissionReply(call.principal, requestId, reply, typeof params.message === "string" ? params.message : undefined, call.trace);
      return ok(requestId);
    },
    "a2a.interrupt.question.reply": async (params, call) => {
      checkRouting(params);
      const requestId = String(params.request_id);
      await registry.questionReply(call.principal, requestId, params.answers as string[][], call.trace);
      return ok(requestId);
    },
    "a2a.interrupt.question.reject": async (params, call) => {
      checkRouting(params);
      const requestId = String(params.request_id);
      await registry.questionReject(call.principal, requestId, call.trace);
      return ok(requestId);
    },
    "tasks/provideInputAndContinue": async (params, call) => {
      const codec = codecFor(call.line, "jsonrpc");
      const taskId = String(params.taskId);
      const hasInput = params.input !== undefined && params.input !== null;
      const hasOption = params.permissionOptionId !== undefined && params.permissionOptionId !== null;
      if (hasInput === hasOption) {
        throw invalidParams("Give exactly one of input and permissionOptionId", hasInput ? "permissionOptionId" : "input", {
          fields: ["input", "permissionOptionId"],
        });
      }
      checkRouting(params);
      if (hasInput) {
        const message = codec.decodeMessage(params.input, "input");
        if (message.taskId !== undefined && message.taskId !== taskId) {
          throw invalidParams(`input.taskId must be the task being continued (${taskId})`, "input.taskId");
        }
        // The runtime routes a follow-up to an input-required task through `answer` and waits like message/send.
        const task = await deps.runtime.send(call.principal, {
          message: { ...message, taskId },
          ...(isObject(params.metadata) ? { metadata: params.metadata } : {}),
        });
        return taskProjection(codec, filterTask(task, resultAccess(call.principal)));
      }
      await registry.answerTaskPermission(call.principal, taskId, String(params.permissionOptionId), call.trace);
      return taskProjection(codec, filterTask(await deps.runtime.settled(call.principal, taskId), resultAccess(call.principal)));
    },
    "opencode.permissions.list": async (params, call) => {
      checkRouting(params);
      return { items: await registry.list(call.principal, "permission") };
    },
    "opencode.questions.list": async (params, call) => {
      checkRouting(params);
      return { items: await registry.list(call.principal, "question") };
    },
    // The trail of every decision on the task's interrupts (a policy's, a principal's, an expiry): kept by the registry.
    "opencode.governance.history": async (params, call) => {
      checkRouting(params);
      return registry.history(call.principal, params.task_id);
    },
  } satisfies InteractiveInterruptHandlers<Call> & InterruptRecoveryHandlers<Call> & GovernanceHandlers<Call>;
}
