// incremental.ts's pass against the full one: after a schedule, Deployments' replicas change and
// nodes register, and both passes run on the same workbook — the Pods and Nodes rows they leave, their
// Events and the schedule they cache must be the same. Clusters are random (capacities, labels,
// taints, cordons, silent nodes, selectors, tolerations, host ports on Deployments that are not
// scaled, pods left Unschedulable), seeded.
import { describe, expect, it } from 'vitest';
import { deploymentsFromRows, type NodeIn, nodeFromRow } from '../scheduler/model.ts';
import { MemoryStore } from '../store/memory.ts';
import { setupCluster } from '../store/setup.ts';
import type { Row, Tx } from '../store/types.ts';
import { type IncrementalInput, incrementalPass } from './incremental.ts';
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
    key: c.key(),
    fresh: [...c.fresh].sort(),
    caps: [...c.caps].sort((a, b) => a[0].localeCompare(b[0])),
    staleAt: c.staleAt,
    nodeList: c.nodes,
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

/** A node's row as random as the cluster's (`silent`: it may have stopped heartbeating). */
function nodeRow(r: (n: number) => number, name: string, silent: boolean): Row {
  return {
    name,
    ip: '10.0.0.1',
    cpu_total: [500, 1000, 2000, 4000][r(4)],
    cpu_used: 0,
    mem_total: [256, 512, 4096][r(3)],
    status: 'Ready',
    last_heartbeat: silent && r(8) === 0 ? NOW - 100 : NOW - r(10),
    schedulable: r(10) !== 0,
    labels: r(3) === 0 ? 'zone=a' : '',
    taints: r(6) === 0 ? 'gpu=yes:NoSchedule' : '',
  };
}

/** Nodes registering after the schedule, appended to the Nodes tab as a heartbeat inserts them. */
async function join(store: MemoryStore, r: (n: number) => number, names: string[]) {
  await store.transact((tx) => {
    for (const name of names) tx.insert('Nodes', nodeRow(r, name, false));
  });
}

/**
 * The pass's input with `joined` as their rows read (the cluster tracks them as it registers them).
 * Uncapped unless `maxPlaced` is given: one pass then places what the full pass places.
 */
const inputOf = (
  store: MemoryStore,
  joined: string[] = [],
  maxPlaced = Number.POSITIVE_INFINITY,
): IncrementalInput => ({
  now: NOW,
  nodeTtlSec: TTL,
  joined: joined.map((name) => {
    const row = store.get('Nodes', name);
    // No row: a node as a registration would give it (only the missing row can make the pass decline).
    return nodeFromRow(row ?? { name, last_heartbeat: NOW, schedulable: true }) as NodeIn;
  }),
  maxPlaced,
});

async function cluster(seed: number) {
  const r = rng(seed);
  const store = new MemoryStore();
  await setupCluster(store, { samples: false });
  const nNodes = 3 + r(20);
  await store.transact((tx) => {
    for (let i = 0; i < nNodes; i++) tx.insert('Nodes', nodeRow(r, `n${i}`, true));
    for (let d = 0; d < 1 + r(4); d++)
      tx.insert('Deployments', {
        name: `app${d}`,
        image: 'x',
        replicas: r(6),
        cpu_req: [50, 100, 300, 3000][r(4)], // 3000: most nodes cannot take it (Unschedulable pods)
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

describe('the incremental pass', () => {
  it('leaves the workbook and the schedule exactly as a full pass would, or declines', async () => {
    let compared = 0;
    let withJoined = 0;
    let withUnplaced = 0;
    for (let seed = 1; seed <= 300; seed++) {
      const { store, cache, r } = await cluster(seed);
      await store.transact((tx) => {
        for (const d of tx.rows('Deployments'))
          if (r(2) === 0) tx.update('Deployments', String(d.name), { replicas: r(9) });
      });
      const joined = Array.from({ length: r(4) }, (_, i) => `j${i}`);
      await join(store, r, joined);
      const inc = await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, joined)));
      const ref = await outcome(store, full);
      if (inc) {
        compared++;
        if (joined.length > 0) withJoined++;
        if (cache.result.placements.some((p) => p.node === '')) withUnplaced++;
        expect(inc, `seed ${seed}`).toEqual(ref);
      }
      await store.close();
    }
    // Most random clusters qualify (the rest decline), with and without new nodes and Unschedulable pods.
    expect(compared).toBeGreaterThan(150);
    expect(withJoined).toBeGreaterThan(50);
    expect(withUnplaced).toBeGreaterThan(20);
  });

  it('places every Unschedulable pod on a big node that joins, as the full pass does', async () => {
    let compared = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const { store, cache } = await cluster(seed);
      if (!cache.result.placements.some((p) => p.node === '')) {
        await store.close();
        continue;
      }
      await store.transact((tx) => {
        tx.insert('Nodes', {
          name: 'big',
          cpu_total: 1_000_000,
          mem_total: 1_000_000,
          status: 'Ready',
          cpu_used: 0,
          last_heartbeat: NOW,
          schedulable: true,
          labels: 'zone=a',
        });
      });
      const inc = await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, ['big'])));
      const ref = await outcome(store, full);
      if (inc) {
        compared++;
        expect(inc, `seed ${seed}`).toEqual(ref);
        expect(
          inc.byNode.some(([n]) => n === ''),
          `seed ${seed}`,
        ).toBe(false);
      }
      await store.close();
    }
    expect(compared).toBeGreaterThan(10);
  });

  it('places Unschedulable pods a budget at a time, ending as one uncapped pass would', async () => {
    const store = new MemoryStore();
    await setupCluster(store, { samples: false });
    await store.transact((tx) => {
      tx.insert('Deployments', { name: 'app0', image: 'x', replicas: 25, cpu_req: 100, mem_req: 64 });
      tx.insert('Deployments', { name: 'app1', image: 'x', replicas: 3, cpu_req: 100, mem_req: 64 });
    });
    let cache = (await store.transact((tx) => full(tx).cache)).value; // no nodes: all Unschedulable
    const joined = ['a', 'b', 'c'];
    await store.transact((tx) => {
      for (const name of joined)
        tx.insert('Nodes', {
          ...nodeRow(() => 0, name, false),
          cpu_total: 4000,
          mem_total: 4096,
          schedulable: true,
          taints: '',
        });
    });
    const once = await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, joined)));
    const events: unknown[] = [];
    const deferred: number[] = [];
    for (let pass = 0; pass < 10; pass++) {
      const { value } = await store.transact((tx) =>
        incrementalPass(tx, cache, inputOf(store, pass === 0 ? joined : [], 10)),
      );
      if (!value) throw new Error(`pass ${pass} declined`);
      cache = value.cache;
      events.push(...value.events);
      deferred.push(value.deferred);
      if (value.deferred === 0) break;
    }
    expect(deferred).toEqual([18, 8, 0]);
    expect(once?.events).toEqual(events);
    expect(once?.pods).toEqual(store.rows('Pods'));
    expect(once?.nodes).toEqual(store.rows('Nodes'));
    expect(once?.placements).toEqual(cache.result.placements);
    expect(once?.byNode).toEqual([...cache.byNode].sort((a, b) => a[0].localeCompare(b[0])));
    await store.close();
  });

  it('declines when a Deployment changed more than its replicas', async () => {
    const { store, cache } = await cluster(7);
    await store.transact((tx) => {
      tx.update('Deployments', 'app0', { image: 'y' });
    });
    expect(await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store)))).toBeUndefined();
    await store.close();
  });

  it('declines when an Unschedulable pod left for phase 2 has host ports', async () => {
    // The first seeded cluster with a pod of app0.
    let seed = 1;
    let c = await cluster(seed);
    while (!c.cache.result.placements.some((p) => p.deployment === 'app0')) {
      await c.store.close();
      c = await cluster(++seed);
    }
    const { store, cache } = c;
    await store.transact((tx) => {
      tx.update('Deployments', 'app0', { ports: '8080' });
    });
    // The cached schedule as if app0 had had its ports all along, and none of its pods had a place.
    const deployments = new Map(
      deploymentsFromRows(store.rows('Deployments')).deployments.map((d) => [d.name, d]),
    );
    const unplaced = {
      ...cache,
      deployments,
      result: {
        ...cache.result,
        placements: cache.result.placements.map((p) => (p.deployment === 'app0' ? { ...p, node: '' } : p)),
      },
    };
    expect(await outcome(store, (tx) => incrementalPass(tx, unplaced, inputOf(store)))).toBeUndefined();
    await store.close();
  });

  it('declines a joined node that is known, silent or missing from the Nodes tab', async () => {
    const { store, cache, r } = await cluster(7);
    expect(await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, ['n0'])))).toBeUndefined();
    expect(
      await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, ['nobody']))),
    ).toBeUndefined();
    await store.transact((tx) => {
      tx.insert('Nodes', { ...nodeRow(r, 'late', false), last_heartbeat: NOW - TTL });
    });
    expect(
      await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, ['late']))),
    ).toBeUndefined();
    await join(store, r, ['j0']);
    expect(
      await outcome(store, (tx) => incrementalPass(tx, cache, inputOf(store, ['j0', 'j0']))),
    ).toBeUndefined();
    await store.close();
  });
});
