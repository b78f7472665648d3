// Node failover is driven by a timer: a node that stops heartbeating loses its pods after the TTL
// even when no request at all arrives (the reference only notices on the next request).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../store/memory.ts';
import { Cluster } from './cluster.ts';
import { type Kit, running, startKit } from './testkit.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
  vi.useRealTimers();
});

const until = async (cond: () => boolean, ms: number) => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('timer-driven failover', () => {
  // Real timers and real HTTP in one process: a host too busy to run this process for a TTL makes
  // every node look silent at once (the timer fires before the queued heartbeat is read), so b may
  // lose a tick too. The test judges where the pods end up and the trail they left, with deadlines
  // of many TTLs (a passing run takes about one TTL), not how fast each step came.
  it('with a 2 s TTL, pods leave a silent node and it turns NotReady with no further requests', async () => {
    const ttlMs = 2000;
    kit = await startKit({ nodeTtlSec: ttlMs / 1000, tickMs: 100 });
    await kit.post({ action: 'apply', deployments: [{ name: 'web', image: 'x', replicas: 2 }] });
    const a = await kit.heartbeat('a');
    await kit.heartbeat('a', running(a));
    await kit.heartbeat('b'); // b gets nothing: both pods went to a first (sticky afterwards)
    const store = kit.store;
    const trail = (pod: string) =>
      store
        .rows('Events')
        .filter((e) => e.kind === 'Pod' && e.object === pod)
        .map((e) => String(e.message));
    // Keep b alive (ten beats per TTL), stop a. No request touches the apiserver except b's
    // heartbeats... then none at all.
    const podsOn = (node: string) => store.rows('Pods').filter((p) => p.node === node).length;
    const keepB = setInterval(() => void kit?.heartbeat('b').catch(() => {}), ttlMs / 10);
    try {
      await until(() => podsOn('b') === 2, 15 * ttlMs);
    } finally {
      clearInterval(keepB);
    }
    expect(store.rows('Nodes').find((n) => n.name === 'a')?.status).toBe('NotReady');
    const events = store.rows('Events').map((e) => `${e.kind} ${e.object} ${e.message}`);
    expect(events).toContainEqual(expect.stringMatching(/^Node a NotReady/));
    // Each pod left a for b: straight ('moved a -> b'), or, when b too missed a tick on a starved
    // host, through 'Unschedulable: left a' and back to b on b's next heartbeat.
    for (const pod of ['web-1', 'web-2']) {
      const t = trail(pod);
      const onA = t.indexOf('scheduled to a');
      expect(onA, `${pod}: ${t.join('; ')}`).toBeGreaterThanOrEqual(0);
      const after = t.slice(onA + 1);
      expect(after[0], `${pod}: ${t.join('; ')}`).toMatch(
        /^(moved a -> b|Unschedulable: left a, no node fits)$/,
      );
      expect(after.at(-1), `${pod}: ${t.join('; ')}`).toMatch(/^(moved \S+ ->|scheduled to) b$/);
    }
  });

  it('a one-node cluster whose node dies shows NotReady without any request (the reference never does)', async () => {
    kit = await startKit({ nodeTtlSec: 1, tickMs: 50 });
    await kit.heartbeat('solo');
    await until(() => kit?.store.rows('Nodes')[0].status === 'NotReady', 30_000); // 30 TTLs: judged by outcome
  });

  it('at the real 30 s TTL (fake timers): fresh at 29 s, failed over at 30 s, with no request', async () => {
    vi.useFakeTimers({
      now: new Date('2026-11-29T10:00:00Z'),
      toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'],
    });
    const store = new MemoryStore();
    const cluster = new Cluster({ store });
    expect(cluster.nodeTtlSec).toBe(30);
    await cluster.start({ samples: false });
    await cluster.apply({ deployments: [{ name: 'web', image: 'x', replicas: 1 }] });
    await cluster.heartbeat({ node: 'a', cpu_total: 1000, mem_total: 1000, pods: [] });
    await vi.advanceTimersByTimeAsync(1000);
    await cluster.heartbeat({ node: 'b', cpu_total: 1000, mem_total: 1000, pods: [] });
    const nodeOf = () => store.rows('Pods')[0].node;
    expect(nodeOf()).toBe('a');
    // b keeps heartbeating through the cluster object (no HTTP, no reconcile from a's side).
    for (let s = 1; s < 29; s++) {
      await vi.advanceTimersByTimeAsync(1000);
      if (s % 5 === 0) await cluster.heartbeat({ node: 'b', cpu_total: 1000, mem_total: 1000, pods: [] });
    }
    expect(nodeOf()).toBe('a'); // 29 s of silence: still fresh
    await vi.advanceTimersByTimeAsync(1100); // the 30th second passes; only the timer runs
    expect(nodeOf()).toBe('b');
    expect(store.rows('Nodes').find((n) => n.name === 'a')?.status).toBe('NotReady');
    await cluster.stop();
  });
});

describe('an apiserver restarted on the same workbook', () => {
  it("gives every node the workbook holds as Ready one TTL from its start: its own downtime is not the nodes' silence", async () => {
    let t = 1_800_000_000; // unix seconds, moved by hand
    const store = new MemoryStore();
    const beat = (c: Cluster, node: string) =>
      c.heartbeat({ node, cpu_total: 1000, mem_total: 1000, pods: [] });
    const first = new Cluster({ store, nodeTtlSec: 30, now: () => t });
    await first.start({ samples: false });
    await first.apply({ deployments: [{ name: 'web', image: 'x', replicas: 2 }] });
    await beat(first, 'a');
    await beat(first, 'b');
    await beat(first, 'gone');
    t += 31;
    await beat(first, 'a');
    await beat(first, 'b');
    await first.tick(); // 'gone' was silent past the TTL while the first apiserver ran
    expect(store.rows('Nodes').find((n) => n.name === 'gone')?.status).toBe('NotReady');
    const placed = store.rows('Pods').map((p) => `${p.name}@${p.node}`);
    await first.stop();

    t += 120; // the apiserver is down for four TTLs (its pod replaced, the volume moved)
    const second = new Cluster({ store, nodeTtlSec: 30, now: () => t });
    await second.start({ samples: false });
    await second.tick();
    const status = () => Object.fromEntries(store.rows('Nodes').map((n) => [n.name, n.status]));
    expect(status()).toEqual({ a: 'Ready', b: 'Ready', gone: 'NotReady' });
    expect(store.rows('Pods').map((p) => `${p.name}@${p.node}`)).toEqual(placed);
    t += 29;
    await beat(second, 'a'); // a reports within the TTL; b does not
    await second.tick();
    expect(status()).toEqual({ a: 'Ready', b: 'Ready', gone: 'NotReady' });
    t += 1; // one TTL after the start: b is silent for good and loses its pods
    await second.tick();
    expect(status()).toEqual({ a: 'Ready', b: 'NotReady', gone: 'NotReady' });
    expect(store.rows('Pods').every((p) => p.node === 'a')).toBe(true);
    await second.stop();
  });
});
