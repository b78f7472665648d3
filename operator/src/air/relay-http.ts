// The relay's two small HTTP faces: Prometheus metrics (its own Registry) and a control endpoint
// (loss, air off/on, cut/restore a station, state). Control binds to loopback by default: whoever
// reaches it can silence the air.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { exchange } from '../util/http-exchange.ts';
import { guardListener, hostsForBind } from '../util/http-guard.ts';
import { BadRequest, readJsonObject } from '../util/json-body.ts';
import type { HttpEndpoint, Relay, RelayState } from './relay-types.ts';

// Not `import http from 'node:http'`: Node 24's ESM face of node:http loads undici and http2 (~30 ms
// of every air verb's start, #32); util/http-exchange.ts says more.
const http = process.getBuiltinModule('node:http');

export const HTTP_LIMITS = {
  /** Control requests are a few fields of JSON; anything bigger is a mistake or an attack. */
  MAX_BODY_BYTES: 4096,
  /** A client waits this long for the relay before reporting it unreachable. */
  CLIENT_TIMEOUT_MS: 5000,
  /** A state answer lists at most RELAY_LIMITS.MAX_PEERS stations (~200 bytes each): far below this. */
  MAX_ANSWER_BYTES: 4 * 1024 * 1024,
} as const;

/** Default control port of `retrokube air relay` (next to the air's 7524). */
export const DEFAULT_CONTROL_PORT = 7525;
export const DEFAULT_CONTROL_URL = `http://127.0.0.1:${DEFAULT_CONTROL_PORT}`;

/**
 * A Registry of the relay's own metrics, read from its counters at scrape time. prom-client loads
 * here, with the metrics endpoint: the other air verbs (`air state`, `air relay --help`) answer
 * without it (#32: its module tree is the slowest part of their start).
 */
export async function relayRegistry(relay: Relay): Promise<Registry> {
  const { Counter, Gauge, Registry } = await import('prom-client');
  const registry = new Registry();
  const counter = (name: string, help: string, read: () => number): void => {
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  };
  counter('air_relay_hellos_total', 'Hello datagrams received', () => relay.stats().hellos);
  counter('air_relay_frames_in_total', '33-byte frames received', () => relay.stats().framesIn);
  counter(
    'air_relay_frames_out_total',
    'Frame deliveries sent (one frame to one station)',
    () => relay.stats().framesOut,
  );
  counter('air_relay_malformed_total', 'Datagrams ignored for their size', () => relay.stats().malformed);
  counter('air_relay_send_errors_total', 'Failed UDP sends', () => relay.stats().sendErrors);
  counter('air_relay_stations_joined_total', 'Stations learned', () => relay.stats().joined);
  counter('air_relay_stations_gone_total', 'Stations forgotten', () => relay.stats().gone);
  counter(
    'air_relay_stations_refused_total',
    'Stations refused or evicted because their address or the table was full',
    () => relay.stats().refusedPeers,
  );
  new Counter({
    name: 'air_relay_dropped_total',
    help: 'Frames or deliveries not forwarded, by reason (loss, rate ceiling, air off, station cut, output budget, late: the send queue held earlier ones, queue: the kernel queue in front of the relay was full, a frame that would have waited past 50 ms)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const st = relay.stats();
      this.reset();
      this.labels('loss').inc(st.droppedLoss);
      this.labels('rate').inc(st.droppedRate);
      this.labels('off').inc(st.droppedOff);
      this.labels('cut').inc(st.droppedCut);
      this.labels('budget').inc(st.droppedBudget);
      this.labels('late').inc(st.droppedLate);
      this.labels('queue').inc(st.droppedQueue);
    },
  });
  new Gauge({
    name: 'air_relay_stations',
    help: 'Stations currently on the air',
    registers: [registry],
    collect() {
      this.set(relay.stats().peers);
    },
  });
  new Gauge({
    name: 'air_relay_queue_frames',
    help: 'Datagrams the kernel queue in front of the relay holds: 25 ms of its measured speed',
    registers: [registry],
    collect() {
      this.set(relay.stats().queueFrames);
    },
  });
  new Gauge({
    name: 'air_relay_loss_ratio',
    help: 'Configured probability of dropping one delivery',
    registers: [registry],
    collect() {
      this.set(relay.loss());
    },
  });
  new Gauge({
    name: 'air_relay_on',
    help: '1 while the air forwards frames',
    registers: [registry],
    collect() {
      this.set(relay.isOn() ? 1 : 0);
    },
  });
  return registry;
}

function listen(server: Server, port: number, bind: string, what: string): Promise<HttpEndpoint> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `cannot serve ${what} on tcp ${bind}:${port} (${err.code ?? err.message}); pick another port`,
        ),
      ),
    );
    server.listen(port, bind, () => {
      server.removeAllListeners('error');
      const address = server.address() as AddressInfo;
      const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      resolve({
        address,
        url: `http://${host}:${address.port}`,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}

/** Serves GET /metrics from the relay's Registry. */
export async function startRelayMetrics(relay: Relay, port: number, bind = '0.0.0.0'): Promise<HttpEndpoint> {
  const registry = await relayRegistry(relay);
  const server = http.createServer(
    guardListener(
      (req, res) => {
        if (req.method === 'GET' && (req.url === '/metrics' || req.url?.startsWith('/metrics?'))) {
          registry.metrics().then(
            (body) => {
              res.writeHead(200, { 'content-type': registry.contentType });
              res.end(body);
            },
            (err: Error) => {
              res.writeHead(500, { 'content-type': 'text/plain' });
              res.end(`metrics failed: ${err.message}\n`);
            },
          );
          return;
        }
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('only GET /metrics here\n');
      },
      { hosts: hostsForBind(bind) },
    ),
  );
  return listen(server, port, bind, '/metrics');
}

const CONTROL_ROUTES =
  'GET /state, POST /loss {"loss":P}, /off {"forgetPeers":bool}, /on, /cut {"target":T}, /restore {"target":T}';

/**
 * Serves the control API:
 *   GET  /state                      → RelayState
 *   POST /loss    {"loss": 0.3}
 *   POST /off     {"forgetPeers": false}
 *   POST /on
 *   POST /cut     {"target": "node-a" | "IP:PORT" | "IP"}
 *   POST /restore {"target": ... | "*"}
 * Every POST answers with the new state. Bad input gets 400 with a one-line reason.
 */
export function startRelayControl(relay: Relay, port: number, bind = '127.0.0.1'): Promise<HttpEndpoint> {
  // Same-origin JSON only, and loopback Host names while bound to loopback (util/http-guard.ts).
  const server = http.createServer(
    guardListener(
      (req, res) => {
        const send = (code: number, body: unknown): void => {
          res.writeHead(code, { 'content-type': 'application/json' });
          res.end(`${JSON.stringify(body)}\n`);
        };
        const path = (req.url ?? '/').split('?')[0];
        if (req.method === 'GET' && (path === '/state' || path === '/')) return send(200, relay.state());
        if (req.method === 'GET' && path === '/healthz') return send(200, { ok: true });
        if (req.method !== 'POST') return send(405, { error: `use ${CONTROL_ROUTES}` });
        readJsonObject(req, HTTP_LIMITS.MAX_BODY_BYTES, '{"loss":0.3}').then(
          (body) => {
            try {
              const target = (): string => {
                if (typeof body.target !== 'string' || !body.target.trim()) {
                  throw new BadRequest('"target" must name a station: a node name, IP:PORT or IP');
                }
                return body.target;
              };
              switch (path) {
                case '/loss':
                  if (typeof body.loss !== 'number')
                    throw new BadRequest('"loss" must be a number between 0 and 1');
                  try {
                    relay.setLoss(body.loss);
                  } catch (e) {
                    throw new BadRequest((e as Error).message);
                  }
                  break;
                case '/off':
                  if (body.forgetPeers !== undefined && typeof body.forgetPeers !== 'boolean') {
                    throw new BadRequest('"forgetPeers" must be true or false');
                  }
                  relay.off({ forgetPeers: body.forgetPeers === true });
                  break;
                case '/on':
                  relay.on();
                  break;
                case '/cut':
                  relay.cut(target());
                  break;
                case '/restore':
                  relay.restore(target());
                  break;
                default:
                  return send(404, { error: `no ${path}; use ${CONTROL_ROUTES}` });
              }
              send(200, relay.state());
            } catch (e) {
              send(e instanceof BadRequest ? 400 : 500, { error: (e as Error).message });
            }
          },
          (e: Error) => send(e instanceof BadRequest ? 400 : 500, { error: e.message }),
        );
      },
      { hosts: hostsForBind(bind), requireJson: true },
    ),
  );
  return listen(server, port, bind, 'the relay control');
}

/** Client side of the control API (used by `retrokube air off|on|loss|cut|restore|state`). */
export async function relayControl(
  baseUrl: string,
  action: 'state' | 'loss' | 'off' | 'on' | 'cut' | 'restore',
  body: Record<string, unknown> = {},
): Promise<RelayState> {
  let url: URL;
  try {
    url = new URL(action === 'state' ? '/state' : `/${action}`, baseUrl);
  } catch {
    throw new Error(`control URL "${baseUrl}" is not a URL; use e.g. ${DEFAULT_CONTROL_URL}`);
  }
  const res = await exchange(url.href, {
    method: action === 'state' ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: action === 'state' ? undefined : JSON.stringify(body),
    timeoutMs: HTTP_LIMITS.CLIENT_TIMEOUT_MS,
    maxBytes: HTTP_LIMITS.MAX_ANSWER_BYTES,
    followRedirects: true,
  }).catch((e: Error) => {
    throw new Error(
      `relay control at ${baseUrl} is unreachable (${e.message}); is "retrokube air relay" running with --control-port?`,
    );
  });
  let json: RelayState & { error?: string };
  try {
    json = JSON.parse(res.text);
  } catch {
    json = {} as RelayState;
  }
  if (res.status < 200 || res.status > 299)
    throw new Error(`relay refused ${action}: ${json.error ?? `HTTP ${res.status}`}`);
  return json;
}
