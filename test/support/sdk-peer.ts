// A peer agent for tests of the outbound client: a real @a2a-js/sdk 1.3.0 server (Express 5, DefaultRequestHandler,
// InMemoryTaskStore, no authentication) on 127.0.0.1, JSON-RPC at /a2a/jsonrpc and HTTP+JSON at /a2a/rest, the card at
// /.well-known/agent-card.json. Its card lists the 1.0 interfaces and, with `legacy`, the 0.3 ones on the same URLs
// (the SDK's handlers route a 0.3 request by its A2A-Version header / its /v1 REST paths when legacyCompat is on).
//
//   mode "stream":  streams `chunks` as appended artifact updates, then completes (capabilities.streaming true);
//   mode "later":   answers with a `working` task and completes it `laterMs` later by writing the finished task to
//                   the store (capabilities.streaming false: a blocking send returns the working task).
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { TaskState, type AgentCard, type Part, type Task } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import express from "express";

export interface SdkPeerOptions {
  mode: "stream" | "later";
  /** Also list (and serve) the 0.3 interfaces. */
  legacy?: boolean;
  chunks?: string[];
  laterMs?: number;
}

export interface SdkPeer {
  url: string;
  /** Every request the peer received: method, path, A2A-Version header. */
  requests: { method: string; path: string; version: string | undefined; authorization: string | undefined }[];
  close(): Promise<void>;
}

const textPart = (text: string): Part => ({ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" });

export async function startSdkPeer(options: SdkPeerOptions): Promise<SdkPeer> {
  const chunks = options.chunks ?? ["SDK ", "peer ", "says hi"];
  const store = new InMemoryTaskStore();
  const timers = new Set<NodeJS.Timeout>();
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const now = (): string => new Date().toISOString();
      const base: Task = {
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      };
      bus.publish(AgentEvent.task(base));
      if (options.mode === "later") {
        // The bus closes when execute returns (working is not an interrupted state); the task completes in the store.
        const timer = setTimeout(() => {
          timers.delete(timer);
          const done: Task = {
            ...base,
            status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
            artifacts: [{ artifactId: "answer", name: "answer", description: "", parts: [textPart(chunks.join(""))], metadata: undefined, extensions: [] }],
          };
          void store.save(done, ctx.context);
        }, options.laterMs ?? 300);
        timers.add(timer);
        return;
      }
      for (const [i, chunk] of chunks.entries()) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId: ctx.taskId,
            contextId: ctx.contextId,
            artifact: { artifactId: "answer", name: "answer", description: "", parts: [textPart(chunk)], metadata: undefined, extensions: [] },
            append: i > 0,
            lastChunk: i === chunks.length - 1,
            metadata: undefined,
          }),
        );
      }
      bus.publish(
        AgentEvent.statusUpdate({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
          metadata: undefined,
        }),
      );
    },
    async cancelTask() {},
  };

  const app = express();
  const requests: SdkPeer["requests"] = [];
  app.use((req, _res, next) => {
    requests.push({ method: req.method, path: req.path, version: req.get("a2a-version"), authorization: req.get("authorization") });
    next();
  });
  let url = "";
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(0, "127.0.0.1", (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const iface = (path: string, binding: string, version: string) => ({ url: `${url}${path}`, protocolBinding: binding, tenant: "", protocolVersion: version });
  const card: AgentCard = {
    name: "SDK test peer",
    description: "@a2a-js/sdk reference server for the outbound client tests",
    version: "1.0.0",
    supportedInterfaces: [
      iface("/a2a/jsonrpc", "JSONRPC", "1.0"),
      iface("/a2a/rest", "HTTP+JSON", "1.0"),
      ...(options.legacy === true ? [iface("/a2a/jsonrpc", "JSONRPC", "0.3"), iface("/a2a/rest", "HTTP+JSON", "0.3")] : []),
    ],
    provider: undefined,
    capabilities: { streaming: options.mode === "stream", pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "Echo", description: "answers", tags: ["test"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, store, executor);
  const legacyCompat = { enabled: options.legacy === true };
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: requestHandler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  app.use("/a2a/rest", restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat }));
  return {
    url,
    requests,
    async close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
