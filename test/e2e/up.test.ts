// `retrokube up FILE` end to end, as a user runs it: the real CLI in its own process, a plane and
// two nodes as emulated machines, the companion verbs from other processes, and every judgement
// from the air (the cluster view `up` keeps as a passive station), never by asking the plane.
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterView } from '../../operator/src/air/view.ts';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { upSession } from './up-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-up-e2e-'));
const state = join(dir, 'state');
const env = { ...process.env, RETROKUBE_STATE: state, LOG_LEVEL: 'warn' };

const FILE = `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata:
  name: small
spec:
  nodes: 2
  cluster: kube
  keySecretRef: {name: small-key}
  deployments: "web 4 Ticker"
---
apiVersion: v1
kind: Secret
metadata:
  name: small-key
stringData:
  key: 0123456789abcdef
`;

const session = upSession(state, env);
const { cli, view, until } = session;
let up: ChildProcess | null = null;
// info level, so the log file has lines to show (under vitest the default level is warn)
const startUp = (): void => {
  up = session.start([join(dir, 'small.yaml'), '--no-view', '--no-vnc'], {
    RETROKUBE_LOG_LEVEL: 'info',
  }).proc;
};

const node = (v: ClusterView, name: string) => v.nodes.find((n) => n.name === name);
const sorted = (a: readonly number[] | null | undefined) => [...(a ?? [])].sort((x, y) => x - y);

describe.sequential('retrokube up FILE: a local Oberon cluster, steered by the companion verbs', () => {
  beforeAll(async () => {
    writeFileSync(join(dir, 'small.yaml'), FILE);
    await buildKubeDisk(); // built (or found cached) before the clock of the first test starts
  }, 300_000);
  afterAll(async () => {
    await session.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses bad FILEs with a message naming the field', async () => {
    const cases: [string, string, RegExp][] = [
      ['kind.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n', /kind "Pod" is not known/],
      ['nodes.yaml', FILE.replace('nodes: 2', 'nodes: 0'), /spec\.nodes must be a whole number 1\.\.20/],
      [
        'deps.yaml',
        FILE.replace('web 4 Ticker', 'web 4'),
        /spec\.deployments "web 4" is not "name replicas Module"/,
      ],
    ];
    for (const [name, text] of cases) writeFileSync(join(dir, name), text);
    const runs = await Promise.all(cases.map(([name]) => cli('up', join(dir, name), '--no-view')));
    runs.forEach((r, i) => {
      expect(r.code).not.toBe(0);
      expect(r.stderr).toMatch(cases[i][2]);
    });
  }, 120_000);

  let before: Map<string, number[]>;

  it('converges as heard on the air: both nodes Ready, 4 pods spread over them', async () => {
    startUp();
    const ms = await until(
      (v) => v.converged && v.running === 4 && v.readyNodes === 2,
      90_000,
      'converged(4)',
    );
    console.log(`up: converged(4) heard ${(ms / 1000).toFixed(1)} s after start`);
    const v = await view();
    expect(node(v, 'node-a')?.running.length).toBeGreaterThan(0);
    expect(node(v, 'node-b')?.running.length).toBeGreaterThan(0);
    const st = JSON.parse(readFileSync(join(state, 'up.json'), 'utf8'));
    expect(st.machines.map((m: { name: string }) => m.name)).toEqual(['plane', 'node-a', 'node-b']);
    expect(session.log()).not.toContain('0123456789abcdef'); // the key is never printed
    // The console is for people: no JSON log lines, no repeated runtime warnings; the log is a file.
    const logFile = join(state, 'up.log');
    expect(session.log()).toContain(`logs (JSON lines) go to ${logFile}`);
    expect(session.log()).not.toMatch(/^\{"level"/m);
    expect(session.log()).not.toMatch(/ExperimentalWarning/);
    expect(readFileSync(logFile, 'utf8')).toMatch(/^\{"level":\d+,"time":\d+,"component":"/m);
  }, 120_000);

  it('kube get -o json shows the cluster heard on the air', async () => {
    const r = await cli('kube', 'get', '-o', 'json');
    expect(r.code).toBe(0);
    const v = JSON.parse(r.stdout) as ClusterView;
    expect(v.running).toBe(4);
    expect(v.nodes.map((n) => n.name).sort()).toEqual(['node-a', 'node-b']);
    const t = await cli('kube', 'get');
    expect(t.stdout).toMatch(/node-a\s+Ready/);
  }, 60_000);

  it('air listen with no address hears this cluster (relay, key and cluster from the state folder)', async () => {
    const r = await cli('air', 'listen', '--json', '--duration', '4');
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind?: string; verdict?: string });
    expect(lines.filter((l) => l.kind === 'heartbeat' && l.verdict === 'ok').length).toBeGreaterThan(2);
    expect(r.stderr).not.toMatch(/heard nothing/);
  }, 60_000);

  it('machine off makes the node NotReady and its pods move; machine on brings it back', async () => {
    const r = await cli('machine', 'off', 'node-b');
    expect(r.code).toBe(0);
    const ms = await until(
      (v) => !node(v, 'node-b')?.ready && node(v, 'node-a')?.running.length === 4 && v.converged,
      30_000,
      'node-b NotReady and its pods on node-a',
    );
    console.log(`up: node-b off → its pods on node-a in ${(ms / 1000).toFixed(1)} s`);
    expect((await cli('machine', 'on', 'node-b')).code).toBe(0);
    await until((v) => node(v, 'node-b')?.ready === true, 40_000, 'node-b Ready again');
    expect((await cli('machine', 'off', 'nope')).stderr).toMatch(/no machine "nope"/);
  }, 120_000);

  it('kube apply types Kube.Apply into the plane and the scale-up lands on the empty node', async () => {
    const r = await cli('kube', 'apply', 'web', '6', 'Ticker');
    expect(r.stdout).toContain('typed into the plane: Kube.Apply web 6 Ticker');
    await until(
      (v) => v.converged && v.running === 6 && node(v, 'node-b')?.running.length === 2,
      40_000,
      'converged(6) with 2 pods on node-b',
    );
    const v = await view();
    before = new Map(v.nodes.map((n) => [n.name, sorted(n.assigned)]));
  }, 90_000);

  it('air loss, air off and air on act on the running cluster (no --control needed)', async () => {
    const loss = await cli('air', 'loss', '0.3', '-o', 'json');
    expect(loss.code).toBe(0);
    expect(JSON.parse(loss.stdout).loss).toBe(0.3);
    await cli('air', 'loss', '0');
    expect(JSON.parse((await cli('air', 'off', '-o', 'json')).stdout).on).toBe(false);
    await until((v) => v.readyNodes === 0, 15_000, 'every node silent with the air off');
    expect(JSON.parse((await cli('air', 'on', '-o', 'json')).stdout).on).toBe(true);
    await until((v) => v.readyNodes === 2 && v.converged && v.running === 6, 30_000, 'back with the air');
    const v = await view();
    for (const n of v.nodes) expect(sorted(n.assigned)).toEqual(before.get(n.name));
  }, 90_000);

  it('screen writes a PNG of a machine', async () => {
    const file = join(dir, 'plane.png');
    expect((await cli('screen', 'plane', '--out', file)).code).toBe(0);
    expect(readFileSync(file).subarray(1, 4).toString()).toBe('PNG');
  }, 60_000);

  it('down stops every process and leaves the state folder', async () => {
    const pid = up?.pid;
    expect((await cli('down')).code).toBe(0);
    expect(up?.exitCode ?? up?.signalCode).not.toBeNull();
    expect(() => process.kill(pid ?? 0, 0)).toThrow();
    expect(existsSync(join(state, 'up.json'))).toBe(false);
    for (const m of ['plane', 'node-a', 'node-b']) expect(existsSync(join(state, `${m}.dsk`))).toBe(true);
    expect((await cli('kube', 'get')).stderr).toMatch(/no running "retrokube up"/);
  }, 90_000);

  it('a restarted up restores the plane store: the same pods on the same nodes', async () => {
    startUp();
    await until((v) => v.converged && v.running === 6 && v.readyNodes === 2, 90_000, 'converged(6) again');
    const v = await view();
    for (const n of v.nodes) expect(sorted(n.assigned)).toEqual(before.get(n.name));
    expect((await cli('down')).code).toBe(0);
  }, 120_000);
});
