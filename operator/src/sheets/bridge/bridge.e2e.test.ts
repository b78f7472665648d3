// The bridge as a person runs it: two real apiservers over real xlsx workbooks, each with a real
// node agent running real processes, signing required on both, and `retrokube sheets bridge …` as
// a child process. The target is degraded on purpose (its node agent stopped) to prove rollback.
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openXlsxStore } from '../store/xlsx.ts';
import {
  bridgeFlags,
  deploySleeper,
  runningPods,
  type SheetClusterKit,
  startSheetCluster,
} from './testkit.ts';

const run = promisify(execFile);
const MAIN = new URL('../../cli/main.ts', import.meta.url).pathname;

let tmp: string;
let local: SheetClusterKit;
let peer: SheetClusterKit;

const endpoints = (o: { peerKey?: string; peerUrl?: string } = {}) => bridgeFlags(local, peer, o);

async function bridge(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [MAIN, 'sheets', 'bridge', ...args], { timeout: 150_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const x = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof x.code === 'number' ? x.code : -1, stdout: x.stdout ?? '', stderr: x.stderr ?? '' };
  }
}

const deployments = (c: SheetClusterKit) => c.store.rows('Deployments');
const running = runningPods;
const clusters = () => [local, peer];

async function until(what: string, fn: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const deploy = deploySleeper;
async function remove(c: SheetClusterKit, ...names: string[]): Promise<void> {
  for (const n of names) await c.api.delete(n);
}

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-bridge-'));
  const xlsx = async (name: string) => openXlsxStore(path.join(tmp, `${name}.xlsx`), { flushDelayMs: 100 });
  local = await startSheetCluster({ name: 'local', cpuTotal: 2000, store: await xlsx('local') });
  peer = await startSheetCluster({ name: 'peer', cpuTotal: 2000, store: await xlsx('peer') });
  await until('both nodes registered', () => clusters().every((c) => c.store.rows('Nodes').length === 1));
}, 60_000);

afterAll(async () => {
  for (const c of clusters()) await c.close();
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('retrokube sheets bridge (two signed xlsx clusters with node agents)', () => {
  it('status merges services, local winning; sync copies what each side lacks and nothing else', async () => {
    await deploy(local, 'api', 1);
    await deploy(local, 'shared', 1);
    await deploy(peer, 'db', 1);
    await deploy(peer, 'shared', 2);
    const st = await bridge('status', ...endpoints());
    expect(st.code).toBe(0);
    // stdout: exactly the reference's lines; our member summaries go to stderr
    expect(st.stdout).toBe(
      `[bridge] local: 2 deployments · peer: 2 deployments\n[bridge] federated services:\n  ${'api'.padEnd(20)} -> local\n  ${'db'.padEnd(20)} -> peer\n  ${'shared'.padEnd(20)} -> local\n`,
    );
    expect(st.stderr).toMatch(/^\[bridge\] peer: 1\/1 nodes Ready · \d+\/\d+ pods Running · \d+m CPU free$/m);
    const sync = await bridge('sync', ...endpoints());
    expect(sync.code).toBe(0);
    expect(sync.stdout).toContain('[sync] +1 -> local, +1 -> peer');
    expect(sync.stdout).toContain("conflict: 'shared' differs between local and peer");
    // same-named rows are never touched
    expect(deployments(peer).find((d) => d.name === 'shared')?.replicas).toBe(2);
    const again = JSON.parse((await bridge('sync', ...endpoints(), '-o', 'json')).stdout);
    expect(again).toMatchObject({ to_local: [], to_peer: [] });
    // --push publishes every local row to the peer, overwriting same-named ones there
    const push = await bridge('status', '--push', ...endpoints());
    expect(push.stdout).toContain('[bridge] federated services:');
    expect(push.stdout).toContain(
      '[bridge] publishing local deployments to peer…\n   {"applied":["updated","updated","updated"]}',
    );
    expect(deployments(peer).find((d) => d.name === 'shared')?.replicas).toBe(1);
    for (const c of [local, peer]) await remove(c, 'api', 'db', 'shared');
    await until('no pods left', () => clusters().every((c) => c.store.rows('Pods').length === 0));
    await until('CPU released', () =>
      clusters().every((c) => Number(c.store.rows('Nodes')[0]?.cpu_used) === 0),
    );
  }, 120_000);

  it('stretch fills local first by free CPU, the rest on the peer; --plan writes nothing', async () => {
    await deploy(local, 'web', 1, 500);
    await until('web running on local', () => running(local, 'web') === 1);
    const plan = await bridge('stretch', 'web', '--replicas', '6', '--plan', ...endpoints());
    expect(plan.code).toBe(0);
    // local: 2000m, 500m held by web's own replica → 4; peer: 2000m free → 2
    expect(plan.stdout).toContain('[stretch] web x6 @ 500m | local free 1500m -> 4, ordered from peer -> 2');
    expect(deployments(peer).some((d) => d.name === 'web')).toBe(false);
    const too = await bridge('stretch', 'web', '--replicas', '20', ...endpoints());
    expect(too.code).toBe(1);
    expect(too.stdout).toMatch(/only 8 of 20 replicas .* nothing was written/);
    const go = await bridge('stretch', 'web', '--replicas', '6', '--poll', '1', ...endpoints(), '-o', 'json');
    expect(go.code).toBe(0);
    expect(JSON.parse(go.stdout)).toMatchObject({ applied: true, unplaced: 0 });
    await until(
      '6 replicas running across both',
      () => running(local, 'web') === 4 && running(peer, 'web') === 2,
    );
    for (const c of [local, peer]) await remove(c, 'web');
    await until('web gone', () => running(local, 'web') + running(peer, 'web') === 0);
  }, 120_000);

  it('migrate moves a deployment make-before-break and prints the reference lines', async () => {
    await deploy(local, 'mover', 2);
    await until('mover running on local', () => running(local, 'mover') === 2);
    const r = await bridge(
      'migrate',
      'mover',
      '--from',
      'local',
      '--to',
      'peer',
      '--poll',
      '1',
      '--wait',
      '60',
      ...endpoints(),
    );
    expect(r.stdout).toContain('[migrate] mover (x2): applying on target…');
    expect(r.stdout).toContain('[migrate] waiting for mover to become Ready on target (≤60s)…');
    expect(r.stdout).toContain('[migrate] target Ready — draining mover from source');
    expect(r.stdout).toContain('[migrate] done: {"ok": true, "deploy": "mover", "replicas": 2}');
    expect(r.code).toBe(0);
    expect(deployments(local).some((d) => d.name === 'mover')).toBe(false);
    expect(running(peer, 'mover')).toBe(2);
    await remove(peer, 'mover');
  }, 120_000);

  it('migrate rolls back when the target degrades inside the window, and keeps the source running', async () => {
    await deploy(local, 'fragile', 1);
    await until('fragile running on local', () => running(local, 'fragile') === 1);
    const child = bridge(
      'migrate',
      'fragile',
      '--poll',
      '1',
      '--wait',
      '60',
      '--rollback-window',
      '40',
      ...endpoints(),
    );
    // Degrade the target right after the cut-over: its only node agent stops (and its pods with it).
    await until('drained from local', () => !deployments(local).some((d) => d.name === 'fragile'), 60_000);
    await peer.stopAgent();
    const r = await child;
    peer.startAgent();
    expect(r.stdout).toContain('[migrate] watching target for 40s (rollback armed)…');
    expect(r.stdout).toMatch(/\[migrate\] target degraded \(0\/1\) — rolling back to source/);
    expect(r.stdout).toContain(
      '[migrate] FAILED: {"ok": false, "rolled_back": true, "deploy": "fragile", "error": "target degraded to 0/1; restored on source"}',
    );
    expect(r.code).toBe(1);
    expect(deployments(local).some((d) => d.name === 'fragile')).toBe(true);
    expect(deployments(peer).some((d) => d.name === 'fragile')).toBe(false);
    expect(running(local, 'fragile')).toBe(1);
    await remove(local, 'fragile');
  }, 150_000);

  it('bad input: missing deployment, no capacity, a target that never runs, a wrong key, an unreachable peer', async () => {
    const missing = await bridge('migrate', 'ghost', ...endpoints());
    expect(missing.stdout).toContain(
      `[migrate] FAILED: {"ok": false, "error": "deployment 'ghost' not found on source"}`,
    );
    expect(missing.code).toBe(1);

    await deploy(local, 'huge', 3, 900); // 2700m: fits nowhere on the 2000m peer
    const full = await bridge('migrate', 'huge', ...endpoints());
    expect(full.code).toBe(1);
    expect(full.stdout).toMatch(/target has 2000m CPU free .* nothing was written/);
    expect(deployments(peer).some((d) => d.name === 'huge')).toBe(false);
    await remove(local, 'huge');

    // a pod that can never run on the target: its image needs a runtime the peer node lacks
    await deploy(local, 'never', 1, 100, 'nginx:alpine');
    const never = await bridge('migrate', 'never', '--wait', '3', '--poll', '1', ...endpoints());
    expect(never.code).toBe(1);
    expect(never.stdout).toContain(
      "timeout: 'never' not Ready on target within 3s; source left intact (no downtime)",
    );
    expect(deployments(local).some((d) => d.name === 'never')).toBe(true);
    expect(deployments(peer).some((d) => d.name === 'never')).toBe(false); // our copy was removed again
    await remove(local, 'never');

    await deploy(local, 'keyed', 1);
    const badKey = await bridge('sync', ...endpoints({ peerKey: 'wrong-key' }));
    expect(badKey.code).toBe(1);
    expect(badKey.stdout).toContain(
      '[bridge] request failed: HTTP 401 — signature/auth rejected — check tokens and --*-signing-key (member peer)',
    );
    expect(deployments(peer).some((d) => d.name === 'keyed')).toBe(false);
    await remove(local, 'keyed');

    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const gone = await bridge('status', ...endpoints({ peerUrl: `http://127.0.0.1:${port}` }));
    expect(gone.code).toBe(1);
    expect(gone.stdout).toMatch(/^\[bridge\] cannot reach a cluster: ECONNREFUSED \(member peer\)/m);
  }, 150_000);
});
