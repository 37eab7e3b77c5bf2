// Abuse limits before authentication, per client address: failed authentications (A2A_AUTH_FAILURE_LIMIT) and
// requests without credentials overall (A2A_UNAUTHENTICATED_RATE_LIMIT) in a fixed window. An address over either
// limit gets 429 RATE_LIMITED with Retry-After until its window ends, before any credential is looked at. Failed
// authentications are audited as a sample: the first A2A_AUDIT_AUTH_FAILURE_SAMPLE of an address per window, then one
// entry when the address is blocked; the rest are only counted (a flood writes nothing to disk).
import { A2AError } from "../contract/errors.js";
import { boundedSet } from "../util/lru.js";

export interface AddressGuardOptions {
  windowMs: number;
  /** Failed authentications per address per window (0 = no limit). */
  maxFailures: number;
  /** Requests without credentials (public routes and failed authentications) per address per window (0 = no limit). */
  maxUnauthenticated: number;
  /** Failed authentications per address per window that get an audit entry. */
  auditSample: number;
  /** Addresses tracked at once; the oldest window is forgotten first. */
  maxAddresses?: number;
  now?: () => number;
}

interface Window {
  start: number;
  failures: number;
  unauthenticated: number;
  blockedAudited: boolean;
}

export class AddressGuard {
  readonly #windows = new Map<string, Window>();
  readonly #opts: Required<AddressGuardOptions>;
  /** Failed authentications not audited (counted for /metrics). */
  suppressed = 0;
  /** Requests refused before authentication. */
  refused = 0;

  constructor(opts: AddressGuardOptions) {
    this.#opts = { maxAddresses: 100_000, now: Date.now, ...opts };
  }

  #window(address: string): Window {
    const now = this.#opts.now();
    let w = this.#windows.get(address);
    if (w === undefined || now - w.start >= this.#opts.windowMs) {
      w = { start: now, failures: 0, unauthenticated: 0, blockedAudited: false };
      boundedSet(this.#windows, address, w, this.#opts.maxAddresses);
    }
    return w;
  }

  #refuse(w: Window, what: string, limit: number): A2AError {
    this.refused++;
    const retry = Math.max(1, Math.ceil((w.start + this.#opts.windowMs - this.#opts.now()) / 1000));
    return new A2AError(
      "RATE_LIMITED",
      `Too many ${what} from this address; retry in ${retry} s`,
      { retry_after_seconds: retry, limit, window_seconds: this.#opts.windowMs / 1000 },
      { headers: { "Retry-After": String(retry) } },
    );
  }

  /**
   * Before authentication: throws RATE_LIMITED when the address already failed too often in this window. Returns
   * whether a refusal should be audited (once per blocked window).
   */
  admit(address: string): void {
    const { maxFailures } = this.#opts;
    if (maxFailures <= 0) return;
    const w = this.#window(address);
    if (w.failures >= maxFailures) throw this.#refuse(w, "failed authentications", maxFailures);
  }

  /** A request without credentials on a public route: counted against A2A_UNAUTHENTICATED_RATE_LIMIT. */
  anonymous(address: string): void {
    const { maxUnauthenticated } = this.#opts;
    if (maxUnauthenticated <= 0) return;
    const w = this.#window(address);
    if (++w.unauthenticated > maxUnauthenticated) throw this.#refuse(w, "unauthenticated requests", maxUnauthenticated);
  }

  /** A failed authentication. Returns whether it should get an audit entry (the address's sample is not used up). */
  failed(address: string): boolean {
    const w = this.#window(address);
    w.failures++;
    w.unauthenticated++;
    if (w.failures <= this.#opts.auditSample) return true;
    this.suppressed++;
    return false;
  }

  /** A refusal by admit(): audited once per blocked window. */
  auditRefusal(address: string): boolean {
    const w = this.#window(address);
    if (w.blockedAudited) {
      this.suppressed++;
      return false;
    }
    w.blockedAudited = true;
    return true;
  }
}
