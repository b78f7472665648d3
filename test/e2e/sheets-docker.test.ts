// The Sheeternetes node agent's docker runtime for real (issue #27.1): a real dockerd of its own
// (test/e2e/dockerd.ts), the apiserver over a real xlsx workbook, and `retrokube sheets node
// --runtime docker` as its own process, judged from the sheet, from docker and over HTTP.
// The reference kubelet.sh is the contract (spec §4.2): container sk_<pod>, labels, the network
// with the deployment as alias, -p per assigned port (NodePort range), endpoints in the Pods tab.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer } from '../../operator/src/sheets/apiserver/server.ts';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { openXlsxStore, type XlsxStore } from '../../operator/src/sheets/store/xlsx.ts';
import { type Dockerd, dockerdMissing, hostNetState, importHttpImage, startDockerd } from './dockerd.ts';
import { MAIN } from './up-harness.ts';

const TOKEN = 'docker-e2e-token';
const IMAGE = 'localhost/sk-http:e2e';
const NODE = 'dock-a';
const missing = dockerdMissing();
if (missing && process.env.CI === 'true') throw new Error(`sheets docker e2e: ${missing}`);
if (missing) process.stderr.write(`[sheets-docker] not run: ${missing}\n`);

// A web server whose page says which spec it runs ($MSG) and which container serves it.
const WEB_CMD = 'echo "$MSG from $(hostname)" > /www/index.html && exec httpd -f -p 80 -h /www';

interface Agent {
  proc: ChildProcess;
  log: () => string;
}

/** `retrokube sheets node` as its own process (logs at info, so adoption and reasons show). */
function startAgent(url: string, dockerHost: string, network: string, name = NODE): Agent {
  let log = '';
  const proc = spawn(
    process.execPath,
    [
      MAIN,
      'sheets',
      'node',
      '--server',
      url,
      '--name',
      name,
      '--runtime',
      'docker',
      '--docker-host',
      dockerHost,
      '--network',
      network,
      '--publish-addr',
      '127.0.0.1',
      '--ip',
      '127.0.0.1',
      '--interval',
      '1',
      '--cpu',
      '4000',
      '--mem',
      '4096',
    ],
    { env: { ...process.env, TOKEN, RETROKUBE_LOG_LEVEL: 'info' } },
  );
  proc.stdout?.on('data', (b: Buffer) => {
    log += b.toString();
  });
  proc.stderr?.on('data', (b: Buffer) => {
    log += b.toString();
  });
  return { proc, log: () => log };
}

async function kill(a: Agent | undefined, signal: NodeJS.Signals): Promise<void> {
  const p = a?.proc;
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  const gone = new Promise((r) => p.once('exit', r));
  p.kill(signal);
  await gone;
}

async function until<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 90_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Ten consecutive free ports on 127.0.0.1 inside the NodePort range (the apiserver's range). */
async function freeRange(): Promise<[number, number]> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
  for (let i = 0; i < 50; i++) {
    const lo = 30000 + Math.floor(Math.random() * 2700);
    let ok = true;
    for (let p = lo; p < lo + 10 && ok; p++) ok = await free(p);
    if (ok) return [lo, lo + 9];
  }
  throw new Error('no ten free ports in 30000-32767 on 127.0.0.1');
}

describe.skipIf(missing !== undefined)('sheets node --runtime docker on a real dockerd', () => {
  let d: Dockerd | undefined;
  let dir = '';
  let store: XlsxStore;
  let server: ApiServer;
  let client: SheetsClient;
  let url = '';
  let range: [number, number];
  let agent: Agent | undefined;
  const before = missing ? undefined : hostNetState();

  const pods = async () => (await client.get('pods')) as Record<string, string | number | null>[];
  const pod = async (name: string) => (await pods()).find((p) => p.name === name);
  const apply = (deployments: Record<string, unknown>[]) => client.post({ action: 'apply', deployments });
  const containers = async () => {
    const r = await d!.docker(
      'ps',
      '--no-trunc',
      '--format',
      '{{.Names}}\t{{.ID}}\t{{.Label "sheeternetes.node"}}\t{{.Label "sheeternetes.spec"}}',
    );
    return r.out
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [name = '', id = '', node = '', spec = ''] = l.split('\t');
        return { name, id, node, spec };
      });
  };
  const page = async (endpoint: string) => {
    const m = /^127\.0\.0\.1:(\d+)->80\/tcp$/.exec(endpoint);
    if (!m) throw new Error(`endpoint ${endpoint} is not 127.0.0.1:<port>->80/tcp`);
    return (await fetch(`http://127.0.0.1:${m[1]}/`, { signal: AbortSignal.timeout(5_000) })).text();
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'sk-docker-e2e-'));
    d = await startDockerd();
    await importHttpImage(d, IMAGE);
    range = await freeRange();
    store = await openXlsxStore(path.join(dir, 'cluster.xlsx'), { watchMs: 0 });
    server = await createApiServer({
      store,
      token: TOKEN,
      samples: false,
      metricsIntervalSec: 3600,
      portRange: range,
    });
    url = (await server.listen(0, '127.0.0.1')).replace('[::1]', '127.0.0.1');
    client = new SheetsClient({ url, token: TOKEN });
  }, 180_000);

  afterAll(async () => {
    await kill(agent, 'SIGTERM');
    await server?.close();
    await store?.close();
    await d?.stop();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('a daemon that does not answer: one line from the agent, the reason on the pod, no crash loop', async () => {
    const lonely = startAgent(url, `unix://${dir}/no-such-docker.sock`, 'sheeternetes', 'dock-none');
    try {
      await until('dock-none registered', async () =>
        (await client.get('nodes')).some((n) => n.name === 'dock-none'),
      );
      // Its pod lands there only (a label the other node lacks).
      await client.post({ action: 'label', name: 'dock-none', spec: 'none=1' });
      await apply([{ name: 'lost', image: IMAGE, replicas: 1, node_selector: 'none=1' }]);
      const row = await until('the reason on the pod', async () => {
        const p = await pod('lost-1');
        return p && String(p.message).includes('Docker daemon unreachable') ? p : undefined;
      });
      expect(row.node).toBe('dock-none');
      expect(row.phase).toBe('Pending');
      expect(String(row.message)).toContain(`unix://${dir}/no-such-docker.sock`);
      // Several retries later: still one line, no restarts counted, the agent still heartbeating.
      await new Promise((r) => setTimeout(r, 4_000));
      const again = await pod('lost-1');
      expect(again?.phase).toBe('Pending');
      expect(Number(again?.restarts || 0)).toBe(0);
      const lines = lonely
        .log()
        .split('\n')
        .filter((l) => l.includes('Docker daemon unreachable'));
      expect(lines, lonely.log()).toHaveLength(1);
      expect(lonely.proc.exitCode).toBeNull();
    } finally {
      await kill(lonely, 'SIGTERM');
      await client.post({ action: 'delete', name: 'lost' });
      // It stays fresh for the node TTL: no later pod may land on it.
      await client.post({ action: 'cordon', name: 'dock-none' });
    }
  });

  it('a Deployment of an image built here runs as containers with published NodePorts and endpoints', async () => {
    agent = startAgent(url, d!.host, d!.network);
    await apply([
      { name: 'web', image: IMAGE, replicas: 2, ports: '80', command: WEB_CMD, env: 'MSG=v1', mem_req: 32 },
    ]);
    const rows = await until('web-1 and web-2 Running with endpoints', async () => {
      const ps = (await pods()).filter((p) => p.deployment === 'web');
      return ps.length === 2 && ps.every((p) => p.phase === 'Running' && p.endpoints) ? ps : undefined;
    });
    const cs = await containers();
    for (const r of rows) {
      expect(r.node).toBe(NODE);
      // The reference's form: the assigned host port from the range, and what docker published.
      const port = Number(/^(\d+):80\/tcp$/.exec(String(r.ports))?.[1]);
      expect(port).toBeGreaterThanOrEqual(range[0]);
      expect(port).toBeLessThanOrEqual(range[1]);
      expect(r.endpoints).toBe(`127.0.0.1:${port}->80/tcp`);
      const c = cs.find((x) => x.name === `sk_${r.name}`);
      expect(c, JSON.stringify(cs)).toBeDefined();
      expect(r.container_id).toBe(c?.id);
      expect(c?.node).toBe(NODE);
      expect(await until(`${r.name} answers`, () => page(String(r.endpoints)))).toMatch(/^v1 from \w+/);
    }
  });

  it('pods reach each other by deployment name on the network (Sheetlium: one alias, round-robin)', async () => {
    await apply([{ name: 'probe', image: IMAGE, replicas: 1, mem_req: 16 }]);
    await until('probe-1 Running', async () => (await pod('probe-1'))?.phase === 'Running');
    const got = await until('probe-1 fetched http://web/', async () => {
      const r = await d!.docker('exec', 'sk_probe-1', 'wget', '-qO-', 'http://web/');
      return r.code === 0 ? r.out : undefined;
    });
    expect(got).toMatch(/^v1 from \w+/);
    const ns = await d!.docker('exec', 'sk_probe-1', 'nslookup', 'web');
    const addrs = ns.out.split('\n').filter((l) => /^Address: 10\.213\./.test(l.trim()));
    expect(addrs, ns.out).toHaveLength(2);
  });

  it('a spec change recreates the container; scaling down and deleting stop theirs', async () => {
    const old = await containers();
    const oldWeb1 = old.find((c) => c.name === 'sk_web-1');
    await apply([{ name: 'web', env: 'MSG=v2' }]);
    const row = await until('web-1 on the new spec', async () => {
      const p = await pod('web-1');
      const fresh = p?.phase === 'Running' && p.container_id !== oldWeb1?.id && p.endpoints;
      return fresh ? p : undefined;
    });
    expect(
      await until(
        'the new page',
        async () => (await page(String(row.endpoints))).startsWith('v2') && page(String(row.endpoints)),
      ),
    ).toMatch(/^v2 from/);
    const now = await containers();
    expect(now.filter((c) => c.name === 'sk_web-1')).toHaveLength(1);
    expect(now.find((c) => c.id === oldWeb1?.id)).toBeUndefined();

    await client.post({ action: 'scale', name: 'web', replicas: 1 });
    await until('sk_web-2 gone', async () => !(await containers()).some((c) => c.name === 'sk_web-2'));
    await client.post({ action: 'delete', name: 'probe' });
    await until('sk_probe-1 gone', async () => !(await containers()).some((c) => c.name === 'sk_probe-1'));
    expect((await containers()).map((c) => c.name)).toEqual(['sk_web-1']);
  });

  it('a restarted agent adopts its running containers instead of starting them again', async () => {
    const before1 = (await containers()).find((c) => c.name === 'sk_web-1');
    await kill(agent, 'SIGKILL'); // a crash: nothing stops the containers
    agent = startAgent(url, d!.host, d!.network);
    await until('adopted', async () => agent!.log().includes('adopted a running pod'));
    // Several heartbeats later: the same container, once, still Running in the sheet.
    await new Promise((r) => setTimeout(r, 4_000));
    const after = await containers();
    expect(after.filter((c) => c.name === 'sk_web-1')).toEqual([before1]);
    const row = await pod('web-1');
    expect(row).toMatchObject({ phase: 'Running', container_id: before1?.id });
  });

  it('an image that cannot be pulled: ErrImagePull on the pod, Pending, no restarts', async () => {
    // A registry on loopback port 9 that refuses at once (no traffic leaves this machine).
    await apply([{ name: 'ghost', image: '127.0.0.1:9/sk-missing:v1', replicas: 1 }]);
    const row = await until('ErrImagePull', async () => {
      const p = await pod('ghost-1');
      return p && String(p.message).startsWith('ErrImagePull') ? p : undefined;
    });
    expect(row.phase).toBe('Pending');
    expect(String(row.message)).toMatch(
      /^ErrImagePull: 127\.0\.0\.1:9\/sk-missing:v1: .+; retrying in \d+s$/,
    );
    expect(Number(row.restarts || 0)).toBe(0);
    await client.post({ action: 'delete', name: 'ghost' });
  });

  it('a container that exits: the restart policy is obeyed and the back-off is shown', async () => {
    await apply([
      { name: 'crash', image: IMAGE, replicas: 1, command: 'echo boom; exit 3', restart_policy: 'Always' },
      { name: 'once', image: IMAGE, replicas: 1, command: 'echo done', restart_policy: 'OnFailure' },
    ]);
    const done = await until('once-1 Succeeded', async () => {
      const p = await pod('once-1');
      return p?.phase === 'Succeeded' ? p : undefined;
    });
    expect(done).toMatchObject({ exit_code: 0, restarts: 0 });
    const crash = await until(
      'crash-1 restarted twice, in back-off',
      async () => {
        const p = await pod('crash-1');
        return p && Number(p.restarts) >= 2 && p.phase === 'CrashLoopBackOff' ? p : undefined;
      },
      120_000,
    );
    expect(crash).toMatchObject({ exit_code: 3 });
    expect(String(crash.message)).toMatch(/^back-off: exited with code 3; restarting in \d+s$/);
    // The finished pod was not started again (no running container for it).
    expect((await containers()).some((c) => c.name === 'sk_once-1')).toBe(false);
    await client.post({ action: 'delete', name: 'crash' });
    await client.post({ action: 'delete', name: 'once' });
  }, 180_000);

  it("dockerd left this machine's network as it was (FORWARD policy, ip_forward, no DOCKER rules)", () => {
    expect(hostNetState()).toEqual(before);
  });
});
