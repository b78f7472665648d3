// Who may talk to the console: a page it served itself. The Host header must name the address the
// console listens on (a DNS-rebinding page carries its own name there), and an Origin, when sent
// (browsers always send one on WebSockets and POSTs), must be that same host over http. Minimal on
// purpose: the lead unifies it with util/http-guard.ts once that lands.
import type http from 'node:http';

/** Host names that mean this machine, accepted with the console's port. */
const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];

export interface GuardVerdict {
  ok: boolean;
  why?: string;
}

/** Hosts ("name:port") a request may carry, for a server bound to `bind`:`port`. */
export function allowedHosts(bind: string, port: number): Set<string> {
  const names = new Set<string>([bind.includes(':') && !bind.startsWith('[') ? `[${bind}]` : bind]);
  if (bind === '127.0.0.1' || bind === '::1' || bind === 'localhost')
    for (const n of LOOPBACK_NAMES) names.add(n);
  return new Set([...names].map((n) => `${n}:${port}`));
}

/** Pure check of one request's Host and Origin headers. */
export function checkRequest(
  headers: { host?: string; origin?: string },
  hosts: ReadonlySet<string>,
): GuardVerdict {
  const host = (headers.host ?? '').toLowerCase();
  if (!hosts.has(host))
    return {
      ok: false,
      why: `Host "${headers.host ?? ''}" is not this console (open it as http://${[...hosts][0]}/)`,
    };
  const origin = headers.origin;
  if (origin === undefined) return { ok: true };
  if (origin.toLowerCase() !== `http://${host}`)
    return { ok: false, why: `a page from ${origin} may not use this console (only http://${host}/ may)` };
  return { ok: true };
}

export function guardRequest(req: http.IncomingMessage, hosts: ReadonlySet<string>): GuardVerdict {
  return checkRequest({ host: req.headers.host, origin: req.headers.origin }, hosts);
}
