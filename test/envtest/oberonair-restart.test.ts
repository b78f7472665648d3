// The operator keeps working across a kube-apiserver restart (this file restarts the shared server).
import { describe, expect, it } from 'vitest';
import { freshNamespace, restartApiServer } from './harness.ts';
import {
  air,
  CORE,
  OBERONAIR,
  type OberonAir,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

describe('API server restart', () => {
  it('the operator recovers when kube-apiserver is restarted mid-test', async () => {
    const ns = await freshNamespace('air-restart');
    const k = testClient();
    const mgr = await startOperator({ namespace: ns });
    await k.create(OBERONAIR, air(ns, 'before', { loss: 0.1 }));
    await waitFor('the first relay', () => k.getOrUndefined(CORE.deployment, ns, 'rk-air-before'));
    const failuresBefore = mgr.controllers[0].informers.reduce((n, i) => n + i.stats.failures, 0);

    const { downMs } = await restartApiServer(3_000);
    expect(downMs).toBeGreaterThanOrEqual(3_000);

    // Changes made after the restart reach the operator through its re-established watches.
    await waitFor('the API server to answer', () => k.list(OBERONAIR, ns), 30_000);
    await k.create(OBERONAIR, air(ns, 'after'));
    await k.mergePatch(OBERONAIR, ns, 'before', { spec: { loss: 0.9 } });
    await waitFor(
      'a relay for the object created after the restart',
      () => k.getOrUndefined(CORE.deployment, ns, 'rk-air-after'),
      30_000,
    );
    await waitFor(
      'the edit made after the restart',
      async () => {
        // biome-ignore lint/suspicious/noExplicitAny: test
        const d: any = await k.get(CORE.deployment, ns, 'rk-air-before');
        return d.spec.template.spec.containers[0].args.includes('0.9');
      },
      30_000,
    );
    await waitFor(
      'status of generation 2',
      async () => {
        const o = await k.get<OberonAir>(OBERONAIR, ns, 'before');
        return o.status?.observedGeneration === 2;
      },
      30_000,
    );
    // The watches did break and were re-established (not a lucky no-op).
    const failuresAfter = mgr.controllers[0].informers.reduce((n, i) => n + i.stats.failures, 0);
    expect(failuresAfter).toBeGreaterThan(failuresBefore);
  });
});
