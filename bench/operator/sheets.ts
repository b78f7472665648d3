// Benchmark: 100 SheetCluster objects of 3 nodes against a real kube-apiserver (kine memory://),
// reconciled by `retrokube operator` running as its own process. No pod runs (no kubelet), so no
// apiserver answers and no PVC binds: every cluster is read in the background every 5 s and ends
// Degraded (its workbook PVC unbound after 60 s, its apiserver not answering after the 90 s start
// grace) — the steady state measured here.
// Measures: time until every cluster has its generated token and signing Secrets, workbook PVC,
// apiserver Deployment and Service, agents StatefulSet and a status; API writes per object; the
// time until every status is final; writes during a quiet period afterwards (must be zero, although
// every cluster is re-examined and its sheet read every 5 s); the operator's peak RSS.
//   node_modules/.bin/node bench/operator/sheets.ts [--count 100] [--concurrency 16]

import { KINDS_OWNED } from '../../operator/src/controllers/oberonmachine.ts';
import { SHEETCLUSTER } from '../../operator/src/controllers/sheetcluster.ts';
import { CORE, type KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import { runOperatorBench } from './harness.ts';

const NODES = 3;

type WithStatus = KubeObject & {
  status?: { nodes?: string; conditions?: Array<{ type: string; reason: string; message: string }> };
};

await runOperatorBench({
  name: 'operator-sheets',
  namespace: 'bench-sheets',
  objects: 'SheetClusters',
  defaultCount: 100,
  timeoutMs: 10 * 60_000,
  completeKey: 'allChildrenSeconds',
  extra: {
    nodesPerCluster: NODES,
    childrenPerObject: 6, // token + signing Secrets, PVC, Deployment, Service, StatefulSet
  },
  async create(k, ns, i) {
    await k.create(SHEETCLUSTER, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'SheetCluster',
      metadata: { name: `s${i}`, namespace: ns },
      spec: { nodes: NODES, deployments: [{ name: 'hello', replicas: 2 }] },
    });
  },
  async countComplete(k: KubeClient, ns) {
    const names = async (t: Parameters<typeof k.list>[0]) =>
      new Set((await k.list<KubeObject>(t, ns)).items.map((o) => o.metadata.name));
    const [clusters, secrets, pvcs, deps, svcs, stss] = await Promise.all([
      k.list<WithStatus>(SHEETCLUSTER, ns),
      names(CORE.secret),
      names(KINDS_OWNED.pvc),
      names(CORE.deployment),
      names(CORE.service),
      names(KINDS_OWNED.statefulSet),
    ]);
    return clusters.items.filter((o) => {
      const c = `rk-sheets-${o.metadata.name}`;
      return (
        o.status?.nodes !== undefined &&
        secrets.has(`${c}-token`) &&
        secrets.has(`${c}-signing`) &&
        pvcs.has(`${c}-workbook`) &&
        deps.has(c) &&
        svcs.has(c) &&
        stss.has(`${c}-node`)
      );
    }).length;
  },
  async countSettled(k, ns) {
    const clusters = await k.list<WithStatus>(SHEETCLUSTER, ns);
    return clusters.items.filter((o) =>
      o.status?.conditions?.some(
        (c) =>
          c.type === 'Degraded' &&
          /PersistentVolumeClaim/.test(c.message) &&
          /does not answer/.test(c.message),
      ),
    ).length;
  },
});
