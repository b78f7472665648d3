// The operator's HTTP endpoints: /metrics (Prometheus text) and /healthz, /readyz (probes).
// Two ports like controller-runtime (:8080 metrics, :8081 probes); the same handler serves both,
// and port 0 picks a free port (tests).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** true/false, a reason for not ready, or ok with a note (readyz naming an optional kind it waits for). */
export type CheckResult = boolean | string | { ok: true; text: string };
export type Check = () => CheckResult;

export interface OperatorServerOptions {
  registry: Registry;
  /** Liveness: the process is not wedged. */
  healthz?: Check;
  /** Readiness: caches synced (or standing by as a non-leader). */
  readyz?: Check;
}

function verdict(check: Check | undefined): { ok: boolean; text: string } {
  const r = check ? check() : true;
  if (r === true) return { ok: true, text: 'ok\n' };
  if (typeof r === 'object') return { ok: true, text: `${r.text}\n` };
  return { ok: false, text: `${r === false ? 'not ready' : r}\n` };
}

export function createHandler(opts: OperatorServerOptions): http.RequestListener {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      opts.registry.metrics().then(
        (body) => res.writeHead(200, { 'Content-Type': opts.registry.contentType }).end(body),
        (err: Error) => res.writeHead(500).end(`${err.message}\n`),
      );
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const v = verdict(path === '/healthz' ? opts.healthz : opts.readyz);
      res.writeHead(v.ok ? 200 : 503, { 'Content-Type': 'text/plain' }).end(v.text);
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found: try /metrics, /healthz, /readyz\n');
  };
}

export async function listen(
  handler: http.RequestListener,
  port: number,
  host = '0.0.0.0',
): Promise<http.Server> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

export function portOf(server: http.Server): number {
  return (server.address() as AddressInfo).port;
}

export function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}
