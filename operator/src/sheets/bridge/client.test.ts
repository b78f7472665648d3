// A federation member as the bridge reads it: one request at a time (the reference apiserver
// corrupts its workbook under concurrent requests), and a failed read says which member, which
// read, and why in words.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Member } from './client.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise((r) => server?.close(r));
  server = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('a bridge member', () => {
  it('reads its tabs one request at a time', async () => {
    let inFlight = 0;
    let most = 0;
    const kinds: string[] = [];
    const url = await serve((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      kinds.push(new URL(req.url ?? '/', 'http://x').searchParams.get('kind') ?? '');
      // answer late, so overlapping requests would be seen
      setTimeout(() => {
        inFlight--;
        res.setHeader('content-type', 'application/json');
        res.end('{"items":[]}');
      }, 50);
    });
    const view = await new Member({ name: 'onprem', url, token: 't' }).observe();
    expect(view).toEqual({ name: 'onprem', deployments: [], pods: [], nodes: [] });
    expect(kinds).toEqual(['deployments', 'pods', 'nodes']);
    expect(most).toBe(1);
  });

  it('a connection dropped mid-answer names the member, the read and the reason', async () => {
    const url = await serve((req) => req.socket.destroy());
    const e = (await new Member({ name: 'onprem', url, token: 't' })
      .observe()
      .catch((x: Error) => x)) as Error;
    expect(e.message).toMatch(
      new RegExp(`^cannot reach a cluster: \\S+ \\(member onprem\\) reading deployments from ${url}: `),
    );
    expect(e.message).toMatch(/closed the connection|reset the connection/);
  });
});
