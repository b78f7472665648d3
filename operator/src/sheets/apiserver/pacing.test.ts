// A big cluster's reconciles are paced (cluster.ts LIMITS.paceFactor): a person's apply/scale/delete
// and a new node's first heartbeat are answered without scheduling the whole cluster, the timer
// reconciles at most every paceFactor × T ms, and a node going silent is still failed over at once.
// `deferAboveMs: -1` makes this small cluster count as big; performance.now() is driven by the test.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../store/memory.ts';
import { Cluster, LIMITS } from './cluster.ts';

let clock = 0; // performance.now(), ms: every call advances it by 1 ms, the test jumps it
let unix = 1_800_000_000;
let store: MemoryStore;
let cluster: Cluster;

beforeEach(async () => {
  clock = 0;
  vi.spyOn(performance, 'now').mockImplementation(() => ++clock);
  store = new MemoryStore();
  cluster = new Cluster({ store, now: () => unix, tickMs: 3_600_000, deferAboveMs: -1 });
  await cluster.start({ samples: false });
  // LIMITS.bigAfter slow reconciles in a row make the cluster big (here every one counts as slow).
  for (let i = 0; i < LIMITS.bigAfter; i++) await cluster.apply({ deployments: [] });
});
afterEach(async () => {
  await cluster.stop();
  await store.close();
  vi.restoreAllMocks();
});

const beat = (node: string) =>
  cluster.heartbeat({ node, ip: '10.0.0.1', cpu_total: 4000, mem_total: 4096, pods: [] });
const pods = () => store.rows('Pods').map((p) => `${p.name}@${p.node ?? ''}`);
/** Past the pace window of the last reconcile (each performance.now() call advances 1 ms). */
const paceElapses = () => {
  clock += LIMITS.paceFactor * 10;
};

describe('paced reconciles in a big cluster', () => {
  it("acknowledges a person's scale without a reconcile; the timer schedules it once the pace allows", async () => {
    await beat('a');
    await cluster.apply({ deployments: [{ name: 'web', image: 'x', replicas: 1 }] });
    const before = cluster.reconciles;
    expect(await cluster.scale('web', 3)).toBe('scaled');
    expect(cluster.reconciles).toBe(before);
    expect(store.get('Deployments', 'web')?.replicas).toBe(3);
    expect(await cluster.tick()).toBe(false); // within the pace window of the last reconcile
    paceElapses();
    expect(await cluster.tick()).toBe(true);
    expect(pods()).toEqual(['web-1@a', 'web-2@a', 'web-3@a']);
    expect(await cluster.tick()).toBe(false); // nothing left to do
  });

  it("answers a new node's first heartbeat from the last schedule and leaves the reconcile to the timer", async () => {
    await beat('a');
    // One replica per node fits: web-2 waits, Unschedulable, for a second node.
    await cluster.apply({ deployments: [{ name: 'web', image: 'x', replicas: 2, cpu_req: 3000 }] });
    paceElapses();
    await cluster.tick();
    expect(pods()).toEqual(['web-1@a', 'web-2@']);
    const before = cluster.reconciles;
    expect((await beat('b')).pods).toEqual([]);
    expect(cluster.reconciles).toBe(before);
    expect(store.get('Nodes', 'b')?.status).toBe('Ready');
    paceElapses();
    expect(await cluster.tick()).toBe(true);
    expect(pods().sort()).toEqual(['web-1@a', 'web-2@b']);
  });

  it("places a person's scale and new nodes with the incremental pass; a node that changes makes the next pass a full one", async () => {
    await beat('a');
    await beat('b');
    await cluster.apply({ deployments: [{ name: 'web', image: 'x', replicas: 2 }] });
    paceElapses();
    expect(await cluster.tick()).toBe(true); // a new Deployment: a full pass
    expect(cluster.incrementalPasses).toBe(0);
    expect(pods()).toEqual(['web-1@a', 'web-2@b']);
    await cluster.scale('web', 3);
    expect(await cluster.tick()).toBe(true);
    expect(cluster.incrementalPasses).toBe(1);
    expect(pods()).toEqual(['web-1@a', 'web-2@b', 'web-3@a']);
    expect(store.get('Nodes', 'a')?.cpu_used).toBe(200);
    expect(await cluster.tick()).toBe(false); // nothing left to do
    await beat('c');
    await beat('c'); // its second heartbeat before a pass: still just joined
    await cluster.scale('web', 4);
    paceElapses();
    expect(await cluster.tick()).toBe(true); // c joined: placed by the incremental pass
    expect(cluster.incrementalPasses).toBe(2);
    expect(pods()).toEqual(['web-1@a', 'web-2@b', 'web-3@a', 'web-4@c']);
    expect((await beat('c')).pods.map((p: { name: string }) => p.name)).toEqual(['web-4']);
    // a comes back with less CPU: placement inputs changed, so the next pass is a full one.
    await cluster.heartbeat({ node: 'a', ip: '10.0.0.1', cpu_total: 2000, mem_total: 4096, pods: [] });
    await cluster.scale('web', 5);
    paceElapses();
    expect(await cluster.tick()).toBe(true);
    expect(cluster.incrementalPasses).toBe(2);
    expect(pods()).toEqual(['web-1@a', 'web-2@b', 'web-3@a', 'web-4@c', 'web-5@b']);
  });

  it('fails a silent node over at once, without waiting for the pace', async () => {
    await beat('a');
    await beat('b');
    await cluster.apply({ deployments: [{ name: 'web', image: 'x', replicas: 2 }] });
    paceElapses();
    await cluster.tick();
    expect(pods().sort()).toEqual(['web-1@a', 'web-2@b']);
    unix += cluster.nodeTtlSec - 1;
    await beat('b');
    expect(await cluster.tick()).toBe(false); // a still within its TTL, and the pace not elapsed
    unix += 1; // a silent for exactly the TTL
    expect(await cluster.tick()).toBe(true);
    expect(store.get('Nodes', 'a')?.status).toBe('NotReady');
    expect(pods().sort()).toEqual(['web-1@b', 'web-2@b']);
  });

  it('one slow reconcile does not make a small cluster big: fewer than LIMITS.bigAfter in a row still reconcile inline', async () => {
    const small = new Cluster({
      store: new MemoryStore(),
      now: () => unix,
      tickMs: 3_600_000,
      deferAboveMs: -1,
    });
    await small.start({ samples: false });
    try {
      for (let i = 0; i < LIMITS.bigAfter - 1; i++) await small.apply({ deployments: [] });
      const before = small.reconciles;
      await small.scale('nothing-yet', 1); // not found: no reconcile either way
      await small.apply({ deployments: [{ name: 'web', image: 'x', replicas: 1 }] });
      expect(small.reconciles).toBe(before + 1);
    } finally {
      await small.stop();
    }
  });

  it('a big cluster stays big through fast reconciles until LIMITS.smallAfter in a row', async () => {
    let step = 30; // each performance.now() call advances this much: a reconcile takes `step` ms
    vi.spyOn(performance, 'now').mockImplementation(() => (clock += step));
    const c = new Cluster({ store: new MemoryStore(), now: () => unix, tickMs: 3_600_000, deferAboveMs: 10 });
    await c.start({ samples: false });
    const node = (n: string) =>
      c.heartbeat({ node: n, ip: '10.0.0.1', cpu_total: 4000, mem_total: 4096, pods: [] });
    const inline = async () => {
      const before = c.reconciles;
      await c.apply({ deployments: [] });
      return c.reconciles > before;
    };
    try {
      await node('a'); // a new node in a small cluster: the first slow reconcile
      for (let i = 0; i < LIMITS.bigAfter - 1; i++) expect(await inline()).toBe(true); // slow: 30 ms > 10
      expect(await inline()).toBe(false); // big: left to the timer
      step = 1; // now each reconcile is fast (cordon always reconciles inline)
      await c.cordon('a', true);
      expect(await inline()).toBe(false); // one fast pass does not make it small
      for (let i = 1; i < LIMITS.smallAfter - 1; i++) await c.cordon('a', i % 2 === 0);
      expect(await inline()).toBe(false); // one short of LIMITS.smallAfter: still big
      await c.cordon('a', false);
      expect(await inline()).toBe(true); // small again
    } finally {
      await c.stop();
    }
  });
});
