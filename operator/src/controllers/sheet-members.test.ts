// #28.7: the operator calling a federation/migration member `url`, probed as the issue did with a
// hostile member on loopback: one that redirects elsewhere, one whose error text would land in a
// resource's status, one that streams an endless answer. And the allow-list of member URLs.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Member } from '../sheets/bridge/client.ts';
import { LIMITS as CLIENT_LIMITS } from '../sheets/ctl/client.ts';
import { memberUrlProblem } from './sheet-members.ts';

let elsewhereHits = 0;
let streamed = 0;
let streamClosed = false;
const servers: Server[] = [];
let hostile = '';
let elsewhere = '';

const listen = async (s: Server): Promise<string> => {
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  elsewhere = await listen(
    createServer((_q, res) => {
      elsewhereHits++;
      res.end(JSON.stringify({ items: [] }));
    }),
  );
  hostile = await listen(
    createServer((q, res) => {
      const path = new URL(q.url ?? '/', 'http://x').pathname;
      if (path === '/redirect') {
        res.writeHead(302, { location: `${elsewhere}/?kind=pods` });
        return res.end();
      }
      if (path === '/secret') {
        res.writeHead(500);
        return res.end('SECRET-INTERNAL-TEXT of a service the operator should never have reached');
      }
      // /endless: an answer that never ends, 1 MiB at a time, as fast as the reader takes it
      res.writeHead(200, { 'content-type': 'application/json' });
      res.on('close', () => {
        streamClosed = true;
      });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk)) streamed += chunk.length;
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    }),
  );
});

afterAll(() => {
  for (const s of servers) s.closeAllConnections();
  for (const s of servers) s.close();
});

const member = (path: string) =>
  new Member({ name: 'm', url: `${hostile}${path}`, token: 't', timeoutMs: 60_000, untrusted: true });

describe('#28.7 the operator fetches member URLs carefully', () => {
  it('follows no redirect', async () => {
    await expect(member('/redirect').get('pods')).rejects.toThrow(/HTTP 302 .*redirect, not followed/);
    expect(elsewhereHits).toBe(0);
  });

  it('puts no answer text into its errors (they become status.members[].message)', async () => {
    const err = await member('/secret')
      .get('pods')
      .catch((e: Error) => e);
    expect(String(err)).toMatch(/HTTP 500/);
    expect(String(err)).not.toMatch(/SECRET/);
  });

  it('stops reading an endless answer at its bound', async () => {
    await expect(member('/endless').get('pods')).rejects.toThrow(/larger than \d+ bytes/);
    await expect.poll(() => streamClosed, { timeout: 30_000 }).toBe(true);
    // what the hostile member got out before the operator hung up: the bound plus what sockets buffer
    expect(streamed).toBeLessThan(CLIENT_LIMITS.untrustedBodyBytes + 64 * 1024 * 1024);
  });

  it('calls only Services of the namespace, or hosts the operator was started with', () => {
    expect(memberUrlProblem('http://east.team-a.svc:8787', 'team-a', [])).toBeUndefined();
    expect(memberUrlProblem('http://east.team-a.svc.cluster.local', 'team-a', [])).toBeUndefined();
    expect(memberUrlProblem('http://east.team-b.svc:8787', 'team-a', [])).toMatch(
      /only Services of namespace team-a/,
    );
    expect(memberUrlProblem('http://169.254.169.254/latest/meta-data', 'team-a', [])).toMatch(
      /--member-hosts/,
    );
    expect(memberUrlProblem('http://127.0.0.1:8787', 'team-a', [])).toMatch(/--member-hosts/);
    expect(memberUrlProblem('http://127.0.0.1:8787', 'team-a', ['127.0.0.1'])).toBeUndefined();
    expect(memberUrlProblem('https://sheets.example.org', 'team-a', ['sheets.example.org'])).toBeUndefined();
    expect(memberUrlProblem('http://u:p@east.team-a.svc', 'team-a', [])).toMatch(/no user or password/);
    expect(memberUrlProblem('file:///etc/passwd', 'team-a', [])).toMatch(/only http/);
    expect(memberUrlProblem('http://east.team-a.svc.evil.org', 'team-a', [])).toMatch(/--member-hosts/);
  });
});
