// HMAC request signing (spec §6): HMAC-SHA256, lowercase hex, over "<ts>.<raw body>", headers
// X-SNCF-Timestamp / X-SNCF-Signature, a ±300 s window — plus what the reference lacks: a replay
// cache, so a captured request cannot be sent again inside the window. The cache lives in memory,
// so a restarted apiserver also refuses every request signed before the second it started in, and
// timestamps more than futureSkewSec ahead are refused at all times: a request captured before a
// restart cannot be replayed after it (#28.4; at most one forward-dated by up to that skew and
// captured in the seconds just before the restart could be).
// Two identical writes in one second are not a replay (#30.9): our clients put a random `nonce`
// field into every signed body, so each request signs differently. The body stays JSON the
// reference apiserver accepts (it ignores fields it does not know) and the signed string stays
// "<ts>.<body>"; a reference client's identical repeat within one second is still refused, since
// nothing tells it from a replay.
import { createHmac, createSecretKey, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';

export const TIMESTAMP_HEADER = 'X-SNCF-Timestamp';
export const SIGNATURE_HEADER = 'X-SNCF-Signature';

export const LIMITS = {
  defaultTtlSec: 300, // reference SIGN_TTL: largest allowed |now - ts|
  // Signatures remembered at most; beyond it new requests are refused, never old ones forgotten
  // early. An entry lives until its timestamp leaves the window (≤ ttl + futureSkewSec = 310 s), so
  // 10,000 nodes heartbeating every 10 s (1,000 signed requests/s) hold ~310,000; with room for people
  // and retries: 400,000 (~50 MB at ~120 B an entry, estimated). The old 200,000 refused every request after ~200 s at that scale.
  replayCacheMax: 400_000,
  futureSkewSec: 10, // a timestamp this far ahead of the apiserver's clock at most (clock skew between hosts)
  nonceBytes: 8, // random bytes (hex) in every signed body of ours: identical writes sign differently
} as const;

/** The body a client of ours signs: BODY plus a fresh random `nonce` (ignored by every apiserver). */
export function withNonce<T extends Record<string, unknown>>(body: T): T & { nonce: string } {
  return { ...body, nonce: randomBytes(LIMITS.nonceBytes).toString('hex') };
}

// createHmac given the key as a Buffer imports it anew on every call, which costs several times the
// HMAC itself (the largest single cost of a signed heartbeat in a profile of bench/sheets-scale); an
// apiserver verifies every request with one key, so the imported key is kept (the last one used).
let lastKey: { key: string; object: KeyObject } | undefined;
function keyObject(key: string): KeyObject {
  if (lastKey?.key !== key) lastKey = { key, object: createSecretKey(Buffer.from(key, 'utf8')) };
  return lastKey.object;
}

export function sign(key: string, timestamp: string, body: string | Uint8Array): string {
  const h = createHmac('sha256', keyObject(key));
  h.update(`${timestamp}.`);
  h.update(typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
  return h.digest('hex');
}

/** Headers for one request; every client of ours sends them when a key is set. */
export function signRequest(
  key: string,
  body: string | Uint8Array,
  nowSec = Math.floor(Date.now() / 1000),
): Record<string, string> {
  const ts = String(nowSec);
  return { [TIMESTAMP_HEADER]: ts, [SIGNATURE_HEADER]: sign(key, ts, body) };
}

export type VerifyResult = { ok: true } | { ok: false; reason: string };

/** Stateless check: parts present, integer timestamp within ttl, constant-time hex compare. */
export function verifySignature(
  key: string,
  timestamp: string | undefined,
  signature: string | undefined,
  body: string | Uint8Array,
  nowSec: number,
  ttlSec: number = LIMITS.defaultTtlSec,
): VerifyResult {
  if (!key) return { ok: false, reason: 'no signing key' };
  if (!timestamp || !signature) return { ok: false, reason: 'missing timestamp or signature' };
  if (!/^-?\d+$/.test(timestamp.trim())) return { ok: false, reason: 'timestamp is not an integer' };
  const ts = Number(timestamp.trim());
  if (Math.abs(nowSec - ts) > ttlSec) return { ok: false, reason: 'timestamp outside the window' };
  const expected = Buffer.from(sign(key, timestamp, body), 'utf8');
  const given = Buffer.from(signature, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'signature mismatch' };
  return { ok: true };
}

/**
 * Remembers accepted signatures until their timestamp leaves the window. Memory is bounded: an
 * entry lives at most 2×ttl, and past `max` live entries new requests are refused (fail closed).
 */
export class ReplayCache {
  readonly #seen = new Map<string, number>(); // signature → expiry (Unix s)
  // expiry second → the signatures expiring then, so pruning touches only what expires (a sweep of
  // every entry held the event loop for milliseconds each second at 300,000 entries).
  readonly #byExpiry = new Map<number, string[]>();
  readonly #max: number;
  #pruned = Number.NEGATIVE_INFINITY; // every expiry second below this has been dropped
  constructor(max: number = LIMITS.replayCacheMax) {
    this.#max = max;
  }
  get size(): number {
    return this.#seen.size;
  }
  /** True if this signature is new (and remembers it); false if it was seen or the cache is full. */
  admit(signature: string, timestampSec: number, nowSec: number, ttlSec: number): boolean {
    this.prune(nowSec);
    if (this.#seen.has(signature)) return false;
    if (this.#seen.size >= this.#max) return false;
    const exp = timestampSec + ttlSec;
    this.#seen.set(signature, exp);
    const bucket = this.#byExpiry.get(exp);
    if (bucket) bucket.push(signature);
    else this.#byExpiry.set(exp, [signature]);
    return true;
  }
  /** Forgets entries that expired before nowSec: only their buckets are visited. */
  prune(nowSec: number): void {
    if (nowSec <= this.#pruned) return;
    this.#pruned = nowSec;
    for (const [exp, sigs] of this.#byExpiry) {
      if (exp >= nowSec) continue;
      for (const s of sigs) this.#seen.delete(s);
      this.#byExpiry.delete(exp);
    }
  }
}

/** Verifier the apiserver owns: signature check first, then the replay cache. */
export class RequestVerifier {
  readonly #key: string;
  readonly #ttl: number;
  readonly #cache: ReplayCache;
  readonly #startedAt: number | undefined;
  /**
   * `startedAtSec`: when this verifier's (empty) cache began; requests signed before it are
   * refused, since the cache cannot know whether an earlier process saw them.
   */
  constructor(
    key: string,
    ttlSec: number = LIMITS.defaultTtlSec,
    cacheMax: number = LIMITS.replayCacheMax,
    startedAtSec?: number,
  ) {
    this.#key = key;
    this.#ttl = ttlSec;
    this.#cache = new ReplayCache(cacheMax);
    this.#startedAt = startedAtSec;
  }
  get replayEntries(): number {
    return this.#cache.size;
  }
  verify(
    timestamp: string | undefined,
    signature: string | undefined,
    body: string | Uint8Array,
    nowSec: number,
  ): VerifyResult {
    const r = verifySignature(this.#key, timestamp, signature, body, nowSec, this.#ttl);
    if (!r.ok) return r;
    const ts = Number((timestamp as string).trim());
    if (ts > nowSec + LIMITS.futureSkewSec)
      return {
        ok: false,
        reason: `timestamp more than ${LIMITS.futureSkewSec} s in the future: check this client's clock`,
      };
    if (this.#startedAt !== undefined && ts < this.#startedAt)
      return { ok: false, reason: 'signed before the apiserver started (a possible replay); sign it again' };
    if (!this.#cache.admit(signature as string, Number((timestamp as string).trim()), nowSec, this.#ttl)) {
      return { ok: false, reason: 'replayed request' };
    }
    return { ok: true };
  }
}
