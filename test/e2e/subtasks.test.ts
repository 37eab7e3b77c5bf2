// e2e: opencode.subtasks.run against the real `opencode serve` (hermetic, driven by the scripted model server), with a
// `reviewer` subagent declared in OpenCode's config. A subtask is a genuine subagent run: OpenCode's own session and
// message records show the child session under the context's session and the agent on its messages, and the model
// request carries the agent's own prompt. Three items of one group run at once, the next group after them; a subtask
// is followed by a second client (the real @a2a-js/sdk client: by id and by resubscribing), canceled mid-run while the
// others finish, refused for an unknown agent while the others run, and (an `asker` subagent allowed to ask) answered
// through a2a.interrupt.question.reply.
import { randomUUID } from "node:crypto";
import { TaskState } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from "@a2a-js/sdk/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { hang, text, tool } from "../../tools/upstream/script.js";
import { expectValid } from "../support/contract.js";
import { rpc, TEST_TOKEN, type StartedGateway } from "../support/gateway.js";
import { startRealStack, type RealStack } from "../support/stack.js";

type Obj = Record<string, any>;
const REVIEWER_PROMPT = "You are the reviewer subagent (marker 7f3a). Review what you are given.";
let stack: RealStack;
let model: ModelServer;
let gw: StartedGateway;
let rpcId = 0;

beforeAll(async () => {
  stack = await startRealStack({
    // the tests poll task states; the default request limit (600 a minute) is not what they exercise
    env: { A2A_MAX_PARALLEL_SUBTASKS: "3", A2A_RATE_LIMIT_MAX_REQUESTS: "0" },
    opencode: {
      config: {
        agent: {
          reviewer: { mode: "subagent", description: "Reviews code", prompt: REVIEWER_PROMPT },
          // subagents may not ask questions unless their permissions say so (OpenCode denies `question` by default)
          asker: { mode: "subagent", description: "Asks before it works", prompt: "Ask when unsure.", permission: { question: "allow" } },
        },
      },
    },
  });
  ({ model, gw } = stack);
}, 90_000);

afterAll(async () => {
  await stack?.close();
}, 30_000);

async function ok(method: string, params: Obj): Promise<Obj> {
  const id = ++rpcId;
  const res = await rpc(gw.url, { jsonrpc: "2.0", id, method, params }, { "A2A-Version": "0.3" });
  expect(res.status, res.text).toBe(200);
  expect(res.body.error, res.text).toBeUndefined();
  return res.body.result as Obj;
}

async function run(params: Obj): Promise<Obj> {
  const result = await ok("opencode.subtasks.run", params);
  await expectValid("extensions/SubtasksCallResult", result);
  return result;
}

const task = (id: string): Promise<Obj> => ok("tasks/get", { id });
const upstream = async (path: string): Promise<any> => (await fetch(`${stack.oc.url}${path}?directory=${encodeURIComponent(stack.oc.workspace)}`)).json();
const item = (over: Obj = {}): Obj => ({ agent: "reviewer", prompt: "review the change", description: "review", ...over });

async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Polls the tasks until all are terminal: when each was first seen working and terminal. */
async function watch(ids: string[], ms = 60_000): Promise<{ started: Map<string, number>; ended: Map<string, number> }> {
  const started = new Map<string, number>();
  const ended = new Map<string, number>();
  const deadline = Date.now() + ms;
  while (ended.size < ids.length) {
    if (Date.now() > deadline) throw new Error(`tasks did not end: ${ids.filter((id) => !ended.has(id)).join(", ")}`);
    const states = await Promise.all(ids.map(async (id) => [id, (await task(id)).status.state as string] as const));
    const now = Date.now();
    for (const [id, state] of states) {
      if (state !== "submitted" && !started.has(id)) started.set(id, now);
      if (["completed", "canceled", "failed", "rejected"].includes(state) && !ended.has(id)) ended.set(id, now);
    }
    await new Promise((r) => setTimeout(r, 40));
  }
  return { started, ended };
}

async function sdkClient(): Promise<Client> {
  const bearer = {
    async before(args: { options?: { serviceParameters?: Record<string, string> } }) {
      args.options = { ...args.options, serviceParameters: { ...args.options?.serviceParameters, Authorization: `Bearer ${TEST_TOKEN}` } };
    },
    async after() {},
  };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: false } })],
      preferredTransports: ["JSONRPC"],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: false } }),
      clientConfig: { interceptors: [bearer] } as never,
    }),
  );
  return factory.createFromUrl(gw.url);
}

describe("opencode.subtasks.run on the real OpenCode", () => {
  it("one subtask runs as the named agent: a child of the context's session, the agent on OpenCode's messages and in the model's prompt", async () => {
    const first = await ok("message/send", { message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text: "hello" }] } });
    const parentSession: string = first.metadata.shared.session.id;
    model.script(text(["looks ", "good"]));
    const result = await run({ ...item({ client_id: "only" }), context_id: first.contextId, wait: true });
    expect(result.items).toMatchObject([{ client_id: "only", status: "accepted", state: "completed" }]);
    const done = await task(result.items[0].task_id);
    expect(done.contextId).toBe(first.contextId);
    expect(done.status.message?.parts?.[0]?.text ?? done.history.at(-1).parts[0].text).toContain("looks good");
    const child: string = done.metadata.shared.session.id;

    // OpenCode's own records
    const session = await upstream(`/session/${child}`);
    expect(session.parentID).toBe(parentSession);
    expect(session.title).toBe("review (@reviewer subagent)");
    const children = (await upstream(`/session/${parentSession}/children`)) as Obj[];
    expect(children.map((s) => s.id)).toContain(child);
    const messages = (await upstream(`/session/${child}/message`)) as Obj[];
    const user = messages.find((m) => m.info.role === "user")!;
    const assistant = messages.find((m) => m.info.role === "assistant")!;
    expect(user.info.agent).toBe("reviewer");
    expect([assistant.info.agent ?? assistant.info.mode, assistant.info.mode]).toEqual(["reviewer", "reviewer"]);
    // the model was asked with the reviewer's own prompt
    const request = model.chatRequests().find((r) => r.sessionID === child)!;
    expect(JSON.stringify(request.body.messages)).toContain("marker 7f3a");

    const listed = await ok("tasks/list", { contextId: first.contextId });
    expect(listed.tasks.map((t: Obj) => t.id)).toContain(done.id);
  }, 60_000);

  it("three items of one group run at once; the next group starts after them", async () => {
    model.script(...Array.from({ length: 3 }, () => text(["slow ", "part ", "answer"], { delayMs: 400 })), text(["after"]));
    const since = model.requests.length;
    const result = await run({ items: [item({ client_id: "p1", parallel_group: "p" }), item({ client_id: "p2", parallel_group: "p" }), item({ client_id: "p3", parallel_group: "p" }), item({ client_id: "n", parallel_group: "next", agent: "general" })] });
    expect(result.parallel).toBe(true);
    const ids: string[] = result.items.map((i: Obj) => i.task_id);
    const seen = await watch(ids);
    const [p1, p2, p3, n] = ids as [string, string, string, string];
    // overlapping running intervals: every one of p1..p3 started before any of them ended
    const latestStart = Math.max(...[p1, p2, p3].map((id) => seen.started.get(id)!));
    const earliestEnd = Math.min(...[p1, p2, p3].map((id) => seen.ended.get(id)!));
    expect(latestStart).toBeLessThan(earliestEnd);
    // OpenCode saw the three model requests before the first answer was done (each takes ≥ 1.2 s)
    const sessions = await Promise.all([p1, p2, p3].map(async (id) => (await task(id)).metadata.shared.session.id as string));
    const firstAsks = sessions.map((s) => model.requests.slice(since).find((r) => r.kind === "chat" && r.sessionID === s)!.at);
    expect(Math.max(...firstAsks) - Math.min(...firstAsks)).toBeLessThan(1_200);
    expect(seen.started.get(n)!).toBeGreaterThanOrEqual(Math.max(...[p1, p2, p3].map((id) => seen.ended.get(id)!)));
    for (const id of ids) expect((await task(id)).status.state).toBe("completed");
    const nextSession = (await task(n)).metadata.shared.session.id as string;
    const nextMessages = (await upstream(`/session/${nextSession}/message`)) as Obj[];
    expect(nextMessages.find((m) => m.info.role === "user")!.info.agent).toBe("general");
  }, 90_000);

  it("an unknown agent is rejected while the other item runs; one item canceled mid-run while the others finish; a second client follows a subtask", async () => {
    model.script(hang({ chunks: ["working "] }), text(["a ", "b"], { delayMs: 300 }), text(["c ", "d"], { delayMs: 300 }));
    const result = await run({
      items: [item({ client_id: "cancel-me", parallel_group: "g" }), item({ client_id: "ghost", agent: "no-such-agent", parallel_group: "g" }), item({ client_id: "k1", parallel_group: "g" }), item({ client_id: "k2", parallel_group: "g" })],
    });
    const byId = Object.fromEntries(result.items.map((i: Obj) => [i.client_id, i]));
    expect(byId.ghost).toMatchObject({ status: "rejected", error: { reason: "INVALID_PARAMS", field: "items.1.agent" } });
    expect(byId.ghost.task_id).toBeUndefined();

    // a second client (the @a2a-js/sdk client) follows one subtask by id
    const c = await sdkClient();
    const followed: any[] = [];
    const reading = (async () => {
      for await (const ev of c.resubscribeTask({ tenant: "", id: byId.k1.task_id })) followed.push(ev.payload);
    })();
    const got: any = await c.getTask({ tenant: "", id: byId.k2.task_id, historyLength: undefined as never });
    expect(got.id).toBe(byId.k2.task_id);
    expect(got.metadata.opencode.subtask).toMatchObject({ agent: "reviewer", client_id: "k2", parallel_group: "g", call_id: result.call_id });

    // the hanging one (whichever child got the hang) is canceled mid-run
    await until("a model stream to hang", async () => model.requests.some((r) => r.reply?.kind === "hang"));
    const hanging = model.requests.find((r) => r.reply?.kind === "hang")!.sessionID!;
    const ids = [byId["cancel-me"].task_id, byId.k1.task_id, byId.k2.task_id] as string[];
    const tasks = await Promise.all(ids.map(task));
    const victim = tasks.find((t) => t.metadata.shared.session.id === hanging)!;
    const canceled = await ok("tasks/cancel", { id: victim.id });
    expect(canceled.status.state).toBe("canceled");
    await watch(ids);
    for (const t of tasks) expect((await task(t.id)).status.state).toBe(t.id === victim.id ? "canceled" : "completed");
    await until("OpenCode to stop the canceled run", async () => model.requests.find((r) => r.reply?.kind === "hang")?.aborted === true);
    await reading;
    expect(followed[0].$case).toBe("task");
    const last = followed.at(-1);
    expect(last.value.status.state).toBe(victim.id === byId.k1.task_id ? TaskState.TASK_STATE_CANCELED : TaskState.TASK_STATE_COMPLETED);
  }, 90_000);

  it("a subtask that asks a question is input-required on its own task and answered through a2a.interrupt.question.reply", async () => {
    model.script(
      tool("question", { questions: [{ question: "Which file?", header: "File", options: [{ label: "a.ts", description: "A" }, { label: "b.ts", description: "B" }] }] }),
      text(["reviewed b.ts"]),
    );
    const result = await run({ ...item({ agent: "asker" }), wait: true });
    expect(result.items[0].state).toBe("input-required");
    const waiting = await task(result.items[0].task_id);
    expect(waiting.metadata.shared.interrupt).toMatchObject({ type: "question" });
    const answered = await ok("a2a.interrupt.question.reply", { request_id: waiting.metadata.shared.interrupt.request_id, answers: [["b.ts"]] });
    expect(answered.ok).toBe(true);
    await until("the subtask to complete", async () => (await task(result.items[0].task_id)).status.state === "completed");
    const got = await ok("opencode.subtasks.get", { call_id: result.call_id });
    expect(got.items[0].state).toBe("completed");
  }, 60_000);
});
