// A gateway with a working task runtime behind it: the stub OpenCode (tools/upstream/stub.ts), the real upstream
// link (src/upstream) and an in-memory store unless the caller asks for SQLite.
import { pino, type Logger } from "pino";
import { loadConfig } from "../../src/config/index.js";
import { startUpstream, type Upstream } from "../../src/upstream/index.js";
import type { Storage } from "../../src/storage/index.js";
import { startStubUpstream, type StubUpstream, type StubUpstreamOptions } from "../../tools/upstream/stub.js";
import { startGateway, TEST_TOKEN, type StartedGateway } from "./gateway.js";

export interface TaskGateway {
  gw: StartedGateway;
  stub: StubUpstream;
  upstream: Upstream;
  url: string;
  close(): Promise<void>;
}

/** `logger`: where the gateway and the upstream link log (default: nowhere). */
export async function startTaskGateway(
  env: Record<string, string> = {},
  stubOptions: StubUpstreamOptions = {},
  { logger, storage, pushClock }: { logger?: Logger; storage?: Storage; pushClock?: () => number } = {},
): Promise<TaskGateway> {
  const stub = await startStubUpstream(stubOptions);
  const fullEnv = {
    A2A_BEARER_TOKEN: TEST_TOKEN,
    OPENCODE_BASE_URL: stub.url,
    A2A_TASK_STORE_BACKEND: "memory",
    ...env,
  };
  const upstream = await startUpstream(loadConfig(fullEnv), logger ?? pino({ level: "silent" }));
  const gw = await startGateway(fullEnv, {
    upstream,
    ...(logger === undefined ? {} : { logger }),
    ...(storage === undefined ? {} : { storage }),
    ...(pushClock === undefined ? {} : { pushClock }),
  });
  return {
    gw,
    stub,
    upstream,
    url: gw.url,
    async close() {
      await gw.close();
      await upstream.stop();
      await stub.close();
    },
  };
}
