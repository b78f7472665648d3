// The OberonKube rollout driver. A target is judged as the operator judges an Oberon cluster: by
// what its OberonKube status says was heard on the air (pods running the new image on Ready nodes),
// never by asking the plane. The change reaches a running plane live, through the cluster's
// deployments ConfigMap: the driver writes the deployment's fields into the OberonKube's
// spec.deployments; blue/green sets the serving label consumers follow.
import { parseDeploymentList } from '../api/oberonkube-boot.ts';
import { DEPLOYMENTS_PATTERN } from '../api/oberonkube-limits.ts';
import type { Observation, Version } from '../rollout/plan.ts';
import { ApiError, type KubeObject } from '../runtime/client.ts';
import { OBERONKUBE } from './oberonkube.ts';
import { matches, type RolloutDriver, watchedObject } from './rollout-driver.ts';

/** The label blue/green sets on the targets of the group that now serves (and unsets on the others). */
export const SERVING_LABEL = 'rollout.retrokube.io/serving';

interface Kube extends KubeObject {
  spec?: { deployments?: string };
  status?: {
    observedGeneration?: number;
    converged?: boolean;
    planeHeard?: boolean;
    runningPods?: number;
    desiredPods?: number;
    nodeTable?: Array<{ images?: string[] }>;
  };
}

/** What the air says about one target, through its OberonKube status. Pure. */
export function observeKube(k: Kube, deployment: string, minRunning: number): Observation {
  let items: ReturnType<typeof parseDeploymentList>;
  try {
    items = parseDeploymentList(k.spec?.deployments);
  } catch (e) {
    return { converged: false, healthy: false, problem: (e as Error).message };
  }
  const item = items.find((d) => d.name === deployment);
  if (!item) return { converged: false, healthy: false };
  const current: Version = { image: item.module, replicas: item.replicas };
  const st = k.status ?? {};
  // Status written before the operator heard the plane says nothing about the pods yet.
  if (st.planeHeard !== true)
    return { current, converged: false, healthy: false, problem: 'the plane is not heard on the air' };
  const fresh = st.observedGeneration === k.metadata.generation;
  const heard = (st.nodeTable ?? []).flatMap((n) => n.images ?? []).filter((i) => i === item.module).length;
  const converged =
    fresh && st.converged === true && st.runningPods === st.desiredPods && heard >= item.replicas;
  return { current, converged, healthy: (st.runningPods ?? 0) >= minRunning };
}

/** The target's deployments text with one item set to `version`. Pure. */
export function withVersion(text: string | undefined, deployment: string, version: Version): string {
  const items = parseDeploymentList(text).map((d) =>
    d.name === deployment
      ? { name: d.name, replicas: version.replicas ?? d.replicas, module: version.image ?? d.module }
      : d,
  );
  const out = items.map((d) => `${d.name} ${d.replicas} ${d.module}`).join('; ');
  if (!new RegExp(DEPLOYMENTS_PATTERN).test(out))
    throw new Error(`"${out}" is not a valid deployments list (an image must be a module name)`);
  return out;
}

export const oberonDriver: RolloutDriver = {
  kind: 'OberonKube',
  select: (ctx, r) =>
    (ctx.watched(OBERONKUBE).list(r.metadata.namespace) as Kube[])
      .filter((k) => matches(k.metadata.labels, r.spec.selector.matchLabels))
      .map((k) => ({ name: k.metadata.name as string, labels: { ...(k.metadata.labels ?? {}) } })),
  labelsOf: (ctx, r, name) => ({
    ...(watchedObject<Kube>(ctx, OBERONKUBE, r.metadata.namespace as string, name)?.metadata.labels ?? {}),
  }),
  observe: async (ctx, r, targets) => {
    const minRunning = r.spec.check?.minRunning ?? 0;
    const seen = new Map<string, Observation>();
    for (const t of targets) {
      const k = watchedObject<Kube>(ctx, OBERONKUBE, r.metadata.namespace as string, t.name);
      seen.set(
        t.name,
        k
          ? observeKube(k, r.spec.change.deployment, minRunning)
          : { converged: false, healthy: false, problem: `OberonKube ${t.name} does not exist` },
      );
    }
    return seen;
  },
  apply: async (ctx, r, target, version) => {
    const ns = r.metadata.namespace as string;
    const k = watchedObject<Kube>(ctx, OBERONKUBE, ns, target);
    if (!k) throw new Error(`OberonKube ${target} does not exist`);
    const deployments = withVersion(k.spec?.deployments, r.spec.change.deployment, version);
    if (deployments === k.spec?.deployments) return;
    await ctx.client.mergePatch(OBERONKUBE, ns, target, { spec: { deployments } });
  },
  serve: async (ctx, r, targets, label, group) => {
    const ns = r.metadata.namespace as string;
    for (const t of targets) {
      const serving = t.labels[label] === group ? 'true' : 'false';
      if (watchedObject<Kube>(ctx, OBERONKUBE, ns, t.name)?.metadata.labels?.[SERVING_LABEL] === serving)
        continue;
      await ctx.client
        .mergePatch(OBERONKUBE, ns, t.name, { metadata: { labels: { [SERVING_LABEL]: serving } } })
        .catch((e) => {
          if (!(e instanceof ApiError && e.status === 404)) throw e;
        });
    }
  },
};
