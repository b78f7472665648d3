// SheetMigration: move one deployment between two Sheeternetes clusters make-before-break, with an
// optional rollback window. The state machine (sheets/bridge/migrate.ts) lives in status, so an
// operator restarted at any point resumes from status alone.
import { type Static, Type } from '@sinclair/typebox';
import { CommonStatus, type KindDefinition } from './schema.ts';
import { SheetMember } from './sheetmember.ts';
import { MIGRATION_DEFAULTS, MIGRATION_PHASES } from './sheetmigration-limits.ts';

export { MIGRATION_DEFAULTS, MIGRATION_PHASES } from './sheetmigration-limits.ts';

export const SheetMigrationSpec = Type.Object(
  {
    deployment: Type.String({ minLength: 1, maxLength: 253, description: 'Deployment name on the source.' }),
    from: SheetMember,
    to: SheetMember,
    waitSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 86_400,
        default: MIGRATION_DEFAULTS.waitSeconds,
        description: 'How long the target may take to run every replica (and the source, on rollback).',
      }),
    ),
    pollSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 600,
        default: MIGRATION_DEFAULTS.pollSeconds,
        description: 'Seconds between checks.',
      }),
    ),
    rollbackWindowSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 86_400,
        default: MIGRATION_DEFAULTS.rollbackWindowSeconds,
        description:
          'After draining the source, watch the target this long and move back if it degrades; 0 = no watch.',
      }),
    ),
  },
  {
    description: 'Which deployment moves where. Immutable once started (a new move is a new SheetMigration).',
    'x-kubernetes-validations': [
      { rule: 'self == oldSelf', message: 'spec is immutable; create a new SheetMigration' },
    ],
  },
);

export const SheetMigrationStatus = Type.Object(
  {
    ...CommonStatus,
    phase: Type.Optional(Type.Union(MIGRATION_PHASES.map((p) => Type.Literal(p)))),
    phaseSince: Type.Optional(Type.String({ format: 'date-time', description: 'When the phase began.' })),
    waitSince: Type.Optional(
      Type.String({ format: 'date-time', description: 'When waiting for the target began.' }),
    ),
    replicas: Type.Optional(Type.Integer({ minimum: 0, description: 'Replicas being moved.' })),
    sourceRow: Type.Optional(
      Type.String({
        maxLength: 65_536,
        description: 'The Deployments row as found on the source (JSON), re-applied on rollback.',
      }),
    ),
    targetBefore: Type.Optional(
      Type.String({
        maxLength: 65_536,
        description: "The target's row before the move (JSON; null = none), restored on failure.",
      }),
    ),
    sourceRunning: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Running pods on the source at the last check.' }),
    ),
    targetRunning: Type.Optional(
      Type.Integer({ minimum: 0, description: 'Running pods on the target at the last check.' }),
    ),
    message: Type.Optional(Type.String({ maxLength: 4096, description: 'What happened, in words.' })),
  },
  { description: 'The migration state machine.' },
);

export type SheetMigrationSpecT = Static<typeof SheetMigrationSpec>;
export type SheetMigrationStatusT = Static<typeof SheetMigrationStatus>;

export const SheetMigrationKind: KindDefinition = {
  kind: 'SheetMigration',
  plural: 'sheetmigrations',
  singular: 'sheetmigration',
  shortNames: ['rkmig'],
  categories: ['retrokube', 'sheeternetes'],
  description:
    'Moves one deployment between two Sheeternetes clusters, make-before-break, with a rollback window.',
  spec: SheetMigrationSpec,
  status: SheetMigrationStatus,
  printerColumns: [
    { name: 'Deployment', type: 'string', jsonPath: '.spec.deployment' },
    { name: 'From', type: 'string', jsonPath: '.spec.from.name' },
    { name: 'To', type: 'string', jsonPath: '.spec.to.name' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Message', type: 'string', jsonPath: '.status.message', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  validations: [
    {
      rule:
        '!(has(self.spec.from.url) && has(self.spec.to.url) && self.spec.from.url == self.spec.to.url) && ' +
        '!(has(self.spec.from.sheetCluster) && has(self.spec.to.sheetCluster) && self.spec.from.sheetCluster == self.spec.to.sheetCluster)',
      message: 'spec.from and spec.to must be different clusters',
    },
  ],
  source: 'operator/src/api/sheetmigration.ts',
};
