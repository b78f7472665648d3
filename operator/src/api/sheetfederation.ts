// SheetFederation: two or more Sheeternetes clusters that know each other — one service list, an
// optional union sync, and deployments stretched over the members by free CPU.
import { type Static, Type } from '@sinclair/typebox';
import { CommonStatus, type KindDefinition } from './schema.ts';
import { FEDERATION_DEFAULTS } from './sheetfederation-limits.ts';
import { SheetMember } from './sheetmember.ts';

export { FEDERATION_DEFAULTS } from './sheetfederation-limits.ts';

const MemberCount = Type.Object({
  member: Type.String({ maxLength: 63 }),
  replicas: Type.Integer({ minimum: 0 }),
});

export const SheetFederationSpec = Type.Object(
  {
    members: Type.Array(SheetMember, {
      minItems: 2,
      maxItems: 8,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      description:
        'The clusters; the first is home (it wins name collisions and fills first when stretching).',
    }),
    sync: Type.Optional(
      Type.Object(
        {
          enabled: Type.Boolean({
            description: 'Copy deployments a member lacks from the member that has them.',
          }),
          intervalSeconds: Type.Optional(
            Type.Integer({
              minimum: 5,
              maximum: 86_400,
              default: FEDERATION_DEFAULTS.syncIntervalSeconds,
              description: 'Seconds between two sync passes.',
            }),
          ),
        },
        {
          description:
            'Union sync: same-named deployments are never touched; differing specs are reported as conflicts.',
        },
      ),
    ),
    stretched: Type.Optional(
      Type.Array(
        Type.Object({
          deployment: Type.String({ minLength: 1, maxLength: 253 }),
          replicas: Type.Integer({
            minimum: 0,
            maximum: 100_000,
            description: 'Total replicas over all members.',
          }),
          cpu: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: 1_000_000,
              description: "Millicores per replica; default the deployment's cpu_req.",
            }),
          ),
        }),
        {
          maxItems: 32,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['deployment'],
          description:
            'Deployments split over the members: home first, then by most free CPU; grow before shrink.',
        },
      ),
    ),
    active: Type.Optional(
      Type.Array(
        Type.Object({
          service: Type.String({
            minLength: 1,
            maxLength: 253,
            description: 'A federated service (deployment name).',
          }),
          member: Type.String({ minLength: 1, maxLength: 63, description: 'The member that serves it.' }),
        }),
        {
          maxItems: 500,
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['service'],
          description:
            "Which member serves a federated service (blue/green: a Rollout switches it). Unset: the service's home.",
        },
      ),
    ),
  },
  {
    description: 'The federation.',
    'x-kubernetes-validations': [
      {
        rule: '!has(self.active) || self.active.all(a, self.members.exists(m, m.name == a.member))',
        message: 'every active[].member must be one of members[].name',
        fieldPath: '.active',
      },
    ],
  },
);

export const SheetFederationStatus = Type.Object(
  {
    ...CommonStatus,
    members: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ maxLength: 63 }),
          reachable: Type.Boolean(),
          message: Type.Optional(Type.String({ maxLength: 1024 })),
          deployments: Type.Optional(Type.Integer({ minimum: 0 })),
          nodes: Type.Optional(Type.Integer({ minimum: 0 })),
          nodesReady: Type.Optional(Type.Integer({ minimum: 0 })),
          pods: Type.Optional(Type.Integer({ minimum: 0 })),
          podsRunning: Type.Optional(Type.Integer({ minimum: 0 })),
          freeCpu: Type.Optional(
            Type.Integer({ minimum: 0, description: 'Millicores free on Ready, schedulable nodes.' }),
          ),
        }),
        { maxItems: 8 },
      ),
    ),
    services: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ maxLength: 253 }),
          home: Type.String({ maxLength: 63 }),
          members: Type.Array(Type.String({ maxLength: 63 }), { maxItems: 8 }),
          active: Type.Optional(
            Type.String({
              maxLength: 63,
              description: 'The member serving it: spec.active if that member holds it, else home.',
            }),
          ),
        }),
        { maxItems: 500, description: 'The merged service list (first 500 by name).' },
      ),
    ),
    conflicts: Type.Optional(Type.Array(Type.String({ maxLength: 253 }), { maxItems: 100 })),
    lastSync: Type.Optional(Type.String({ format: 'date-time' })),
    stretched: Type.Optional(
      Type.Array(
        Type.Object({
          deployment: Type.String({ maxLength: 253 }),
          planned: Type.Array(MemberCount, { maxItems: 8 }),
          running: Type.Array(MemberCount, { maxItems: 8 }),
          unplaced: Type.Integer({ minimum: 0 }),
          message: Type.Optional(Type.String({ maxLength: 1024 })),
        }),
        { maxItems: 32 },
      ),
    ),
  },
  { description: 'What the members report.' },
);

export type SheetFederationSpecT = Static<typeof SheetFederationSpec>;
export type SheetFederationStatusT = Static<typeof SheetFederationStatus>;

export const SheetFederationKind: KindDefinition = {
  kind: 'SheetFederation',
  plural: 'sheetfederations',
  singular: 'sheetfederation',
  shortNames: ['rkfed'],
  categories: ['retrokube', 'sheeternetes'],
  description:
    'Two or more Sheeternetes clusters federated: merged services, union sync, stretched deployments.',
  spec: SheetFederationSpec,
  status: SheetFederationStatus,
  printerColumns: [
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  source: 'operator/src/api/sheetfederation.ts',
};
