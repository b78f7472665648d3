// SheetCluster: a Sheeternetes cluster ordered from Kubernetes — the spreadsheet apiserver over a
// workbook (an xlsx file on a PVC, or a Google spreadsheet), N node agents that heartbeat to it, and
// the deployments the spec names, applied through the apiserver's own contract. Its status is read
// from the sheet (GET kind=nodes|pods|deployments|events|metrics), never from the pods.
// The types are exported for SheetFederation (which builds on SheetClusters).
import { type Static, Type } from '@sinclair/typebox';
import { Placement } from './placement.ts';
import { CommonStatus, Conditions, type KindDefinition, Quantity, Resources } from './schema.ts';
import { RUNTIMES, SHEET_DEFAULTS, SHEET_LIMITS } from './sheetcluster-limits.ts';

export { RUNTIMES, SHEET_DEFAULTS, SHEET_LIMITS, type SheetRuntime } from './sheetcluster-limits.ts';

const NAME = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const SECRET_KEY = '^[-._a-zA-Z0-9]+$';

/** A Secret entry in the same namespace. */
export const SecretKeyRef = (what: string, defaultKey: string) =>
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$',
        description: 'Name of the Secret.',
      }),
      key: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          pattern: SECRET_KEY,
          default: defaultKey,
          description: 'Entry of the Secret.',
        }),
      ),
    },
    { description: `${what} (a Secret in the same namespace; entry "${defaultKey}" unless key says).` },
  );

const XlsxStore = Type.Object(
  {
    size: Type.Optional(
      Type.Unsafe<string>({
        ...Quantity,
        default: SHEET_DEFAULTS.workbookSize,
        description: `Size of the PVC holding the workbook (${SHEET_LIMITS.minWorkbookSize}–${SHEET_LIMITS.maxWorkbookSize}).`,
      }),
    ),
    storageClass: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        description: 'StorageClass of the PVC; default the cluster default.',
      }),
    ),
  },
  {
    description: 'The workbook is cluster.xlsx on a PersistentVolumeClaim the operator creates.',
    'x-kubernetes-validations': [
      {
        rule: `!has(self.size) || (quantity(string(self.size)).compareTo(quantity('${SHEET_LIMITS.minWorkbookSize}')) >= 0 && quantity(string(self.size)).compareTo(quantity('${SHEET_LIMITS.maxWorkbookSize}')) <= 0)`,
        message: `size must be between ${SHEET_LIMITS.minWorkbookSize} and ${SHEET_LIMITS.maxWorkbookSize}`,
        fieldPath: '.size',
      },
    ],
  },
);

const GoogleStore = Type.Object(
  {
    spreadsheetId: Type.String({
      minLength: 10,
      maxLength: 128,
      pattern: '^[A-Za-z0-9_-]+$',
      description: 'The spreadsheet id (from its URL: /spreadsheets/d/<id>/).',
    }),
    credentialsSecretRef: SecretKeyRef(
      'Google service-account credentials JSON, mounted into the apiserver only',
      'credentials.json',
    ),
    rootUrl: Type.Optional(
      Type.String({
        maxLength: 512,
        pattern: '^https?://[^\\s]+$',
        description: 'Sheets API root URL; set only to use an emulator instead of Google.',
      }),
    ),
  },
  { description: 'The workbook is a Google spreadsheet the service account may edit.' },
);

export const SheetStore = Type.Object(
  {
    type: Type.Union([Type.Literal('xlsx'), Type.Literal('google')], {
      default: 'xlsx',
      description: 'xlsx: a file on a PVC; google: a Google spreadsheet.',
    }),
    xlsx: Type.Optional(XlsxStore),
    google: Type.Optional(GoogleStore),
  },
  {
    default: { type: 'xlsx' },
    description: 'Where the cluster lives: the workbook every apiserver read and write goes to.',
    'x-kubernetes-validations': [
      {
        rule: "self.type != 'google' || has(self.google)",
        message: 'store.google is required when store.type is google',
        fieldPath: '.google',
        reason: 'FieldValueRequired',
      },
      {
        rule: "self.type != 'xlsx' || !has(self.google)",
        message: 'store.google is set but store.type is xlsx; set type: google or remove store.google',
        fieldPath: '.google',
      },
      {
        rule: "self.type != 'google' || !has(self.xlsx)",
        message: 'store.xlsx is set but store.type is google; remove store.xlsx',
        fieldPath: '.xlsx',
      },
      {
        rule: 'oldSelf.type == self.type',
        message: 'store.type cannot change: the cluster lives in its workbook (make a new SheetCluster)',
        fieldPath: '.type',
      },
    ],
  },
);

const StringList = (description: string) =>
  Type.Array(Type.String({ maxLength: SHEET_LIMITS.textChars }), {
    maxItems: SHEET_LIMITS.listItems,
    description,
  });

/** One deployment as the reference's JSON manifest has it (`skctl apply -f`), one row of the Deployments tab. */
export const SheetDeployment = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 63,
      pattern: NAME,
      description: 'Row key; pods are <name>-1, <name>-2, ...',
    }),
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'sicf:<image> (wasm or file in the Images tab), "process", or a Docker image.',
      }),
    ),
    replicas: Type.Optional(Type.Integer({ minimum: 0, maximum: SHEET_LIMITS.maxReplicas })),
    cpu_req: Type.Optional(
      Type.Integer({ minimum: 0, maximum: SHEET_LIMITS.maxRequest, description: 'Millicores per pod.' }),
    ),
    mem_req: Type.Optional(
      Type.Integer({ minimum: 0, maximum: SHEET_LIMITS.maxRequest, description: 'MiB per pod.' }),
    ),
    command: Type.Optional(Type.String({ maxLength: SHEET_LIMITS.textChars })),
    node_selector: Type.Optional(StringList('k=v labels a node must carry.')),
    tolerations: Type.Optional(StringList('k=v or k: taints the pods tolerate.')),
    env: Type.Optional(StringList('NAME=value.')),
    secret_files: Type.Optional(StringList('secretName:/absolute/path (from the Secrets tab).')),
    ports: Type.Optional(StringList('host:container[/udp] or container[/udp] (a host port is assigned).')),
    restart_policy: Type.Optional(
      Type.Union([Type.Literal('Always'), Type.Literal('OnFailure'), Type.Literal('Never')], {
        description: 'What a pod that exits does (the Kubernetes words); absent = restart with backoff.',
      }),
    ),
  },
  {
    description:
      'A deployment row; fields left out belong to the sheet (see ownership in docs/sheetcluster.md).',
  },
);

export const SheetClusterSpec = Type.Object(
  {
    store: Type.Optional(SheetStore),
    nodes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: SHEET_LIMITS.maxNodes,
        default: SHEET_DEFAULTS.nodes,
        description: 'Node agents; they register as node-0, node-1, ... (stable across restarts).',
      }),
    ),
    runtimes: Type.Optional(
      Type.Array(Type.Union(RUNTIMES.map((r) => Type.Literal(r))), {
        minItems: 1,
        maxItems: RUNTIMES.length,
        'x-kubernetes-list-type': 'set',
        default: [...SHEET_DEFAULTS.runtimes],
        description:
          'What the agents run. wasm (default): WebAssembly in a sandbox. process: RUNS SHELL COMMANDS FROM CELLS ON THE NODE — anyone who can edit the sheet runs code in the agent pods; only when named here. docker: needs dockerSocket.',
      }),
    ),
    dockerSocket: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 256,
        pattern: '^/[^\\s]*$',
        description:
          'Host path of a Docker socket mounted into the agents (only with the docker runtime). The operator mounts only /var/run/docker.sock or /run/docker.sock unless started with --docker-sockets.',
      }),
    ),
    nodeCpu: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SHEET_LIMITS.maxNodeCpu,
        description: "Millicores each node advertises; default the agent container's CPU limit.",
      }),
    ),
    nodeMemory: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: SHEET_LIMITS.maxNodeMemory,
        description: "MiB each node advertises; default the agent container's memory limit.",
      }),
    ),
    failoverSeconds: Type.Optional(
      Type.Integer({
        minimum: SHEET_LIMITS.minFailoverSeconds,
        maximum: SHEET_LIMITS.maxFailoverSeconds,
        default: SHEET_DEFAULTS.failoverSeconds,
        description: 'A node silent this long is NotReady and its pods move (the apiserver NODE_TTL).',
      }),
    ),
    samples: Type.Optional(
      Type.Boolean({
        default: SHEET_DEFAULTS.samples,
        description: 'Write the sample deployments into a brand-new workbook.',
      }),
    ),
    tokenSecretRef: Type.Optional(
      SecretKeyRef('The shared token; absent = generated into rk-sheets-<name>-token', 'token'),
    ),
    signingKeySecretRef: Type.Optional(
      SecretKeyRef(
        'The HMAC key every POST is signed with; absent = generated into rk-sheets-<name>-signing',
        'key',
      ),
    ),
    deployments: Type.Optional(
      Type.Array(SheetDeployment, {
        maxItems: SHEET_LIMITS.maxDeployments,
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        description:
          'Deployments applied through the apiserver contract. The spec owns the fields it sets (a cell edit of one is put back); the sheet owns every other field and every other row.',
      }),
    ),
    image: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        pattern: '^[A-Za-z0-9][A-Za-z0-9._/:@-]*$',
        description: "Image with the retrokube CLI for the apiserver and agents; default the operator's.",
      }),
    ),
    resources: Type.Optional(
      Resources({
        requests: { ...SHEET_DEFAULTS.apiserverResources.requests },
        limits: { ...SHEET_DEFAULTS.apiserverResources.limits },
      }),
    ),
    nodeResources: Type.Optional(
      Resources({
        requests: { ...SHEET_DEFAULTS.nodeResources.requests },
        limits: { ...SHEET_DEFAULTS.nodeResources.limits },
      }),
    ),
    placement: Type.Optional(Placement),
  },
  {
    description: 'Desired state of the Sheeternetes cluster.',
    'x-kubernetes-validations': [
      {
        rule: "!has(self.runtimes) || !('docker' in self.runtimes) || has(self.dockerSocket)",
        message: 'the docker runtime needs dockerSocket (the host path of a Docker socket)',
        fieldPath: '.dockerSocket',
        reason: 'FieldValueRequired',
      },
      {
        rule: "!has(self.dockerSocket) || (has(self.runtimes) && 'docker' in self.runtimes)",
        message: 'dockerSocket is set but runtimes does not name docker; add docker to runtimes or remove it',
        fieldPath: '.dockerSocket',
      },
    ],
  },
);

export const SheetNodeRow = Type.Object({
  name: Type.String({ maxLength: 253 }),
  status: Type.String({ maxLength: 32, description: 'Ready, NotReady or SchedulingDisabled (the sheet).' }),
  cpu: Type.String({ maxLength: 64, description: 'used/total millicores.' }),
  memory: Type.Optional(Type.String({ maxLength: 32, description: 'Advertised MiB.' })),
});

export const SheetClusterStatus = Type.Object(
  {
    observedGeneration: CommonStatus.observedGeneration,
    conditions: Type.Optional(Conditions),
    nodes: Type.Optional(Type.String({ description: 'Ready/expected nodes in the sheet, e.g. "3/3".' })),
    pods: Type.Optional(Type.String({ description: 'Running/desired pods in the sheet, e.g. "4/4".' })),
    readyNodes: Type.Optional(Type.Integer({ minimum: 0 })),
    runningPods: Type.Optional(Type.Integer({ minimum: 0 })),
    desiredPods: Type.Optional(Type.Integer({ minimum: 0 })),
    deployments: Type.Optional(Type.Integer({ minimum: 0, description: 'Rows of the Deployments tab.' })),
    url: Type.Optional(Type.String({ description: 'The apiserver inside the cluster (its Service).' })),
    lastWarning: Type.Optional(
      Type.String({
        maxLength: 1024,
        description: 'The newest warning of the Events tab (ts kind/object: message).',
      }),
    ),
    metrics: Type.Optional(
      Type.Object(
        {
          cpuAllocatedMillicores: Type.Integer({ minimum: 0 }),
          cpuCapacityMillicores: Type.Integer({ minimum: 0 }),
          memAllocatedMiB: Type.Integer({ minimum: 0 }),
          memCapacityMiB: Type.Integer({ minimum: 0 }),
        },
        { description: 'The newest sample of the Metrics tab.' },
      ),
    ),
    nodeTable: Type.Optional(Type.Array(SheetNodeRow, { maxItems: SHEET_LIMITS.maxNodes + 14 })),
  },
  { description: 'Observed state, read from the sheet through the apiserver contract.' },
);

export type SheetClusterSpecT = Static<typeof SheetClusterSpec>;
export type SheetClusterStatusT = Static<typeof SheetClusterStatus>;
export type SheetDeploymentT = Static<typeof SheetDeployment>;
export type SheetStoreT = Static<typeof SheetStore>;

export const SheetClusterKind: KindDefinition = {
  kind: 'SheetCluster',
  plural: 'sheetclusters',
  singular: 'sheetcluster',
  // `sc` is StorageClass and Cozystack ships none named rksheets: ours alone.
  shortNames: ['rksheets'],
  categories: ['retrokube'],
  description: 'A Sheeternetes cluster: a spreadsheet apiserver, N node agents; status read from the sheet.',
  spec: SheetClusterSpec,
  status: SheetClusterStatus,
  printerColumns: [
    { name: 'NODES', type: 'string', jsonPath: '.status.nodes' },
    { name: 'PODS', type: 'string', jsonPath: '.status.pods' },
    { name: 'READY', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    {
      name: 'REASON',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].reason',
      priority: 1,
    },
    { name: 'AGE', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  validations: [
    {
      rule: `size(self.metadata.name) <= ${SHEET_LIMITS.nameChars}`,
      message: `metadata.name must be at most ${SHEET_LIMITS.nameChars} characters (children are rk-sheets-<name>-node)`,
    },
    {
      rule: `self.metadata.name.matches('${NAME}')`,
      message: 'metadata.name may contain only a-z, 0-9 and - (it names a Service)',
    },
  ],
  source: 'operator/src/api/sheetcluster.ts',
};
