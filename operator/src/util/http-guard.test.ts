// The shared HTTP guard: the rules one by one, then random Origin/Host/Content-Type headers against
// a real server (fast-check) — a request reaches the handler only when the rules say so.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from './http-guard.testkit.ts';
import { checkRequest, guardListener, hostsForBind, isLoopbackAddress } from './http-guard.ts';

const req = (headers: Record<string, string>, method = 'POST') => ({ method, headers });
const JSON_CT = { 'content-type': 'application/json' };

describe('checkRequest', () => {
  it('lets through what our CLIs and the reference clients send', () => {
    expect(checkRequest(req({ host: '127.0.0.1:8787', ...JSON_CT }), { requireJson: true })).toEqual({
      ok: true,
    });
    expect(
      checkRequest(req({ host: 'localhost:8787', 'content-type': 'application/json; charset=utf-8' }), {
        requireJson: true,
      }),
    ).toEqual({ ok: true });
    expect(checkRequest(req({ host: '[::1]:80' }, 'GET'), { requireJson: true })).toEqual({ ok: true });
    // a same-origin page (the console serving its own UI)
    expect(
      checkRequest(req({ host: '127.0.0.1:9000', origin: 'http://127.0.0.1:9000', ...JSON_CT })),
    ).toEqual({ ok: true });
  });

  it('refuses simple cross-site bodies, foreign origins, rebound Host names', () => {
    const v = (h: Record<string, string>, o = {}) => checkRequest(req(h), { requireJson: true, ...o });
    expect(v({ host: '127.0.0.1:1', 'content-type': 'text/plain' })).toMatchObject({
      ok: false,
      status: 415,
    });
    expect(v({ host: '127.0.0.1:1' })).toMatchObject({ ok: false, status: 415 });
    expect(v({ host: '127.0.0.1:1', 'content-type': 'application/x-www-form-urlencoded' })).toMatchObject({
      status: 415,
    });
    expect(v({ host: '127.0.0.1:1', origin: 'https://evil.example', ...JSON_CT })).toMatchObject({
      status: 403,
    });
    expect(v({ host: '127.0.0.1:1', origin: 'null', ...JSON_CT })).toMatchObject({ status: 403 });
    expect(v({ host: '127.0.0.1:1', origin: 'http://127.0.0.1:2', ...JSON_CT })).toMatchObject({
      status: 403,
    });
    expect(v({ host: '127.0.0.1:1', 'sec-fetch-site': 'cross-site', ...JSON_CT })).toMatchObject({
      status: 403,
    });
    expect(v({ host: 'evil.example:1', origin: 'http://evil.example:1', ...JSON_CT })).toMatchObject({
      status: 403,
    });
    expect(v({ ...JSON_CT })).toMatchObject({ status: 400 });
    // a server bound to a public address checks no Host, but still only same-origin
    expect(v({ host: 'cluster.example:8787', ...JSON_CT }, { hosts: 'any' })).toEqual({ ok: true });
    expect(
      v({ host: 'cluster.example:8787', origin: 'https://evil.example', ...JSON_CT }, { hosts: 'any' }),
    ).toMatchObject({ status: 403 });
    expect(v({ host: 'console.lan:80', ...JSON_CT }, { hosts: ['console.lan'] })).toEqual({ ok: true });
  });

  it('knows loopback addresses', () => {
    for (const a of ['127.0.0.1', '127.5.0.9', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1'])
      expect(isLoopbackAddress(a), a).toBe(true);
    for (const a of ['0.0.0.0', '::', '10.0.0.1', '128.0.0.1', 'evil.example', '127.0.0.1.evil.example'])
      expect(isLoopbackAddress(a), a).toBe(false);
    expect(hostsForBind('0.0.0.0')).toBe('any');
    expect(hostsForBind('127.0.0.1')).toBe('loopback');
  });
});

describe('random Origin / Host / Content-Type headers against a real guarded server', () => {
  let server: http.Server;
  let url = '';
  let reached = 0;
  beforeAll(async () => {
    server = http.createServer(
      guardListener(
        (_req, res) => {
          reached++;
          res.end('{}');
        },
        { requireJson: true },
      ),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('a request reaches the handler only if its Host is loopback, its Origin is absent or its own, and it is JSON', async () => {
    const port = new URL(url).port;
    const host = fc.oneof(
      fc.constantFrom(
        `127.0.0.1:${port}`,
        `localhost:${port}`,
        `evil.example:${port}`,
        `127.0.0.1.nip.io:${port}`,
        '',
        `[::1]:${port}`,
      ),
      fc.domain(),
      fc.ipV4().map((ip) => `${ip}:${port}`),
    );
    const origin = fc.option(
      fc.oneof(
        fc.constantFrom(
          'null',
          `http://127.0.0.1:${port}`,
          'http://127.0.0.1',
          'https://evil.example',
          'file://',
        ),
        fc.webUrl(),
        fc.string({ maxLength: 30 }),
      ),
      { nil: undefined },
    );
    const type = fc.constantFrom(
      'application/json',
      'Application/JSON; charset=utf-8',
      'text/plain',
      'multipart/form-data',
      '',
    );
    await fc.assert(
      fc.asyncProperty(host, origin, type, async (h, o, t) => {
        const headers: Record<string, string> = {};
        if (h) headers.host = h;
        if (o !== undefined) headers.origin = o.replace(/[^\x20-\x7e]/g, '');
        if (t) headers['content-type'] = t;
        const before = reached;
        const r = await rawRequest(url, { method: 'POST', headers, body: '{}' });
        expect(r.status).toBeLessThan(500);
        // Without a Host of ours, Node's client sends its own: 127.0.0.1:<port>.
        const sent = { ...headers, host: headers.host ?? `127.0.0.1:${port}` };
        const verdict = checkRequest({ method: 'POST', headers: sent }, { requireJson: true });
        expect(reached - before).toBe(verdict.ok ? 1 : 0);
        if (verdict.ok) {
          expect(isLoopbackAddress(sent.host.replace(/:\d+$/, ''))).toBe(true);
          expect(t.toLowerCase().startsWith('application/json')).toBe(true);
          if (o !== undefined) expect(new URL(o).host).toBe(sent.host.toLowerCase());
        }
      }),
      { numRuns: 300 },
    );
  });
});
