// Interrupt replies across the gateways of one database (src/cluster): the reply for a task whose turn runs on another
// gateway is made by that gateway's registry, which talks to the OpenCode that asked (each gateway may have its own)
// and resumes the task it runs. The caller's rights are checked again there, against the same stores.
import type { Principal } from "../auth/index.js";
import { principalFromWire, principalToWire, type Peers, type WirePrincipal } from "../cluster/index.js";
import type { PermissionDecision } from "../../generated/types/extensions.js";

export type ForwardedReply =
  | { kind: "permission"; requestId: string; reply: PermissionDecision; message?: string }
  | { kind: "question"; requestId: string; answers: string[][] }
  | { kind: "reject"; requestId: string }
  | { kind: "task-permission"; taskId: string; option: string };

export interface InterruptForwarding {
  /** The other gateway running the task's turn, when one does and `principal` may see the task. */
  runner(taskId: string, principal: Principal): Promise<string | undefined>;
  reply(peer: string, principal: Principal, reply: ForwardedReply): Promise<void>;
}

/** What a forwarded reply is made with on the gateway running the task. */
export interface ReplyTarget {
  permissionReply(principal: Principal, requestId: string, reply: PermissionDecision, message?: string): Promise<void>;
  questionReply(principal: Principal, requestId: string, answers: string[][]): Promise<void>;
  questionReject(principal: Principal, requestId: string): Promise<void>;
  answerTaskPermission(principal: Principal, taskId: string, option: string): Promise<void>;
}

const OP = "interrupts.reply";

/**
 * A reply for a task whose turn runs on another gateway is made there (its OpenCode may be another one than this
 * gateway's), with the same checks; true when it was.
 */
export async function forwarded(forward: InterruptForwarding | undefined, principal: Principal, taskId: string, reply: ForwardedReply): Promise<boolean> {
  const peer = forward === undefined ? undefined : await forward.runner(taskId, principal);
  if (peer === undefined) return false;
  await forward!.reply(peer, principal, reply);
  return true;
}

/** Serves the replies other gateways forward here (made by `target`) and forwards this one's to the runner. */
export function interruptForwarding(peers: Peers, runner: InterruptForwarding["runner"], target: () => ReplyTarget): InterruptForwarding {
  peers.handle(OP, async (body: { principal: WirePrincipal; reply: ForwardedReply }) => {
    const principal = principalFromWire(body.principal);
    const r = body.reply;
    if (r.kind === "permission") await target().permissionReply(principal, r.requestId, r.reply, r.message);
    else if (r.kind === "question") await target().questionReply(principal, r.requestId, r.answers);
    else if (r.kind === "reject") await target().questionReject(principal, r.requestId);
    else await target().answerTaskPermission(principal, r.taskId, r.option);
    return null;
  });
  return {
    runner,
    reply: async (peer, principal, reply) => {
      await peers.call(peer, OP, { principal: principalToWire(principal), reply });
    },
  };
}
