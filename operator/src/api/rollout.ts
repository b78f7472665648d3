// Rollout: one version change (a deployment's image and/or replicas) carried out across many
// clusters — OberonKubes, SheetClusters, or the members of SheetFederations — by a strategy
// (rolling, retry, canary, blue/green, ordered), with the walk's state in status, so a restarted
// operator carries on from there. The planner is operator/src/rollout/plan.ts.
import { type Static, Type } from '@sinclair/typebox';
import { ROLLOUT_DEFAULTS, ROLLOUT_LIMITS } from './rollout-limits.ts';
import { CommonStatus, type KindDefinition } from './schema.ts';

/** What a Rollout's selector may pick. */
export const TARGET_KINDS = ['OberonKube', 'SheetCluster', 'SheetFederation'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

const LABEL_KEY =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
const LABEL_VALUE = '^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$';

const Version = {
  image: Type.Optional(
    Type.String({ minLength: 1, maxLength: 253, description: 'The new image (Oberon: a module name).' }),
  ),
  replicas: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 10_000, description: 'The new replica count.' }),
  ),
};

export const RolloutSpec = Type.Object(
  {
    selector: Type.Object(
      {
        kind: Type.Optional(
          Type.Union(
            TARGET_KINDS.map((k) => Type.Literal(k)),
            {
              default: 'OberonKube',
              description:
                'What the labels select: OberonKubes, SheetClusters, or SheetFederations (every member of each is a target).',
              'x-kubernetes-validations': [
                { rule: 'self == oldSelf', message: 'selector.kind cannot change; create a new Rollout' },
              ],
            },
          ),
        ),
        matchLabels: Type.Object(
          {},
          {
            additionalProperties: Type.String({ pattern: LABEL_VALUE, maxLength: 63 }),
            minProperties: 1,
            maxProperties: 8,
            description: 'Objects of selector.kind in this namespace whose labels all match are the targets.',
            'x-kubernetes-validations': [
              {
                rule: `self.all(k, k.matches('${LABEL_KEY.replaceAll('\\', '\\\\')}'))`,
                message: 'every key must be a label key',
              },
            ],
          },
        ),
      },
      { description: 'The target clusters (fixed when the rollout starts).' },
    ),
    change: Type.Object(
      {
        deployment: Type.String({
          minLength: 1,
          maxLength: 63,
          pattern: '^[a-z][a-z0-9-]*$',
          description: 'The deployment to change on every target.',
        }),
        ...Version,
      },
      {
        description: 'What changes.',
        'x-kubernetes-validations': [
          { rule: 'has(self.image) || has(self.replicas)', message: 'name an image or replicas to change' },
        ],
      },
    ),
    strategy: Type.Object(
      {
        type: Type.Union(
          ['rolling', 'retry', 'canary', 'blueGreen', 'ordered'].map((t) => Type.Literal(t)),
          { description: 'How targets are walked.' },
        ),
        maxParallel: Type.Optional(
          Type.Integer({
            minimum: 1,
            maximum: ROLLOUT_LIMITS.maxParallel,
            default: ROLLOUT_DEFAULTS.maxParallel,
            description: 'Targets changing at once.',
          }),
        ),
        onFailure: Type.Optional(
          Type.Union([Type.Literal('abort'), Type.Literal('continue')], {
            default: ROLLOUT_DEFAULTS.onFailure,
            description: 'After rolling a failed target back: stop the walk, or go on with the rest.',
          }),
        ),
        stepDeadlineSeconds: Type.Optional(
          Type.Integer({
            minimum: 5,
            maximum: ROLLOUT_LIMITS.maxWaitSeconds,
            default: ROLLOUT_DEFAULTS.stepDeadlineSeconds,
            description: 'A target must converge and pass its check within this.',
          }),
        ),
        checkSeconds: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: ROLLOUT_LIMITS.maxWaitSeconds,
            default: ROLLOUT_DEFAULTS.checkSeconds,
            description: 'How long a converged target must stay healthy.',
          }),
        ),
        retry: Type.Optional(
          Type.Object({
            attempts: Type.Integer({ minimum: 1, maximum: ROLLOUT_LIMITS.maxAttempts }),
            delaySeconds: Type.Optional(
              Type.Integer({ minimum: 0, maximum: ROLLOUT_LIMITS.maxDelaySeconds }),
            ),
            backoffFactor: Type.Optional(Type.Number({ minimum: 1, maximum: 10 })),
          }),
        ),
        canary: Type.Optional(
          Type.Object(
            {
              count: Type.Optional(Type.Integer({ minimum: 1, maximum: ROLLOUT_LIMITS.maxTargets })),
              percent: Type.Optional(Type.Integer({ minimum: 1, maximum: 99 })),
              promotion: Type.Optional(
                Type.Union([Type.Literal('auto'), Type.Literal('manual')], { default: 'auto' }),
              ),
              analysisSeconds: Type.Optional(
                Type.Integer({ minimum: 0, maximum: ROLLOUT_LIMITS.maxWaitSeconds }),
              ),
            },
            {
              'x-kubernetes-validations': [
                {
                  rule: 'has(self.count) != has(self.percent)',
                  message: 'give exactly one of count and percent',
                },
              ],
            },
          ),
        ),
        blueGreen: Type.Optional(
          Type.Object({
            groupLabel: Type.String({ pattern: LABEL_KEY, maxLength: 317 }),
            activeGroup: Type.String({ pattern: LABEL_VALUE, minLength: 1, maxLength: 63 }),
          }),
        ),
        ordered: Type.Optional(
          Type.Object({
            label: Type.String({ pattern: LABEL_KEY, maxLength: 317 }),
            order: Type.Array(Type.String({ pattern: LABEL_VALUE, maxLength: 63 }), {
              minItems: 1,
              maxItems: 16,
              'x-kubernetes-list-type': 'set',
            }),
          }),
        ),
      },
      {
        description: 'The walk.',
        'x-kubernetes-validations': [
          {
            rule: "self.type != 'retry' || has(self.retry)",
            message: 'strategy retry needs retry.attempts',
            fieldPath: '.retry',
          },
          {
            rule: "self.type != 'canary' || has(self.canary)",
            message: 'strategy canary needs canary.count or canary.percent',
            fieldPath: '.canary',
          },
          {
            rule: "self.type != 'blueGreen' || has(self.blueGreen)",
            message: 'strategy blueGreen needs blueGreen.groupLabel and activeGroup',
            fieldPath: '.blueGreen',
          },
          {
            rule: "self.type != 'ordered' || has(self.ordered)",
            message: 'strategy ordered needs ordered.label and order',
            fieldPath: '.ordered',
          },
        ],
      },
    ),
    check: Type.Optional(
      Type.Object({
        minRunning: Type.Optional(
          Type.Integer({
            minimum: 0,
            maximum: 10_000,
            description: 'Pods of the cluster that must run during and after the change (default 0).',
          }),
        ),
        httpGet: Type.Optional(
          Type.Object(
            {
              path: Type.String({
                minLength: 1,
                maxLength: 1024,
                pattern: '^/[^\\s]*$',
                description: 'Path asked at every running pod of the deployment (2xx/3xx passes).',
              }),
              port: Type.Optional(
                Type.Integer({
                  minimum: 1,
                  maximum: 65_535,
                  description: "The container port; default each pod's first TCP endpoint.",
                }),
              ),
            },
            {
              description:
                "Sheeternetes targets: GET the deployment's endpoints (Pods tab) as part of the check.",
            },
          ),
        ),
      }),
    ),
    paused: Type.Optional(
      Type.Boolean({ description: 'true: targets already changing finish, no new one starts.' }),
    ),
    abort: Type.Optional(
      Type.Boolean({ description: 'true: roll back every target caught mid-change and stop.' }),
    ),
    promote: Type.Optional(Type.Boolean({ description: 'true: a manual canary goes on to the rest.' })),
  },
  {
    description: 'Desired rollout.',
    'x-kubernetes-validations': [
      {
        rule: "!has(self.check) || !has(self.check.httpGet) || (has(self.selector.kind) && self.selector.kind != 'OberonKube')",
        message:
          'check.httpGet is for Sheeternetes targets (selector.kind SheetCluster or SheetFederation); an Oberon plane has no HTTP endpoint',
        fieldPath: '.check.httpGet',
      },
      {
        rule: "self.strategy.type != 'blueGreen' || !has(self.selector.kind) || self.selector.kind != 'SheetCluster'",
        message:
          "blue/green over Sheeternetes switches a federation's active member: select SheetFederations (selector.kind: SheetFederation)",
        fieldPath: '.strategy.blueGreen',
      },
    ],
  },
);

const TargetRow = Type.Object({
  name: Type.String({
    description: 'The target: the object name, or federation/member for a SheetFederation member.',
  }),
  phase: Type.Union(
    ['Pending', 'Updating', 'Checking', 'Succeeded', 'Failed', 'RollingBack', 'RolledBack', 'Skipped'].map(
      (p) => Type.Literal(p),
    ),
  ),
  attempts: Type.Integer({ minimum: 0 }),
  previous: Type.Optional(Type.Object(Version)),
  startedAt: Type.Optional(Type.String({ format: 'date-time' })),
  checkingSince: Type.Optional(Type.String({ format: 'date-time' })),
  troubleSince: Type.Optional(Type.String({ format: 'date-time' })),
  rollbackSince: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Since when its previous version is written back (RollingBack).',
    }),
  ),
  nextAttemptAt: Type.Optional(Type.String({ format: 'date-time' })),
  finishedAt: Type.Optional(Type.String({ format: 'date-time' })),
  message: Type.Optional(Type.String({ maxLength: 1024 })),
});

export const RolloutStatus = Type.Object(
  {
    ...CommonStatus,
    phase: Type.Optional(
      Type.Union(
        ['Pending', 'Progressing', 'Paused', 'WaitingForPromotion', 'Succeeded', 'Failed', 'Aborted'].map(
          (p) => Type.Literal(p),
        ),
      ),
    ),
    message: Type.Optional(Type.String({ maxLength: 4096 })),
    progress: Type.Optional(Type.String({ description: 'Succeeded/total targets, e.g. "2/5".' })),
    targets: Type.Optional(Type.Array(TargetRow, { maxItems: ROLLOUT_LIMITS.maxTargets })),
    canaryDoneAt: Type.Optional(Type.String({ format: 'date-time' })),
    canaryPromotedAt: Type.Optional(Type.String({ format: 'date-time' })),
    activeGroup: Type.Optional(Type.String()),
  },
  { description: 'The walk as it stands; the operator resumes from it alone.' },
);

export type RolloutSpecT = Static<typeof RolloutSpec>;
export type RolloutStatusT = Static<typeof RolloutStatus>;

export const RolloutKind: KindDefinition = {
  kind: 'Rollout',
  plural: 'rollouts',
  singular: 'rollout',
  // Argo Rollouts' kind is also "Rollout" (argoproj.io): `rkro` is ours alone.
  shortNames: ['rkro'],
  categories: ['retrokube'],
  description: 'A version change walked across clusters by a strategy; status is the walk.',
  spec: RolloutSpec,
  status: RolloutStatus,
  printerColumns: [
    { name: 'STRATEGY', type: 'string', jsonPath: '.spec.strategy.type' },
    { name: 'PHASE', type: 'string', jsonPath: '.status.phase' },
    { name: 'DONE', type: 'string', jsonPath: '.status.progress' },
    { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    { name: 'MESSAGE', type: 'string', jsonPath: '.status.message', priority: 1 },
  ],
  source: 'operator/src/api/rollout.ts',
};
