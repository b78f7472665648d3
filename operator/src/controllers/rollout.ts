// Rollout controller: walks a version change across OberonKubes with the planner of
// operator/src/rollout/plan.ts. It keeps no memory of its own — the walk is the Rollout's status —
// so a restarted operator resumes where the last status write left it, and every action it takes
// (write the deployment's desired fields, set a serving label) is idempotent.
//
// A target is judged as the operator judges an Oberon cluster: by what its OberonKube status says
// was heard on the air (pods running the new image on Ready nodes), never by asking the plane.
// The change reaches a running plane live, through the cluster's deployments ConfigMap.
import { DEPLOYMENTS_PATTERN, parseDeploymentList } from '../api/oberonkube.ts';
import type { RolloutSpecT, RolloutStatusT } from '../api/rollout.ts';
import { GROUP } from '../api/schema.ts';
import {
  type Action,
  type Change,
  decide,
  type Observation,
  type RolloutSpec,
  type RolloutStatus,
  type Target,
  type Version,
} from '../rollout/plan.ts';
import { ApiError, type KubeObject, type ResourceType } from '../runtime/client.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { OBERONKUBE } from './oberonkube.ts';
import { ourKind, primaryRules } from './owned.ts';

export const LIMITS = {
  pollMs: 2_000, // a walk in progress is looked at this often (OberonKube status changes at most every 5 s)
} as const;

/** The label blue/green sets on the targets of the group that now serves (and unsets on the others). */
export const SERVING_LABEL = 'rollout.retrokube.io/serving';

export const ROLLOUT: ResourceType = ourKind('rollouts', 'Rollout');

/** Reads its targets and writes their deployments (spec) and serving label (metadata); nothing else. */
export const ROLLOUT_RBAC: PolicyRule[] = [
  ...primaryRules('rollouts'),
  { apiGroups: [GROUP], resources: ['oberonkubes'], verbs: ['get', 'list', 'watch', 'patch'] },
];

interface Rollout extends KubeObject {
  spec?: RolloutSpecT;
  status?: RolloutStatusT;
}

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

export function rolloutController(): ControllerDefinition {
  return {
    name: 'rollout',
    primary: ROLLOUT,
    owns: [],
    watches: [
      {
        type: OBERONKUBE,
        // A target's change wakes every unfinished rollout of its namespace.
        map: (obj, primary) =>
          primary
            .list(obj.metadata.namespace)
            .filter((r) => !isFinal((r as Rollout).status?.phase))
            .map((r) => `${r.metadata.namespace}/${r.metadata.name}`),
      },
    ],
    reconcile,
  };
}

const isFinal = (phase: string | undefined) =>
  phase === 'Succeeded' || phase === 'Failed' || phase === 'Aborted';

/** The planner's view of a Rollout's spec. */
export function plannerSpec(spec: RolloutSpecT): RolloutSpec {
  return {
    change: spec.change as Change,
    strategy: spec.strategy as RolloutSpec['strategy'],
    paused: spec.paused,
    abort: spec.abort,
    promote: spec.promote,
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

async function reconcile(ctx: ReconcileContext, key: ObjectKeyRef): Promise<ReconcileResult | undefined> {
  const r = ctx.cached<Rollout>(ROLLOUT, key.namespace, key.name);
  if (!r?.spec || r.metadata.deletionTimestamp) return undefined;
  if (isFinal(r.status?.phase)) return undefined;
  const spec = plannerSpec(r.spec);
  const kubes = ctx.watched(OBERONKUBE).list(key.namespace) as Kube[];
  const byName = new Map(kubes.map((k) => [k.metadata.name as string, k]));
  const want = r.spec.selector.matchLabels;
  const targets: Target[] = kubes
    .filter((k) => Object.entries(want).every(([l, v]) => k.metadata.labels?.[l] === v))
    .map((k) => ({ name: k.metadata.name as string, labels: { ...(k.metadata.labels ?? {}) } }));
  // Targets chosen at the start stay targets (a relabelled cluster is still judged, and is missing if deleted).
  const known = new Set(targets.map((t) => t.name));
  for (const row of r.status?.targets ?? []) {
    const k = byName.get(row.name);
    if (!known.has(row.name)) targets.push({ name: row.name, labels: { ...(k?.metadata.labels ?? {}) } });
  }
  const minRunning = r.spec.check?.minRunning ?? 0;
  const seen = new Map<string, Observation>();
  for (const t of targets) {
    const k = byName.get(t.name);
    seen.set(
      t.name,
      k
        ? observeKube(k, r.spec.change.deployment, minRunning)
        : { converged: false, healthy: false, problem: `OberonKube ${t.name} does not exist` },
    );
  }
  const last = r.status?.phase ? (r.status as RolloutStatus) : undefined;
  const d = decide(spec, last, targets, seen, new Date());

  const failures: string[] = [];
  for (const a of d.actions) {
    try {
      await carryOut(ctx, key.namespace, a, r.spec.change.deployment, byName, targets);
    } catch (e) {
      // Retried at the next poll (applying is idempotent); the reason shows in status meanwhile.
      failures.push(`${a.kind} ${a.kind === 'apply' ? a.target : a.group}: ${(e as Error).message}`);
    }
  }
  for (const e of d.events) void ctx.recorder.record(r, e.type, e.reason, e.message);
  const succeeded = d.status.targets.filter((t) => t.phase === 'Succeeded').length;
  const status: RolloutStatusT = {
    ...(d.status as RolloutStatusT),
    ...(failures.length
      ? { message: `${d.status.message ?? ''} (retrying: ${failures.join('; ')})`.trim() }
      : {}),
    progress: `${succeeded}/${d.status.targets.length}`,
    observedGeneration: r.metadata.generation,
  };
  await ctx.applyStatusIfChanged(ROLLOUT, r, status as unknown as Record<string, unknown>);
  return isFinal(d.status.phase) ? undefined : { requeueAfterMs: LIMITS.pollMs };
}

async function carryOut(
  ctx: ReconcileContext,
  namespace: string,
  a: Action,
  deployment: string,
  byName: Map<string, Kube>,
  targets: Target[],
): Promise<void> {
  if (a.kind === 'apply') {
    const k = byName.get(a.target);
    if (!k) throw new Error(`OberonKube ${a.target} does not exist`);
    const deployments = withVersion(k.spec?.deployments, deployment, a.version);
    if (deployments === k.spec?.deployments) return;
    await ctx.client.mergePatch(OBERONKUBE, namespace, a.target, { spec: { deployments } });
    return;
  }
  for (const t of targets) {
    const serving = t.labels[a.label] === a.group ? 'true' : 'false';
    if (byName.get(t.name)?.metadata.labels?.[SERVING_LABEL] === serving) continue;
    await ctx.client
      .mergePatch(OBERONKUBE, namespace, t.name, { metadata: { labels: { [SERVING_LABEL]: serving } } })
      .catch((e) => {
        if (!(e instanceof ApiError && e.status === 404)) throw e;
      });
  }
}
