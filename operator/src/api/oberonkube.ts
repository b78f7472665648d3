// OberonKube: a whole Kube-on-Oberon cluster — one OberonAir, one plane machine and N node
// machines that join by themselves — whose status is what the operator hears on the air.
// The boot-command helpers here are pure and shared by the controller and `retrokube up`.
import { type Static, Type } from '@sinclair/typebox';
import { CLUSTER_PATTERN, MACHINE_LIMITS, secretEntryRef } from './oberonmachine.ts';
import { Placement } from './placement.ts';
import { CommonStatus, type KindDefinition } from './schema.ts';

export const KUBE_LIMITS = {
  minNodes: 1, // a cluster needs a node to run anything
  maxNodes: 20, // issue 7's ceiling; each machine keeps a host core busy
  deploymentsChars: 200, // what can still fit Boot's 240 once `Kube.Ensure ` is added per item
  nameChars: 30, // children are rk-kube-<name>... and machines <name>-node-a: fits a 63-character label
  // What the plane accepts (Kube.Mod): more is refused on its screen only, so the schema says it first.
  maxReplicas: 250, // MaxReplicas: every pod needs one of 255 radio ids
  deploymentNameChars: 15, // DeployLen: "<name>-rs<rev>-<seq>" must fit Kube's 39-character names
  podsPerNode: 10, // KubeNet.Serve's capacity: an assignment frame carries at most 10 pod ids
  storeObjects: 256, // MaxObj: deployments, replicasets, pods and nodes together
} as const;

export const KUBE_DEFAULTS = { nodes: 2, cluster: 'kube', runtime: 'pod', memory: '128Mi', loss: 0 } as const;

/** Replicas 0..250 (KUBE_LIMITS.maxReplicas), as a pattern: the plane refuses more. */
const REPLICAS_ITEM = '([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|250)';
/** One deployment item as the plane's `Kube.Ensure` takes it (spec §7.11). */
export const DEPLOYMENT_ITEM = `[a-z][a-z0-9]{0,14} ${REPLICAS_ITEM} [A-Za-z][A-Za-z0-9]{0,14}`;
/** What a deployment item must look like, in words (the API server's error shows this, not the pattern). */
export const DEPLOYMENT_WORDS =
  'each deployment is "name replicas Module", separated by ";" — name: a lowercase letter then up to 14 lowercase letters or digits; replicas: 0 to 250; Module: a letter then up to 14 letters or digits (an Oberon module with a Start command). Example: "web 4 Ticker; api 2 Ticker2"';
/** `name replicas Module; ...`: items separated by `;`, spaces around them allowed. */
export const DEPLOYMENTS_PATTERN = `^ *(${DEPLOYMENT_ITEM}( *; *${DEPLOYMENT_ITEM})* *;? *)?$`;

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

// --- boot commands (pure; shared with `retrokube up`) ----------------------------------------------

export interface DeploymentItem {
  name: string;
  replicas: number;
  module: string;
}

/** "web 4 Ticker; api 2 Ticker2" → items (the CRD pattern has already checked the grammar). */
export function parseDeploymentList(text: string | undefined): DeploymentItem[] {
  const re = new RegExp(`^${DEPLOYMENT_ITEM}$`);
  return (text ?? '')
    .split(';')
    .map((s) => s.trim().replace(/\s+/g, ' '))
    .filter((s) => s !== '')
    .map((s) => {
      if (!re.test(s)) throw new Error(`deployment "${s}" is refused: ${DEPLOYMENT_WORDS}`);
      const [name, replicas, module] = s.split(' ');
      return { name, replicas: Number(replicas), module };
    });
}

/** Node names in join order: node-a, node-b, ... (6 characters at most). */
export function kubeNodeName(i: number): string {
  if (i < 0 || i >= 26) throw new Error(`node index ${i} is outside a..z`);
  return `node-${String.fromCharCode(97 + i)}`;
}

/** `Kube.Start;KubeNet.Serve <cluster> <key>` (the trailing space goes when there is no key). */
export function planeRoleCommands(cluster: string, key: string): string {
  return `Kube.Start;KubeNet.Serve ${cluster} ${key}`.trimEnd();
}

/** `KubeNet.Join <node> <cluster> <key>`. */
export function nodeRoleCommands(node: string, cluster: string, key: string): string {
  return `KubeNet.Join ${node} ${cluster} ${key}`.trimEnd();
}

/**
 * `Kube.Hold N`: a plane with a fresh store binds no pod until N nodes are heard (at most 30 s), so
 * the first pods spread over all nodes instead of landing on the node it hears first. A plane whose
 * store already has bound pods (a restart, a scale) ignores it.
 */
export function holdCommand(nodes: number): string {
  return `Kube.Hold ${nodes}`;
}

/**
 * The plane's live deployments: one `Kube.Apply name N Module` line each. Apply is right here,
 * unlike in boot commands, because the lines are always the current desired state, not a text
 * fixed at the plane's creation that would undo later rollouts.
 */
export function liveApplyLines(items: readonly DeploymentItem[]): string {
  return items.map((d) => `Kube.Apply ${d.name} ${d.replicas} ${d.module}\n`).join('');
}

/** One `Kube.Ensure` per deployment — never `Apply`, which would undo rollouts at every plane boot. */
export function ensureCommands(items: readonly DeploymentItem[]): string {
  return items.map((d) => `Kube.Ensure ${d.name} ${d.replicas} ${d.module}`).join(';');
}

/** Joins command groups with `;` and checks Boot's limits (printable ASCII, ≤ 240 in all). */
export function joinCommands(parts: readonly (string | undefined)[]): string {
  const text = parts.filter((p): p is string => !!p && p.trim() !== '').join(';');
  if (!/^[ -~]*$/.test(text)) throw new Error('boot commands must be printable ASCII');
  if (text.length > MACHINE_LIMITS.bootChars)
    throw new Error(
      `boot commands are ${text.length} characters; Boot takes at most ${MACHINE_LIMITS.bootChars}`,
    );
  return text;
}

/** The plane's and the nodes' full boot commands for a cluster (key as hex, '' = zero key). */
export function kubeBootCommands(o: {
  cluster: string;
  key: string;
  nodes: number;
  deployments: readonly DeploymentItem[];
}): { plane: string; nodes: Array<{ name: string; commands: string }> } {
  return {
    plane: joinCommands([planeRoleCommands(o.cluster, o.key), ensureCommands(o.deployments)]),
    nodes: Array.from({ length: o.nodes }, (_, i) => {
      const name = kubeNodeName(i);
      return { name, commands: joinCommands([nodeRoleCommands(name, o.cluster, o.key)]) };
    }),
  };
}
