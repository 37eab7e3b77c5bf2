// e2e: the real @a2a-js/sdk 1.3.0 client (ClientFactory, JSON-RPC and REST transports; 1.0 natively, 0.3 through
// its legacy compatibility) against the gateway, in front of the real `opencode serve` driven by the scripted
// model server. Tasks are stored in SQLite; a restarted gateway still serves them.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { Role, TaskState } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, RestTransportFactory, type Client } from "@a2a-js/sdk/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HermeticOpencode } from "../../tools/upstream/hermetic.js";
import type { ModelServer } from "../../tools/upstream/model-server.js";
import { hang, text, tool } from "../../tools/upstream/script.js";
import type { StartedGateway } from "../support/gateway.js";
import { bearer, client, message, send, textOf, type Binding, type Line } from "../support/sdk-client.js";
import { startRealStack, type RealStack } from "../support/stack.js";

const PASSWORD = "e2e-sdk-opencode-password";
let stack: RealStack;
let model: ModelServer;
let oc: HermeticOpencode;
let gw: StartedGateway;
let scratch: string;

/** A webhook receiver on 127.0.0.1: every POST it gets, by path. */
interface Delivery {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}
const deliveries: Delivery[] = [];
let receiver: http.Server;
let receiverUrl: string;

beforeAll(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), "e2e-sdk-"));
  receiver = http.createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      deliveries.push({ path: req.url ?? "", headers: req.headers, body: JSON.parse(body) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  stack = await startRealStack({
    password: PASSWORD,
    // The webhook receiver is on loopback, which the SSRF guard refuses by default.
    env: { A2A_TASK_STORE_DATABASE_URL: `sqlite:///${path.join(scratch, "tasks.db")}`, A2A_PUSH_ALLOW_PRIVATE_NETWORKS: "true" },
  });
  ({ model, oc, gw } = stack);
  // Sessions are created without a title request: the model server answers titles on its own.
  fs.mkdirSync(path.join(oc.workspace, "sub"));
  fs.symlinkSync(scratch, path.join(oc.workspace, "escape"));
}, 90_000);

afterAll(async () => {
  await stack?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
}, 30_000);

/** The session the gateway created for a context: read from the task's metadata. */
const sessionOf = (task: { metadata?: Record<string, any> }): string => task.metadata?.shared?.session?.id;

const configs: [Line, Binding][] = [
  ["1.0", "JSONRPC"],
  ["1.0", "HTTP+JSON"],
  ["0.3", "JSONRPC"],
  ["0.3", "HTTP+JSON"],
];

describe.each(configs)("A2A %s over %s with @a2a-js/sdk", (line, binding) => {
  let c: Client;
  beforeAll(async () => {
    c = await client(gw.url, line, binding);
    expect(c.protocolVersion ?? line).toBe(line);
  });

  it("blocking send completes with the model's text, usage and history; multi-turn reuses the session", async () => {
    model.script(text(["Hello ", "from ", "OpenCode."]));
    const first: any = await c.sendMessage(send(message("say hello")));
    expect(first.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const response = first.artifacts.find((a: any) => a.name === "response");
    expect(textOf(response.parts)).toBe("Hello from OpenCode.");
    expect(first.metadata.shared.usage.total_tokens).toBeGreaterThan(0);
    expect(first.history.map((m: any) => m.role)).toEqual([Role.ROLE_USER, Role.ROLE_AGENT]);

    model.script(text(["Second ", "turn."]));
    const second: any = await c.sendMessage(send(message("and again", { contextId: first.contextId })));
    expect(second.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(second.contextId).toBe(first.contextId);
    expect(second.id).not.toBe(first.id);
    expect(sessionOf(second)).toBe(sessionOf(first));
    // OpenCode saw both user turns in the one session.
    const last = model.chatRequests().at(-1)!;
    expect(model.lastUserText(last)).toBe("and again");
    expect(JSON.stringify(last.body)).toContain("say hello");

    const got: any = await c.getTask({ tenant: "", id: first.id, historyLength: 1 });
    expect(got.history).toHaveLength(1);
    expect(got.history[0].role).toBe(Role.ROLE_AGENT);
  }, 60_000);

  /** A non-blocking send of `value` through the SDK: the task as answered (still running). */
  async function sendNonBlocking(value: string): Promise<any> {
    // On 0.3 REST the SDK leaves `blocking` out of the body (proto3 default false): the gateway reads it as false.
    const task: any = await c.sendMessage(send(message(value), { returnImmediately: true }));
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(task.status.state);
    return task;
  }

  it("non-blocking send returns a working task that completes in the background", async () => {
    model.script(text(["Background ", "done."], { delayMs: 150 }));
    const task = await sendNonBlocking("work in the background");
    await expect
      .poll(async () => ((await c.getTask({ tenant: "", id: task.id, historyLength: undefined as never })) as any).status.state, { timeout: 15_000 })
      .toBe(TaskState.TASK_STATE_COMPLETED);
  }, 60_000);

  it("streams reasoning, a tool call and text in order with increasing sequence, then the terminal status", async () => {
    model.script(tool("bash", { command: "echo streamed", description: "echo" }), text(["All ", "done."], { reasoning: ["Thinking..."] }));
    const events: any[] = [];
    for await (const ev of c.sendMessageStream(send(message("run a tool")))) events.push(ev.payload);
    expect(events[0].$case).toBe("task");
    const last = events.at(-1);
    expect(last.$case).toBe("statusUpdate");
    expect(last.value.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(last.value.metadata.shared.usage.total_tokens).toBeGreaterThan(0);
    const blocks = events
      .filter((e) => e.$case === "artifactUpdate")
      .map((e) => e.value.artifact.metadata.shared.stream as { block_type: string; sequence: number });
    const sequences = blocks.map((b) => b.sequence);
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
    expect(new Set(sequences).size).toBe(sequences.length);
    const kinds = [...new Set(blocks.map((b) => b.block_type))];
    expect(kinds).toEqual(["tool_call", "reasoning", "text"]);
    const streamed = events
      .filter((e) => e.$case === "artifactUpdate" && e.value.artifact.metadata.shared.stream.block_type === "text")
      .map((e) => textOf(e.value.artifact.parts))
      .join("");
    expect(streamed).toBe("All done.");
    // The tool's output made it into the stream as structured data.
    const toolEvent = events.find((e) => e.$case === "artifactUpdate" && e.value.artifact.metadata.shared.stream.block_type === "tool_call" && JSON.stringify(e.value).includes("completed"));
    expect(JSON.stringify(toolEvent.value)).toContain("streamed");
  }, 60_000);

  it("lets a second client subscribe mid-stream and cancels the task: OpenCode stops", async () => {
    model.script(hang({ chunks: ["working on it "] }));
    const events: any[] = [];
    const stream = c.sendMessageStream(send(message("a long task")));
    const first = await stream.next();
    const taskId = (first.value as any).payload.value.id;
    events.push(first.value!.payload);
    // Wait for the model to start answering, then attach a second client.
    await expect.poll(() => model.requests.filter((r) => r.kind === "chat" && r.aborted === undefined && r.reply?.kind === "hang").length).toBeGreaterThan(0);
    const other = await client(gw.url, line, binding);
    const resubscribed: any[] = [];
    const reading = (async () => {
      for await (const ev of other.resubscribeTask({ tenant: "", id: taskId })) resubscribed.push(ev.payload);
    })();
    await expect.poll(() => resubscribed.length).toBeGreaterThan(0);
    expect(resubscribed[0].$case).toBe("task");

    const canceled: any = await c.cancelTask({ tenant: "", id: taskId, metadata: undefined });
    expect(canceled.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    for await (const ev of stream as AsyncIterable<any>) events.push(ev.payload);
    await reading;
    expect(events.at(-1).value.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(resubscribed.at(-1).value.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    // OpenCode stopped the turn: the model stream was cut.
    await expect.poll(() => model.requests.filter((r) => r.reply?.kind === "hang").at(-1)?.aborted, { timeout: 10_000 }).toBe(true);
    // Idempotent.
    expect(((await c.cancelTask({ tenant: "", id: taskId, metadata: undefined })) as any).status.state).toBe(TaskState.TASK_STATE_CANCELED);
  }, 60_000);

  it("registers a webhook with the SDK and receives the finished task there; get, list and delete the config", async () => {
    model.script(text(["Pushed ", "result."], { delayMs: 300 }));
    const hook = `/hook/${line}/${binding}/${crypto.randomUUID()}`;
    const taskId: string = (await sendNonBlocking("push me")).id;
    const created: any = await c.createTaskPushNotificationConfig({
      tenant: "",
      id: "hook-1",
      taskId,
      url: receiverUrl + hook,
      token: "push-token-1",
      authentication: { scheme: "Bearer", credentials: "receiver-secret" },
    } as never);
    expect(created).toMatchObject({ id: "hook-1", taskId, url: receiverUrl + hook, token: "push-token-1" });

    // Whether the config arrived before or after the turn ended, the receiver gets the finished task once.
    await expect.poll(() => deliveries.filter((d) => d.path === hook).length, { timeout: 15_000 }).toBe(1);
    const [delivery] = deliveries.filter((d) => d.path === hook);
    expect(delivery!.headers["x-a2a-notification-token"]).toBe("push-token-1");
    expect(delivery!.headers.authorization).toBe("Bearer receiver-secret");
    if (line === "0.3") {
      expect(delivery!.headers["content-type"]).toBe("application/json");
      expect(delivery!.body).toMatchObject({ kind: "task", id: taskId, status: { state: "completed" } });
      expect(JSON.stringify(delivery!.body.artifacts)).toContain("Pushed result.");
    } else {
      expect(delivery!.headers["content-type"]).toBe("application/a2a+json");
      expect(delivery!.body).toMatchObject({ task: { id: taskId, status: { state: "TASK_STATE_COMPLETED" } } });
      expect(JSON.stringify(delivery!.body.task.artifacts)).toContain("Pushed result.");
    }

    const got: any = await c.getTaskPushNotificationConfig({ tenant: "", taskId, id: "hook-1" });
    expect(got).toMatchObject({ id: "hook-1", taskId, url: receiverUrl + hook });
    const listed: any = await c.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" });
    expect(listed.configs.map((x: any) => x.id)).toEqual(["hook-1"]);
    await c.deleteTaskPushNotificationConfig({ tenant: "", taskId, id: "hook-1" });
    const after: any = await c.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" });
    expect(after.configs).toEqual([]);
  }, 60_000);

  it("refuses a directory that escapes the workspace through a symlink, and accepts one inside", async () => {
    const escape = await c
      .sendMessage(send(message("look around", { metadata: { opencode: { directory: path.join(oc.workspace, "escape") } } })))
      .then(() => undefined, (e: unknown) => e);
    expect(escape).toBeInstanceOf(Error);
    expect(String((escape as Error).message)).toMatch(/outside the workspace root|Invalid params/i);

    model.script(text(["Inside."]));
    const inside: any = await c.sendMessage(send(message("look in sub", { metadata: { opencode: { directory: path.join(oc.workspace, "sub") } } })));
    expect(inside.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
  }, 60_000);
});

describe("ListTasks (1.0) and a gateway restart", () => {
  it("lists the caller's tasks, and a restarted gateway serves every finished task from SQLite", async () => {
    const c = await client(gw.url, "1.0", "JSONRPC");
    model.script(text(["Kept."]));
    const task: any = await c.sendMessage(send(message("remember me")));
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const page: any = await c.listTasks({ tenant: "", contextId: task.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10, pageToken: "", historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: true } as never);
    expect(page.tasks.map((t: any) => t.id)).toEqual([task.id]);
    expect(page.totalSize).toBe(1);

    const before = await c.getTask({ tenant: "", id: task.id, historyLength: undefined as never });
    gw = await stack.restartGateway();
    for (const [line, binding] of configs) {
      const fresh = await client(gw.url, line, binding);
      const after: any = await fresh.getTask({ tenant: "", id: task.id, historyLength: undefined as never });
      expect(after.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(after.artifacts.find((a: any) => a.name === "response").parts)).toBe("Kept.");
      if (line === "1.0") expect(after).toEqual(before);
    }
  }, 60_000);
});

describe("@a2a-js/sdk over 0.3 HTTP+JSON: a non-blocking send without `blocking` on the wire", () => {
  it("returns a working task at once, which can then be canceled (OpenCode stops)", async () => {
    // What the SDK's 0.3 REST transport puts on the wire for message:send.
    const sent: any[] = [];
    const recording: typeof fetch = async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (url.endsWith("/v1/message:send") && typeof init?.body === "string") sent.push(JSON.parse(init.body));
      return fetch(input, init);
    };
    const legacyCompat = { enabled: true };
    const filteringFetch: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const card = (await res.json()) as { supportedInterfaces: { protocolVersion: string; protocolBinding: string }[] };
      card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3" && i.protocolBinding === "HTTP+JSON");
      return new Response(JSON.stringify(card), { status: res.status, headers: { "content-type": "application/json" } });
    };
    const c = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new RestTransportFactory({ legacyCompat, fetchImpl: recording })],
        preferredTransports: ["HTTP+JSON"],
        cardResolver: new DefaultAgentCardResolver({ legacyCompat, fetchImpl: filteringFetch }),
        clientConfig: { interceptors: [bearer] } as never,
      }),
    ).createFromUrl(gw.url);
    expect(c.protocolVersion ?? "0.3").toBe("0.3");

    model.script(hang({ chunks: ["still going "] }));
    const started = Date.now();
    const task: any = await c.sendMessage(send(message("run until canceled"), { returnImmediately: true }));
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(task.status.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(sent).toHaveLength(1);
    expect(sent[0].configuration).toBeDefined();
    expect("blocking" in sent[0].configuration, JSON.stringify(sent[0])).toBe(false);

    await expect.poll(() => model.requests.filter((r) => r.kind === "chat" && r.aborted === undefined && r.reply?.kind === "hang").length, { timeout: 15_000 }).toBeGreaterThan(0);
    const canceled: any = await c.cancelTask({ tenant: "", id: task.id, metadata: undefined });
    expect(canceled.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    const got: any = await c.getTask({ tenant: "", id: task.id, historyLength: undefined as never });
    expect(got.status.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect.poll(() => model.requests.filter((r) => r.reply?.kind === "hang").at(-1)?.aborted, { timeout: 10_000 }).toBe(true);
  }, 60_000);
});
