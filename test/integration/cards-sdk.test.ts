// The card a request without A2A-Version gets (DECISIONS 1) serves both lines: the real @a2a-js/sdk 1.3.0 client
// resolves it both ways and then works through the interface it picked. 1.0: its DefaultAgentCardResolver (made to
// fetch without the A2A-Version header it normally sends), then JSON-RPC and REST clients. 0.3: the SDK's 0.3
// card parser (compat/v0_3 parseLegacyAgentCard, what a 0.3 client reads: url, preferredTransport,
// additionalInterfaces) and its legacy transports. Each client asks for an unknown task and must get TaskNotFound,
// and the wire shows which line it spoke.
import { randomUUID } from "node:crypto";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from "@a2a-js/sdk/client";
import { isLegacyAgentCard, parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_TOKEN } from "../support/gateway.js";
import { expectValid } from "../support/contract.js";
import { startTaskGateway, type TaskGateway } from "../support/tasks.js";

const CARD = "/.well-known/agent-card.json";
type Binding = "JSONRPC" | "HTTP+JSON";

let g: TaskGateway;
beforeAll(async () => {
  g = await startTaskGateway();
});
afterAll(async () => {
  await g?.close();
});

interface Sent {
  url: string;
  version: string | null;
  body: string | undefined;
}

/** A fetch that records what the SDK sends and, for the card, drops the A2A-Version header it always adds. */
function wire(): { fetchImpl: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (new URL(url).pathname === CARD) headers.delete("A2A-Version");
    headers.set("authorization", `Bearer ${TEST_TOKEN}`);
    sent.push({ url, version: headers.get("A2A-Version"), body: typeof init?.body === "string" ? init.body : undefined });
    return fetch(url, { ...init, headers });
  };
  return { fetchImpl, sent };
}

async function expectTaskNotFound(client: Client): Promise<void> {
  const err = await client.getTask({ tenant: "", id: randomUUID(), historyLength: undefined as never }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Error);
  // JsonRpcTaskNotFoundError / RestTaskNotFoundError: the SDK's typed error for -32001 / HTTP 404 TASK_NOT_FOUND.
  expect((err as Error).constructor.name, String(err)).toMatch(/^(JsonRpc|Rest)?TaskNotFoundError$/);
}

const bindings: Binding[] = ["JSONRPC", "HTTP+JSON"];

describe("the header-less card", () => {
  it("is one card valid as a 0.3 and as a 1.0 AgentCard, listing 1.0 interfaces first, then 0.3 ones", async () => {
    const res = await fetch(`${g.url}${CARD}`);
    expect(res.status).toBe(200);
    const card = (await res.json()) as Record<string, any>;
    await expectValid("v0_3/AgentCard", card);
    await expectValid("v1_0/AgentCard", card);
    expect(card).toMatchObject({ protocolVersion: "0.3.0", url: g.url, preferredTransport: "HTTP+JSON", supportsAuthenticatedExtendedCard: true });
    expect(card.capabilities).toMatchObject({ extendedAgentCard: true, stateTransitionHistory: false });
    const versions = (card.supportedInterfaces as { protocolVersion: string }[]).map((i) => i.protocolVersion);
    expect(versions).toEqual(["1.0", "1.0", "0.3", "0.3"]);
    // Security in both shapes: the 0.3 `type` members and the 1.0 oneof member in each scheme, both requirement lists.
    expect(card.securitySchemes.bearerAuth).toEqual({ type: "http", scheme: "bearer", httpAuthSecurityScheme: { scheme: "Bearer" } });
    expect(card.security).toEqual([{ bearerAuth: [] }]);
    expect(card.securityRequirements).toEqual([{ schemes: { bearerAuth: { list: [] } } }]);
  });

  it.each(bindings)("the SDK's 1.0 card resolver takes it, and its 1.0 %s client works through it", async (binding) => {
    const { fetchImpl, sent } = wire();
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
        preferredTransports: [binding],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    const client = await factory.createFromUrl(g.url);
    expect(sent[0]).toMatchObject({ url: `${g.url}${CARD}`, version: null });
    const card = await client.getAgentCard();
    expect(card.supportedInterfaces?.[0]?.protocolVersion).toBe("1.0");
    await expectTaskNotFound(client);
    const call = sent.at(-1)!;
    expect(call.version).toBe("1.0");
    if (binding === "JSONRPC") expect(JSON.parse(call.body!).method).toBe("GetTask");
    else expect(new URL(call.url).pathname).toMatch(/^\/tasks\/[0-9a-f-]+$/);
  });

  it.each(bindings)("the SDK's 0.3 card parser takes it, and its 0.3 %s client works through it", async (binding) => {
    const { fetchImpl, sent } = wire();
    const legacyCompat = { enabled: true };
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat }), new RestTransportFactory({ fetchImpl, legacyCompat })],
        preferredTransports: [binding],
        // What a 0.3 client does: fetch the card without a version and read its 0.3 discovery fields.
        cardResolver: {
          resolve: async (base: string) => (parsed = parseLegacyAgentCard(await (await fetchImpl(new URL(CARD, base))).json())),
        },
      }),
    );
    let parsed: ReturnType<typeof parseLegacyAgentCard> | undefined;
    const client = await factory.createFromUrl(g.url);
    expect(sent[0]).toMatchObject({ url: `${g.url}${CARD}`, version: null });
    expect(parsed!.securitySchemes.bearerAuth?.scheme).toMatchObject({ $case: "httpAuthSecurityScheme", value: { scheme: "bearer" } });
    const interfaces = parsed!.supportedInterfaces ?? [];
    expect(interfaces.map((i) => i.protocolBinding)).toEqual(["HTTP+JSON", "HTTP+JSON", "JSONRPC"]);
    expect(interfaces.every((i) => i.protocolVersion.startsWith("0.3"))).toBe(true);
    await expectTaskNotFound(client);
    const call = sent.at(-1)!;
    if (binding === "JSONRPC") expect(JSON.parse(call.body!).method).toBe("tasks/get");
    else expect(new URL(call.url).pathname).toMatch(/^\/v1\/tasks\/[0-9a-f-]+$/);
    // The extended card through the same client (0.3 REST: GET /v1/card, parsed as 0.3 ProtoJSON).
    const extended = await client.getAgentCard();
    expect(JSON.stringify(extended.securitySchemes)).toMatch(/bearer/i);
    if (binding !== "JSONRPC") expect(sent.some((s) => new URL(s.url).pathname === "/v1/card")).toBe(true);
  });

  it("is not taken for a 0.3-only card by the SDK's legacy detector (it carries supportedInterfaces)", async () => {
    const card = await (await fetch(`${g.url}${CARD}`)).json();
    expect(isLegacyAgentCard(card)).toBe(false);
    const only03 = await (await fetch(`${g.url}${CARD}`, { headers: { "A2A-Version": "0.3" } })).json();
    expect(isLegacyAgentCard(only03)).toBe(true);
  });
});
