// The web console of a running cluster: serves the page (bundled by esbuild, bundle.ts), keeps one
// event socket per open page, and routes actions (small JSON POSTs) and extra sockets to the parts
// it shows: the Oberon cluster of `retrokube up` (kube-part.ts), a sheet cluster (sheets-part.ts),
// or both. Loopback by default; every request must come from a page this server served
// (util/http-guard.ts: Host, Origin, JSON bodies). Each page has a memory budget on the server;
// every action is answered with what it did, and every page sees every change.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { checkRequest, isLoopbackAddress } from '../util/http-guard.ts';
import { BadRequest, NotFound, readJsonObject } from '../util/json-body.ts';
import { logger } from '../util/log.ts';
import { grantCookie, hasToken, newConsoleToken, READ_ONLY } from './access.ts';
import { type PageFiles, pageFiles } from './bundle.ts';
import { type KubeTarget, kubePart } from './kube-part.ts';
import type { ConsolePart, PageSocket, Pages } from './part.ts';
import { type SheetsTarget, sheetsPart } from './sheets-part.ts';
import type { ConsoleEvent } from './types.ts';

export { checkCommand, type KubeTarget } from './kube-part.ts';
export type { SheetsTarget } from './sheets-part.ts';

const log = logger('console');

export const LIMITS = {
  maxBodyBytes: 8192, // the largest request is one command line (a sheet's `apply {json}` ≤ 3000 chars, escaped)
  maxClients: 32, // open pages (event sockets); a classroom of tabs, not an attack
  maxReadOnlyClients: 16, // of those, sockets without the token: pages with it always find a slot (#28.12)
  pingMs: 15_000, // event sockets are pinged this often; one that has not answered the last ping is closed
  maxBufferedBytes: 1 << 20, // a page that does not read gets no more events until it catches up
  maxPayload: 64 * 1024, // what a page may send on a socket (RFB input is a few bytes a message)
} as const;

/** What the console shows: an Oberon cluster, a sheet cluster, or both (one at least). */
export interface ConsoleTarget {
  kube?: KubeTarget;
  sheets?: SheetsTarget;
}

export interface ConsoleOptions {
  /** Address to listen on; default 127.0.0.1. Anything else must be asked for by name. */
  host?: string;
  port?: number;
  /** The console's token (default: a new random one); callers keep one across restarts in a 0600 file. */
  token?: string;
  /** Default LIMITS.pingMs (tests shorten it). */
  pingMs?: number;
}

export interface ConsoleServer {
  /** The console's address, without its token. */
  url: string;
  /** The URL to open: with `?token=`, which lets that browser act (print it to the person who started it). */
  openUrl: string;
  close(): Promise<void>;
}

export async function startConsole(target: ConsoleTarget, o: ConsoleOptions = {}): Promise<ConsoleServer> {
  const host = o.host ?? '127.0.0.1';
  // Whoever reaches the console can switch machines off, stop node agents and forge frames.
  if (!isLoopbackAddress(host))
    throw new Error(
      `the console listens on loopback only (asked for ${host}); reach it through an SSH tunnel`,
    );
  if (!target.kube && !target.sheets) throw new Error('the console needs a cluster to show');
  const files: PageFiles = await pageFiles();
  const token = o.token ?? newConsoleToken();
  const sockets = new Map<WebSocket, PageSocket>();
  const readOnly = new Set<WebSocket>();
  const alive = new WeakSet<WebSocket>();
  const pages: Pages = {
    all: () => sockets.values(),
    broadcast: (e) => {
      for (const p of sockets.values()) if (!p.behind()) p.send(e);
    },
  };
  const parts: ConsolePart[] = [];
  if (target.kube) parts.push(await kubePart(target.kube, pages, target.sheets !== undefined));
  if (target.sheets) parts.push(sheetsPart(target.sheets, pages, () => sockets.size > 0));
  const actions = Object.assign({}, ...parts.map((p) => p.actions)) as ConsolePart['actions'];
  const reads = Object.assign({}, ...parts.map((p) => p.reads)) as ConsolePart['reads'];
  const upgrades = Object.assign({}, ...parts.map((p) => p.upgrades)) as ConsolePart['upgrades'];

  const server = http.createServer((req, res) => {
    const reply = (code: number, body: unknown): void => {
      res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(`${JSON.stringify(body)}\n`);
    };
    const g = checkRequest(req, { requireJson: true });
    if (!g.ok) {
      req.resume();
      return reply(g.status, { error: g.error });
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method === 'GET') {
      const read = reads[path];
      if (read)
        return void Promise.resolve()
          .then(read)
          .then((r) => reply(200, r))
          .catch((e: Error) => reply(502, { error: e.message }));
      const file = files.get(path === '/' ? '/index.html' : path);
      if (!file) return reply(404, { error: `no ${path}` });
      if (path === '/') grantCookie(req, res, token);
      res.writeHead(200, {
        'content-type': file.type,
        'cache-control': 'no-cache',
        'content-security-policy':
          "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self' 'unsafe-inline'",
        'x-content-type-options': 'nosniff',
      });
      res.end(file.body);
      return;
    }
    const action = req.method === 'POST' ? actions[path] : undefined;
    if (!action) {
      req.resume();
      return reply(404, { error: `no ${req.method} ${path}` });
    }
    if (!hasToken(req, token)) {
      req.resume();
      return reply(401, { error: READ_ONLY });
    }
    readJsonObject(req, LIMITS.maxBodyBytes)
      .then(action)
      .then((r) => reply(200, r))
      .catch((e: Error) =>
        reply(e instanceof BadRequest ? 400 : e instanceof NotFound ? 404 : 409, { error: e.message }),
      );
  });

  const wss = new WebSocketServer({ noServer: true, maxPayload: LIMITS.maxPayload });
  server.on('upgrade', (req, socket, head) => {
    const g = checkRequest(req);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const refuse = (code: number, why: string): void => {
      socket.end(
        `HTTP/1.1 ${code} ${code === 403 ? 'Forbidden' : 'Refused'}\r\ncontent-type: text/plain\r\n\r\n${why}\n`,
      );
    };
    if (!g.ok) return refuse(403, g.error);
    if (path === '/api/events') {
      const trusted = hasToken(req, token);
      if (!trusted && readOnly.size >= LIMITS.maxReadOnlyClients)
        return refuse(503, `at most ${LIMITS.maxReadOnlyClients} pages without the console's token at once`);
      if (sockets.size >= LIMITS.maxClients) return refuse(503, `at most ${LIMITS.maxClients} pages at once`);
      wss.handleUpgrade(req, socket, head, (ws) => {
        alive.add(ws);
        ws.on('pong', () => alive.add(ws));
        if (!trusted) readOnly.add(ws);
        const page: PageSocket = {
          behind: () => ws.bufferedAmount > LIMITS.maxBufferedBytes,
          send: (e: ConsoleEvent) => {
            if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(e));
          },
        };
        sockets.set(ws, page);
        ws.on('close', () => {
          sockets.delete(ws);
          readOnly.delete(ws);
        });
        ws.on('message', () => undefined); // the page only listens here
        for (const part of parts) for (const e of part.greet()) page.send(e);
      });
      return;
    }
    const upgrade = upgrades[path];
    if (!upgrade) return refuse(404, 'no such socket');
    // input sockets (a machine's screen and keyboard) steer: the token only
    if (!hasToken(req, token)) return refuse(401, READ_ONLY);
    return upgrade(req, socket, head, wss, refuse);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  log.info({ url: `http://${shown}:${port}/` }, 'console listening');
  // A page that does not read (or is gone without a FIN) does not answer pings: its slot is freed.
  const pinger = setInterval(() => {
    for (const ws of sockets.keys()) {
      if (!alive.has(ws)) {
        log.info('console event socket closed: it did not answer a ping');
        ws.terminate();
        continue;
      }
      alive.delete(ws);
      ws.ping();
    }
  }, o.pingMs ?? LIMITS.pingMs);
  pinger.unref();
  return {
    url: `http://${shown}:${port}/`,
    openUrl: `http://${shown}:${port}/?token=${token}`,
    close: async () => {
      clearInterval(pinger);
      for (const ws of wss.clients) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      for (const part of parts) await part.close();
    },
  };
}
