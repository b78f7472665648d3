// incremental.ts's pass against the full one: after a schedule, Deployments' replicas change, and
// both passes run on the same workbook — the Pods and Nodes rows they leave, their Events and the
// schedule they cache must be the same. Clusters are random (capacities, labels, taints, cordons,
// silent nodes, selectors, tolerations, host ports on Deployments that are not scaled), seeded.
import { describe, expect, it } from 'vitest';
import { nodeFromRow } from '../scheduler/model.ts';
import { MemoryStore } from '../store/memory.ts';
import { setupCluster } from '../store/setup.ts';
import type { Row, Tx } from '../store/types.ts';
import { replicasPass } from './incremental.ts';
import { type CachedSchedule, type PassResult, reconcilePass } from './reconcile.ts';

const NOW = 1_800_000_000;
const TTL = 30;

function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

const full = (tx: Tx) =>
  reconcilePass(tx, {
    now: NOW,
    nodeTtlSec: TTL,
    portRange: [30000, 32767],
    nodeIn: nodeFromRow,
    handoffs: new Map(),
  });

/** Runs `pass` in a transaction that is then rolled back; returns what it wrote and returned. */
async function outcome(store: MemoryStore, pass: (tx: Tx) => PassResult | undefined) {
  let seen: { pods: Row[]; nodes: Row[]; r: PassResult | undefined } | undefined;
  await store
    .transact((tx) => {
      const r = pass(tx);
      seen = { pods: tx.rows('Pods'), nodes: tx.rows('Nodes'), r };
      throw new Error('roll back');
    })
    .catch(() => {});
  if (!seen?.r) return undefined;
  const c = seen.r.cache;
  return {
    pods: seen.pods,
    nodes: seen.nodes,
    events: seen.r.events,
    placements: c.result.placements,
    results: c.result.nodes,
    byNode: [...c.byNode].sort((a, b) => a[0].localeCompare(b[0])),
    deployments: [...c.deployments.values()],
    handoffs: [...seen.r.handoffs],
  };
}

async function cluster(seed: number) {
  const r = rng(seed);
  const store = new MemoryStore();
  await setupCluster(store, { samples: false });
  const nNodes = 3 + r(20);
  await store.transact((tx) => {
    for (let i = 0; i < nNodes; i++)
      tx.insert('Nodes', {
        name: `n${i}`,
        ip: '10.0.0.1',
        cpu_total: [500, 1000, 2000, 4000][r(4)],
        cpu_used: 0,
        mem_total: [256, 512, 4096][r(3)],
        status: 'Ready',
        last_heartbeat: r(8) === 0 ? NOW - 100 : NOW - r(10),
        schedulable: r(10) !== 0,
        labels: r(3) === 0 ? 'zone=a' : '',
        taints: r(6) === 0 ? 'gpu=yes:NoSchedule' : '',
      });
    for (let d = 0; d < 1 + r(4); d++)
      tx.insert('Deployments', {
        name: `app${d}`,
        image: 'x',
        replicas: r(6),
        cpu_req: [50, 100, 300][r(3)],
        mem_req: [32, 64][r(2)],
        node_selector: r(4) === 0 ? 'zone=a' : '',
        tolerations: r(4) === 0 ? 'gpu' : '',
        ports: d === 0 && r(2) === 0 ? '8080' : '',
      });
  });
  let cache: CachedSchedule | undefined;
  await store.transact((tx) => {
    cache = full(tx).cache;
  });
  return { store, cache: cache as CachedSchedule, r };
}

describe('the replicas pass', () => {
  it('leaves the workbook and the schedule exactly as a full pass would, or declines', async () => {
    let compared = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const { store, cache, r } = await cluster(seed);
      await store.transact((tx) => {
        for (const d of tx.rows('Deployments'))
          if (r(2) === 0) tx.update('Deployments', String(d.name), { replicas: r(9) });
      });
      const inc = await outcome(store, (tx) => replicasPass(tx, cache));
      const ref = await outcome(store, full);
      if (inc) {
        compared++;
        expect(inc, `seed ${seed}`).toEqual(ref);
      }
      await store.close();
    }
    expect(compared).toBeGreaterThan(50); // most random clusters qualify; the rest decline
  });

  it('declines when a Deployment changed more than its replicas, or a pod is Unschedulable', async () => {
    const { store, cache } = await cluster(7);
    await store.transact((tx) => {
      tx.update('Deployments', 'app0', { image: 'y' });
    });
    expect(await outcome(store, (tx) => replicasPass(tx, cache))).toBeUndefined();
    const unplaced = {
      ...cache,
      result: { ...cache.result, placements: [{ name: 'app0-1', deployment: 'app0', node: '', ports: [] }] },
    };
    expect(await outcome(store, (tx) => replicasPass(tx, unplaced))).toBeUndefined();
    await store.close();
  });
});
