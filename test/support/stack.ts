// The e2e stack: the scripted model server, a hermetic real `opencode serve`, the upstream link and a gateway in
// front of it (test/e2e/*). One per test file; `close()` stops everything in reverse order.
import { pino } from "pino";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import { startHermeticOpencode, type HermeticOpencode, type HermeticOpencodeOptions } from "../../tools/upstream/hermetic.js";
import { startModelServer, type ModelServer } from "../../tools/upstream/model-server.js";
import { opencodeMcpConfig } from "../../src/mcp/credential.js";
import { bindGateway, privateStore, startGateway, TEST_TOKEN, type StartedGateway } from "./gateway.js";

export interface RealStack {
  model: ModelServer;
  oc: HermeticOpencode;
  upstream: Upstream;
  gw: StartedGateway;
  /** The gateway's environment (OPENCODE_BASE_URL, workspace root, … plus the caller's). */
  env: Record<string, string>;
  /** Closes the gateway and starts a new one on the same upstream (and store, when it is a file). */
  restartGateway(): Promise<StartedGateway>;
  close(): Promise<void>;
}

export interface RealStackOptions {
  /** OPENCODE_SERVER_PASSWORD for OpenCode and the gateway. */
  password?: string;
  /** Extra gateway environment (store URL, toggles, TTLs, …). */
  env?: Record<string, string>;
  /** Extra options of the hermetic OpenCode (config overrides, …). */
  opencode?: Omit<HermeticOpencodeOptions, "modelBaseUrl" | "password">;
  /**
   * The gateway's MCP endpoint as OpenCode's MCP server `a2a` with this A2A_MCP_TOKEN: the gateway's port is bound
   * before OpenCode starts (restartGateway then binds a new port, which OpenCode does not know).
   */
  mcpToken?: string;
}

export async function startRealStack(opts: RealStackOptions = {}): Promise<RealStack> {
  const model = await startModelServer();
  const bound = opts.mcpToken === undefined ? undefined : await bindGateway();
  const mcpConfig = bound === undefined ? {} : opencodeMcpConfig(bound.url, opts.mcpToken!);
  const oc = await startHermeticOpencode({
    modelBaseUrl: model.baseUrl,
    ...(opts.password === undefined ? {} : { password: opts.password }),
    ...opts.opencode,
    config: { ...opts.opencode?.config, ...mcpConfig },
  });
  // One store for the stack's life, so restartGateway() finds the tasks of the gateway before it.
  const store = privateStore(opts.env ?? {});
  const env: Record<string, string> = {
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_BASE_URL: oc.url,
    OPENCODE_WORKSPACE_ROOT: oc.workspace,
    ...(opts.password === undefined ? {} : { OPENCODE_SERVER_PASSWORD: opts.password }),
    ...store.env,
    ...(opts.mcpToken === undefined ? {} : { A2A_MCP_TOKEN: opts.mcpToken }),
    ...opts.env,
  };
  const upstream = await startUpstream(loadConfig(env), pino({ level: "silent" }));
  const stack: RealStack = {
    model,
    oc,
    upstream,
    gw: await startGateway(env, { upstream, ...(bound === undefined ? {} : { bound }) }),
    env,
    async restartGateway() {
      await stack.gw.close();
      stack.gw = await startGateway(env, { upstream });
      return stack.gw;
    },
    async close() {
      await stack.gw.close();
      await upstream.stop();
      await oc.stop();
      await model.close();
      store.remove();
    },
  };
  return stack;
}
