// One guard for every small HTTP server of ours (the sheets apiserver, the `up` control, the relay
// control, the console): what a web browser can be tricked into sending must not reach a handler.
//
// Threats it closes:
//   - cross-site requests: a page on any site can POST to http://127.0.0.1:PORT with a "simple"
//     content type (text/plain, form) and no preflight → we require application/json on requests
//     with side effects, and refuse any Origin but our own and any cross-site Sec-Fetch-Site;
//   - DNS rebinding: a page whose name resolves to 127.0.0.1 is same-origin with itself, so the
//     Origin matches the Host → a server bound to loopback accepts only loopback names in Host.
// Clients that are not browsers (curl, our CLIs, the reference kubelet/skctl/bridge) send no Origin
// and a loopback Host, and already send application/json: they pass unchanged.
//
// API
//   checkRequest(req, opts) → { ok: true } | { ok: false, status, error }   pure; no I/O
//     opts.hosts       'loopback' (default): Host must be localhost, 127.0.0.0/8 or [::1] (any port);
//                      'any': no Host check (a server bound to a non-loopback address, which must then
//                      authenticate every request itself); or a list of extra accepted host names.
//     opts.requireJson true: every method but GET/HEAD/OPTIONS needs Content-Type application/json
//                      (parameters such as charset allowed), else 415.
//   hostsForBind(address) → 'loopback' | 'any'     what `hosts` a server bound to `address` needs
//   isLoopbackAddress(address) → boolean           127.0.0.0/8, ::1, ::ffff:127.x, "localhost"
//   guardListener(listener, opts) → http.RequestListener
//     wraps a Node request listener: a refused request gets `status` and {"error": "..."} as JSON
//     and never reaches the listener. Fastify servers call checkRequest from an onRequest hook.
import type http from 'node:http';
import { isIP } from 'node:net';

export interface GuardOptions {
  hosts?: 'loopback' | 'any' | readonly string[];
  requireJson?: boolean;
}

export type GuardVerdict = { ok: true } | { ok: false; status: 400 | 403 | 415; error: string };

interface RequestLike {
  method?: string;
  headers: http.IncomingHttpHeaders;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isLoopbackAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  if (a === 'localhost' || a.endsWith('.localhost')) return true;
  if (a === '::1') return true;
  const v4 = a.startsWith('::ffff:') ? a.slice(7) : a;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

export function hostsForBind(address: string): 'loopback' | 'any' {
  return isLoopbackAddress(address) ? 'loopback' : 'any';
}

/** "host:port" / "[v6]:port" / "host" → the host name, lower case, without brackets. */
function hostName(hostHeader: string): string | undefined {
  const h = hostHeader.trim().toLowerCase();
  const m = /^\[([0-9a-f:.]+)\](?::\d{1,5})?$/.exec(h) ?? /^([a-z0-9._-]+)(?::\d{1,5})?$/.exec(h);
  return m?.[1];
}

function hostAllowed(name: string, hosts: GuardOptions['hosts']): boolean {
  if (hosts === 'any') return true;
  if (isLoopbackAddress(name)) return true;
  return Array.isArray(hosts) && hosts.some((h) => h.toLowerCase() === name);
}

export function checkRequest(req: RequestLike, opts: GuardOptions = {}): GuardVerdict {
  const hosts = opts.hosts ?? 'loopback';
  const hostHeader = req.headers.host;
  const name = typeof hostHeader === 'string' ? hostName(hostHeader) : undefined;
  if (hosts !== 'any') {
    if (name === undefined) return { ok: false, status: 400, error: 'missing or malformed Host header' };
    if (!hostAllowed(name, hosts))
      return {
        ok: false,
        status: 403,
        error: `Host "${String(hostHeader).slice(0, 100)}" refused: this server answers only to 127.0.0.1 / localhost (DNS rebinding)`,
      };
  }
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site')
    return { ok: false, status: 403, error: 'cross-site request refused' };
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let same = false;
    try {
      const o = new URL(String(origin));
      same =
        (o.protocol === 'http:' || o.protocol === 'https:') &&
        typeof hostHeader === 'string' &&
        o.host === hostHeader.trim().toLowerCase();
    } catch {
      same = false; // "null" (sandboxed pages, file:) and garbage are foreign
    }
    if (!same)
      return {
        ok: false,
        status: 403,
        error: `Origin "${String(origin).slice(0, 100)}" refused: only same-origin requests`,
      };
  }
  if (opts.requireJson && !SAFE_METHODS.has((req.method ?? 'GET').toUpperCase())) {
    const type = String(req.headers['content-type'] ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase();
    if (type !== 'application/json')
      return {
        ok: false,
        status: 415,
        error: `Content-Type must be application/json (got "${type.slice(0, 60) || 'none'}"); e.g. curl -H 'Content-Type: application/json'`,
      };
  }
  return { ok: true };
}

export function guardListener(listener: http.RequestListener, opts: GuardOptions = {}): http.RequestListener {
  return (req, res) => {
    const v = checkRequest(req, opts);
    if (v.ok) return listener(req, res);
    res.writeHead(v.status, { 'content-type': 'application/json' });
    res.end(`${JSON.stringify({ error: v.error })}\n`);
    req.resume(); // drain the body we will not read
  };
}
