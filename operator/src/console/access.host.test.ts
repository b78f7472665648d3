// #28.13 and #28.12, probed as the issue did: another local user (uid 65534) steers the console
// with curl (before: any local user could apply through it without the cluster's token), and 32
// clients that open the event socket and never read hold every slot (before: real pages got 503).
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createApiServer } from '../sheets/apiserver/server.ts';
import { SheetsClient } from '../sheets/ctl/client.ts';
import { MemoryStore } from '../sheets/store/memory.ts';
import { curlAsNobody } from '../util/other-user.testkit.ts';
import { type ConsoleServer, LIMITS, startConsole } from './server.ts';

let web: ConsoleServer;
let api: Awaited<ReturnType<typeof createApiServer>>;
let client: SheetsClient;
const token = 'c0ffee'.repeat(8);

beforeAll(async () => {
  api = await createApiServer({ store: new MemoryStore(), token: 'cluster-token', samples: true });
  const url = await api.listen(0, '127.0.0.1');
  client = new SheetsClient({ url, token: 'cluster-token' });
  web = await startConsole({ sheets: { name: 'probe', client } }, { port: 0, token, pingMs: 4000 });
}, 120_000);

afterAll(async () => {
  await web?.close();
  await api?.close();
});

const scale = (n: number) => JSON.stringify({ op: 'scale', deployment: 'ticker', replicas: n });
const replicas = async () =>
  String((await client.get('deployments')).find((d) => d.name === 'ticker')?.replicas);

describe('#28.13 the console steers only with its token', () => {
  it('another local user without the token reads, but cannot act; the token (cookie or bearer) can', async () => {
    expect(web.openUrl).toBe(`${web.url}?token=${token}`);
    const post = ['-X', 'POST', '-H', 'Content-Type: application/json', '--data'];
    const denied = await curlAsNobody([...post, scale(7), `${web.url}api/sheets`]);
    expect(denied.status).toBe(401);
    expect(denied.body).toMatch(/read-only without its token/);
    expect(await replicas()).toBe('2');
    expect((await curlAsNobody([`${web.url}api/sheets`])).status).toBe(200); // reading is fine
    // the printed URL hands out the cookie; with it (or the bearer token) actions work
    const page = await curlAsNobody(['-D', '-', '-o', '/dev/null', web.openUrl]);
    const cookie = /set-cookie: (rk_console=[0-9a-f]+); HttpOnly; SameSite=Strict/i.exec(page.body)?.[1];
    expect(cookie).toBeDefined();
    expect(
      (await curlAsNobody([...post, scale(3), '-H', `Cookie: ${cookie}`, `${web.url}api/sheets`])).status,
    ).toBe(200);
    expect(await replicas()).toBe('3');
    const bearer = await curlAsNobody([
      ...post,
      scale(2),
      '-H',
      `Authorization: Bearer ${token}`,
      `${web.url}api/sheets`,
    ]);
    expect(bearer.status).toBe(200);
    expect(await replicas()).toBe('2');
  });
});

describe('#28.12 event-socket slots', () => {
  it('32 never-reading clients neither lock out a page with the token nor keep their slots', async () => {
    const port = Number(new URL(web.url).port);
    const hogs: net.Socket[] = [];
    const upgraded: boolean[] = [];
    for (let i = 0; i < LIMITS.maxClients; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      await new Promise((r) => s.once('connect', r));
      s.write(
        `GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
      const first = await new Promise<string>((r) => s.once('data', (b: Buffer) => r(b.toString())));
      upgraded.push(first.startsWith('HTTP/1.1 101'));
      s.pause(); // and never reads again, never answers a ping
      hogs.push(s);
    }
    try {
      expect(upgraded.filter(Boolean).length).toBe(LIMITS.maxReadOnlyClients); // the rest got 503
      const ws = new WebSocket(`${web.url.replace('http', 'ws')}api/events`, {
        headers: { authorization: `Bearer ${token}` },
      });
      await new Promise<void>((ok, fail) => {
        ws.once('open', () => ok());
        ws.once('error', fail);
      });
      ws.close();
      // the never-reading sockets are closed after a ping goes unanswered: their slots come back
      const closed = hogs.map((s) => new Promise((r) => (s.destroyed ? r(0) : s.once('close', r))));
      for (const s of hogs) s.resume();
      await Promise.all(closed);
      const again = await curlAsNobody([
        '-s',
        '-o',
        '/dev/null',
        '-H',
        'Connection: Upgrade',
        '-H',
        'Upgrade: websocket',
        '-H',
        'Sec-WebSocket-Version: 13',
        '-H',
        'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        '--max-time',
        '2',
        `${web.url}api/events`,
      ]);
      expect(again.status).toBe(101); // a read-only page finds a slot again
    } finally {
      for (const s of hogs) s.destroy();
    }
  }, 60_000);
});
