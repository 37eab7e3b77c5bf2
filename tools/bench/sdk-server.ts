// The comparison server of `npm run bench:tasks`: an @a2a-js/sdk 1.3.0 A2A server (Express 5 + DefaultRequestHandler)
// with N stored tasks, so GetTask can be measured against the gateway on the same machine in the same run.
//
//   SDK_STORE=memory   InMemoryTaskStore (default)
//   SDK_STORE=sqlite   DatabaseTaskStore (@a2a-js/sdk/server/database) on SQLite via kysely + better-sqlite3, in the
//                      file SDK_DB (created; the schema comes from the SDK's own migration CLI, `a2a-db upgrade`,
//                      as its docs prescribe; WAL + synchronous=NORMAL and statements reused by SQL text, like the
//                      gateway's store)
//   SDK_TASKS=10000    tasks stored before listening (ids from benchTaskId(), content from benchTask())
//
// JSON-RPC at /a2a/jsonrpc, REST at /a2a/rest, agent card at /.well-known/agent-card.json, no authentication
// (UserBuilder.noAuthentication: every request is owner "unknown", the scope `new ServerCallContext()` saves to).
// Prints `sdk server listening on http://127.0.0.1:PORT` (127.0.0.1 only, port SDK_PORT or any) and stops on
// SIGTERM/SIGINT.
//
//   node --import tsx tools/bench/sdk-server.ts
import { execFileSync } from "node:child_process";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { AgentCard, Part, Role as RoleEnum, Task } from "@a2a-js/sdk";
import type { AgentExecutor, TaskStore } from "@a2a-js/sdk/server";
import type { Task as ModelTask } from "../../src/protocol/model.js";

const root = path.resolve(import.meta.dirname, "../..");
/** The SDK's migration CLI (`a2a-db`, the package's bin). */
const sdkMigrationCli = path.join(root, "node_modules", "@a2a-js", "sdk", "dist", "cli", "a2a_db.js");

// ---------------------------------------------------------------------------------------------------------------
// The bench's task set, shared with tools/bench/tasks.ts so both servers hold the same content.

/** Deterministic UUID-shaped id of bench task `i`. */
export function benchTaskId(i: number): string {
  return `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;
}

/** The content of bench task `i`: a completed turn (user prompt, agent reply, one text artifact, usage metadata),
 * shaped like what the gateway stores after a real `message/send`. Each server encodes it in its own model. */
export function benchTask(i: number, timestamp: string) {
  const id = benchTaskId(i);
  const contextId = `00000000-0000-4000-9000-${(i % 100).toString(16).padStart(12, "0")}`;
  return {
    id,
    contextId,
    timestamp,
    user: { messageId: `00000000-0000-4000-a000-${i.toString(16).padStart(12, "0")}`, text: `Summarise change #${i} in one line.` },
    agent: { messageId: `00000000-0000-4000-b000-${i.toString(16).padStart(12, "0")}`, text: `Change #${i}: renamed the helper and updated its two callers.` },
    artifact: {
      artifactId: `${id}:text`,
      name: "response",
      metadata: {
        shared: {
          stream: {
            block_type: "text",
            source: "assistant_text",
            message_id: `msg_bench${String(i).padStart(8, "0")}`,
            part_id: `prt_bench${String(i).padStart(8, "0")}`,
            event_id: `${id}:${contextId}:2`,
            sequence: 2,
            role: "agent",
          },
        },
      } as Record<string, unknown>,
    },
    metadata: {
      opencode: { output_negotiation: { accepted_output_modes: ["text/plain", "application/json"] } },
      shared: {
        session: { id: `ses_bench${String(i % 100).padStart(8, "0")}` },
        usage: { input_tokens: 10, output_tokens: 12, total_tokens: 22, reasoning_tokens: 0, cache_tokens: { read_tokens: 0, write_tokens: 0 }, cost: 0 },
      },
    } as Record<string, unknown>,
  };
}

/** The gateway's internal model of bench task i (what the runtime stores after a completed turn). */
export function gatewayTask(i: number, timestamp: string): ModelTask {
  const t = benchTask(i, timestamp);
  const message = (m: { messageId: string; text: string }, role: "user" | "agent") => ({
    messageId: m.messageId,
    role,
    parts: [{ kind: "text" as const, text: m.text }],
    taskId: t.id,
    contextId: t.contextId,
  });
  return {
    id: t.id,
    contextId: t.contextId,
    status: { state: "completed", timestamp: t.timestamp },
    history: [message(t.user, "user"), message(t.agent, "agent")],
    artifacts: [{ artifactId: t.artifact.artifactId, name: t.artifact.name, parts: [{ kind: "text", text: t.agent.text }], metadata: t.artifact.metadata }],
    metadata: t.metadata,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The server

async function main(): Promise<void> {
  const [{ Role, TaskState }, server, database, expressServer, { default: express }] = await Promise.all([
    import("@a2a-js/sdk"),
    import("@a2a-js/sdk/server"),
    import("@a2a-js/sdk/server/database"),
    import("@a2a-js/sdk/server/express"),
    import("express"),
  ]);

  const storeKind = process.env.SDK_STORE ?? "memory";
  const count = Number(process.env.SDK_TASKS ?? 10_000);
  const port = Number(process.env.SDK_PORT ?? 0);
  if (storeKind !== "memory" && storeKind !== "sqlite") throw new Error(`SDK_STORE=${storeKind}: expected memory or sqlite`);

  const textPart = (text: string): Part => ({ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" });
  const toSdkTask = (i: number, timestamp: string): Task => {
    const t = benchTask(i, timestamp);
    const message = (m: { messageId: string; text: string }, role: RoleEnum) => ({
      messageId: m.messageId,
      contextId: t.contextId,
      taskId: t.id,
      role,
      parts: [textPart(m.text)],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    return {
      id: t.id,
      contextId: t.contextId,
      status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: t.timestamp },
      artifacts: [{ artifactId: t.artifact.artifactId, name: t.artifact.name, description: "", parts: [textPart(t.agent.text)], metadata: t.artifact.metadata, extensions: [] }],
      history: [message(t.user, Role.ROLE_USER), message(t.agent, Role.ROLE_AGENT)],
      metadata: t.metadata,
    };
  };

  let taskStore: TaskStore;
  let closeStore = async (): Promise<void> => {};
  const timestamp = new Date().toISOString();
  const context = new server.ServerCallContext();
  const started = performance.now();
  if (storeKind === "memory") {
    taskStore = new server.InMemoryTaskStore();
    for (let i = 0; i < count; i++) await taskStore.save(toSdkTask(i, timestamp), context);
  } else {
    const file = process.env.SDK_DB;
    if (file === undefined || file === "") throw new Error("SDK_STORE=sqlite needs SDK_DB (a file path)");
    // The SDK's documented operator step, in its offline form: `a2a-db upgrade --sql --dialect sqlite` renders the
    // schema's SQL, run here with exec(). (`a2a-db upgrade --url sqlite:<file>` opens the file through kysely, whose
    // throwaway Statements abort Node 24 when collected: see below.)
    const schema = execFileSync(process.execPath, [sdkMigrationCli, "upgrade", "--sql", "--dialect", "sqlite"], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    const [{ Kysely, SqliteDialect }, { default: SQLite }] = await Promise.all([import("kysely"), import("better-sqlite3")]);
    const sqlite = new SQLite(file);
    sqlite.exec(schema);
    // better-sqlite3 12 on Node 24.19+ aborts the process when a Statement is garbage-collected (src/storage/pin.ts),
    // and kysely prepares one per query. Statements are therefore reused by SQL text and kept for the life of the
    // process, as the gateway's store does; pragmas go through exec(), which makes no Statement.
    const statements = new Map<string, ReturnType<typeof sqlite.prepare>>();
    const prepare = sqlite.prepare.bind(sqlite);
    sqlite.prepare = ((sql: string) => {
      let statement = statements.get(sql);
      if (statement === undefined) statements.set(sql, (statement = prepare(sql)));
      return statement;
    }) as typeof sqlite.prepare;
    sqlite.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
    const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: sqlite }) });
    // One transaction for the bulk load (the per-row autocommit path is only slower, not different).
    await db.transaction().execute(async (trx) => {
      const bulk = new database.DatabaseTaskStore(trx);
      for (let i = 0; i < count; i++) await bulk.save(toSdkTask(i, timestamp), context);
    });
    taskStore = new database.DatabaseTaskStore(db);
    closeStore = () => db.destroy();
  }
  const fillMs = performance.now() - started;

  const executor: AgentExecutor = {
    // Not exercised by the bench (GetTask only); answers any message with a completed task.
    async execute(ctx, bus) {
      const now = new Date().toISOString();
      bus.publish(
        server.AgentEvent.task({
          id: ctx.taskId,
          contextId: ctx.contextId,
          status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now },
          artifacts: [],
          history: [ctx.userMessage],
          metadata: undefined,
        }),
      );
    },
    async cancelTask() {},
  };

  const app = express();
  let url = "";
  const iface = (suffix: string, binding: string) => ({ url: `${url}${suffix}`, protocolBinding: binding, tenant: "", protocolVersion: "1.0" });
  const httpServer: Server = await new Promise((resolve, reject) => {
    const s = app.listen(port, "127.0.0.1", (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  url = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  const agentCard: AgentCard = {
    name: "SDK bench agent",
    description: "@a2a-js/sdk comparison server of npm run bench:tasks",
    version: "1.0.0",
    supportedInterfaces: [iface("/a2a/jsonrpc", "JSONRPC"), iface("/a2a/rest", "HTTP+JSON")],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "bench", name: "Bench", description: "completes at once", tags: ["bench"], examples: [], inputModes: [], outputModes: [], securityRequirements: [] }],
    signatures: [],
  };
  const requestHandler = new server.DefaultRequestHandler(agentCard, taskStore, executor);
  const { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } = expressServer;
  app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: requestHandler }));
  app.use("/a2a/jsonrpc", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  app.use("/a2a/rest", restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));

  const check = await taskStore.load(benchTaskId(count - 1), context);
  if (count > 0 && check === undefined) throw new Error("pre-populated task not found");
  process.stderr.write(`  sdk server (${storeKind}): ${count} tasks stored in ${Math.round(fillMs)} ms\n`);
  process.stdout.write(`sdk server listening on ${url}\n`);

  const stop = (): void => {
    httpServer.closeAllConnections();
    httpServer.close(() => {
      void closeStore().finally(() => process.exit(0));
    });
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`sdk server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
