import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FreeHeap } from './free-heap.ts';
import { type DeploymentIn, deploymentFromRow, type NodeIn, nodeFromRow } from './model.ts';
import { schedule } from './schedule.ts';

const NOW = 1_800_000_000;

describe("phase 2's preference heap", () => {
  it('keeps at its top the node a scan would prefer (most free CPU, then first in tab order) through any updates', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: -3, max: 3 })), { maxLength: 60 }),
        (frees, steps) => {
          const free = [...frees];
          const heap = new FreeHeap(free.length, (i) => free[i]);
          const scan = () => free.reduce((b, f, i) => (f > free[b] ? i : b), 0);
          expect(heap.top()).toBe(scan());
          for (const [k, d] of steps) {
            const i = k % free.length;
            free[i] += d;
            heap.update(i);
            expect(heap.top()).toBe(scan());
          }
        },
      ),
    );
  });

  it('places new pods without scanning every node for each (O(pods · log nodes) reads, not pods × nodes)', () => {
    const n = 2_000;
    let reads = 0;
    const nodes = Array.from({ length: n }, (_, i) => {
      const nd = nodeFromRow({
        name: `node-${i}`,
        cpu_total: 4000,
        mem_total: 8192,
        last_heartbeat: NOW - 1,
      }) as NodeIn;
      return Object.defineProperty({ ...nd }, 'cpuTotal', {
        get: () => {
          reads++;
          return 4000;
        },
      });
    });
    const deployments = [deploymentFromRow({ name: 'web', replicas: n }) as DeploymentIn];
    const r = schedule({
      deployments,
      nodes,
      existing: new Map(),
      now: NOW,
      nodeTtlSec: 30,
      portRange: [30000, 32767],
    });
    expect(new Set(r.placements.map((p) => p.node)).size).toBe(n); // one each: spread, as before
    expect(reads).toBeLessThan(n * 100); // a scan per pod read it n × n = 4,000,000 times
  });
});
