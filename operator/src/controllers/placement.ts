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
  // Preference weight (1-100) of "the plane not on a node machine's host".
  planeApartWeight: 100,
} as const;

export const PDB: ResourceType = {
  group: 'policy',
  version: 'v1',
  plural: 'poddisruptionbudgets',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};

type Labels = Record<string, string>;

export interface PodPlacement {
  affinity?: Record<string, unknown>;
  topologySpreadConstraints?: Record<string, unknown>[];
}

/** Pods matching `selector` spread over the domains of `p.topologyKey` (none: no constraint). */
export function spread(selector: Labels, p: PlacementSettings): PodPlacement {
  if (p.spread === 'none') return {};
  return {
    topologySpreadConstraints: [
      {
        maxSkew: PLACEMENT_LIMITS.maxSkew,
        topologyKey: p.topologyKey,
        whenUnsatisfiable: p.spread === 'required' ? 'DoNotSchedule' : 'ScheduleAnyway',
        labelSelector: { matchLabels: selector },
      },
    ],
  };
}

/** Prefer a domain without pods matching `others` ("where possible": never a hard rule). */
export function apart(others: Labels, p: PlacementSettings): PodPlacement {
  if (p.spread === 'none') return {};
  return {
    affinity: {
      podAntiAffinity: {
        preferredDuringSchedulingIgnoredDuringExecution: [
          {
            weight: PLACEMENT_LIMITS.planeApartWeight,
            podAffinityTerm: { labelSelector: { matchLabels: others }, topologyKey: p.topologyKey },
          },
        ],
      },
    },
  };
}

/**
 * A machine's placement: the node machines of one air spread over the domains; the plane kept
 * apart from them where it can; standalone machines sharing an air spread among themselves.
 */
export function machinePlacement(
  air: string | undefined,
  role: 'plane' | 'node' | 'standalone',
  airLabel: string,
  p: PlacementSettings,
): PodPlacement {
  if (!air) return {};
  if (role === 'plane') return apart({ [airLabel]: air, [ROLE_LABEL]: 'node' }, p);
  return spread({ [airLabel]: air, [ROLE_LABEL]: role }, p);
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
