// The three wire dialects as tables over one codec (src/protocol/codec/codec.ts). What the generated JSON Schemas
// (generated/json-schema/<group>) already say is read from them, not restated: the enum spellings; the declared
// properties of a message and a task, whose order is the order of their keys on the wire (0.3 JSON-RPC's differs
// from ProtoJSON's) and whose presence decides the members a dialect has (`kind`, `referenceTaskIds`); whether
// status updates carry `final`; and, with `kind`, whether results are bare tagged objects (0.3 JSON-RPC) or
// ProtoJSON's one-key wrappers. The rest is named here: offset or token paging, the send configuration's
// `blocking`, and the two strategies, parts (with the message's part list key) and push configs (with their
// request keys).
import { readGeneratedJson } from "../../contract/catalog.js";
import type { Role, TaskState } from "../model.js";
import { invalid, type Obj, type WireLine } from "./common.js";
import { parts03, parts10, type PartStrategy } from "./parts.js";
import { push03, push03Rest, push10, type PushStrategy } from "./push.js";

type Schema = { enum?: string[]; anyOf?: { const: string }[]; properties?: Obj };
const schemaOf = (group: string, name: string): Schema => readGeneratedJson<Schema>("json-schema", group, `${name}.json`);

/** The declared properties of a generated object schema, in declaration order. */
const fieldsOf = (group: string, name: string): readonly string[] => Object.keys(schemaOf(group, name).properties ?? {});

/**
 * An enum of a dialect: the wire names of the generated schema in declaration order, which on the ProtoJSON
 * groups is the proto numbering (ProtoJSON also accepts the number), against the model's names (0.3's).
 */
class EnumTable<T> {
  readonly names: readonly string[];
  /** The model value of the proto zero value (`*_UNSPECIFIED`); undefined where the enum has none (0.3 JSON-RPC). */
  readonly unspecified: T | undefined;
  readonly #model = new Map<string, T>();
  readonly #wire = new Map<T, string>();

  constructor(group: string, name: string, model: (wire: string) => T) {
    const schema = schemaOf(group, name);
    this.names = schema.enum ?? (schema.anyOf ?? []).map((m) => m.const);
    for (const n of this.names) {
      const value = model(n);
      this.#model.set(n, value);
      if (value !== undefined) this.#wire.set(value, n);
    }
    const zero = this.names.find((n) => n.endsWith("_UNSPECIFIED"));
    this.unspecified = zero === undefined ? undefined : model(zero);
  }

  wire(value: T): string {
    return this.#wire.get(value)!;
  }

  /** The model value of wire name (or ProtoJSON number) `v`, else INVALID_PARAMS listing the names. */
  decode(v: unknown, field: string, what: string): T {
    const name = typeof v === "number" ? this.names[v] : v;
    if (typeof name !== "string" || !this.#model.has(name)) throw invalid(field, `must be a ${what} (${this.names.join(", ")})`);
    return this.#model.get(name)!;
  }
}

/** The model's state of a wire name: 0.3 JSON-RPC's are the model's; `TASK_STATE_INPUT_REQUIRED` is `input-required`. */
function modelState(wire: string): TaskState {
  if (!wire.startsWith("TASK_STATE_")) return wire as TaskState;
  const s = wire.slice("TASK_STATE_".length).toLowerCase().replace(/_/g, "-");
  // The proto zero value is the model's `unknown`; the 0.3 proto spells canceled `CANCELLED`.
  return (s === "unspecified" ? "unknown" : s === "cancelled" ? "canceled" : s) as TaskState;
}

/** The model's role of a wire name; ROLE_UNSPECIFIED has none (it is not a valid author). */
const modelRole = (wire: string): Role | undefined => (wire === "ROLE_UNSPECIFIED" ? undefined : (wire.replace(/^ROLE_/, "").toLowerCase() as Role));

export interface Dialect {
  readonly wire: WireLine;
  readonly states: EnumTable<TaskState>;
  readonly roles: EnumTable<Role | undefined>;
  /** Declared properties of a message and a task, whose key order differs between 0.3 JSON-RPC and ProtoJSON. */
  readonly fields: { message: readonly string[]; task: readonly string[] };
  /** 0.3 JSON-RPC: objects name themselves with `kind` and results are bare; ProtoJSON wraps a oneof in `{member}`. */
  readonly tagged: boolean;
  /** Status updates carry `final` (not 1.0: its stream closes after a terminal state). */
  readonly final: boolean;
  /** tasks/list pages by `limit` / `offset` (0.3 JSON-RPC) or by page token; 1.0 also filters by `statusTimestampAfter`. */
  readonly list: { paging: "offset" | "token"; statusTimestampAfter: boolean };
  /** Whether a send configuration blocks (`blocking`, or 1.0 `returnImmediately` inverted). */
  blocking(configuration: Obj): boolean | undefined;
  readonly parts: PartStrategy;
  readonly push: PushStrategy;
}

/** A dialect over the generated schemas of `group`. */
function dialect(wire: WireLine, group: string, rest: Omit<Dialect, "wire" | "states" | "roles" | "fields" | "tagged" | "final">): Dialect {
  const fields = { message: fieldsOf(group, "Message"), task: fieldsOf(group, "Task") };
  const states = new EnumTable(group, "TaskState", modelState);
  for (const name of states.names) if (!MODEL_STATES.has(modelState(name))) throw new Error(`${group}/TaskState ${name} has no model state`);
  const roles = new EnumTable(group, "Role", modelRole);
  const final = fieldsOf(group, "TaskStatusUpdateEvent").includes("final");
  return { wire, states, roles, fields, tagged: fields.message.includes("kind"), final, ...rest };
}

/** The model's states are 0.3's (src/protocol/model.ts); every dialect's must map onto them. */
const MODEL_STATES = new Set(new EnumTable("v0_3", "TaskState", modelState).names);

export const DIALECTS: Readonly<Record<WireLine, Dialect>> = {
  "0.3": dialect("0.3", "v0_3", {
    list: { paging: "offset", statusTimestampAfter: false },
    blocking: (c) => c.blocking as boolean | undefined,
    parts: parts03({ tagged: true, messageKey: "parts", bytes: "bytes", uri: "uri", file: fieldsOf("v0_3", "FileWithBytes"), wrapData: false }),
    push: push03,
  }),
  "0.3-rest": dialect("0.3-rest", "v0_3_rest", {
    list: { paging: "token", statusTimestampAfter: false },
    // proto3: an absent bool is false, so a configuration without `blocking` is non-blocking (what @a2a-js/sdk's
    // 0.3 REST client sends for a non-blocking call). No configuration at all: the default.
    blocking: (c) => (c.blocking as boolean | undefined) ?? false,
    parts: parts03({ tagged: false, messageKey: "content", bytes: "fileWithBytes", uri: "fileWithUri", file: fieldsOf("v0_3_rest", "FilePart"), wrapData: true }),
    push: push03Rest,
  }),
  "1.0": dialect("1.0", "v1_0", {
    list: { paging: "token", statusTimestampAfter: true },
    blocking: (c) => (c.returnImmediately === undefined ? undefined : !c.returnImmediately),
    parts: parts10,
    push: push10,
  }),
};
