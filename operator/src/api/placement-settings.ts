// Placement's defaults and the settings a controller renders from a spec.
// Apart from the TypeBox schema in placement.ts (which re-exports them): the operator's controllers
// import these, and TypeBox (218 modules, 10-20 MiB of RSS) is for the CRD generator and the CLI,
// not for a reconcile (#32; operator/src/cli/startup.test.ts keeps it so).
export const PLACEMENT_DEFAULTS = {
  // Soft: a one-node cluster (a laptop, the fast test node) still runs every machine; a bigger one
  // spreads them. `required` refuses to stack two on one node (pods stay Pending instead).
  spread: 'soft',
  topologyKey: 'kubernetes.io/hostname', // one domain per Kubernetes node
} as const;

export interface PlacementSettings {
  spread: 'soft' | 'required' | 'none';
  topologyKey: string;
}

/** A spec's placement (PlacementT of placement.ts, named by its fields: that module imports this one). */
export function placementSettings(p: Partial<PlacementSettings> | undefined): PlacementSettings {
  return {
    spread: p?.spread ?? PLACEMENT_DEFAULTS.spread,
    topologyKey: p?.topologyKey ?? PLACEMENT_DEFAULTS.topologyKey,
  };
}
