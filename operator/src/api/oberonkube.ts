// OberonKube: a whole Kube-on-Oberon cluster — one OberonAir, one plane machine and N node
// machines that join by themselves — whose status is what the operator hears on the air.
// The boot-command helpers (oberonkube-boot.ts, re-exported here) are pure and shared by the
// controller and `retrokube up`.
import { type Static, Type } from '@sinclair/typebox';
import { DEPLOYMENT_WORDS, DEPLOYMENTS_PATTERN, KUBE_DEFAULTS, KUBE_LIMITS } from './oberonkube-limits.ts';
import { CLUSTER_PATTERN, secretEntryRef } from './oberonmachine.ts';
import { Placement } from './placement.ts';
import { CommonStatus, type KindDefinition } from './schema.ts';

export {
  DEPLOYMENT_ITEM,
  DEPLOYMENT_WORDS,
  DEPLOYMENTS_PATTERN,
  KUBE_DEFAULTS,
  KUBE_LIMITS,
} from './oberonkube-limits.ts';

export const OberonKubeSpec = Type.Object(
  {
    nodes: Type.Optional(
      Type.Integer({
        minimum: KUBE_LIMITS.minNodes,
        maximum: KUBE_LIMITS.maxNodes,
        default: KUBE_DEFAULTS.nodes,
        description: 'Node machines (node-a, node-b, ...).',
      }),
    ),
    cluster: Type.Optional(
      Type.String({
        pattern: CLUSTER_PATTERN,
        default: KUBE_DEFAULTS.cluster,
        description: 'KubeNet cluster name (≤ 8).',
      }),
    ),
    keySecretRef: Type.Optional(
      secretEntryRef(
        'key',
        '0–16 hex digits',
        'The KubeNet key (0–16 hex digits, checked before use) in a Secret; absent = the operator generates a random key and keeps it in Secret rk-kube-<name>-key (Event KeyGenerated). Whoever may create this resource can have that Secret entry handed to a machine: treat that right like reading the Secret.',
      ),
    ),
    deployments: Type.Optional(
      // A CEL rule rather than `pattern`: a refusal then says what a line must look like instead
      // of printing the regular expression.
      Type.String({
        maxLength: KUBE_LIMITS.deploymentsChars,
        default: '',
        description:
          '`name replicas Module; ...` (e.g. "web 4 Ticker; api 2 Ticker2"; replicas 0–250), applied live by the plane.',
        'x-kubernetes-validations': [
          { rule: `self.matches('${DEPLOYMENTS_PATTERN}')`, message: DEPLOYMENT_WORDS },
        ],
      }),
    ),
    runtime: Type.Optional(
      Type.Union([Type.Literal('pod'), Type.Literal('kubevirt')], {
        default: KUBE_DEFAULTS.runtime,
        description: 'Runtime of every machine (of the nodes, when planeRuntime is set).',
      }),
    ),
    planeRuntime: Type.Optional(
      Type.Union([Type.Literal('pod'), Type.Literal('kubevirt')], {
        description:
          "Runtime of the plane, when it differs from the nodes' (a VM plane with pod nodes, or the reverse). Default: runtime.",
      }),
    ),
    memory: Type.Optional(
      Type.String({
        pattern: '^[0-9]+(Mi|Gi)$',
        default: KUBE_DEFAULTS.memory,
        description: 'Memory of each machine (128Mi–1Gi).',
      }),
    ),
    storageClass: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: 'StorageClass of the machine disks.' }),
    ),
    loss: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        default: KUBE_DEFAULTS.loss,
        description: 'Frame loss of the air (0–1).',
      }),
    ),
    placement: Type.Optional(Placement),
  },
  {
    description: 'Desired state of the cluster.',
    'x-kubernetes-validations': [
      {
        // Plane: `Kube.Start;KubeNet.Serve <cluster> <16 hex>` then `;Kube.Ensure <item>` per item.
        rule: "!has(self.deployments) || 42 + (has(self.cluster) ? size(self.cluster) : 4) + self.deployments.split(';').filter(x, x.trim() != '').map(x, 13 + size(x.trim())).sum() <= 240",
        message:
          "the plane's boot commands (Kube.Start;KubeNet.Serve plus one Kube.Ensure per deployment) exceed 240 characters",
        fieldPath: '.deployments',
      },
    ],
  },
);

export const NodeRow = Type.Object({
  name: Type.String(),
  ready: Type.Boolean(),
  running: Type.Array(Type.Integer(), { maxItems: 10 }),
  assigned: Type.Array(Type.Integer(), { maxItems: 10 }),
  images: Type.Optional(Type.Array(Type.String(), { maxItems: 10 })),
  ageSeconds: Type.Optional(Type.Integer({ minimum: 0, description: 'Seconds since its last heartbeat.' })),
});

export const OberonKubeStatus = Type.Object(
  {
    ...CommonStatus,
    nodes: Type.Optional(Type.String({ description: 'Ready/total nodes heard on the air, e.g. "3/3".' })),
    pods: Type.Optional(Type.String({ description: 'Running/desired pods heard on the air, e.g. "6/6".' })),
    readyNodes: Type.Optional(Type.Integer({ minimum: 0 })),
    runningPods: Type.Optional(Type.Integer({ minimum: 0 })),
    desiredPods: Type.Optional(Type.Integer({ minimum: 0 })),
    converged: Type.Optional(Type.Boolean()),
    planeHeard: Type.Optional(Type.Boolean({ description: "The plane's assignments are heard." })),
    forgedFrames: Type.Optional(
      Type.Integer({ minimum: 0, description: "Frames with this cluster's tag and a bad MAC." }),
    ),
    nodeTable: Type.Optional(Type.Array(NodeRow, { maxItems: 32 })),
  },
  { description: 'Observed state of the cluster, as heard on the air.' },
);

export type OberonKubeSpecT = Static<typeof OberonKubeSpec>;
export type OberonKubeStatusT = Static<typeof OberonKubeStatus>;

export const OberonKubeKind: KindDefinition = {
  kind: 'OberonKube',
  plural: 'oberonkubes',
  singular: 'oberonkube',
  // Cozystack's apps.cozystack.io serves an OberonKube too; `rkkube` is ours alone.
  shortNames: ['rkkube'],
  categories: ['retrokube'],
  description: 'A Kube-on-Oberon cluster: an air, a plane and N nodes; status heard on the air.',
  spec: OberonKubeSpec,
  status: OberonKubeStatus,
  printerColumns: [
    { name: 'NODES', type: 'string', jsonPath: '.status.nodes' },
    { name: 'PODS', type: 'string', jsonPath: '.status.pods' },
    { name: 'READY', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    {
      name: 'CONVERGED',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Converged")].status',
      priority: 1,
    },
    { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  validations: [
    {
      rule: `size(self.metadata.name) <= ${KUBE_LIMITS.nameChars}`,
      message: `metadata.name must be at most ${KUBE_LIMITS.nameChars} characters (machines are named <name>-node-a)`,
    },
    {
      rule: "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
      message: 'metadata.name may contain only a-z, 0-9 and - (it names machines and Services)',
    },
  ],
  source: 'operator/src/api/oberonkube.ts',
};

export {
  type DeploymentItem,
  ensureCommands,
  holdCommand,
  joinCommands,
  kubeBootCommands,
  kubeNodeName,
  liveApplyLines,
  nodeRoleCommands,
  parseDeploymentList,
  planeRoleCommands,
} from './oberonkube-boot.ts';
