// The federation planners, by property: whatever the members report and whenever a driver
// crashes, a migration never loses or doubles a replica, and a rollback restores the counts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Row } from '../store/types.ts';
import {
  initialStatus,
  type MigrationSpec,
  type MigrationStatus,
  type MigrationWrite,
  migrationResult,
  stepMigration,
  TERMINAL,
} from './migrate.ts';
import {
  describeStretch,
  federatedView,
  freeCpu,
  planStretch,
  planSync,
  replicasOf,
  type StretchMember,
  stretchMemberOf,
  stretchSteps,
} from './plan.ts';

const dep = (name: string, replicas: number, extra: Row = {}): Row => ({
  name,
  image: 'wasm:hello',
  replicas,
  cpu_req: 100,
  ...extra,
});

describe('status and sync (the reference rules)', () => {
  it('merges services by name, the first member winning a collision', () => {
    const view = federatedView([
      { name: 'local', deployments: [dep('web', 2), dep('api', 1)] },
      { name: 'peer', deployments: [dep('web', 5), dep('db', 1)] },
    ]);
    expect(view.map((e) => [e.name, e.home])).toEqual([
      ['api', 'local'],
      ['db', 'peer'],
      ['web', 'local'],
    ]);
    expect(view.find((e) => e.name === 'web')?.members).toEqual(['local', 'peer']);
  });

  it('copies what each side lacks, never touches same-named rows, and reports differing specs as conflicts', () => {
    const plan = planSync([
      { name: 'local', deployments: [dep('web', 2), dep('api', 1)] },
      { name: 'peer', deployments: [dep('web', 5), dep('db', 1)] },
    ]);
    expect(plan.apply.get('local')?.map((d) => d.name)).toEqual(['db']);
    expect(plan.apply.get('peer')?.map((d) => d.name)).toEqual(['api']);
    expect(plan.conflicts).toEqual([{ name: 'web', members: ['local', 'peer'] }]);
    const again = planSync([
      { name: 'local', deployments: [dep('web', 2), dep('api', 1), dep('db', 1)] },
      { name: 'peer', deployments: [dep('web', 2), dep('db', 1), dep('api', 1)] },
    ]);
    expect([...again.apply.values()].flat()).toEqual([]);
    expect(again.conflicts).toEqual([]);
  });

  it('a synced federation is a fixed point: a second pass writes nothing (any members, any rows)', () => {
    const names = fc.constantFrom('a', 'b', 'c', 'd', 'e');
    fc.assert(
      fc.property(
        fc.array(fc.uniqueArray(names, { maxLength: 5 }), { minLength: 2, maxLength: 4 }),
        (sets) => {
          const views = sets.map((s, i) => ({ name: `m${i}`, deployments: s.map((n) => dep(n, 1)) }));
          const plan = planSync(views);
          const after = views.map((v) => ({
            ...v,
            deployments: [...v.deployments, ...(plan.apply.get(v.name) ?? [])],
          }));
          const all = new Set(sets.flat());
          for (const v of after) expect(new Set(v.deployments.map((d) => d.name))).toEqual(all);
          expect([...planSync(after).apply.values()].flat()).toEqual([]);
        },
      ),
    );
  });

  it('counts free CPU only on Ready, schedulable nodes', () => {
    expect(
      freeCpu([
        { name: 'a', status: 'Ready', cpu_total: 1000, cpu_used: 300, schedulable: true },
        { name: 'b', status: 'NotReady', cpu_total: 1000, cpu_used: 0 },
        { name: 'c', status: 'Ready', cpu_total: 1000, cpu_used: 0, schedulable: 'FALSE' },
        { name: 'd', status: 'Ready', cpu_total: 500, cpu_used: 900 },
        { name: 'e', status: '', cpu_total: 1000, cpu_used: 0 },
      ]),
    ).toBe(700);
  });
});

describe('stretch', () => {
  it("reproduces the reference's example line", () => {
    const members = [
      { name: 'local', freeCpu: 1000, current: 0 },
      { name: 'peer', freeCpu: 4000, current: 0 },
    ];
    const plan = planStretch('web', 10, 300, members);
    expect(describeStretch(plan, members)).toBe(
      'web x10 @ 300m | local free 1000m -> 3, ordered from peer -> 7',
    );
  });

  it('plans per node as a scheduler places, counting own pods at their current request (no overcommit)', () => {
    const node = (name: string, total: number, used: number) => ({
      name,
      status: 'Ready',
      cpu_total: total,
      cpu_used: used,
    });
    const pod = (name: string, n: string) => ({ name, deployment: 'web', node: n, phase: 'Running' });
    // web 2×100m on local, one pod per 500m node; the peer has four empty 500m nodes
    const local = {
      name: 'local',
      deployments: [dep('web', 2)],
      nodes: [node('a', 500, 100), node('b', 500, 100)],
      pods: [pod('web-1', 'a'), pod('web-2', 'b')],
    };
    const peer = {
      name: 'peer',
      deployments: [],
      nodes: ['c', 'd', 'e', 'f'].map((n) => node(n, 500, 0)),
      pods: [],
    };
    const members = [stretchMemberOf(local, 'web'), stretchMemberOf(peer, 'web')];
    expect(members[0]?.nodeRoom).toEqual([500, 500]);
    const plan = planStretch('web', 10, 300, members);
    // pooled (800m free + 2×300m) it was 4 + 6 = 10; a scheduler fits one 300m pod per 500m node
    expect(plan.shares.map((s) => [s.member, s.replicas])).toEqual([
      ['local', 2],
      ['peer', 4],
    ]);
    expect(plan.unplaced).toBe(4);
    expect(describeStretch(plan, members)).toMatch(/unplaced 4 \(no member has room\)$/);
  });

  const memberArb = fc.record({
    freeCpu: fc.integer({ min: 0, max: 5000 }),
    current: fc.integer({ min: 0, max: 8 }),
  });

  it('places every replica at most once, within each member capacity, home first', () => {
    fc.assert(
      fc.property(
        fc.array(memberArb, { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 1, max: 1500 }),
        (ms, replicas, cpu) => {
          const members: StretchMember[] = ms.map((m, i) => ({ name: `m${i}`, ...m }));
          const plan = planStretch('web', replicas, cpu, members);
          const placed = plan.shares.reduce((a, s) => a + s.replicas, 0);
          expect(placed + plan.unplaced).toBe(replicas);
          for (const s of plan.shares) expect(s.replicas).toBeLessThanOrEqual(s.capacity);
          expect(plan.shares[0].member).toBe('m0');
          // a replica is left unplaced only when every member is full
          if (plan.unplaced > 0) for (const s of plan.shares) expect(s.replicas).toBe(s.capacity);
        },
      ),
    );
  });

  it('grow-then-shrink never lets the declared total drop below min(before, after), and converges', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            freeCpu: fc.integer({ min: 0, max: 3000 }),
            current: fc.option(fc.integer({ min: 0, max: 8 })),
          }),
          {
            minLength: 1,
            maxLength: 4,
          },
        ),
        fc.integer({ min: 0, max: 30 }),
        (ms, replicas) => {
          const current = new Map<string, number | undefined>(
            ms.map((m, i) => [`m${i}`, m.current ?? undefined]),
          );
          const members = ms.map((m, i) => ({ name: `m${i}`, freeCpu: m.freeCpu, current: m.current ?? 0 }));
          const plan = planStretch('web', replicas, 250, members);
          const { grow, shrink } = stretchSteps(plan, dep('web', 0), current);
          const world = new Map(current);
          const total = () => [...world.values()].reduce<number>((a, v) => a + (v ?? 0), 0);
          const before = total();
          const after = plan.shares.reduce((a, s) => a + s.replicas, 0);
          for (const step of [...grow, ...shrink]) {
            world.set(step.member, step.op === 'apply' ? replicasOf(step.row) : undefined);
            expect(total()).toBeGreaterThanOrEqual(Math.min(before, after));
          }
          expect(total()).toBe(after);
          // running the steps again from the result writes nothing
          const again = stretchSteps(plan, dep('web', 0), world);
          expect([...again.grow, ...again.shrink]).toEqual([]);
        },
      ),
    );
  });
});

// ---------------------------------------------------------------- migrate

interface World {
  source: Row | undefined;
  target: Row | undefined;
}

function applyWrite(w: World, x: MigrationWrite): void {
  if (x.op === 'apply') w[x.on] = { ...x.row };
  else w[x.on] = undefined;
}

const SPEC: MigrationSpec = {
  deploy: 'web',
  waitSec: 20,
  rollbackWindowSec: 10,
  skipWait: false,
  checkCapacity: true,
};

describe('migrate step machine', () => {
  it('follows the happy path with the reference lines', () => {
    const w: World = { source: dep('web', 2), target: undefined };
    let s: MigrationStatus = initialStatus(0);
    const lines: string[] = [];
    let t = 0;
    while (!TERMINAL.includes(s.phase)) {
      const run = (r: Row | undefined) => replicasOf(r);
      const step = stepMigration(SPEC, s, {
        nowMs: t,
        source: { deployment: w.source, running: run(w.source), freeCpu: 1000 },
        target: { deployment: w.target, running: run(w.target), freeCpu: 1000 },
      });
      for (const x of step.writes) applyWrite(w, x);
      lines.push(...step.log);
      s = step.status;
      t += 3000;
    }
    expect(migrationResult(SPEC, s)).toEqual({ ok: true, deploy: 'web', replicas: 2 });
    expect(w).toEqual({ source: undefined, target: dep('web', 2) });
    expect(lines).toEqual([
      'web (x2): applying on target…',
      'waiting for web to become Ready on target (≤20s)…',
      'target Ready — draining web from source',
      'watching target for 10s (rollback armed)…',
    ]);
  });

  it('fails without writing when the deployment is missing or the target has no room', () => {
    const obs = (src: Row | undefined, free: number) => ({
      nowMs: 0,
      source: { deployment: src, running: 0, freeCpu: 1000 },
      target: { deployment: undefined, running: 0, freeCpu: free },
    });
    const missing = stepMigration(SPEC, initialStatus(0), obs(undefined, 1000));
    expect(missing.writes).toEqual([]);
    expect(migrationResult(SPEC, missing.status)).toEqual({
      ok: false,
      error: "deployment 'web' not found on source",
    });
    const full = stepMigration(SPEC, initialStatus(0), obs(dep('web', 3), 250));
    expect(full.writes).toEqual([]);
    expect(full.status.phase).toBe('Failed');
    expect(full.status.message).toContain('250m CPU free');
  });

  // The adversary: at every poll each member runs any number of pods up to what it declares, time
  // jumps by any amount, and the driver may crash after its writes but before storing the status.
  const runArb = fc.array(
    fc.record({
      targetRunFrac: fc.double({ min: 0, max: 1, noNaN: true }),
      sourceRunFrac: fc.double({ min: 0, max: 1, noNaN: true }),
      healthy: fc.boolean(),
      dtMs: fc.integer({ min: 100, max: 8000 }),
      crash: fc.boolean(),
    }),
    { minLength: 1, maxLength: 200 },
  );

  it('never loses or doubles a replica at any step, and a rollback restores the original counts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 6 }),
        fc.option(fc.integer({ min: 0, max: 6 })),
        fc.boolean(),
        fc.integer({ min: 0, max: 15 }),
        runArb,
        (n, before, skipWait, window, script) => {
          const spec: MigrationSpec = { ...SPEC, skipWait, rollbackWindowSec: window };
          const original = dep('web', n, { image: 'wasm:v1' });
          const targetBefore = before === null ? undefined : dep('web', before, { image: 'wasm:old' });
          const w: World = { source: original, target: targetBefore };
          const declared = (r: Row | undefined) => replicasOf(r);
          let s = initialStatus(0);
          let t = 0;
          let i = 0;
          let drainedSafely = true;
          while (!TERMINAL.includes(s.phase) && i < 5000) {
            const ev = script[i % script.length];
            i++;
            t += ev.dtMs;
            // Pods run only where declared; a healthy step runs everything declared.
            const run = (r: Row | undefined, frac: number) =>
              ev.healthy ? declared(r) : Math.floor(declared(r) * frac);
            const obs = {
              nowMs: t,
              source: { deployment: w.source, running: run(w.source, ev.sourceRunFrac), freeCpu: 10_000 },
              target: { deployment: w.target, running: run(w.target, ev.targetRunFrac), freeCpu: 10_000 },
            };
            const step = stepMigration(spec, s, obs);
            for (const x of step.writes) {
              // nothing is drained that is not first running elsewhere
              if (x.op === 'delete' && x.on === 'source' && !skipWait && n > 0 && obs.target.running < n)
                drainedSafely = false;
              applyWrite(w, x);
            }
            // no member ever declares more than the deployment's replicas (no double scale)
            for (const r of [w.source, w.target])
              expect(declared(r)).toBeLessThanOrEqual(Math.max(n, before ?? 0));
            // at every step the replicas are declared somewhere: never lost
            expect(w.source !== undefined || declared(w.target) >= n).toBe(true);
            // A crash loses the new status, so the same step runs again (crashes happen on the first
            // pass through the script only, so every run still ends).
            const crashed = ev.crash && i <= script.length;
            if (!crashed) s = step.status;
          }
          expect(TERMINAL).toContain(s.phase);
          expect(drainedSafely).toBe(true);
          if (s.phase === 'Succeeded') {
            expect(w).toEqual({ source: undefined, target: original });
          } else if (
            s.phase === 'RolledBack' ||
            (s.phase === 'Failed' && !s.message?.startsWith('rollback'))
          ) {
            // the original counts: source as it was, target as it was before we came
            expect(w.source).toEqual(original);
            expect(w.target).toEqual(targetBefore);
          } else {
            // rollback could not get the source running in time: both kept, nothing lost
            expect(w.source).toEqual(original);
            expect(declared(w.target)).toBe(n);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
