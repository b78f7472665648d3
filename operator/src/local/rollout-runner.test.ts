// The local rollout runner: the planner driven over targets, its status in the state folder so a
// restarted `up` carries on without changing a target twice. The targets here are small
// simulations (a version that takes effect one step after it is applied); the e2e suite runs real
// clusters (test/e2e/up-rollouts.test.ts).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RolloutSpecT } from '../api/rollout.ts';
import type { Observation, Version } from '../rollout/plan.ts';
import { type FleetTarget, LIMITS, LocalRollouts } from './rollout-runner.ts';

class SimTarget implements FleetTarget {
  readonly kind = 'OberonKube';
  applied: Version[] = [];
  running: Version;
  heard = true;
  readonly name: string;
  readonly labels: Record<string, string>;
  private desired: Version = { image: 'Ticker', replicas: 2 };
  constructor(name: string, labels: Record<string, string>) {
    this.name = name;
    this.labels = labels;
    this.running = { ...this.desired };
  }
  observe(_c: unknown, _min: number): Observation {
    if (!this.heard) return { current: this.desired, converged: false, healthy: false, problem: 'not heard' };
    const converged =
      this.running.image === this.desired.image && this.running.replicas === this.desired.replicas;
    this.running = { ...this.desired }; // takes effect by the next look
    return { current: { ...this.desired }, converged, healthy: true };
  }
  apply(_d: string, v: Version): void {
    this.applied.push(v);
    this.desired = { ...this.desired, ...v };
  }
}

const spec = (strategy: RolloutSpecT['strategy']): RolloutSpecT => ({
  selector: { matchLabels: { fleet: 'demo' } },
  change: { deployment: 'web', image: 'Ticker2' },
  strategy: { checkSeconds: 0, ...strategy },
});

function fleet(labels: Record<string, string>[] = [{}, {}, {}]) {
  return labels.map((l, i) => new SimTarget(`c${i + 1}`, { fleet: 'demo', ...l }));
}

function runner(dir: string, targets: SimTarget[], s: RolloutSpecT, clock: { t: number }) {
  return new LocalRollouts({
    dir,
    rollouts: [{ name: 'r', spec: s }],
    targets,
    now: () => new Date(clock.t),
  });
}

async function steps(r: LocalRollouts, clock: { t: number }, n: number) {
  for (let i = 0; i < n; i++) {
    clock.t += 1000;
    await r.tick();
  }
}

describe('rollouts carried out by a local up', () => {
  it('walks the targets one at a time and keeps the walk in the state folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-runner-'));
    const clock = { t: Date.parse('2026-12-01T06:00:00Z') };
    const ts = fleet();
    const r = runner(dir, ts, spec({ type: 'rolling' }), clock);
    expect(r.view('r')?.steps).toBe(0);
    await steps(r, clock, 20);
    const v = r.view('r');
    expect(v?.steps).toBe(20); // every tick is one step, including those that change nothing
    expect(v?.status.phase).toBe('Succeeded');
    expect(v?.status.progress).toBe('3/3');
    for (const t of ts) expect(t.applied).toEqual([{ image: 'Ticker2', replicas: 2 }]);
    expect(v?.events.some((e) => /Normal Succeeded: 3 of 3 targets changed/.test(e))).toBe(true);
    const saved = JSON.parse(readFileSync(join(dir, LIMITS.statusFile), 'utf8'));
    expect(saved.r.status.phase).toBe('Succeeded');
  });

  it('a restarted runner carries on from the saved status and changes no target twice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-runner-'));
    const clock = { t: Date.parse('2026-12-01T06:00:00Z') };
    const ts = fleet();
    await steps(runner(dir, ts, spec({ type: 'rolling' }), clock), clock, 4); // c1 done, c2 under way
    const again = runner(dir, ts, spec({ type: 'rolling' }), clock);
    expect(again.view('r')?.status.targets?.[0].phase).toBe('Succeeded');
    await steps(again, clock, 20);
    expect(again.view('r')?.status.phase).toBe('Succeeded');
    for (const t of ts) expect(t.applied).toHaveLength(1);
  });

  it('waits for its targets to be heard before the first step (a cluster still booting is not unreadable)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-runner-'));
    const clock = { t: Date.parse('2026-12-01T06:00:00Z') };
    const ts = fleet();
    ts[1].heard = false;
    const r = runner(dir, ts, spec({ type: 'rolling' }), clock);
    await steps(r, clock, 5);
    expect(r.view('r')?.status).toMatchObject({
      phase: 'Pending',
      message: 'waiting for c2 to be heard on the air',
    });
    ts[1].heard = true;
    await steps(r, clock, 20);
    expect(r.view('r')?.status.phase).toBe('Succeeded');
  });

  it('a manual canary waits for a person; promote (and only promote) lets it go on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-runner-'));
    const clock = { t: Date.parse('2026-12-01T06:00:00Z') };
    const ts = fleet();
    const r = runner(dir, ts, spec({ type: 'canary', canary: { count: 1, promotion: 'manual' } }), clock);
    await steps(r, clock, 10);
    expect(r.view('r')?.status.phase).toBe('WaitingForPromotion');
    expect(ts.map((t) => t.applied.length)).toEqual([1, 0, 0]);
    expect(() => r.steer('nope', { promote: true })).toThrow(/no rollout "nope" \(rollouts: r\)/);
    r.steer('r', { paused: true });
    r.steer('r', { paused: false });
    await steps(r, clock, 3);
    expect(r.view('r')?.status.phase).toBe('WaitingForPromotion');
    expect(r.steer('r', { promote: true }).spec.promote).toBe(true);
    await steps(r, clock, 20);
    expect(r.view('r')?.status.phase).toBe('Succeeded');
    expect(ts.map((t) => t.applied.length)).toEqual([1, 1, 1]);
  });

  it('abort rolls back the target caught mid-change and stops', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-runner-'));
    const clock = { t: Date.parse('2026-12-01T06:00:00Z') };
    const ts = fleet();
    const r = runner(dir, ts, spec({ type: 'rolling', checkSeconds: 60 }), clock);
    await steps(r, clock, 3); // c1 checking for a minute
    r.steer('r', { abort: true });
    await steps(r, clock, 1);
    const v = r.view('r');
    expect(v?.status.phase).toBe('Aborted');
    // Written back at once; RolledBack once the target is seen running its old version again.
    expect(v?.status.targets?.map((t) => t.phase)).toEqual(['RollingBack', 'Skipped', 'Skipped']);
    await steps(r, clock, 1); // the first look after the write still sees the canary version
    expect(r.view('r')?.status.targets?.[0].phase).toBe('RollingBack');
    await steps(r, clock, 1);
    expect(r.view('r')?.status.targets?.map((t) => t.phase)).toEqual(['RolledBack', 'Skipped', 'Skipped']);
    expect(ts[0].applied).toEqual([
      { image: 'Ticker2', replicas: 2 },
      { image: 'Ticker', replicas: 2 },
    ]);
  });

  it('blue/green switches the serving label to the changed group, and a restart keeps the labels', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rk-runner-'));
    const clock = { t: Date.parse('2026-12-01T06:00:00Z') };
    const ts = fleet([{ color: 'blue' }, { color: 'green' }, { color: 'green' }]);
    const s = spec({
      type: 'blueGreen',
      maxParallel: 2,
      blueGreen: { groupLabel: 'color', activeGroup: 'blue' },
    });
    const r = runner(dir, ts, s, clock);
    await steps(r, clock, 10);
    expect(r.view('r')?.status).toMatchObject({ phase: 'Succeeded', activeGroup: 'green' });
    expect(ts.map((t) => t.labels['rollout.retrokube.io/serving'])).toEqual(['false', 'true', 'true']);
    expect(ts[0].applied).toEqual([]);
    const fresh = fleet([{ color: 'blue' }, { color: 'green' }, { color: 'green' }]);
    runner(dir, fresh, s, clock);
    expect(fresh.map((t) => t.labels['rollout.retrokube.io/serving'])).toEqual(['false', 'true', 'true']);
  });
});
