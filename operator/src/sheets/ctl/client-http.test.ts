// The client's HTTP exchange does what fetch did for it: redirects as fetch follows them, one
// timeout over the whole exchange, and connection errors with their codes.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange } from '../../util/http-exchange.ts';
import { SheetsClient } from './client.ts';

const seen: { method?: string; url?: string; body: string }[] = [];
let server: Server;
let base = '';

const bodyOf = async (req: IncomingMessage): Promise<string> => {
  let s = '';
  for await (const c of req) s += c;
  return s;
};

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const body = await bodyOf(req);
    seen.push({ method: req.method, url: req.url, body });
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/302' || path === '/307' || path === '/303') {
      res.writeHead(Number(path.slice(1)), { location: '/final?x=1' });
      return res.end('moved');
    }
    if (path === '/loop') {
      res.writeHead(302, { location: '/loop' });
      return res.end();
    }
    if (path === '/slow-body') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"items":['); // and never the rest
      return;
    }
    if (path === '/cut') {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"items"');
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ items: [{ method: req.method, body }] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const post = (path: string, followRedirects = true) =>
  exchange(`${base}${path}`, {
    method: 'POST',
    body: '{"a":1}',
    headers: { 'content-type': 'application/json' },
    timeoutMs: 5000,
    maxBytes: 1 << 20,
    followRedirects,
  });

describe('one exchange of the apiserver client', () => {
  it('follows redirects as fetch does: 302 and 303 read with GET, 307 repeats the POST', async () => {
    expect(JSON.parse((await post('/302')).text).items[0]).toEqual({ method: 'GET', body: '' });
    expect(JSON.parse((await post('/303')).text).items[0]).toEqual({ method: 'GET', body: '' });
    expect(JSON.parse((await post('/307')).text).items[0]).toEqual({ method: 'POST', body: '{"a":1}' });
    expect(seen.at(-1)?.url).toBe('/final?x=1');
  });

  it('follows none when told so (the redirect is the answer, its body unread), nor an endless loop', async () => {
    expect(await post('/302', false)).toEqual({ status: 302, text: '' });
    await expect(post('/loop')).rejects.toThrow(/more than 20 redirects/);
  });

  it('one timeout covers the body too, and says so', async () => {
    const client = new SheetsClient({ url: `${base}/slow-body`, token: 't', timeoutMs: 300 });
    const e = (await client.get('pods').catch((x: Error) => x)) as Error;
    expect(e.message).toMatch(/unreachable \(no answer in time\)/);
    expect((e.cause as Error).name).toBe('TimeoutError');
  });

  it('a refused connection and one cut mid-answer keep their codes', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = new SheetsClient({ url: `http://127.0.0.1:${port}`, token: 't' });
    expect(((await refused.get('pods').catch((x: Error) => x)) as Error).message).toMatch(/\(ECONNREFUSED\)/);
    const cut = new SheetsClient({ url: `${base}/cut`, token: 't' });
    const e = (await cut.get('pods').catch((x: Error) => x)) as Error;
    expect((e.cause as { code?: string }).code).toBe('ECONNRESET');
  });
});
