// Benchmark: 500 OberonAir objects against a real kube-apiserver (kine memory://), reconciled by
// `retrokube operator` running as its own process.
// Measures: time until every air has its Deployment and Service and
// status.observedGeneration == metadata.generation; reconciles per second; API writes per object
// (from the operator's own rest_client_requests_total); writes during a quiet period afterwards
// (should be zero); the operator's peak RSS (VmHWM).
//   node_modules/.bin/node bench/operator/run.ts [--count 500] [--concurrency 16]
import { OBERONAIR, type OberonAir } from '../../operator/src/controllers/oberonair.ts';
import { CORE, type KubeObject } from '../../operator/src/runtime/client.ts';
import { runOperatorBench } from './harness.ts';

await runOperatorBench({
  name: 'operator',
  namespace: 'bench',
  objects: 'OberonAirs',
  defaultCount: 500,
  timeoutMs: 15 * 60_000, // give up if 500 airs are not converged in 15 minutes
  completeKey: 'convergeSeconds',
  async create(k, ns, i) {
    await k.create<OberonAir>(OBERONAIR, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonAir',
      metadata: { name: `air-${i}`, namespace: ns },
      spec: { loss: (i % 10) / 10 },
    });
  },
  // Every air has both children and a status for its generation.
  async countComplete(k, ns) {
    const [airs, deps, svcs] = await Promise.all([
      k.list<OberonAir>(OBERONAIR, ns),
      k.list<KubeObject>(CORE.deployment, ns),
      k.list<KubeObject>(CORE.service, ns),
    ]);
    const depNames = new Set(deps.items.map((d) => d.metadata.name));
    const svcNames = new Set(svcs.items.map((s) => s.metadata.name));
    return airs.items.filter(
      (a) =>
        a.status?.observedGeneration === a.metadata.generation &&
        depNames.has(`rk-air-${a.metadata.name}`) &&
        svcNames.has(`rk-air-${a.metadata.name}`),
    ).length;
  },
});
