// OberonAir: one radio "air" — a UDP relay that forwards Wirth's 32-byte radio frames between the
// Oberon machines that joined it. The operator runs it as a Deployment plus a ClusterIP Service.
import { type Static, Type } from '@sinclair/typebox';
import { AIR_DEFAULTS, AIR_NAME_MAX } from './oberonair-limits.ts';
import { CommonStatus, type KindDefinition, Resources } from './schema.ts';

export { AIR_DEFAULTS, AIR_NAME_MAX } from './oberonair-limits.ts';

export const OberonAirSpec = Type.Object(
  {
    loss: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        default: AIR_DEFAULTS.loss,
        description:
          'Probability (0 to 1) that one delivery of a frame to one receiver is dropped; 0 = no loss.',
      }),
    ),
    port: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 65535,
        default: AIR_DEFAULTS.port,
        description: 'UDP port of the relay and of its Service.',
      }),
    ),
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        pattern: '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$',
        description: "Container image with the retrokube CLI; default: the operator's own image.",
      }),
    ),
    resources: Type.Optional(
      Resources({
        requests: { ...AIR_DEFAULTS.resources.requests },
        limits: { ...AIR_DEFAULTS.resources.limits },
      }),
    ),
  },
  { description: 'Desired state of the air.' },
);

export const OberonAirStatus = Type.Object(
  {
    ...CommonStatus,
    address: Type.Optional(
      Type.String({
        description: 'Where machines send their frames: <service>.<namespace>.svc.cluster.local:<port>.',
      }),
    ),
    readyReplicas: Type.Optional(Type.Integer({ minimum: 0, description: 'Ready relay pods (0 or 1).' })),
    heard: Type.Optional(
      Type.Object(
        {
          stations: Type.Integer({
            minimum: 0,
            description:
              'Distinct senders heard in the last 60 s: nodes by heartbeat name, planes by cluster tag, other stations by SCC address.',
          }),
          framesPerSecond: Type.Number({
            minimum: 0,
            description: 'Frames per second over the last 10 s (kept while it moves less than a quarter).',
          }),
          clusters: Type.Array(
            Type.Object({
              tag: Type.Integer({ minimum: 1, maximum: 255, description: 'The one-byte cluster tag.' }),
              name: Type.String({
                maxLength: 8,
                description: "The cluster's name when an OberonKube on this air names it, else empty.",
              }),
              verified: Type.Boolean({
                description:
                  "The operator holds this cluster's key (an OberonKube's), so forgeries are told apart.",
              }),
              nodes: Type.Array(Type.String({ maxLength: 6 }), {
                maxItems: 20,
                description: 'Node names heard in heartbeats in the last 60 s (unverified unless verified).',
              }),
              plane: Type.Boolean({
                description: "The plane's assignments or specs heard in the last 60 s.",
              }),
              forgedFrames: Type.Integer({
                minimum: 0,
                description: 'Frames with this tag and a bad MAC heard so far (0 when not verified).',
              }),
            }),
            {
              maxItems: 16,
              description:
                'Cluster tags heard in the last 60 s, and every cluster of an OberonKube on this air.',
            },
          ),
        },
        {
          description:
            "What the operator's passive station on this air hears (it only says hello, never transmits).",
        },
      ),
    ),
  },
  { description: 'Observed state of the air.' },
);

export type OberonAirSpecT = Static<typeof OberonAirSpec>;
export type OberonAirStatusT = Static<typeof OberonAirStatus>;

export const OberonAirKind: KindDefinition = {
  kind: 'OberonAir',
  plural: 'oberonairs',
  singular: 'oberonair',
  // Cozystack serves its own OberonAir in apps.cozystack.io; distinct short names keep kubectl unambiguous.
  shortNames: ['rkair'],
  categories: ['retrokube'],
  description: "A radio air for Oberon machines: a UDP relay forwarding Wirth's 32-byte radio frames.",
  spec: OberonAirSpec,
  status: OberonAirStatus,
  printerColumns: [
    { name: 'Address', type: 'string', jsonPath: '.status.address' },
    { name: 'Loss', type: 'number', jsonPath: '.spec.loss' },
    { name: 'Stations', type: 'integer', jsonPath: '.status.heard.stations' },
    { name: 'Frames/s', type: 'number', jsonPath: '.status.heard.framesPerSecond', priority: 1 },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    {
      name: 'Reason',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  validations: [
    {
      rule: `size(self.metadata.name) <= ${AIR_NAME_MAX}`,
      message: `metadata.name must be at most ${AIR_NAME_MAX} characters (the relay Service is named rk-air-<name>)`,
    },
    {
      rule: "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
      message: 'metadata.name may contain only a-z, 0-9 and - (no dots: it names a Service)',
    },
  ],
  source: 'operator/src/api/oberonair.ts',
};
