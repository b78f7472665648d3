// Fleet rollouts on local clusters, end to end as a user runs them: `retrokube up FLEET.yaml` in its
// own process runs two Oberon clusters (a plane and two nodes, a plane and one: emulated machines on two
// real UDP airs) and six Rollouts over them; the rollout verbs steer them from other processes;
// every verdict is from the air (each cluster's view as `up` hears it), never by asking a plane.
// The six rollouts share the clusters to keep the cost small: each starts paused and the test
// resumes one at a time (`retrokube rollout resume`), each walking on from where the last left.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterView } from '../../operator/src/air/view.ts';
import type { LocalRolloutView } from '../../operator/src/local/rollout-runner.ts';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { settled } from '../../operator/src/rollout/plan.ts';
import { UpProcess } from './fleet-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-rollouts-e2e-'));
const state = join(dir, 'state');

const kube = (name: string, labels: string, nodes = 1) => `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata: {name: ${name}, labels: {${labels}}}
spec: {nodes: ${nodes}, deployments: "web 2 Ticker"}
---
`;
// Generous deadlines (the machine is shared); short check windows keep the walk quick. A rollout
// whose failure is the point gets a short deadline: its deadline is its failure.
const rollout = (
  name: string,
  selector: string,
  change: string,
  strategy: string,
  checkSeconds = 4,
) => `apiVersion: retrokube.io/v1alpha1
kind: Rollout
metadata: {name: ${name}}
spec:
  paused: true
  selector: {matchLabels: {${selector}}}
  change: {deployment: web, ${change}}
  strategy: {checkSeconds: ${checkSeconds}, ${strategy}}
  check: {minRunning: 1}
---
`;
const FLEET = [
  // c1 has a second node: with it off, the plane is still heard (it assigns to node-a), so the
  // retry's target can be started and judged, and it cannot converge.
  kube('c1', 'fleet: demo, color: blue, tier: web, solo: "yes"', 2),
  kube('c2', 'fleet: demo, color: green, tier: db'),
  rollout('rolling', 'fleet: demo', 'image: Ticker2', 'type: rolling, stepDeadlineSeconds: 180'),
  rollout('broken', 'fleet: demo', 'image: Nosuch', 'type: rolling, stepDeadlineSeconds: 30'),
  rollout(
    'retry',
    'solo: "yes"',
    'image: Ticker',
    'type: retry, stepDeadlineSeconds: 40, retry: {attempts: 2, delaySeconds: 10}',
  ),
  rollout(
    'canary',
    'fleet: demo',
    'image: Ticker, replicas: 3',
    'type: canary, stepDeadlineSeconds: 180, canary: {count: 1, promotion: manual}',
  ),
  rollout(
    'bluegreen',
    'fleet: demo',
    'image: Ticker2',
    'type: blueGreen, stepDeadlineSeconds: 180, maxParallel: 2, blueGreen: {groupLabel: color, activeGroup: blue}',
  ),
  rollout(
    'ordered',
    'fleet: demo',
    'image: Ticker2, replicas: 2',
    'type: ordered, stepDeadlineSeconds: 180, ordered: {label: tier, order: [db, web]}',
    15, // time for the test to pause it while the first stage checks
  ),
].join('');

const up = new UpProcess(state);
const { cli, get, until } = {
  cli: up.cli.bind(up),
  get: up.get.bind(up),
  until: up.until.bind(up),
};
const startUp = () => up.start(join(dir, 'fleet.yaml'));
const status = (name: string) => get<LocalRolloutView>(`/rollouts/${name}`);
const view = (cluster: string) => get<ClusterView>(`/view?cluster=${cluster}`);

/** The images heard running on a cluster's Ready nodes. */
async function heard(cluster: string): Promise<string[]> {
  const v = await view(cluster);
  const image = new Map(v.pods.map((p) => [p.id, p.image]));
  return v.nodes
    .filter((n) => n.ready)
    .flatMap((n) => n.running.map((id) => image.get(id) ?? '?'))
    .sort();
}

// Ended and settled: a target rolling back says RolledBack only once it is heard on its old version.
const ended = (r: LocalRolloutView) => settled(r.status);
const phases = (r: LocalRolloutView) =>
  Object.fromEntries((r.status.targets ?? []).map((t) => [t.name, t.phase]));
const attempts = (r: LocalRolloutView) =>
  Object.fromEntries((r.status.targets ?? []).map((t) => [t.name, t.attempts]));

/** Resumes a paused rollout with the CLI and waits for its end; returns its last status. */
async function walk(name: string, ms: number): Promise<LocalRolloutView> {
  const r = await cli('rollout', 'resume', name);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain(`rollout ${name} (the local "retrokube up" in ${state}): resumed`);
  const t0 = Date.now();
  const last = await until(() => status(name), ended, ms, `rollout ${name} ends`);
  console.log(`rollout ${name}: ended in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return last;
}

describe.sequential('fleet rollouts over two local Oberon clusters run by retrokube up', () => {
  beforeAll(async () => {
    writeFileSync(join(dir, 'fleet.yaml'), FLEET);
    await buildKubeDisk(); // built (or found cached) before the first test's clock starts
  }, 300_000);
  afterAll(async () => {
    await up.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts the clusters; every rollout waits, paused, with its targets fixed', async () => {
    startUp();
    await until(
      () => Promise.all(['c1', 'c2'].map(heard)),
      (all) => all.every((h) => h.join() === 'Ticker,Ticker'),
      180_000,
      'every cluster runs web 2 Ticker',
    );
    await until(
      () => status('rolling'),
      (r) => r.status.phase === 'Paused',
      60_000,
      'rolling paused',
    );
    const s = await cli('rollout', 'status', 'rolling');
    expect(s.code, s.stderr).toBe(0);
    expect(s.stdout).toMatch(/rollout local\/rolling: rolling change of web to Ticker2/);
    expect(s.stdout).toMatch(/\[-{20}\] 0\/2 changed {2}Paused/);
    expect(s.stdout).toMatch(/c1\s+Pending\s+0/);
  }, 240_000);

  it('rolling: one cluster at a time, each heard running the new image before the next starts', async () => {
    const r = await walk('rolling', 300_000);
    expect(r.status.phase).toBe('Succeeded');
    expect(phases(r)).toEqual({ c1: 'Succeeded', c2: 'Succeeded' });
    const [a, b] = r.status.targets ?? [];
    expect(Date.parse(a.finishedAt ?? '')).toBeLessThanOrEqual(Date.parse(b.startedAt ?? ''));
    for (const k of ['c1', 'c2']) expect(await heard(k)).toEqual(['Ticker2', 'Ticker2']);
    expect(r.events.join('\n')).toMatch(/Succeeded: 2 of 2 targets changed/);
  }, 360_000);

  it('a module that does not exist: pods stay Pending, the target is rolled back and the rest aborted', async () => {
    const r = await walk('broken', 240_000);
    expect(r.status.phase).toBe('Failed');
    expect(phases(r)).toEqual({ c1: 'RolledBack', c2: 'Skipped' });
    expect(r.status.targets?.[0].previous).toEqual({ image: 'Ticker2', replicas: 2 });
    expect(r.status.targets?.[0].message).toMatch(/did not converge within 30 s/);
    expect(r.status.targets?.[1].message).toMatch(/onFailure: abort/);
    // Rolled back to exactly what it ran, heard on the air; the skipped clusters never changed.
    await until(
      // and converged: no pod of the broken version is left waiting for a module that is not there
      async () => ({ h: await heard('c1'), v: await view('c1') }),
      ({ h, v }) => h.join() === 'Ticker2,Ticker2' && v.converged && v.readyNodes === 2,
      120_000,
      'c1 back on Ticker2, converged',
    );
    expect(await heard('c2')).toEqual(['Ticker2', 'Ticker2']); // never touched
  }, 420_000);

  it('retry: a cluster with a node off fails its first attempt and succeeds on the second', async () => {
    // Its plane is still heard (it assigns to node-a), so the target starts and is judged; with
    // node-b silent it cannot converge.
    expect((await cli('machine', 'off', 'c1/node-b')).code).toBe(0);
    await until(
      () => view('c1'),
      (v) => v.readyNodes === 1,
      30_000,
      'c1/node-b NotReady',
    );
    const resumed = await cli('rollout', 'resume', 'retry');
    expect(resumed.code, resumed.stderr).toBe(0);
    await until(
      () => status('retry'),
      (r) => r.status.targets?.[0]?.attempts === 1 && r.status.targets[0].phase === 'Pending',
      180_000,
      'the first attempt failed',
    );
    expect((await status('retry')).status.targets?.[0].message).toMatch(/attempt 1 of 2 failed/);
    expect((await cli('machine', 'on', 'c1/node-b')).code).toBe(0);
    await until(() => status('retry'), ended, 240_000, 'retry ends');
    const r = await status('retry');
    expect(r.status.phase).toBe('Succeeded');
    expect(attempts(r)).toEqual({ c1: 2 });
    expect(await heard('c1')).toEqual(['Ticker', 'Ticker']);
  }, 480_000);

  it('canary: the first cluster changes, the walk waits for a person, promote goes on', async () => {
    const resumed = await cli('rollout', 'resume', 'canary');
    expect(resumed.code, resumed.stderr).toBe(0);
    await until(
      () => status('canary'),
      (r) => r.status.phase === 'WaitingForPromotion',
      240_000,
      'the canary waits for promotion',
    );
    let r = await status('canary');
    expect(phases(r)).toEqual({ c1: 'Succeeded', c2: 'Pending' });
    expect(await heard('c1')).toEqual(['Ticker', 'Ticker', 'Ticker']);
    // Nothing moves while it waits: the runner looks at it twice more (its step counter; a runner
    // that moved on by itself would do it at its next look) and does nothing — no event, no phase
    // change, c2 untouched on its air. Two looks take 2-4 s (a step every 2 s), not a blind 5-s wait.
    const events = r.events.length;
    const t0 = Date.now();
    const looked = await until(
      () => status('canary'),
      (x) => x.steps >= r.steps + 2,
      60_000,
      'the runner looks at the waiting canary twice more',
    );
    console.log(`canary: two more looks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(looked.events.slice(events)).toEqual([]);
    expect(looked.status.phase).toBe('WaitingForPromotion');
    expect(phases(looked)).toEqual({ c1: 'Succeeded', c2: 'Pending' });
    expect(await heard('c2')).toEqual(['Ticker2', 'Ticker2']);
    const p = await cli('rollout', 'promote', 'canary');
    expect(p.code, p.stderr).toBe(0);
    await until(() => status('canary'), ended, 300_000, 'canary ends');
    r = await status('canary');
    expect(r.status.phase).toBe('Succeeded');
    expect(r.events.join('\n')).toMatch(/Promoted: promoted by a person/);
    expect(await heard('c2')).toEqual(['Ticker', 'Ticker', 'Ticker']);
  }, 600_000);

  it('blue/green: the idle group changes and is checked, then the serving label switches to it', async () => {
    const r = await walk('bluegreen', 300_000);
    expect(r.status.phase).toBe('Succeeded');
    expect(phases(r)).toEqual({ c1: 'Skipped', c2: 'Succeeded' });
    expect(r.status.activeGroup).toBe('green');
    const clusters = await get<{ name: string; labels: Record<string, string> }[]>('/clusters');
    const serving = Object.fromEntries(
      clusters.map((c) => [c.name, c.labels['rollout.retrokube.io/serving']]),
    );
    expect(serving).toEqual({ c1: 'false', c2: 'true' });
    // The old group keeps its version: the way back.
    expect(await heard('c1')).toEqual(['Ticker', 'Ticker', 'Ticker']);
    expect(await heard('c2')).toEqual(['Ticker2', 'Ticker2', 'Ticker2']);
  }, 360_000);

  it('ordered: db, then web; paused across a restart of up, it carries on from its status', async () => {
    const resumed = await cli('rollout', 'resume', 'ordered');
    expect(resumed.code, resumed.stderr).toBe(0);
    // Paused while the db stage changes (its check lasts 15 s): it finishes, web does not start.
    await until(
      () => status('ordered'),
      (r) => phases(r).c2 === 'Updating' || phases(r).c2 === 'Checking',
      240_000,
      'the db stage (c2) under way',
    );
    expect((await cli('rollout', 'pause', 'ordered')).code).toBe(0);
    await until(
      () => status('ordered'),
      (r) =>
        r.status.phase === 'Paused' &&
        !Object.values(phases(r)).some((p) => p === 'Updating' || p === 'Checking'),
      240_000,
      'paused with nothing changing',
    );
    const before = await status('ordered');
    expect((await cli('down')).code).toBe(0);
    startUp();
    await until(
      () => status('ordered'),
      (r) => r.status.phase === 'Paused',
      120_000,
      'up again, still paused',
    );
    expect((await status('ordered')).status.targets).toEqual(before.status.targets);
    const r = await walk('ordered', 400_000);
    expect(r.status.phase).toBe('Succeeded');
    const [first, second] = r.status.targets ?? [];
    expect([first.name, second.name]).toEqual(['c2', 'c1']);
    expect(Date.parse(first.finishedAt ?? '')).toBeLessThanOrEqual(Date.parse(second.startedAt ?? ''));
    expect(attempts(r)).toEqual({ c1: 1, c2: 1 }); // nothing changed twice across the restart
    for (const k of ['c1', 'c2']) expect(await heard(k)).toEqual(['Ticker2', 'Ticker2']);
    expect((await cli('down')).code).toBe(0);
  }, 600_000);
});
