// Placement (pure): where the pods of one cluster go on the Kubernetes nodes, and how many of them
// a voluntary eviction (kubectl drain, a node upgrade) may take at once. Rendered into the machine
// StatefulSets/VMs of an OberonKube and the agents of a SheetCluster; docs/operator.md § Placement
// says why each rule is what it is.
import type { PlacementSettings } from '../api/placement.ts';
import type { KubeObject, ResourceType } from '../runtime/client.ts';

/** The pod label naming a machine's role on its air (plane, node, standalone). */
export const ROLE_LABEL = 'retrokube.io/role';

export const PLACEMENT_LIMITS = {
  // One more pod in the fullest domain than in the emptiest: the tightest spread that still lets
  // N pods land on fewer than N nodes.
  maxSkew: 1,
  // A drain takes one member at a time. Kube on Oberon's plane pauses evictions when ≥ 55 % of
  // 3+ nodes are NotReady (its zone-disruption rule): two of three gone at once would leave their
  // pods unscheduled until a person brings a node back. A SheetCluster's scheduler moves a lost
  // agent's pods to the others: one at a time keeps N-1 agents to take them.
  maxUnavailable: 1,
} as const;

export const PDB: ResourceType = {
  group: 'policy',
  version: 'v1',
  plural: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};

type Labels = Record<string, string>;

/** A Kubernetes label selector: every label of `matchLabels`, and each expression. */
export interface LabelSelector {
  matchLabels: Labels;
  matchExpressions?: { key: string; operator: 'In'; values: string[] }[];
}

export interface PodPlacement {
  affinity?: Record<string, unknown>;
  topologySpreadConstraints?: Record<string, unknown>[];
}

/** The pods carrying every label of `common` and one of `values` under `key`. */
export function oneOf(common: Labels, key: string, values: string[]): LabelSelector {
  return { matchLabels: common, matchExpressions: [{ key, operator: 'In', values }] };
}

/**
 * Pods matching `selector` spread over the domains of `p.topologyKey` (none: no constraint).
 * `alwaysSoft`: a preference even when the user asked for `required`.
 */
export function spread(selector: LabelSelector, p: PlacementSettings, alwaysSoft = false): PodPlacement {
  if (p.spread === 'none') return {};
  return {
    topologySpreadConstraints: [
      {
        maxSkew: PLACEMENT_LIMITS.maxSkew,
        topologyKey: p.topologyKey,
        whenUnsatisfiable: p.spread === 'required' && !alwaysSoft ? 'DoNotSchedule' : 'ScheduleAnyway',
        labelSelector: selector,
      },
    ],
  };
}

/**
 * One cluster's leader (a plane, an apiserver) and its members (node machines, agents) spread
 * together: the members by the user's rule, the leader always softly (a cluster with fewer
 * Kubernetes nodes than pods must still get it). Counting the leader is what keeps it apart from
 * its members where there is room: it goes to the emptiest domain. A preferred anti-affinity did
 * that worse — the scheduler weighs it for the members too (symmetrically), so after a drain to two
 * hosts it stacked four of five node machines on the host without the plane.
 */
export function spreadTogether(
  common: Labels,
  key: string,
  roles: { leader: string; member: string },
  who: 'leader' | 'member',
  p: PlacementSettings,
): PodPlacement {
  const together = spread(oneOf(common, key, [roles.leader, roles.member]), p, true);
  if (who === 'leader' || p.spread !== 'required') return together;
  // A required spread is the members' own rule: counted with the leader, a skew of one lets two
  // members share a domain (the leader alone on a third), which a rehearsal of the several nodes
  // did with a SheetCluster's agents. So the members' hard constraint counts the members alone,
  // and the soft one over both still keeps the leader apart. (Two constraints of one topologyKey
  // must differ in whenUnsatisfiable: they do.)
  const own = spread(oneOf(common, key, [roles.member]), p).topologySpreadConstraints ?? [];
  return { topologySpreadConstraints: [...own, ...(together.topologySpreadConstraints ?? [])] };
}

/**
 * A machine's placement: the plane and the node machines of one air spread together (the plane
 * softly); standalone machines sharing an air spread among themselves.
 */
export function machinePlacement(
  air: string | undefined,
  role: 'plane' | 'node' | 'standalone',
  airLabel: string,
  p: PlacementSettings,
): PodPlacement {
  if (!air) return {};
  if (role === 'standalone') return spread({ matchLabels: { [airLabel]: air, [ROLE_LABEL]: role } }, p);
  const roles = { leader: 'plane', member: 'node' };
  return spreadTogether({ [airLabel]: air }, ROLE_LABEL, roles, role === 'plane' ? 'leader' : 'member', p);
}

/**
 * A PodDisruptionBudget of at most one member unavailable at a time. `AlwaysAllow` for unhealthy
 * pods: a member that is already not Ready protects nothing, and keeping it would stall a drain.
 */
export function disruptionBudget(metadata: KubeObject['metadata'], selector: Labels): KubeObject {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata,
    spec: {
      maxUnavailable: PLACEMENT_LIMITS.maxUnavailable,
      selector: { matchLabels: selector },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}
