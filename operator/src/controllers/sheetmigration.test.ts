// status.message of a SheetMigration through every phase (#31 item 4), as the controller computes
// it: status (the only memory) → the step machine → stepMessage → status again. The step machine
// carries its last message along from status, so the words of one phase must not stay for the next.
import { describe, expect, it } from 'vitest';
import type { SheetMigrationStatusT } from '../api/sheetmigration.ts';
import { type MigrationObservation, stepMigration } from '../sheets/bridge/migrate.ts';
import { fromStatus, stepMessage, toSpec } from './sheetmigration.ts';

const row = { name: 'web', image: 'sicf:ticker-wasm:v1', replicas: 2, cpu_req: 50, mem_req: 16 };

describe('SheetMigration status.message follows the phase', () => {
  it("a move's phases each speak their own words; none after ScalingTarget says 'ScalingTarget (x2)'", () => {
    const spec = toSpec({
      deployment: 'web',
      from: { name: 'a', url: 'http://a.ns.svc:8080' },
      to: { name: 'b', url: 'http://b.ns.svc:8080' },
      rollbackWindowSeconds: 5,
    });
    // The target runs nothing, then (once scaled) both pods; the source drains.
    const world = (t: number, targetRunning: number, sourceHas: boolean): MigrationObservation => ({
      source: { deployment: sourceHas ? row : undefined, running: sourceHas ? 2 : 0, freeCpu: 1000 },
      target: { deployment: targetRunning ? row : undefined, running: targetRunning, freeCpu: 1000 },
      nowMs: t,
    });
    let status: SheetMigrationStatusT | undefined;
    const said: Array<[string, string]> = [];
    const step = (o: MigrationObservation) => {
      const current = fromStatus(status, o.nowMs);
      const s = stepMigration(spec, current, o);
      const message = stepMessage(status?.message, current, s.status, s.log);
      status = {
        phase: s.status.phase,
        phaseSince: new Date(s.status.phaseSinceMs).toISOString(),
        message,
        ...(s.status.replicas !== undefined ? { replicas: s.status.replicas } : {}),
        ...(s.status.sourceRow ? { sourceRow: JSON.stringify(s.status.sourceRow) } : {}),
        ...(s.status.targetBefore !== undefined
          ? { targetBefore: JSON.stringify(s.status.targetBefore) }
          : {}),
        ...(s.status.waitSinceMs !== undefined
          ? { waitSince: new Date(s.status.waitSinceMs).toISOString() }
          : {}),
      } as SheetMigrationStatusT;
      said.push([s.status.phase, message]);
    };
    step(world(1_000, 0, true)); // Pending → ScalingTarget
    step(world(2_000, 0, true)); // → WaitingTarget (the target's row written)
    step(world(3_000, 0, true)); // still waiting
    step(world(4_000, 2, true)); // → DrainingSource
    step(world(5_000, 2, false)); // → Watching
    step(world(11_000, 2, false)); // → Succeeded
    expect(said.map(([p]) => p)).toEqual([
      'ScalingTarget',
      'WaitingTarget',
      'WaitingTarget',
      'DrainingSource',
      'Watching',
      'Succeeded',
    ]);
    expect(said[0][1]).toBe('ScalingTarget (x2)');
    for (const [phase, message] of said.slice(1))
      expect([phase, message]).toEqual([phase, expect.not.stringMatching(/ScalingTarget/)]);
    expect(said[5][1]).toBe('Succeeded (x2)');
  });
});
