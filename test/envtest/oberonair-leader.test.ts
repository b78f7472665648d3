// Two operator instances against one API server: one leads, the other stands by and takes over.
import { describe, expect, it } from 'vitest';
import { freshNamespace } from './harness.ts';
import {
  air,
  CORE,
  type KubeObject,
  OBERONAIR,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

type LeaseView = KubeObject & { spec: { holderIdentity?: string; leaseTransitions?: number } };

describe('leader election', () => {
  it('two operator instances elect one leader, and the other takes over when it stops', async () => {
    const ns = await freshNamespace('air-leader');
    const k = testClient();
    const a = await startOperator({ namespace: ns, leaderElect: true, identity: 'op-a', http: true });
    const b = await startOperator({ namespace: ns, leaderElect: true, identity: 'op-b', http: true });

    await waitFor('one leader', async () => a.isLeader || b.isLeader);
    // Give the standby several retry periods to (wrongly) grab the Lease too.
    await new Promise((r) => setTimeout(r, 5_000));
    expect([a.isLeader, b.isLeader].filter(Boolean)).toHaveLength(1);
    const [leader, standby] = a.isLeader ? [a, b] : [b, a];
    const lease = (await k.get(CORE.lease, ns, 'retrokube-operator')) as LeaseView;
    expect(lease.spec.holderIdentity).toBe(leader.elector?.identity);

    // Both report ready (the standby is healthy while waiting); only the leader reconciles.
    for (const m of [leader, standby]) {
      const port = (m.httpServers[1].address() as { port: number }).port;
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    }
    await k.create(OBERONAIR, air(ns, 'first'));
    await waitFor('the first relay', () => k.getOrUndefined(CORE.deployment, ns, 'rk-air-first'));
    expect((await standby.metrics.reconcileTotal.get()).values.reduce((n, v) => n + v.value, 0)).toBe(0);

    const t0 = Date.now();
    await leader.stop(); // releases the Lease
    await waitFor('the standby to lead', async () => standby.isLeader, 15_000);
    const takeoverMs = Date.now() - t0;
    expect(takeoverMs).toBeLessThan(10_000); // released, not expired: within a few retry periods

    await k.create(OBERONAIR, air(ns, 'second'));
    await waitFor('the second relay, made by the new leader', () =>
      k.getOrUndefined(CORE.deployment, ns, 'rk-air-second'),
    );
    const leaseAfter = (await k.get(CORE.lease, ns, 'retrokube-operator')) as LeaseView;
    expect(leaseAfter.spec.holderIdentity).toBe(standby.elector?.identity);
    expect(leaseAfter.spec.leaseTransitions).toBeGreaterThanOrEqual(1);
  });
});
