// Narrowing for untyped JSON (upstream payloads, metadata, request params).
export type Obj = Record<string, unknown>;

/** A plain JSON object (not null, not an array). */
export const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
