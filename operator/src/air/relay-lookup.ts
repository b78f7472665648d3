// How a station finds its relay's address. Node's dgram resolves a host name on every send
// (getaddrinfo on libuv's 4-thread pool). The operator keeps one station per air: with 1,000 airs
// a hello every 5 s is 200 lookups/s, and where a lookup is slow (a name not resolvable yet, a
// busy DNS) they queued without bound — 25,000 pending getaddrinfo requests in the operator at
// 1,000 OberonKubes, blocking the pool for everything else. So a station keeps the answer for a
// while, and never has more than one lookup of its relay in flight: a few sends meanwhile wait for
// it, the rest are dropped, as frames lost on the air (with every send waiting, a heap snapshot of
// the operator at 1,000 OberonKubes, on a host where the relays' names did not resolve, held 18,366
// datagrams waiting, each with its promise and closure).
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';

export const LOOKUP_LIMITS = {
  // A relay is a Service: its ClusterIP lives as long as the Service, so an answer may be kept a
  // while; 30 s bounds how long a station talks to an address that went away.
  ttlMs: 30_000,
  /** Addresses whose kind literalLookup remembers: the relay's station table holds at most 1,024. */
  literals: 2048,
  /**
   * Sends that may wait for a lookup in flight; more fail at once (EAI_AGAIN: the datagram is
   * dropped). A station's hello comes every 5 s and a node's heartbeat every second: 8 covers the
   * first lookup of a station that opens with a burst, not a relay whose name stays unresolvable.
   */
  waitingSends: 8,
} as const;

/** The shape dgram.createSocket's `lookup` option takes (dgram passes the family as `options`). */
export type SocketLookup = (
  hostname: string,
  options: unknown,
  callback: (err: NodeJS.ErrnoException | null, address: string, family: number) => void,
) => void;

type Resolve = (hostname: string, family: 4 | 6) => Promise<LookupAddress>;

const resolveWithDns: Resolve = (hostname, family) =>
  new Promise((ok, fail) =>
    dnsLookup(hostname, { family }, (err, address, fam) => (err ? fail(err) : ok({ address, family: fam }))),
  );

/**
 * A lookup for one station's socket: IP literals answer at once; a name is resolved at most once
 * at a time, at most `waitingSends` sends wait for it, and its answer is kept for `ttlMs`. A failure
 * is not kept: the next send asks again.
 */
export function cachedLookup(
  family: 4 | 6,
  resolve: Resolve = resolveWithDns,
  now: () => number = Date.now,
  ttlMs: number = LOOKUP_LIMITS.ttlMs,
): SocketLookup {
  const answers = new Map<string, { answer: LookupAddress; until: number }>();
  const pending = new Map<string, { answer: Promise<LookupAddress>; waiting: number }>();
  return (hostname, _options, callback) => {
    // Answered on a later tick, as dns.lookup does: dgram sends from inside the callback.
    if (isIP(hostname)) return process.nextTick(callback, null, hostname, isIP(hostname));
    const kept = answers.get(hostname);
    if (kept && kept.until > now())
      return process.nextTick(callback, null, kept.answer.address, kept.answer.family);
    let inFlight = pending.get(hostname);
    if (!inFlight) {
      const answer = resolve(hostname, family).finally(() => pending.delete(hostname));
      inFlight = { answer, waiting: 0 };
      pending.set(hostname, inFlight);
    }
    if (inFlight.waiting >= LOOKUP_LIMITS.waitingSends) {
      const busy = Object.assign(new Error(`${hostname}: still resolving; datagram dropped`), {
        code: 'EAI_AGAIN',
      });
      return process.nextTick(callback, busy, '', family);
    }
    inFlight.waiting++;
    inFlight.answer.then(
      (answer) => {
        answers.set(hostname, { answer, until: now() + ttlMs });
        callback(null, answer.address, answer.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', family),
    );
  };
}

/**
 * The relay sends only to addresses it heard from (IP literals), yet dgram resolves the address of
 * every send, answering on the next tick: a callback and a deferral per delivery on the flood path.
 * An IP literal is answered at once; a name (a --bind given as a host name) still goes to DNS.
 */
const literalFamilies = new Map<string, number>();
export const literalLookup: SocketLookup = (host, options, callback) => {
  let family = literalFamilies.get(host);
  if (family === undefined) {
    // isIP runs two regular expressions: once per address, not once per delivery
    family = isIP(host);
    if (literalFamilies.size >= LOOKUP_LIMITS.literals) literalFamilies.clear();
    literalFamilies.set(host, family);
  }
  // dgram passes the family as the options; dns.lookup takes it so
  if (family === 0) dnsLookup(host, options as number, callback);
  else callback(null, host, family);
};
