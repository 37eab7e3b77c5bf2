/**
 * Routing driven by the pinned OpenAPI snapshot (spec/upstream/opencode.openapi.json, refreshed by
 * tools/upstream/snapshot.ts): a request is matched against the path templates of the real server's operations, and
 * the route groups register their handlers by operationId, so the stub can neither invent a route nor drift from
 * the pinned one. An operation the stub does not implement answers 404 like an unknown path.
 */
import { readFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isObject } from "./common.js";

const DOC_FILE = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "spec", "upstream", "opencode.openapi.json");
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** What a handler gets: the request, its parsed parts and the instance directory it addresses. */
export interface StubRequest {
  req: IncomingMessage;
  res: ServerResponse;
  method: string;
  path: string;
  /** the path parameter of the matched template, as the raw segment */
  param(name: string): string;
  query: Record<string, string>;
  body: unknown;
  directory: string;
}

/** The handler has written its answer itself (SSE, 204, extra headers). */
export const RESPONDED = Symbol("responded");

/** Returns the JSON body of a 200, or RESPONDED; throws an HttpError for any other answer. */
export type Handler = (request: StubRequest) => unknown;

export interface Operation {
  method: string;
  path: string;
  operationId: string;
}

/** The pinned snapshot: its text (what `GET /doc` serves) and its operations. */
export interface Snapshot {
  text: string;
  operations: Operation[];
}

let snapshot: Promise<Snapshot> | undefined;

/** Reads the snapshot once per process. */
export function loadSnapshot(): Promise<Snapshot> {
  snapshot ??= readFile(DOC_FILE, "utf8").then((text) => ({ text, operations: operationsOf(JSON.parse(text) as unknown) }));
  return snapshot;
}

function operationsOf(doc: unknown): Operation[] {
  const paths = isObject(doc) && isObject(doc.paths) ? doc.paths : {};
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (isObject(op) && typeof op.operationId === "string") operations.push({ method: method.toUpperCase(), path, operationId: op.operationId });
    }
  }
  return operations;
}

type Segment = { param: string } | { text: string };

interface Route {
  segments: Segment[];
  /** "0" per literal segment, "1" per parameter: ascending order puts literals first where two templates differ */
  rank: string;
  handler: Handler | undefined;
}

export class Router {
  private readonly byMethod = new Map<string, Route[]>();
  private readonly byOperation = new Map<string, Route>();

  constructor(operations: Operation[]) {
    for (const op of operations) this.byOperation.set(op.operationId, this.add(op.method, op.path, undefined));
  }

  /** Serves the snapshot's operation `operationId`. */
  on(operationId: string, handler: Handler): void {
    const route = this.byOperation.get(operationId);
    if (route === undefined) throw new Error(`stub: no operation ${operationId} in the pinned OpenAPI snapshot`);
    if (route.handler !== undefined) throw new Error(`stub: ${operationId} is registered twice`);
    route.handler = handler;
  }

  /** A route the real server's document does not list (`GET /doc` itself, the stub's own controls). */
  extra(method: string, path: string, handler: Handler): void {
    this.add(method, path, handler);
  }

  /**
   * The handler of the most specific template matching the request: a literal segment beats a parameter
   * (`/session/status` before `/session/{sessionID}`). Undefined for an unknown or unimplemented route.
   */
  match(method: string, path: string): { handler: Handler; param: (name: string) => string } | undefined {
    const parts = path.split("/");
    for (const route of this.byMethod.get(method) ?? []) {
      if (route.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      const matches = route.segments.every((seg, i) => {
        const part = parts[i] ?? "";
        if ("text" in seg) return seg.text === part;
        params[seg.param] = part;
        return true;
      });
      if (!matches) continue;
      if (route.handler === undefined) return undefined;
      const param = (name: string): string => {
        const value = params[name];
        if (value === undefined) throw new Error(`stub: ${method} ${path} has no path parameter ${name}`);
        return value;
      };
      return { handler: route.handler, param };
    }
    return undefined;
  }

  private add(method: string, path: string, handler: Handler | undefined): Route {
    const segments = path.split("/").map((s): Segment => (/^\{[^}]+\}$/.test(s) ? { param: s.slice(1, -1) } : { text: s }));
    const route: Route = { segments, rank: segments.map((s) => ("param" in s ? "1" : "0")).join(""), handler };
    const routes = this.byMethod.get(method) ?? [];
    routes.push(route);
    routes.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
    this.byMethod.set(method, routes);
    return route;
  }
}
