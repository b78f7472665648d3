// The node agent against the real apiserver (fastify, on 127.0.0.1) over a memory store:
// real heartbeats, real child processes, real WASI modules in worker threads.

import { existsSync, promises as fsp, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer } from '../apiserver/server.ts';
import { SheetsClient } from '../ctl/client.ts';
import { digestOf, importImage, WASM_MEDIA_TYPE, wasmConfig } from '../images/sicf.ts';
import { helloWasm, tickerWasm } from '../images/wasm-hello.ts';
import { MemoryStore } from '../store/memory.ts';
import type { Store } from '../store/types.ts';
import { type AgentOptions, NodeAgent, parsePorts, portsText } from './agent.ts';
import { dockerRunArgs } from './runtimes/docker.ts';

const TOKEN = 'agent-test-token';
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function cluster(
  opts: { key?: string } = {},
): Promise<{ store: Store; server: ApiServer; url: string }> {
  const store = new MemoryStore();
  const server = await createApiServer({
    store,
    token: TOKEN,
    samples: false,
    metricsIntervalSec: 3600,
    signingKey: opts.key,
  });
  const url = (await server.listen(0, '127.0.0.1')).replace('[::1]', '127.0.0.1');
  cleanups.push(() => server.close());
  return { store, server, url };
}

async function agent(url: string, o: Partial<AgentOptions> = {}): Promise<NodeAgent> {
  const workDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-agent-'));
  const a = new NodeAgent({
    server: url,
    token: TOKEN,
    name: 'node-a',
    ip: '127.0.0.1',
    cpuTotal: 4000,
    memTotal: 4096,
    intervalMs: 150,
    runtimes: ['wasm', 'process'],
    allowProcess: true,
    workDir,
    backoffBaseMs: 100,
    backoffMaxMs: 2_000,
    stopGraceMs: 1_000,
    ...o,
  });
  cleanups.push(async () => {
    await a.stop();
    await fsp.rm(workDir, { recursive: true, force: true });
  });
  a.start();
  return a;
}

async function deploy(store: Store, d: Record<string, string | number>): Promise<void> {
  await store.transact((tx) => tx.upsert('Deployments', { cpu_req: 100, mem_req: 16, ...d }));
}

async function until<T>(what: string, fn: () => T | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('node agent', () => {
  it('runs a WASM module straight from the sheet cells after verifying its digest ("hello" on stdout)', async () => {
    const { store } = await cluster();
    const mod = helloWasm('hello\n');
    await importImage(
      store,
      'hello-wasm:v1',
      [{ bytes: mod, mediaType: WASM_MEDIA_TYPE }],
      wasmConfig(digestOf(mod)),
    );
    await deploy(store, { name: 'hello', image: 'sicf:hello-wasm:v1', replicas: 1 });
    const a = await agent((await cluster0(store)).url);
    const log = a.logFile('hello-1');
    await until(
      'hello in the pod log',
      () => existsSync(log) && readFileSync(log, 'utf8').startsWith('hello\n'),
    );
    // The module ran to completion (exit 0) and is restarted with backoff like any Deployment pod.
    await until('a restart', () => a.status().find((p) => p.name === 'hello-1' && p.restarts >= 1));
    expect(a.status()[0]).toMatchObject({ exit_code: 0 });
    await until(
      'the apiserver to show the pod on node-a',
      () => store.get('Pods', 'hello-1')?.node === 'node-a',
    );
  });

  it('refuses to run a module whose chunk was tampered with, and says why', async () => {
    const { store, url } = await cluster();
    const mod = helloWasm('hello\n');
    await importImage(
      store,
      'hello-wasm:v1',
      [{ bytes: mod, mediaType: WASM_MEDIA_TYPE }],
      wasmConfig(digestOf(mod)),
    );
    // Flip one base64 character of the layer chunk (still valid base64, different bytes).
    await store.transact((tx) => {
      const row = tx.rows('Layers')[0];
      const data = String(row.data);
      const i = 40;
      tx.update('Layers', [String(row.digest), Number(row.ordinal)], {
        data: data.slice(0, i) + (data[i] === 'A' ? 'B' : 'A') + data.slice(i + 1),
      });
    });
    await deploy(store, { name: 'hello', image: 'sicf:hello-wasm:v1', replicas: 1 });
    const a = await agent(url);
    const st = await until('a reason', () => a.status().find((p) => p.message));
    expect(st.message).toMatch(/digest mismatch/);
    expect(st.phase).toBe('Pending');
    expect(existsSync(a.logFile('hello-1'))).toBe(false);
  });

  it('runs process pods, restarts a crashing one with growing backoff, and reports exit code and restarts', async () => {
    const { store, url } = await cluster();
    await deploy(store, { name: 'crash', image: 'process', replicas: 1, command: 'echo started; exit 3' });
    const a = await agent(url);
    await until('three restarts', () => a.status().find((p) => p.restarts >= 3), 15_000);
    const t = Date.now();
    const before = a.status()[0].restarts;
    // A whole 700 ms by the clock the test reads (a timer can fire a millisecond early by it: a
    // rehearsal measured 699).
    while (Date.now() - t < 700) await new Promise((r) => setTimeout(r, 700 - (Date.now() - t)));
    // Backoff 100, 200, 400, 800 ms …: after 3 restarts the next one waits >= 800 ms.
    expect(a.status()[0].restarts - before).toBeLessThanOrEqual(1);
    // Read after a crash, not at a moment: a loaded machine can catch the pod in its next run,
    // whose message is cleared while it runs (a rehearsal saw that).
    await until('the crash reported with its exit code', () => {
      const p = a.status()[0];
      return p.exit_code === 3 && /exited with code 3; restarting in/.test(p.message ?? '');
    });
    expect(readFileSync(a.logFile('crash-1'), 'utf8')).toMatch(/^started\nstarted\nstarted\n/);
    await until(
      'restarts reported to the Pods tab',
      () => Number(store.get('Pods', 'crash-1')?.restarts) >= 3,
    );
  });

  it('reports a pod it started at once, not at the next 10-s heartbeat (#29.6)', async () => {
    const { store, url } = await cluster();
    await deploy(store, { name: 'sleeper', image: 'process', replicas: 1, command: 'sleep 30' });
    const a = await agent(url, { intervalMs: 10_000 }); // the reference's interval
    await until('the pod started', () => a.status().find((p) => p.phase === 'Running'), 10_000);
    const started = Date.now();
    await until('Running on the Pods tab', () => store.get('Pods', 'sleeper-1')?.phase === 'Running', 8_000);
    // Within a second or two (a loaded machine), never the ten seconds of the next heartbeat.
    expect(Date.now() - started).toBeLessThan(5_000);
    // The apiserver wrote the row before its answer reached the agent, which counts a heartbeat
    // only then (a loaded machine saw 1 here): wait for the count, then: the first round and the
    // one the start asked for, no more.
    await until('the reporting heartbeat counted', () => a.heartbeats >= 2, 5_000);
    expect(a.heartbeats).toBe(2);
  });

  it('a failed heartbeat never stops running pods', async () => {
    const { store, url, server } = await cluster();
    await deploy(store, { name: 'svc', image: 'process', replicas: 1, command: 'sleep 30' });
    const a = await agent(url);
    const st = await until('svc running', () => a.status().find((p) => p.phase === 'Running'));
    const pid = Number(String(st.container_id).replace('proc-', ''));
    expect(alive(pid)).toBe(true);
    await server.close(); // the apiserver goes away
    await until('a failed heartbeat', () => !a.lastHeartbeatOk);
    await new Promise((r) => setTimeout(r, 500)); // several more failed rounds
    expect(alive(pid)).toBe(true);
    expect(a.status()[0]).toMatchObject({ phase: 'Running', restarts: 0 });
  });

  it('stops a pod the apiserver no longer orders here (scale to zero)', async () => {
    const { store, url } = await cluster();
    await deploy(store, { name: 'svc', image: 'process', replicas: 1, command: 'sleep 30' });
    const a = await agent(url);
    const st = await until('svc running', () => a.status().find((p) => p.phase === 'Running'));
    const pid = Number(String(st.container_id).replace('proc-', ''));
    const ctl = new SheetsClient({ url, token: TOKEN });
    expect(await ctl.post({ action: 'scale', name: 'svc', replicas: 0 })).toEqual({ result: 'scaled' });
    await until('the pod to be gone', () => a.status().length === 0 && !alive(pid));
  });

  it('signs its heartbeats when a key is set; without the key the apiserver refuses them', async () => {
    const { url } = await cluster({ key: 'node-signing-key' });
    const good = await agent(url, { key: 'node-signing-key', name: 'signed' });
    const bad = await agent(url, { name: 'unsigned' });
    // #30.9: every 150 ms, so several identical heartbeats fall in one second: none may be refused
    await until('signed heartbeats', () => good.heartbeats >= 12);
    expect(good.failedHeartbeats).toBe(0);
    expect(bad.heartbeats).toBe(0);
    expect(bad.failedHeartbeats).toBeGreaterThan(0);
    expect(bad.lastHeartbeatOk).toBe(false);
  });

  it('an image missing from the Images tab: the pod stays Pending with the reason in its Pods row', async () => {
    const { store, url } = await cluster();
    await deploy(store, { name: 'ghost', image: 'wasm:nope', replicas: 1 });
    await agent(url);
    const row = await (async () => {
      const end = Date.now() + 15_000;
      for (;;) {
        const r = (await store.transact((tx) => tx.rows('Pods'))).value.find((x) => x.deployment === 'ghost');
        // past the scheduler's "waiting for node-a's agent …" and "… is starting it": its own reason
        if (r && !/^(waiting for |node-a's agent is starting|$)/.test(String(r.message ?? ''))) return r;
        if (Date.now() > end) throw new Error(`no reason in the Pods row: ${JSON.stringify(r)}`);
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    expect(row.phase).toBe('Pending');
    expect(String(row.message)).toMatch(
      /image nope is not in the Images tab \(import it: retrokube sheets image import\)/,
    );
  });

  it('leaves an image it cannot run Pending with the reason (docker image on a node without Docker)', async () => {
    const { store, url } = await cluster();
    await deploy(store, { name: 'web', image: 'nginx:alpine', replicas: 1 });
    const a = await agent(url);
    const st = await until('a reason', () => a.status().find((p) => p.message));
    expect(st.message).toMatch(/needs the docker runtime; this node runs wasm, process/);
  });
});

describe('#17.6 names that are paths', () => {
  it('an order named "../../escape" (a hostile apiserver or a typed cell) writes nothing outside the work folder', async () => {
    // A real HTTP server playing a hostile apiserver: it orders a pod whose name is a path, with a secret.
    const http = await import('node:http');
    const hostile = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET')
        return res.end(
          JSON.stringify({ items: [{ name: 's', data: Buffer.from('pwned').toString('base64') }] }),
        );
      res.end(
        JSON.stringify({
          pods: [
            {
              name: '../../escape',
              desired: 'Running',
              image: 'process',
              command: 'true',
              secret_files: 's',
            },
          ],
        }),
      );
    });
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => hostile.close(() => r())));
    const port = (hostile.address() as { port: number }).port;
    const a = await agent(`http://127.0.0.1:${port}`);
    await until('two heartbeats', () => a.heartbeats >= 2);
    await new Promise((r) => setTimeout(r, 300));
    const workDir = a.opts.workDir as string;
    expect(a.status()).toEqual([]);
    expect(existsSync(path.join(workDir, '..', 'escape.s'))).toBe(false);
    expect(existsSync(path.join(workDir, 'escape.s'))).toBe(false);
    expect(() => a.logFile('../../x')).toThrow(/must be letters/);
  });

  it('names with separators and dot-dots never resolve outside the folder; object names stay one component (fuzzed)', async () => {
    const fc = (await import('fast-check')).default;
    const { isObjectName, pathInside } = await import('../names.ts');
    const root = path.join(os.tmpdir(), 'sk-root');
    const piece = fc.constantFrom('..', '.', '/', '\\', 'a', '-', '_', '\u0000', '%2e', 'x.y');
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 8 }), (parts) => {
        const name = parts.join('');
        let p: string | undefined;
        try {
          p = pathInside(root, `${name}.log`);
        } catch {
          expect(isObjectName(name)).toBe(false); // only non-names are refused
          return;
        }
        const rel = path.relative(root, p);
        expect(rel === '' || rel.startsWith('..') || path.isAbsolute(rel)).toBe(false);
        // An object name is always exactly one file directly in the folder.
        if (isObjectName(name)) expect(path.dirname(p)).toBe(root);
      }),
      { numRuns: 2000 },
    );
  });
});

// restart_policy: each phase transition of a pod, with real WASI modules that exit with a chosen
// code, judged on the node's report and on the Pods row the apiserver writes from it.
describe('restart policy and pod phases', () => {
  async function run(policy: string, exitCode: number | 'forever', extra: Record<string, string> = {}) {
    const { store, url } = await cluster();
    const mod = exitCode === 'forever' ? tickerWasm('tick\n', 200, 50) : helloWasm('ran\n', exitCode);
    await importImage(store, 'm:v1', [{ bytes: mod, mediaType: WASM_MEDIA_TYPE }], wasmConfig(digestOf(mod)));
    await deploy(store, { name: 'job', image: 'sicf:m:v1', replicas: 1, restart_policy: policy, ...extra });
    const a = await agent(url);
    return { store, url, a };
  }
  const row = (store: Store) => store.get('Pods', 'job-1') ?? {};

  it('OnFailure, exit 0: Running → Succeeded, not restarted, the exit code on the Pods row', async () => {
    const { store, a } = await run('OnFailure', 0);
    await until('Succeeded on the Pods row', () => row(store).phase === 'Succeeded');
    expect(a.status()[0]).toMatchObject({ phase: 'Succeeded', exit_code: 0, restarts: 0 });
    expect(a.status()[0].container_id).toMatch(/^wasm-/); // which run it was
    await new Promise((r) => setTimeout(r, 600)); // several back-offs' worth: still not restarted
    expect(readFileSync(a.logFile('job-1'), 'utf8')).toBe('ran\n');
    expect(row(store)).toMatchObject({ phase: 'Succeeded', exit_code: 0, restarts: 0 });
  });

  it('a finished pod stays finished when its agent restarts (kept by spec_hash in the work folder)', async () => {
    const { store, url, a } = await run('OnFailure', 0);
    await until('Succeeded', () => a.status()[0]?.phase === 'Succeeded');
    await a.stop();
    const again = await agent(url, { workDir: a.opts.workDir });
    await until('the restarted agent reports it', () => again.status()[0]?.phase === 'Succeeded');
    await new Promise((r) => setTimeout(r, 500));
    expect(readFileSync(again.logFile('job-1'), 'utf8')).toBe('ran\n'); // ran once, not twice
    expect(row(store)).toMatchObject({ phase: 'Succeeded', exit_code: 0 });
    // a new spec is a new pod: it runs
    const mod2 = helloWasm('ran v2\n', 0);
    await importImage(
      store,
      'm:v2',
      [{ bytes: mod2, mediaType: WASM_MEDIA_TYPE }],
      wasmConfig(digestOf(mod2)),
    );
    await new SheetsClient({ url, token: TOKEN }).post({
      action: 'apply',
      deployments: [{ name: 'job', image: 'sicf:m:v2' }],
    });
    await until('the new spec ran', () => readFileSync(again.logFile('job-1'), 'utf8').includes('ran v2'));
  });

  it('Never, exit 3: Failed with its exit code, not restarted', async () => {
    const { store, a } = await run('Never', 3);
    await until('Failed on the Pods row', () => row(store).phase === 'Failed');
    expect(row(store)).toMatchObject({ exit_code: 3, restarts: 0 });
    expect(String(row(store).message)).toMatch(/exited with code 3; not restarted \(Never\)/);
    await new Promise((r) => setTimeout(r, 600));
    expect(a.status()[0]).toMatchObject({ phase: 'Failed', restarts: 0 });
  });

  it('OnFailure, exit 3: CrashLoopBackOff with the reason while the back-off runs, then restarted', async () => {
    const { store, a } = await run('OnFailure', 3);
    await until('CrashLoopBackOff on the Pods row', () => row(store).phase === 'CrashLoopBackOff');
    expect(String(row(store).message)).toMatch(/^back-off: exited with code 3; restarting in \d+s$/);
    await until('restarted twice', () => (a.status()[0]?.restarts ?? 0) >= 2);
  });

  it('Always, exit 0: restarted (a long-running pod that ended is a crash), CrashLoopBackOff meanwhile', async () => {
    const { store, a } = await run('Always', 0, {});
    await until('restarted', () => (a.status()[0]?.restarts ?? 0) >= 2);
    await until('CrashLoopBackOff on the Pods row', () => row(store).phase === 'CrashLoopBackOff');
  });

  it('no policy declared: the reference phases only (Pending while the restart waits), restarted on exit 0', async () => {
    const { store, a } = await run('', 0);
    await until('restarted', () => (a.status()[0]?.restarts ?? 0) >= 1);
    expect(a.status()[0].phase).toBe('Pending');
    await until('Pending with the reason on the Pods row', () =>
      /restarting in/.test(String(row(store).message)),
    );
    expect(row(store).phase).toBe('Pending');
  });

  it('a long-running module stays Running and stops at once when scaled to zero', async () => {
    const { store, url, a } = await run('Always', 'forever');
    await until('Running on the Pods row', () => row(store).phase === 'Running');
    const log = a.logFile('job-1');
    await until(
      'ticks in the log',
      () => existsSync(log) && readFileSync(log, 'utf8').split('tick').length > 3,
    );
    expect(a.status()[0]).toMatchObject({ phase: 'Running', restarts: 0 });
    const t = Date.now();
    await new SheetsClient({ url, token: TOKEN }).post({ action: 'scale', name: 'job', replicas: 0 });
    await until('stopped', () => a.status().length === 0);
    expect(Date.now() - t).toBeLessThan(5_000);
  });

  it('a finished pod whose policy changes to Always is started again; Failed → CrashLoopBackOff → Running', async () => {
    const { store, url, a } = await run('Never', 3);
    await until('Failed', () => row(store).phase === 'Failed');
    const ctl = new SheetsClient({ url, token: TOKEN });
    await ctl.post({ action: 'apply', deployments: [{ name: 'job', restartPolicy: 'Always' }] });
    await until('restarted', () => (a.status()[0]?.restarts ?? 0) >= 1);
    expect(['CrashLoopBackOff', 'Running']).toContain(a.status()[0].phase);
  });
});

describe('docker runtime command line (run for real: test/e2e/sheets-docker.test.ts)', () => {
  it("builds the reference kubelet's docker run: name, labels, network alias, limits, env, secrets, ports, sh -c", () => {
    const args = dockerRunArgs(
      {
        pod: 'web-1',
        node: 'node-a',
        deployment: 'web',
        image: 'nginx:alpine',
        command: 'nginx -g "daemon off;"',
        env: { MODE: 'prod', X: 'a=b' },
        cpuReq: 100,
        memReq: 32,
        ports: parsePorts('30000:80/tcp,53:53/udp'),
        specHash: 'abc123',
        secretFiles: [{ file: '/tmp/sk-secrets/web-1.tls', path: '/etc/tls' }],
        logFile: '/dev/null',
      },
      { network: 'sheeternetes', publishAddr: '10.0.0.5' },
    );
    expect(args).toEqual([
      'run',
      '-d',
      '--pull',
      'never',
      '--name',
      'sk_web-1',
      '--label',
      'sheeternetes=1',
      '--label',
      'sheeternetes.pod=web-1',
      '--label',
      'sheeternetes.node=node-a',
      '--label',
      'sheeternetes.spec=abc123',
      '--label',
      'sheeternetes.deployment=web',
      '--network',
      'sheeternetes',
      '--network-alias',
      'web',
      '--cpus',
      '0.100',
      '--memory',
      '32m',
      '-e',
      'MODE=prod',
      '-e',
      'X=a=b',
      '-v',
      '/tmp/sk-secrets/web-1.tls:/etc/tls:ro',
      '-p',
      '10.0.0.5:30000:80/tcp',
      '-p',
      '10.0.0.5:53:53/udp',
      '--',
      'nginx:alpine',
      'sh',
      '-c',
      'nginx -g "daemon off;"',
    ]);
    expect(portsText('30000:80/tcp')).toBe('0.0.0.0:30000->80/tcp');
  });

  it('refuses an image that docker would read as an option (--privileged) and never lets one through', () => {
    const spec = {
      pod: 'web-1',
      node: 'node-a',
      deployment: 'web',
      image: '--privileged',
      command: '',
      env: {},
      cpuReq: 0,
      memReq: 0,
      ports: [],
      specHash: '',
      secretFiles: [],
      logFile: '/dev/null',
    };
    for (const image of ['--privileged', '-v/:/host', ' --pid=host', 'alpine --privileged', ''])
      expect(() => dockerRunArgs({ ...spec, image }, { network: 'n' }), image).toThrow(/image/);
    const args = dockerRunArgs({ ...spec, image: 'alpine:3', command: '--help' }, { network: 'n' });
    // Everything from the sheet after the options comes after "--".
    expect(args.slice(args.indexOf('--'))).toEqual(['--', 'alpine:3', 'sh', '-c', '--help']);
  });
});

// The first test builds its cluster from a store it filled first.
async function cluster0(store: Store): Promise<{ url: string }> {
  const server = await createApiServer({ store, token: TOKEN, samples: false, metricsIntervalSec: 3600 });
  const url = (await server.listen(0, '127.0.0.1')).replace('[::1]', '127.0.0.1');
  cleanups.push(() => server.close());
  return { url };
}
