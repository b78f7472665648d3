// skctl against a real apiserver: the reference verbs and columns, -o json, and signing with --key.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command } from 'commander';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Kit, startKit, TOKEN } from '../apiserver/testkit.ts';
import { resolveConfig, SheetsClient } from './client.ts';
import { renderTable } from './table.ts';
import { registerSheetsControlPlaneVerbs } from './verbs.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
  vi.restoreAllMocks();
});

async function skctl(url: string, ...args: string[]): Promise<string> {
  const program = new Command('retrokube').exitOverride();
  registerSheetsControlPlaneVerbs(program);
  let out = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    out += String(s);
    return true;
  });
  try {
    await program.parseAsync(['node', 'retrokube', 'skctl', '-s', url, '--token', TOKEN, ...args]);
  } finally {
    vi.restoreAllMocks();
  }
  return out;
}

describe('skctl', () => {
  it('apply, scale, get with the reference columns, and -o json', async () => {
    kit = await startKit();
    const dir = await mkdtemp(path.join(tmpdir(), 'sk-ctl-'));
    const file = path.join(dir, 'hello-web.json');
    await writeFile(
      file,
      JSON.stringify({
        deployments: [
          { name: 'web', image: 'nginx:alpine', replicas: 2, cpu_req: 100, mem_req: 32, ports: '8080:80' },
        ],
      }),
    );
    try {
      expect(JSON.parse(await skctl(kit.url, 'apply', file))).toEqual({
        applied: ['created'],
        gateways: [],
        routes: [],
      });
      await kit.heartbeat('node-a', [
        { name: 'web-1', phase: 'Running', container_id: '0123456789abcdef', ports: '0.0.0.0:8080->80/tcp' },
      ]);
      expect(JSON.parse(await skctl(kit.url, 'scale', 'web', '3'))).toEqual({ result: 'scaled' });
      const deploy = await skctl(kit.url, 'get', 'deploy');
      expect(deploy.split('\n')[0].split(/\s+/)).toEqual([
        'NAME',
        'IMAGE',
        'REPLICAS',
        'CPU',
        'MEM',
        'PORTS',
      ]);
      expect(deploy).toMatch(/web\s+nginx:alpine\s+3\s+100\s+32\s+8080:80/);
      const pods = await skctl(kit.url, 'get', 'pods');
      expect(pods.split('\n')[0].split(/\s+/)).toEqual([
        'NAME',
        'DEPLOYMENT',
        'NODE',
        'PHASE',
        'CONTAINER',
        'ENDPOINTS',
        'RESTARTS', // ours, after the reference's columns
        'REASON',
      ]);
      expect(pods).toMatch(
        /web-1\s+web\s+node-a\s+Running\s+0123456789ab\s+10\.0\.0\.1:8080->80\/tcp\s+0\s+-/,
      );
      const nodes = await skctl(kit.url, 'get', 'nodes');
      expect(nodes.split('\n')[0].split(/\s+/)).toEqual([
        'NAME',
        'IP',
        'CPU',
        'CPU_USED',
        'MEM',
        'STATUS',
        'HEARTBEAT',
      ]);
      expect(nodes).toMatch(/node-a\s.*Ready\s+\d+s ago\n/); // an age for people …
      const json = JSON.parse(await skctl(kit.url, 'get', 'nodes', '-o', 'json'));
      expect(json.items[0]).toMatchObject({ name: 'node-a', status: 'Ready' });
      expect(json.items[0].last_heartbeat).toBeGreaterThan(1_700_000_000); // … the exact time in JSON
      const events = await skctl(kit.url, 'get', 'events');
      expect(events.split('\n')[0]).not.toMatch(/^TS/); // no header, as the reference
      expect(events.split('\n')[0]).toMatch(/^\d+s ago {2}/);
      const evJson = JSON.parse(await skctl(kit.url, 'get', 'events', '-o', 'json'));
      expect(evJson.items[0].ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      for (const [verb, ...rest] of [
        ['cordon', 'node-a'],
        ['uncordon', 'node-a'],
        ['drain', 'node-a'],
        ['label', 'node-a', 'disk=ssd'],
        ['taint', 'node-a', 'gpu-'],
        ['migrate', 'web-1', 'node-a'],
        ['delete', 'web'],
      ]) {
        expect(JSON.parse(await skctl(kit.url, verb, ...rest)), verb).toHaveProperty('result');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('signs with --key, and fails with a clear message without it', async () => {
    kit = await startKit({ signingKey: 'k' });
    expect(JSON.parse(await skctl(kit.url, '--key', 'k', 'scale', 'nope', '1'))).toEqual({
      result: 'not found',
    });
    await expect(skctl(kit.url, 'scale', 'nope', '1')).rejects.toThrow(/HTTP 401: bad signature/);
  });

  it('rejects an unknown kind and a non-numeric replica count with one-line reasons', async () => {
    kit = await startKit();
    await expect(skctl(kit.url, 'get', 'widgets')).rejects.toThrow(/unknown kind: widgets/);
    await expect(skctl(kit.url, 'scale', 'web', 'many')).rejects.toThrow(/whole number/);
  });

  it('tables print "-" for empty cells and events keep only the last 25', () => {
    expect(
      renderTable('pods', [
        {
          name: 'a-1',
          deployment: 'a',
          node: null,
          phase: 'Unschedulable',
          container_id: null,
          endpoints: null,
        },
      ]),
    ).toMatch(/a-1\s+a\s+-\s+Unschedulable\s+-\s+-/);
    const ev = Array.from({ length: 40 }, (_, i) => ({ ts: `t${i}`, kind: 'K', object: 'o', message: 'm' }));
    expect(renderTable('events', ev).trim().split('\n')).toHaveLength(25);
    expect(renderTable('routes', [{ name: 'r', service: 'web' }])).toMatch(
      /r\s+\*\s+\*\s+\/\s+web\s+80\s+-\s+-/,
    );
  });

  it('config: flags beat the environment, which beats .skctl.env; a missing URL is a clear error', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sk-env-'));
    await writeFile(path.join(dir, '.skctl.env'), 'WEBAPP_URL=http://file:1\nTOKEN="from-file"\n');
    try {
      expect(resolveConfig({}, {}, dir)).toMatchObject({ url: 'http://file:1', token: 'from-file' });
      expect(resolveConfig({}, { TOKEN: 'env' }, dir).token).toBe('env');
      expect(resolveConfig({ token: 'flag' }, { TOKEN: 'env' }, dir).token).toBe('flag');
      expect(() => resolveConfig({}, {}, tmpdir())).toThrow(/no apiserver URL/);
      // beside a running `retrokube up`: its apiserver, after everything the person set
      const up = () => 'http://127.0.0.1:5';
      expect(resolveConfig({}, {}, tmpdir(), up).url).toBe('http://127.0.0.1:5');
      expect(resolveConfig({}, {}, dir, up).url).toBe('http://file:1');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an unreachable apiserver is named, with the reason and what to check (not "fetch failed")', async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address() as AddressInfo;
    await new Promise((r) => srv.close(r)); // a port nobody listens on now
    const c = new SheetsClient({ url: `http://127.0.0.1:${port}`, token: 'secret-token' });
    for (const call of [() => c.get('pods'), () => c.post({ op: 'x' })]) {
      const e = (await call().catch((err: Error) => err)) as Error;
      expect(e.message).toMatch(
        new RegExp(`apiserver at http://127.0.0.1:${port} is unreachable \\(ECONNREFUSED\\)`),
      );
      expect(e.message).toMatch(/retrokube status/);
      expect(e.message).not.toMatch(/secret-token/);
    }
  });
});
