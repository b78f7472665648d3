// Benchmark: 100 OberonKube objects of 3 nodes against a real kube-apiserver (kine memory://, or etcd),
// reconciled by `retrokube operator` running as its own process (each cluster also gets a
// passive air station; no machine runs, so the planes stay gated behind their nodes). The bench
// publishes each relay's EndpointSlice as the endpointslice controller would, so machines are
// released. Measures: time until every cluster has its key Secret, OberonAir (+ relay Deployment
// and Service), 3 node OberonMachines (+ a StatefulSet of 1 and a Service each) and a status; then
// until every cluster's plane is there too (settled: created after the plane's grace period, as no
// node is heard); API writes per object; writes during a quiet period afterwards (must be zero, although every cluster is
// re-examined every 2 s, longer with many: runtime/poll.ts); the operator's peak RSS; then, at rest, the latency from a change of one
// cluster's deployments line to the operator's write of its live-commands ConfigMap (phases.ts),
// and with --overload what the operator does when the API server is paused and restarted.
//   node_modules/.bin/node bench/operator/kube.ts [--count 100[,1000]] [--concurrency 16]
//     [--datastore kine|etcd] [--changes 50] [--overload]
import { OBERONAIR } from '../../operator/src/controllers/oberonair.ts';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import {
  CORE,
  type KubeClient,
  type KubeObject,
  type ResourceType,
} from '../../operator/src/runtime/client.ts';
import { runOperatorBench } from './harness.ts';
import { createKube, kubeChangeProbe, NODES } from './kube-objects.ts';

await runOperatorBench({
  name: 'operator-kube',
  namespace: 'bench-kube',
  objects: 'OberonKubes',
  defaultCount: 100,
  timeoutMs: 10 * 60_000, // give up if the clusters are not all created in 10 minutes
  completeKey: 'allChildrenSeconds',
  extra: {
    nodesPerCluster: NODES,
    childrenPerObject: 1 + 3 + NODES * 3, // Secret, air + Deployment + Service, per node machine + StatefulSet + Service
  },
  probe: kubeChangeProbe,
  create: createKube,
  // Settled: every cluster's plane too (created once its nodes are heard or, as here where no
  // node runs, after the plane's grace period: oberonkube.ts planeGraceMs), with its StatefulSet
  // released and its Service — the writes a cluster makes by itself are over, so the quiet
  // window after this measures rest.
  async countSettled(k: KubeClient, ns) {
    const [machines, stss, svcs] = await Promise.all([
      names(k, OBERONMACHINE, ns),
      released(k, ns),
      names(k, CORE.service, ns),
    ]);
    let n = 0;
    for (const m of machines) {
      if (m.endsWith('-plane') && stss.has(`rk-m-${m}`) && svcs.has(`rk-m-${m}`)) n++;
    }
    return n;
  },
  async countComplete(k: KubeClient, ns) {
    const [kubes, airs, machines, stss, svcs, deps, secrets] = await Promise.all([
      k.list<KubeObject & { status?: { nodes?: string } }>(OBERONKUBE, ns),
      names(k, OBERONAIR, ns),
      names(k, OBERONMACHINE, ns),
      released(k, ns),
      names(k, CORE.service, ns),
      names(k, CORE.deployment, ns),
      names(k, CORE.secret, ns),
    ]);
    return kubes.items.filter((o) => {
      const n = o.metadata.name;
      const nodes = Array.from({ length: NODES }, (_, j) => `${n}-node-${String.fromCharCode(97 + j)}`);
      return (
        o.status?.nodes !== undefined &&
        secrets.has(`rk-kube-${n}-key`) &&
        airs.has(`${n}-air`) &&
        deps.has(`rk-air-${n}-air`) &&
        svcs.has(`rk-air-${n}-air`) &&
        nodes.every((m) => machines.has(m) && stss.has(`rk-m-${m}`) && svcs.has(`rk-m-${m}`))
      );
    }).length;
  },
});

async function names(k: KubeClient, t: ResourceType, ns: string): Promise<Set<string>> {
  return new Set((await k.list<KubeObject>(t, ns)).items.map((o) => o.metadata.name as string));
}

/** The StatefulSets released to run (the relay has a ready endpoint): only those count. */
async function released(k: KubeClient, ns: string): Promise<Set<string>> {
  const l = await k.list<KubeObject & { spec?: { replicas?: number } }>(KINDS_OWNED.statefulSet, ns);
  return new Set(l.items.filter((o) => o.spec?.replicas === 1).map((o) => o.metadata.name as string));
}
