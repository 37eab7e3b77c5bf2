// The real @a2a-js/sdk client as the e2e tests use it (test/e2e/a2a-sdk.test.ts, test/e2e/cluster.test.ts): a client
// pinned to one protocol line and binding, carrying the test bearer token, and builders of its message shapes.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";
import { TEST_TOKEN } from "./gateway.js";

export type Binding = "JSONRPC" | "HTTP+JSON";
export type Line = "1.0" | "0.3";

/** Sends the test bearer token with every call. */
export const bearer = {
  async before(args: { options?: { serviceParameters?: Record<string, string> } }) {
    args.options = { ...args.options, serviceParameters: { ...args.options?.serviceParameters, Authorization: `Bearer ${TEST_TOKEN}` } };
  },
  async after() {},
};

/**
 * A client that speaks exactly `line` over exactly `binding`. For 0.3 the card is fetched the way the SDK does
 * (with A2A-Version: 1.0) and only the 0.3 interfaces are kept, so the legacy transports are chosen (wire §17).
 */
export async function client(url: string, line: Line, binding: Binding): Promise<Client> {
  const legacyCompat = { enabled: line === "0.3" };
  const filteringFetch: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const card = (await res.json()) as { supportedInterfaces: { protocolVersion: string; protocolBinding: string }[] };
    card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === line && i.protocolBinding === binding);
    return new Response(JSON.stringify(card), { status: res.status, headers: { "content-type": "application/json" } });
  };
  const transport = binding === "JSONRPC" ? new JsonRpcTransportFactory({ legacyCompat }) : new RestTransportFactory({ legacyCompat });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [transport],
      preferredTransports: [binding],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat, fetchImpl: filteringFetch }),
      clientConfig: { interceptors: [bearer] } as never,
    }),
  );
  return factory.createFromUrl(url);
}

export const textPart = (value: string) => ({ content: { $case: "text" as const, value }, metadata: undefined, filename: "", mediaType: "text/plain" });

export function message(value: string, extra: { contextId?: string; taskId?: string; metadata?: Record<string, unknown> } = {}) {
  return {
    messageId: crypto.randomUUID(),
    role: Role.ROLE_USER,
    contextId: extra.contextId ?? "",
    taskId: extra.taskId ?? "",
    parts: [textPart(value)],
    metadata: extra.metadata,
    extensions: [],
    referenceTaskIds: [],
  };
}

export const send = (m: ReturnType<typeof message>, configuration?: Record<string, unknown>) => ({ tenant: "", message: m, configuration: configuration as never, metadata: undefined });

/** Text of an SDK artifact/message part list. */
export const textOf = (parts: { content?: { $case: string; value: unknown } }[] | undefined): string =>
  (parts ?? []).map((p) => (p.content?.$case === "text" ? String(p.content.value) : "")).join("");

