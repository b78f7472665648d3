// Placement: how the pods of one cluster (an OberonKube's machines, a SheetCluster's agents) are
// spread over the Kubernetes nodes. One schema for every kind that has it, rendered by
// controllers/placement.ts; docs/operator.md § Placement gives the reasons.
import { type Static, Type } from '@sinclair/typebox';
import { PLACEMENT_DEFAULTS } from './placement-settings.ts';

export { PLACEMENT_DEFAULTS, type PlacementSettings, placementSettings } from './placement-settings.ts';

export const Placement = Type.Object(
  {
    spread: Type.Optional(
      Type.Union([Type.Literal('soft'), Type.Literal('required'), Type.Literal('none')], {
        default: PLACEMENT_DEFAULTS.spread,
        description:
          'Spread the pods over topology domains: soft (prefer, default), required (never more than one pod more in one domain than in another: the extra pods stay Pending), none (leave it to the scheduler).',
      }),
    ),
    topologyKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 316,
        pattern: '^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$',
        default: PLACEMENT_DEFAULTS.topologyKey,
        description: 'The node label whose values are the domains (e.g. topology.kubernetes.io/zone).',
      }),
    ),
  },
  { description: 'How the pods are spread over Kubernetes nodes (docs/operator.md § Placement).' },
);

export type PlacementT = Static<typeof Placement>;
