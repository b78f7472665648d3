import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { KubeClient } from '../runtime/client.ts';
import { CONSOLE_LIMITS, consolePath, sendToSerialConsole } from './kubevirt-console.ts';

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(server: Server): Promise<KubeClient> {
  servers.push(server);
  server.on('connection', (s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  // What sendToSerialConsole uses of a client: the server's URL and its TLS/credential options.
  return {
    server: new URL(`http://127.0.0.1:${port}`),
    kc: { applyToHTTPSOptions: async () => {} },
  } as never;
}

describe("a VMI's serial console, as the operator writes to it", () => {
  it('delivers the lines as one binary message on the console subresource, in the console protocol', async () => {
    const server = createServer();
    const wss = new WebSocketServer({ server });
    const got = new Promise<{ path: string; protocol: string; data: string }>((resolve) =>
      wss.on('connection', (ws, req) =>
        ws.on('message', (data) =>
          resolve({
            path: req.url ?? '',
            protocol: ws.protocol,
            data: Buffer.from(data as Buffer).toString('latin1'),
          }),
        ),
      ),
    );
    const client = await listen(server);
    await sendToSerialConsole(client, 'ns-1', 'rk-m-k-plane', 'Kube.Apply web 4 Ticker\n');
    expect(await got).toEqual({
      path: consolePath('ns-1', 'rk-m-k-plane'),
      protocol: CONSOLE_LIMITS.protocol,
      data: 'Kube.Apply web 4 Ticker\n',
    });
    wss.close();
  });

  it('says what the server answered when it refuses the upgrade', async () => {
    const client = await listen(
      createServer((_req, res) => {
        res.writeHead(404, 'Not Found').end();
      }),
    );
    await expect(sendToSerialConsole(client, 'ns-1', 'gone', 'x\n')).rejects.toThrow(
      'serial console of VMI ns-1/gone: HTTP 404 Not Found',
    );
  });

  it('gives up within its deadline on a server that takes the request and never answers', async () => {
    const client = await listen(createServer(() => undefined)); // holds every request open
    const t0 = Date.now();
    await expect(
      sendToSerialConsole(client, 'ns-1', 'slow', 'x\n', { openMs: 60_000, totalMs: 300 }),
    ).rejects.toThrow('serial console of VMI ns-1/slow: not done within 0.3 s');
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('refuses more than the board takes at once, before connecting', async () => {
    const client = {
      server: new URL('http://127.0.0.1:9'),
      kc: { applyToHTTPSOptions: async () => {} },
    } as never;
    await expect(
      sendToSerialConsole(client, 'ns-1', 'big', 'x'.repeat(CONSOLE_LIMITS.maxBytes + 1)),
    ).rejects.toThrow(`${CONSOLE_LIMITS.maxBytes + 1} bytes for the serial port`);
  });
});
