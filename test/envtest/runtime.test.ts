// The controller runtime's building blocks against a real API server: events, finalizers,
// label-selected informers.
import { describe, expect, it } from 'vitest';
import { CORE, type KubeObject } from '../../operator/src/runtime/client.ts';
import { EventRecorder } from '../../operator/src/runtime/events.ts';
import { addFinalizer, removeFinalizer } from '../../operator/src/runtime/finalizers.ts';
import { Informer } from '../../operator/src/runtime/informer.ts';
import { LeaderElector } from '../../operator/src/runtime/leader.ts';
import { MANAGED_SELECTOR } from '../../operator/src/runtime/objects.ts';
import { freshNamespace } from './harness.ts';
import { air, OBERONAIR, testClient, waitFor } from './operator-harness.ts';

type EventView = KubeObject & { reason: string; type: string; series?: { count: number } };

describe('controller runtime on a real API server', () => {
  it('an event repeated within the dedup window is one Event whose series counts the repeats', async () => {
    const ns = await freshNamespace('rt-events');
    const k = testClient();
    const obj = await k.create(OBERONAIR, air(ns, 'noisy'));
    let now = Date.parse('2026-11-29T10:00:00Z');
    const rec = new EventRecorder(k, 'retrokube.io/test', 'test', () => now);
    const writes0 = k.writes;
    for (let i = 0; i < 5; i++)
      await rec.record(obj, 'Warning', 'NameConflict', 'Service rk-air-noisy is taken');
    expect(k.writes - writes0).toBe(1); // one create, the repeats stay in memory
    now += 61_000; // past the series flush interval
    await rec.record(obj, 'Warning', 'NameConflict', 'Service rk-air-noisy is taken');
    expect(k.writes - writes0).toBe(2); // one series patch
    await rec.record(obj, 'Normal', 'Created', 'Created Deployment rk-air-noisy'); // a different event
    const events = (await k.list<EventView>(CORE.event, ns)).items;
    expect(events.map((e) => e.reason).sort()).toEqual(['Created', 'NameConflict']);
    const conflict = events.find((e) => e.reason === 'NameConflict');
    expect(conflict?.type).toBe('Warning');
    expect(conflict?.series?.count).toBe(6);
  });

  it('finalizers are added and removed without touching other controllers’ finalizers, and only when needed', async () => {
    const ns = await freshNamespace('rt-finalizers');
    const k = testClient();
    const a = air(ns, 'fin');
    a.metadata.finalizers = ['example.com/other'];
    const created = await k.create(OBERONAIR, a);
    expect(await addFinalizer(k, OBERONAIR, created, 'retrokube.io/cleanup')).toBe(true);
    const withOurs = await k.get(OBERONAIR, ns, 'fin');
    expect(withOurs.metadata.finalizers?.sort()).toEqual(['example.com/other', 'retrokube.io/cleanup']);
    const writes = k.writes;
    expect(await addFinalizer(k, OBERONAIR, withOurs, 'retrokube.io/cleanup')).toBe(false);
    expect(k.writes).toBe(writes);
    expect(await removeFinalizer(k, OBERONAIR, withOurs, 'retrokube.io/cleanup')).toBe(true);
    const after = await k.get(OBERONAIR, ns, 'fin');
    expect(after.metadata.finalizers).toEqual(['example.com/other']);
    await k.mergePatch(OBERONAIR, ns, 'fin', { metadata: { finalizers: null } });
  });

  it('a label-selected informer caches only retrokube’s objects and follows relabelling and deletion', async () => {
    const ns = await freshNamespace('rt-informer');
    const k = testClient();
    const cm = (name: string, labels: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: ns, labels },
      data: { a: '1' },
    });
    await k.create(CORE.configMap, cm('ours', { 'app.kubernetes.io/managed-by': 'retrokube' }));
    await k.create(CORE.configMap, cm('theirs', { 'app.kubernetes.io/managed-by': 'Helm' }));
    const inf = new Informer(k, {
      type: CORE.configMap,
      namespace: ns,
      labelSelector: MANAGED_SELECTOR,
      resyncMs: 0,
    });
    const seen: string[] = [];
    inf.on((type, obj) => seen.push(`${type}:${obj.metadata.name}`));
    await inf.start();
    try {
      expect(inf.list().map((o) => o.metadata.name)).toEqual(['ours']);
      expect(inf.get(ns, 'ours')?.metadata.managedFields).toBeUndefined(); // stripped: large, unused

      await k.create(CORE.configMap, cm('later', { 'app.kubernetes.io/managed-by': 'retrokube' }));
      await waitFor('the new object in the cache', async () => inf.get(ns, 'later'));
      await k.mergePatch(CORE.configMap, ns, 'ours', {
        metadata: { labels: { 'app.kubernetes.io/managed-by': null } },
      });
      await waitFor('the relabelled object to leave the cache', async () => !inf.get(ns, 'ours'));
      await k.delete(CORE.configMap, ns, 'later');
      await waitFor('the deleted object to leave the cache', async () => !inf.get(ns, 'later'));
      expect(seen).toEqual(['add:ours', 'add:later', 'delete:ours', 'delete:later']);
      expect(inf.stats.failures).toBe(0);
    } finally {
      await inf.stop();
    }
  });

  it('a change after a long quiet period arrives at once (no reconnect backoff on idle watches)', async () => {
    // client-node's own ListWatch aborts an idle watch after 30 s and then waits up to 30 s more
    // before reconnecting (operator-practice §1.2); ours holds the watch for the server timeout.
    const ns = await freshNamespace('rt-quiet');
    const k = testClient();
    const inf = new Informer(k, { type: CORE.configMap, namespace: ns, resyncMs: 0 });
    let arrived = 0;
    inf.on((type, obj) => {
      if (type === 'add' && obj.metadata.name === 'late') arrived = Date.now();
    });
    await inf.start();
    try {
      await new Promise((r) => setTimeout(r, 40_000)); // longer than client-node's 30 s idle abort
      const sent = Date.now();
      await k.create(CORE.configMap, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'late', namespace: ns },
      });
      await waitFor('the late object', async () => arrived > 0, 10_000);
      expect(arrived - sent).toBeLessThan(2_000);
      expect(inf.stats.watches).toBe(1); // one watch held the whole time
    } finally {
      await inf.stop();
    }
  }, 90_000);
});

describe('Lease leader election', () => {
  it('a leader that vanishes without releasing is replaced once its lease expires, not before', async () => {
    const ns = await freshNamespace('rt-lease');
    const k = testClient();
    const timing = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
    const started: string[] = [];
    const mk = (identity: string, releaseOnStop: boolean) =>
      new LeaderElector(k, {
        namespace: ns,
        name: 'crash-test',
        identity,
        releaseOnStop,
        ...timing,
        onStartedLeading: () => started.push(identity),
      });
    const a = mk('a', false);
    void a.start();
    await waitFor('a to lead', async () => a.isLeader);
    const b = mk('b', true);
    void b.start();
    await new Promise((r) => setTimeout(r, 2_000));
    expect(b.isLeader).toBe(false); // a keeps renewing
    const t0 = Date.now();
    await a.stop(); // like a crash: no release
    await waitFor('b to lead', async () => b.isLeader, 15_000);
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(timing.leaseDurationMs - timing.retryPeriodMs * 2);
    expect(waited).toBeLessThan(timing.leaseDurationMs + 4_000);
    expect(started).toEqual(['a', 'b']);
    await b.stop();
    const lease = (await k.get(CORE.lease, ns, 'crash-test')) as KubeObject & {
      spec: { holderIdentity?: string };
    };
    expect(lease.spec.holderIdentity).toBe(''); // b released it
  });
});
