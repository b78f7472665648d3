// The status of an OberonKube from what the operator hears on its air (pure): nodes and pods
// heard, the node table, and the Ready, Converged and Degraded conditions.
import type { ClusterView } from '../air/view.ts';
import { LIMITS as AIR_LIMITS } from '../air/wire.ts';
import { kubeNodeName } from '../api/oberonkube-boot.ts';
import { KUBE_LIMITS } from '../api/oberonkube-limits.ts';
import { type Condition, type ConditionInput, setConditions } from '../runtime/conditions.ts';
import { byCodeUnit } from '../util/compare.ts';
import type { KubeSettings, OberonKube } from './oberonkube-render.ts';

/**
 * What the plane will refuse or leave Pending for this spec, in words ('' = nothing): it says so
 * only on its own screen, so status says it from the same limits.
 */
export function planeRefusal(s: KubeSettings): string {
  const pods = s.deployments.reduce((a, d) => a + d.replicas, 0);
  const room = s.nodes * KUBE_LIMITS.podsPerNode;
  // Each deployment keeps one ReplicaSet (two while it rolls); nodes are objects of the store too.
  const objects = pods + 2 * s.deployments.length + s.nodes;
  if (objects > KUBE_LIMITS.storeObjects)
    return `${pods} pods, ${s.deployments.length} deployments and ${s.nodes} nodes need ${objects} objects; the plane's store holds ${KUBE_LIMITS.storeObjects}, so it creates no more: lower the replicas`;
  if (pods > room)
    return `${pods} pods wanted but ${s.nodes} node(s) hold at most ${room} (${KUBE_LIMITS.podsPerNode} per node: an assignment frame carries 10 pod ids); ${pods - room} stay Pending: add nodes or lower the replicas`;
  return '';
}

/**
 * The plane's own words for what it refuses now, as heard on the air (KubeNet's refusal frames:
 * a full store, or an Apply or Hold it would not take), quoted in status; '' when it says nothing.
 * The quote is bounded once, here, by what a refusal can carry (AIR_LIMITS.REFUSAL_CHARS).
 */
export function planeSays(v: ClusterView | undefined): string {
  const words = v?.plane.refusal;
  return words ? `the plane refuses: ${words.slice(0, AIR_LIMITS.REFUSAL_CHARS)}` : '';
}

export const STATUS_WORDS = {
  failingNodesNamed: 3, // nodes named in a NodesCannotStart message (up to 20 × 10 pods would swamp it)
} as const;

/**
 * What the kubelets say they could not start (KubeNet's failed frames: the node has no such
 * module, or the workload's Start refused or trapped), per Ready node with the modules from the
 * plane's specs; '' when none says so.
 */
export function nodesCannotStart(v: ClusterView | undefined): string {
  const parts: string[] = [];
  for (const n of v?.nodes ?? []) {
    if (!n.ready || !n.failed.length) continue;
    const byModule = new Map<string, number[]>();
    for (const id of n.failed) {
      const m = v?.pods.find((p) => p.id === id)?.image ?? '?';
      byModule.set(m, [...(byModule.get(m) ?? []), id]);
    }
    const what = [...byModule].map(([m, ids]) => `${m} (pod${ids.length > 1 ? 's' : ''} ${ids.join(', ')})`);
    parts.push(`kubelet ${n.name} could not start ${what.join(', ')}`);
  }
  if (!parts.length) return '';
  const named = parts.slice(0, STATUS_WORDS.failingNodesNamed).join('; ');
  const more = parts.length - STATUS_WORDS.failingNodesNamed;
  return `${named}${more > 0 ? `; and ${more} more node(s)` : ''}: the node has no module of that name, or its Start refused or trapped`;
}

/**
 * Whether a station that just began listening has heard a full window: every node's heartbeat
 * (a TTL and a period) and the plane's round of pod specs, so that no pod id it heard of lacks its
 * image — or, if some image is still unheard, long enough for that round to have come by twice.
 */
export function heardFullWindow(
  h: { view: ClusterView; listeningMs: number },
  limits: { hearWindowMs: number; specRoundPerPodMs: number },
): boolean {
  if (h.listeningMs < limits.hearWindowMs) return false;
  const ids = new Set<number>();
  for (const n of h.view.nodes) {
    for (const id of n.assigned ?? []) ids.add(id);
    if (n.ready) for (const id of n.running) ids.add(id);
  }
  const unknown = [...ids].filter((id) => !h.view.pods.some((p) => p.id === id && p.image !== null));
  return unknown.length === 0 || h.listeningMs >= limits.hearWindowMs + limits.specRoundPerPodMs * ids.size;
}

/**
 * Whether the plane runs what spec.deployments orders, as heard on the air: per module, the pods
 * heard running on Ready nodes whose image the plane announced. Only then is it `Applied`: a
 * changed list is in the ConfigMap within seconds, but the plane has it only when its pods run it.
 * Pods of one module are counted together (the air names a pod's module, not its deployment).
 */
export function appliedCondition(s: KubeSettings, v: ClusterView | undefined): ConditionInput {
  if (!v) return { type: 'Applied', status: 'Unknown', reason: 'AirNotJudged', message: 'not listening yet' };
  const refused = planeSays(v);
  if (refused) return { type: 'Applied', status: 'False', reason: 'PlaneRefused', message: refused };
  const cannot = nodesCannotStart(v);
  if (cannot) return { type: 'Applied', status: 'False', reason: 'NodesCannotStart', message: cannot };
  const count = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  const want = new Map<string, number>();
  for (const d of s.deployments) if (d.replicas > 0) count(want, d.module, d.replicas);
  const heard = new Map<string, number>();
  let unnamed = 0;
  for (const p of v.pods) {
    if (!p.runningOn.length) continue;
    if (p.image === null) unnamed++;
    else count(heard, p.image, 1);
  }
  const words = (m: Map<string, number>) =>
    [...m]
      .sort(([a], [b]) => byCodeUnit(a, b))
      .map(([k, n]) => `${k} ×${n}`)
      .join(', ') || 'nothing';
  const same = want.size === heard.size && [...want].every(([k, n]) => heard.get(k) === n);
  if (same && unnamed === 0)
    return {
      type: 'Applied',
      status: 'True',
      reason: 'HeardRunning',
      message: `heard running ${words(want)}`,
    };
  return {
    type: 'Applied',
    status: 'False',
    reason: 'NotHeardRunning',
    message: `ordered ${words(want)}; heard running ${words(heard)}${unnamed ? ` and ${unnamed} pod(s) whose module is not heard yet` : ''}`,
  };
}

/** Degraded: the first of what is wrong, in this order of weight; False when nothing is. */
function degradedCondition(w: {
  keyProblem: string;
  refused: string;
  cannotStart: string;
  cannotPlace: string;
  /** Forged frames heard in all, when some were heard recently. */
  forged: number | null;
  notReady: string[];
}): ConditionInput {
  const yes = (reason: string, message: string): ConditionInput => ({
    type: 'Degraded',
    status: 'True',
    reason,
    message,
  });
  if (w.keyProblem) return yes('KeyInvalid', w.keyProblem);
  if (w.refused) return yes('PlaneRefused', w.refused);
  if (w.cannotStart) return yes('NodesCannotStart', w.cannotStart);
  if (w.cannotPlace) return yes('PlaneCannotPlace', w.cannotPlace);
  if (w.forged !== null)
    return yes(
      'ForgedFrames',
      `${w.forged} forged frame(s) heard: someone without the key transmits this cluster's tag`,
    );
  if (w.notReady.length) return yes('NodesNotReady', `NotReady: ${w.notReady.join(', ')}`);
  return { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' };
}

export function computeKubeStatus(
  k: OberonKube,
  s: KubeSettings,
  o: {
    view?: ClusterView;
    keyProblem: string;
    /** The key was read but is not a key (not 0–16 hex digits): the cluster cannot work as ordered. */
    keyInvalid?: boolean;
    /** Why the operator does not listen to the air yet, besides the key ('' or absent: no reason). */
    notListening?: string;
    conflicts: string[];
    withPlane: boolean;
    /** Forged frames heard in all (this station's count plus what the last status had counted). */
    forgedFrames?: number;
    forgedRecent: boolean;
  },
  now: Date = new Date(),
): Record<string, unknown> {
  const gen = k.metadata.generation;
  const desiredPods = s.deployments.reduce((a, d) => a + d.replicas, 0);
  const v = o.view;
  const names = Array.from({ length: s.nodes }, (_, i) => kubeNodeName(i));
  // A node outside spec.nodes is listed while it is heard Ready (one that joined on its own); once
  // silent it has left (a scale-down), which is neither a row of the cluster nor a degradation.
  const heardNames = (v?.nodes ?? []).filter((n) => !names.includes(n.name) && n.ready).map((n) => n.name);
  const table = [...names, ...heardNames.sort()].slice(0, 32).map((name) => {
    const n = v?.nodes.find((x) => x.name === name);
    const images = (n?.running ?? []).map((id) => v?.pods.find((p) => p.id === id)?.image ?? '?');
    return {
      name,
      ready: !!n?.ready,
      running: (n?.running ?? []).slice(0, 10),
      assigned: (n?.assigned ?? []).slice(0, 10),
      images: images.slice(0, 10),
    };
  });
  const readyNodes = table.filter((r) => names.includes(r.name) && r.ready).length;
  const running = v?.running ?? 0;
  const converged = !!v && v.converged && running === desiredPods && readyNodes === s.nodes;
  const forged = o.forgedFrames ?? v?.counts.forged ?? 0;
  const ready = !o.conflicts.length && !!v && readyNodes === s.nodes && v.plane.heard;
  const conds: ConditionInput[] = [];
  if (o.conflicts.length) {
    const message = `${o.conflicts.join(' and ')} already exist and belong to someone else; rename this OberonKube`;
    conds.push({ type: 'Ready', status: 'False', reason: 'NameConflict', message });
  } else if (!v) {
    conds.push({
      type: 'Ready',
      status: 'Unknown',
      reason: 'AirNotJudged',
      message: o.keyProblem || o.notListening || 'not listening yet',
    });
  } else {
    conds.push(
      ready
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'NodesReady',
            message: `${readyNodes}/${s.nodes} nodes heard Ready and the plane assigning`,
          }
        : {
            type: 'Ready',
            status: 'False',
            reason: !o.withPlane ? 'WaitingForNodes' : !v.plane.heard ? 'PlaneNotHeard' : 'NodesNotReady',
            message: `${readyNodes}/${s.nodes} nodes heard Ready${v.plane.heard ? '' : '; the plane is not heard yet'}`,
          },
    );
  }
  conds.push(
    converged
      ? {
          type: 'Converged',
          status: 'True',
          reason: 'Converged',
          message: `${running}/${desiredPods} pods running where assigned`,
        }
      : {
          type: 'Converged',
          status: v ? 'False' : 'Unknown',
          reason: v ? 'Converging' : 'AirNotJudged',
          message: `${running}/${desiredPods} pods running`,
        },
  );
  conds.push(appliedCondition(s, v));
  const notReadyHeard = table
    .filter((r) => !r.ready && v?.nodes.some((n) => n.name === r.name))
    .map((r) => r.name);
  conds.push(
    degradedCondition({
      keyProblem: o.keyInvalid ? o.keyProblem : '',
      refused: planeSays(v),
      cannotStart: nodesCannotStart(v),
      cannotPlace: planeRefusal(s),
      forged: o.forgedRecent ? forged : null,
      notReady: notReadyHeard,
    }),
  );
  return {
    observedGeneration: gen,
    nodes: `${readyNodes}/${s.nodes}`,
    pods: `${running}/${desiredPods}`,
    readyNodes,
    runningPods: running,
    desiredPods,
    converged,
    planeHeard: !!v?.plane.heard,
    forgedFrames: forged,
    nodeTable: table,
    conditions: setConditions(
      (k.status as { conditions?: Condition[] } | undefined)?.conditions,
      conds,
      gen,
      now,
    ),
  };
}
