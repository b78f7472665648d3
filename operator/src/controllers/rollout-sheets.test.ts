// The HTTP check against real endpoints on loopback: what answers 2xx/3xx passes, anything else —
// an error status, a closed port, a pod without an endpoint, a server slower than the timeout — fails.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpCheckUrls, SHEET_TARGET_LIMITS } from '../rollout/sheet-target.ts';
import { httpHealthy } from './rollout-sheets.ts';

let server: Server;
let port = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/slow')
      return void setTimeout(() => res.end('late'), SHEET_TARGET_LIMITS.httpTimeoutMs + 2_000);
    res.statusCode = req.url === '/healthz' ? 200 : req.url === '/moved' ? 302 : 503;
    res.end();
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const pods = (endpoint: string) => [
  { name: 'web-1', deployment: 'web', phase: 'Running', endpoints: endpoint },
  { name: 'web-2', deployment: 'web', phase: 'Running', endpoints: endpoint },
];

describe('httpHealthy', () => {
  it('passes on 2xx/3xx from every pod, fails otherwise', async () => {
    const ep = `127.0.0.1:${port}->8080/tcp`;
    expect(await httpHealthy(httpCheckUrls(pods(ep), 'web', { path: '/healthz', port: 8080 }))).toBe(true);
    expect(await httpHealthy(httpCheckUrls(pods(ep), 'web', { path: '/moved' }))).toBe(true);
    expect(await httpHealthy(httpCheckUrls(pods(ep), 'web', { path: '/broken' }))).toBe(false);
    // the port asked for is not one of the pods' endpoints
    expect(await httpHealthy(httpCheckUrls(pods(ep), 'web', { path: '/healthz', port: 9090 }))).toBe(false);
    // nothing listens there
    const closed = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const gone = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    expect(
      await httpHealthy(httpCheckUrls(pods(`127.0.0.1:${gone}->8080/tcp`), 'web', { path: '/healthz' })),
    ).toBe(false);
  });

  it('a server slower than the timeout fails the look (it would answer 200, late)', async () => {
    expect(
      await httpHealthy(httpCheckUrls(pods(`127.0.0.1:${port}->8080/tcp`), 'web', { path: '/slow' })),
    ).toBe(false);
  });
});
