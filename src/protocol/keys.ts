// ProtoJSON parsers accept the proto snake_case names as well as lowerCamel. Normalize A2A payloads to lowerCamel
// before validation, leaving free-form maps (metadata, data parts, extension params) untouched.
const OPAQUE = new Set(["metadata", "data", "params", "credentials"]);

function camel(key: string): string {
  return key.includes("_") ? key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) : key;
}

export function camelizeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelizeKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const key = camel(k);
    // A camelCase key wins over its snake_case spelling when both are present.
    if (key !== k && key in (value as Record<string, unknown>)) continue;
    out[key] = OPAQUE.has(key) ? v : camelizeKeys(v);
  }
  return out;
}
