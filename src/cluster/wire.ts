// What gateways send each other about a task (./peers.ts): the caller (Principal, whose scopes are a Set) and errors
// (A2AError) as plain JSON, and back. A caller another gateway authenticated is taken as it was resolved there: the
// gateways of one database share their credentials and trust each other (the bus is the database itself).
import type { Principal } from "../auth/index.js";
import { A2AError, toA2AError, type A2AErrorOptions, type ErrorReason } from "../contract/errors.js";

export interface WirePrincipal {
  id: string;
  credentialId: string;
  trustLevel: string;
  scopes: string[];
  admin: boolean;
  rateLimit?: Principal["rateLimit"];
}

export const principalToWire = (p: Principal): WirePrincipal => ({
  id: p.id,
  credentialId: p.credentialId,
  trustLevel: p.trustLevel,
  scopes: [...p.scopes],
  admin: p.admin,
  ...(p.rateLimit === undefined ? {} : { rateLimit: p.rateLimit }),
});

export const principalFromWire = (w: WirePrincipal): Principal => ({
  id: w.id,
  credentialId: w.credentialId,
  trustLevel: w.trustLevel,
  scopes: new Set(w.scopes),
  admin: w.admin,
  ...(w.rateLimit === undefined ? {} : { rateLimit: w.rateLimit }),
});

export interface WireError {
  reason: string;
  message: string;
  data: Record<string, unknown>;
  options?: A2AErrorOptions;
}

/** An error to send back as the A2A error it is or maps to (an upstream failure its UPSTREAM_*; else INTERNAL_ERROR). */
export function errorToWire(error: unknown): WireError {
  const a2a = toA2AError(error);
  return { reason: a2a.reason, message: a2a.message, data: a2a.data, options: a2a.options };
}

export const errorFromWire = (w: WireError): A2AError => new A2AError(w.reason as ErrorReason, w.message, w.data, w.options ?? {});
