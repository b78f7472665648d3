// The rollout planner against a simulated fleet: targets that converge after a few polls, targets
// that never do or fail their check, a person who pauses, promotes or aborts at random moments.
// Every step of every run is checked against the promises the strategies make.
import fc from 'fast-check';
import { expect, describe as group, it } from 'vitest';
import {
  type Action,
  canarySize,
  type Decision,
  decide,
  desiredVersion,
  type Observation,
  type RolloutSpec,
  type RolloutStatus,
  type Strategy,
  settled,
  type Target,
  type Version,
} from './plan.ts';

interface SimTarget extends Target {
  version?: Version;
  original?: Version;
  /** Polls a new version takes to converge; Infinity never converges. */
  slowness: number;
  /** The check fails once converged on the new version. */
  unhealthyOnNew: boolean;
  /** Fails this many attempts before behaving (the "made to fail once" target). */
  flakyAttempts: number;
  /** Once rolled back, never seen converged on its old version again (its nodes gone, say). */
  neverBack: boolean;
  pollsSinceApply: number;
  attemptsSeen: number;
}

const CHANGE = { deployment: 'web', image: 'Ticker2' };
const OLD: Version = { image: 'Ticker', replicas: 4 };

function observe(t: SimTarget): Observation {
  if (!t.version) return { converged: true, healthy: true };
  const isNew = t.version.image === CHANGE.image;
  const failingAttempt = isNew && t.attemptsSeen <= t.flakyAttempts;
  const converged = isNew
    ? !failingAttempt && t.pollsSinceApply >= t.slowness
    : !t.neverBack || t.attemptsSeen === 0;
  return { current: t.version, converged, healthy: !(isNew && converged && t.unhealthyOnNew) };
}

function apply(fleet: Map<string, SimTarget>, a: Action): void {
  if (a.kind !== 'apply') return;
  const t = fleet.get(a.target)!;
  if (a.why === 'update') t.attemptsSeen += 1;
  t.version = a.version;
  t.pollsSinceApply = 0;
}

interface Run {
  decisions: Decision[];
  statuses: RolloutStatus[];
  fleet: Map<string, SimTarget>;
}

/** Drives decide() against the fleet for up to `steps` polls, 1 s apart; checks invariants each step. */
function simulate(
  strategy: Strategy,
  fleetSpec: Partial<SimTarget>[],
  people: { at: number; what: 'pause' | 'resume' | 'promote' | 'abort' }[] = [],
  steps = 400,
): Run {
  const fleet = new Map<string, SimTarget>();
  fleetSpec.forEach((f, i) => {
    const name = f.name ?? `t${String(i).padStart(2, '0')}`;
    fleet.set(name, {
      name,
      labels: f.labels ?? {},
      version: 'version' in f ? f.version : { ...OLD },
      original: 'version' in f ? f.version : { ...OLD },
      slowness: f.slowness ?? 1,
      unhealthyOnNew: f.unhealthyOnNew ?? false,
      flakyAttempts: f.flakyAttempts ?? 0,
      neverBack: f.neverBack ?? false,
      pollsSinceApply: 0,
      attemptsSeen: 0,
    });
  });
  const spec: RolloutSpec = {
    change: CHANGE,
    strategy: { checkSeconds: 2, stepDeadlineSeconds: 30, ...strategy },
  };
  let status: RolloutStatus | undefined;
  const run: Run = { decisions: [], statuses: [], fleet };
  const t0 = Date.parse('2026-12-01T00:00:00Z');
  for (let step = 0; step < steps; step++) {
    for (const p of people.filter((x) => x.at === step)) {
      if (p.what === 'pause') spec.paused = true;
      if (p.what === 'resume') spec.paused = false;
      if (p.what === 'promote') spec.promote = true;
      if (p.what === 'abort') spec.abort = true;
    }
    const seen = new Map([...fleet.values()].map((t) => [t.name, observe(t)]));
    const d = decide(spec, status, [...fleet.values()], seen, new Date(t0 + step * 1000));
    for (const a of d.actions) apply(fleet, a);
    for (const t of fleet.values()) t.pollsSinceApply += 1;
    checkEveryStep(spec, d.status, fleet);
    run.decisions.push(d);
    run.statuses.push(d.status);
    status = d.status;
    if (settled(status)) break;
  }
  return run;
}

function checkEveryStep(spec: RolloutSpec, status: RolloutStatus, fleet: Map<string, SimTarget>): void {
  const s = spec.strategy;
  const changing = status.targets.filter((r) => r.phase === 'Updating' || r.phase === 'Checking');
  expect(changing.length).toBeLessThanOrEqual(s.maxParallel ?? 1);
  if (s.type === 'canary' && !status.canaryPromotedAt) {
    const share = canarySize(s, status.targets.length);
    const touched = status.targets.filter((r) => r.attempts > 0);
    expect(touched.length).toBeLessThanOrEqual(share);
  }
  for (const r of status.targets) {
    const t = fleet.get(r.name)!;
    // Rollback restores exactly the previous version.
    if (r.phase === 'RolledBack') expect(t.version).toEqual(t.original);
    if (r.phase === 'Succeeded') expect(t.version).toEqual(desiredVersion(spec.change, t.original));
    if (r.phase === 'Skipped' || (r.phase === 'Pending' && r.attempts === 0))
      expect(t.version).toEqual(t.original);
  }
  if (s.type === 'ordered' && s.ordered) {
    const stageOf = (name: string) =>
      s.ordered!.order.indexOf(fleet.get(name)!.labels[s.ordered!.label] ?? '');
    for (const r of status.targets.filter((x) => x.attempts > 0)) {
      for (const e of status.targets) {
        const earlier = stageOf(e.name) >= 0 && stageOf(e.name) < stageOf(r.name);
        if (earlier) expect(['Succeeded', 'Skipped']).toContain(e.phase);
      }
    }
  }
  if (['Aborted', 'Failed'].includes(status.phase)) {
    // Nothing half-changed: every target runs either what it had or the whole new version.
    for (const r of status.targets) {
      expect(['Updating', 'Checking']).not.toContain(r.phase);
      const v = fleet.get(r.name)!.version;
      const orig = fleet.get(r.name)!.original;
      if (r.phase !== 'Succeeded') expect(v).toEqual(orig);
    }
  }
}

const last = (r: Run) => r.statuses[r.statuses.length - 1];
const fleetOf = (n: number, f: (i: number) => Partial<SimTarget> = () => ({})) =>
  Array.from({ length: n }, (_, i) => f(i));

group('rollout strategies on a simulated fleet', () => {
  it('rolling: every target changes, at most maxParallel at once, in name order', () => {
    const r = simulate(
      { type: 'rolling', maxParallel: 2 },
      fleetOf(5, () => ({ slowness: 3 })),
    );
    expect(last(r).phase).toBe('Succeeded');
    for (const t of r.fleet.values()) expect(t.version?.image).toBe('Ticker2');
    expect(Math.max(...r.statuses.map((s) => s.targets.filter((x) => x.phase === 'Updating').length))).toBe(
      2,
    );
  });

  it('rolling with abort: the third target fails, is rolled back, the rest never start', () => {
    const r = simulate(
      { type: 'rolling', onFailure: 'abort' },
      fleetOf(5, (i) => (i === 2 ? { slowness: Number.POSITIVE_INFINITY } : {})),
    );
    const end = last(r);
    expect(end.phase).toBe('Failed');
    expect(end.targets.map((t) => t.phase)).toEqual([
      'Succeeded',
      'Succeeded',
      'RolledBack',
      'Skipped',
      'Skipped',
    ]);
    expect(end.targets[2].message).toMatch(/did not converge within 30 s/);
    expect(r.fleet.get('t02')?.version).toEqual(OLD);
  });

  it('a rollback is RolledBack only once seen: RollingBack until then, Failed if never seen within the deadline', () => {
    const r = simulate(
      { type: 'rolling', onFailure: 'abort', stepDeadlineSeconds: 10 },
      fleetOf(2, (i) => (i === 0 ? { unhealthyOnNew: true, neverBack: true } : {})),
    );
    // The rollout ends when it decides to; the target says what it is seen to run.
    const ended = r.statuses.findIndex((s) => s.phase === 'Failed');
    expect(r.statuses[ended].targets.map((t) => t.phase)).toEqual(['RollingBack', 'Skipped']);
    const end = last(r);
    expect(end.targets[0].phase).toBe('Failed');
    expect(end.targets[0].message).toMatch(/not seen running Ticker ×4 again within 10 s$/);
    expect(r.statuses.length - ended).toBeGreaterThan(10);
    expect(settled(end)).toBe(true);
  });

  it('rolling with continue: a failed target is rolled back and the walk goes on', () => {
    const r = simulate(
      { type: 'rolling', onFailure: 'continue' },
      fleetOf(4, (i) => (i === 1 ? { unhealthyOnNew: true } : {})),
    );
    expect(last(r).targets.map((t) => t.phase)).toEqual([
      'Succeeded',
      'RolledBack',
      'Succeeded',
      'Succeeded',
    ]);
    expect(last(r).phase).toBe('Failed');
  });

  it('retry: a target made to fail once succeeds on its second attempt, and the count shows it', () => {
    const r = simulate(
      { type: 'retry', retry: { attempts: 3, delaySeconds: 2, backoffFactor: 2 }, stepDeadlineSeconds: 5 },
      fleetOf(3, (i) => (i === 1 ? { flakyAttempts: 1 } : {})),
    );
    expect(last(r).phase).toBe('Succeeded');
    expect(last(r).targets.map((t) => t.attempts)).toEqual([1, 2, 1]);
    const failedOnce = r.decisions.flatMap((d) => d.events).find((e) => e.reason === 'AttemptFailed');
    expect(failedOnce?.message).toMatch(/t01: attempt 1 of 3 failed: .*next attempt in 2 s/);
  });

  it('canary with manual promotion waits for a person, then changes the rest', () => {
    const r = simulate(
      { type: 'canary', canary: { count: 1, promotion: 'manual' }, maxParallel: 2 },
      fleetOf(4),
      [{ at: 40, what: 'promote' }],
    );
    const waiting = r.statuses.findIndex((s) => s.phase === 'WaitingForPromotion');
    expect(waiting).toBeGreaterThan(0);
    expect(waiting).toBeLessThan(40);
    expect(r.statuses[39].targets.filter((t) => t.attempts > 0).map((t) => t.name)).toEqual(['t00']);
    expect(last(r).phase).toBe('Succeeded');
  });

  it('canary aborted while waiting rolls the canary back', () => {
    const r = simulate({ type: 'canary', canary: { percent: 25, promotion: 'manual' } }, fleetOf(8), [
      { at: 30, what: 'abort' },
    ]);
    expect(last(r).phase).toBe('Aborted');
    expect(
      last(r)
        .targets.slice(0, 2)
        .map((t) => t.phase),
    ).toEqual(['RolledBack', 'RolledBack']);
    for (const t of r.fleet.values()) expect(t.version).toEqual(OLD);
  });

  it('blue/green changes only the idle group, then switches traffic to it', () => {
    const r = simulate(
      { type: 'blueGreen', blueGreen: { groupLabel: 'color', activeGroup: 'blue' }, maxParallel: 2 },
      fleetOf(4, (i) => ({ labels: { color: i % 2 === 0 ? 'blue' : 'green' } })),
    );
    expect(last(r).phase).toBe('Succeeded');
    expect(last(r).activeGroup).toBe('green');
    const switches = r.decisions.flatMap((d) => d.actions).filter((a) => a.kind === 'switch');
    expect(switches).toEqual([{ kind: 'switch', group: 'green', label: 'color' }]);
    for (const t of r.fleet.values())
      expect(t.version?.image).toBe(t.labels.color === 'green' ? 'Ticker2' : 'Ticker');
  });

  it('ordered: databases before backends before frontends; an unlisted tier is skipped', () => {
    const tiers = ['frontend', 'database', 'backend', 'cache', 'database', 'frontend'];
    const r = simulate(
      {
        type: 'ordered',
        ordered: { label: 'tier', order: ['database', 'backend', 'frontend'] },
        maxParallel: 3,
      },
      fleetOf(tiers.length, (i) => ({ labels: { tier: tiers[i] } })),
    );
    expect(last(r).phase).toBe('Succeeded');
    const startOrder = r.decisions
      .flatMap((d) => d.actions)
      .filter((a) => a.kind === 'apply')
      .map((a) => (a.kind === 'apply' ? r.fleet.get(a.target)!.labels.tier : ''));
    expect(startOrder).toEqual(['database', 'database', 'backend', 'frontend', 'frontend']);
    expect(last(r).targets.find((t) => r.fleet.get(t.name)!.labels.tier === 'cache')?.phase).toBe('Skipped');
  });

  it('refuses before touching anything: no target, a missing deployment, impossible numbers', () => {
    expect(last(simulate({ type: 'rolling' }, [])).message).toMatch(/selector matches no target/);
    const missing = simulate(
      { type: 'rolling' },
      fleetOf(3, (i) => (i === 1 ? { version: undefined } : {})),
    );
    expect(last(missing).phase).toBe('Failed');
    expect(last(missing).message).toMatch(/deployment web does not exist on t01/);
    for (const t of missing.fleet.values()) expect(t.attemptsSeen).toBe(0);
    expect(last(simulate({ type: 'canary', canary: { count: 3 } }, fleetOf(3))).message).toMatch(
      /not smaller than the 3 targets/,
    );
    expect(
      last(
        simulate({ type: 'blueGreen', blueGreen: { groupLabel: 'color', activeGroup: 'red' } }, fleetOf(2)),
      ).message,
    ).toMatch(/every target labelled color/);
  });

  it('pausing stops new targets; resuming goes on', () => {
    const r = simulate(
      { type: 'rolling' },
      fleetOf(4, () => ({ slowness: 2 })),
      [
        { at: 3, what: 'pause' },
        { at: 60, what: 'resume' },
      ],
    );
    expect(r.statuses[30].phase).toBe('Paused');
    const started30 = r.statuses[30].targets.filter((t) => t.attempts > 0).length;
    expect(r.statuses[59].targets.filter((t) => t.attempts > 0).length).toBe(started30);
    expect(last(r).phase).toBe('Succeeded');
  });

  it('a target that cannot be read when its turn comes waits, says why, and is not started', () => {
    const spec: RolloutSpec = { change: CHANGE, strategy: { type: 'rolling' } };
    const targets = [
      { name: 'a', labels: {} },
      { name: 'b', labels: {} },
    ];
    const now = new Date('2026-12-01T00:00:00Z');
    const ok: Observation = { current: OLD, converged: true, healthy: true };
    const start = decide(
      spec,
      undefined,
      targets,
      new Map([
        ['a', ok],
        ['b', ok],
      ]),
      now,
    );
    const a = start.status.targets[0];
    a.phase = 'Succeeded'; // a is done; b's turn, and b's plane is not heard
    const unheard: Observation = {
      current: OLD,
      converged: false,
      healthy: false,
      problem: 'the plane is not heard',
    };
    const d = decide(
      spec,
      start.status,
      targets,
      new Map([
        ['a', ok],
        ['b', unheard],
      ]),
      now,
    );
    expect(d.actions).toEqual([]);
    expect(d.status.targets[1]).toMatchObject({
      phase: 'Pending',
      attempts: 0,
      message: 'waiting to start: the plane is not heard',
    });
  });

  it('resumes from its status alone: a fresh planner given the last status carries on the same way', () => {
    const strategy: Strategy = { type: 'rolling', maxParallel: 2 };
    const whole = simulate(
      strategy,
      fleetOf(5, () => ({ slowness: 2 })),
    );
    expect(last(whole).phase).toBe('Succeeded');
    // decide() keeps no memory: the same status and observations give the same decision.
    const seen = new Map<string, Observation>([['t00', { current: OLD, converged: true, healthy: true }]]);
    const spec: RolloutSpec = { change: CHANGE, strategy: { type: 'rolling' } };
    const now = new Date('2026-12-01T00:00:00Z');
    const a = decide(spec, undefined, [{ name: 't00', labels: {} }], seen, now);
    const b = decide(spec, undefined, [{ name: 't00', labels: {} }], seen, now);
    expect(a).toEqual(b);
    const again = decide(spec, a.status, [{ name: 't00', labels: {} }], seen, now);
    // Already updating t00 and the observation still shows the old version: the write is repeated, not doubled.
    expect(again.status.targets[0].attempts).toBe(1);
  });
});

group('rollout promises hold for any fleet and any person', () => {
  const strategyArb: fc.Arbitrary<Strategy> = fc.oneof(
    fc.record({
      type: fc.constant<'rolling'>('rolling'),
      maxParallel: fc.integer({ min: 1, max: 4 }),
      onFailure: fc.constantFrom<'abort' | 'continue'>('abort', 'continue'),
    }),
    fc.record({
      type: fc.constant<'retry'>('retry'),
      maxParallel: fc.integer({ min: 1, max: 3 }),
      retry: fc.record({
        attempts: fc.integer({ min: 1, max: 3 }),
        delaySeconds: fc.integer({ min: 0, max: 3 }),
      }),
      stepDeadlineSeconds: fc.constant(8),
    }),
    fc.record({
      type: fc.constant<'canary'>('canary'),
      maxParallel: fc.integer({ min: 1, max: 3 }),
      canary: fc.record({
        count: fc.integer({ min: 1, max: 2 }),
        promotion: fc.constantFrom<'auto' | 'manual'>('auto', 'manual'),
        analysisSeconds: fc.integer({ min: 0, max: 5 }),
      }),
    }),
    fc.record({
      type: fc.constant<'ordered'>('ordered'),
      maxParallel: fc.integer({ min: 1, max: 3 }),
      ordered: fc.constant<NonNullable<Strategy['ordered']>>({ label: 'tier', order: ['a', 'b', 'c'] }),
    }),
  );
  const targetArb = fc.record({
    slowness: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.constant(Number.POSITIVE_INFINITY)),
    unhealthyOnNew: fc.boolean(),
    flakyAttempts: fc.integer({ min: 0, max: 2 }),
    labels: fc.record({ tier: fc.constantFrom('a', 'b', 'c', 'x') }),
  });
  const peopleArb = fc.array(
    fc.record({
      at: fc.integer({ min: 0, max: 120 }),
      what: fc.constantFrom<'pause' | 'resume' | 'promote' | 'abort'>('pause', 'resume', 'promote', 'abort'),
    }),
    { maxLength: 4 },
  );

  it('never more than maxParallel changing, canary within its share before promotion, no half-changed target, exact rollbacks, order respected', () => {
    fc.assert(
      fc.property(
        strategyArb,
        fc.array(targetArb, { minLength: 3, maxLength: 8 }),
        peopleArb,
        (s, fleet, people) => {
          // checkEveryStep inside simulate asserts the invariants at every poll.
          const r = simulate(s, fleet, people, 300);
          const end = last(r);
          if (['Succeeded'].includes(end.phase)) {
            for (const row of end.targets.filter((t) => t.phase === 'Succeeded'))
              expect(r.fleet.get(row.name)!.version?.image).toBe('Ticker2');
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('without pauses or manual gates every rollout ends', () => {
    fc.assert(
      fc.property(
        strategyArb.filter((s) => s.canary?.promotion !== 'manual'),
        fc.array(targetArb, { minLength: 3, maxLength: 8 }),
        (s, fleet) => {
          const end = last(simulate(s, fleet, [], 2000));
          expect(['Succeeded', 'Failed']).toContain(end.phase);
        },
      ),
      { numRuns: 100 },
    );
  });
});
