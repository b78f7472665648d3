// The cluster's tabs and their headers: the one place that says what a Sheeternetes workbook holds.
//
// The first nine tabs and their column order are those of the newest on-prem reference (spec §2.1),
// so a workbook made here opens in the reference and vice versa. Columns we added are TRAILING
// (SCRI §3 lets an apiserver add trailing columns and requires clients to ignore unknown ones):
//   Deployments.restart_policy — Always | OnFailure | Never (the Kubernetes words); blank = the
//     reference's behaviour (restart on every exit, reference phases only).
//   Pods.restarts, Pods.exit_code, Pods.message — what our node agent reports (spec §4 says the
//     reference kubelet never reports crash states; ours does).
//   Pods.spec_hash — the spec_hash of the order the pod's agent runs (blank from a reference
//     kubelet), so a reader can tell from the sheet that a pod runs its Deployment's current spec.
//   Metrics (whole tab) — the Sheetheus idea; the reference layout is unknown (spec §13.10).
// Because every read and write goes by header NAME, a person may reorder columns or add their own;
// nothing lands in the wrong place.

export interface TabSchema {
  readonly name: string;
  // Canonical column order used when the tab is created; later columns are appended on upgrade.
  readonly headers: readonly string[];
  // Columns that identify a row. Empty = append-only log (Events, Metrics): rows have no identity.
  readonly key: readonly string[];
  // Value given to EXISTING rows when the column is added by an upgrade (default: empty).
  readonly backfill?: Readonly<Record<string, string | number | boolean>>;
}

export const TABS = {
  Deployments: {
    name: 'Deployments',
    headers: [
      'name',
      'image',
      'replicas',
      'cpu_req',
      'mem_req',
      'command',
      'node_selector',
      'tolerations',
      'env',
      'secret_files',
      'ports',
      'restart_policy',
    ],
    key: ['name'],
  },
  Nodes: {
    name: 'Nodes',
    headers: [
      'name',
      'ip',
      'cpu_total',
      'cpu_used',
      'mem_total',
      'status',
      'last_heartbeat',
      'schedulable',
      'labels',
      'taints',
    ],
    key: ['name'],
    // Spec §2.2: an upgraded Nodes tab gets schedulable=True on every existing node.
    backfill: { schedulable: true },
  },
  Pods: {
    name: 'Pods',
    headers: [
      'name',
      'deployment',
      'node',
      'phase',
      'container_id',
      'ports',
      'endpoints',
      'restarts',
      'exit_code',
      'message',
      'spec_hash',
    ],
    key: ['name'],
  },
  Events: { name: 'Events', headers: ['ts', 'kind', 'object', 'message'], key: [] },
  Images: {
    name: 'Images',
    headers: ['name', 'digest', 'config', 'layers', 'created', 'size'],
    key: ['name'],
  },
  Layers: {
    name: 'Layers',
    headers: ['digest', 'ordinal', 'media_type', 'data'],
    key: ['digest', 'ordinal'],
  },
  Secrets: { name: 'Secrets', headers: ['name', 'data'], key: ['name'] },
  Gateways: {
    name: 'Gateways',
    headers: ['name', 'listen', 'replicas', 'node_selector', 'image', 'address', 'status'],
    key: ['name'],
  },
  Routes: {
    name: 'Routes',
    headers: ['name', 'gateway', 'host', 'path', 'service', 'port', 'rewrite', 'status'],
    key: ['name'],
  },
  Metrics: { name: 'Metrics', headers: ['ts', 'metric', 'labels', 'value'], key: [] },
} as const satisfies Record<string, TabSchema>;

export type TabName = keyof typeof TABS;

// Creation order of a new cluster: the four SCRI tabs first (as the reference lays them out).
export const TAB_ORDER: readonly TabName[] = [
  'Deployments',
  'Nodes',
  'Pods',
  'Events',
  'Images',
  'Layers',
  'Secrets',
  'Gateways',
  'Routes',
  'Metrics',
];

// The schema of the [HMAC version] reference (spec §2.1 "Older schemas"): used by the upgrade test.
export const OLD_HMAC_SCHEMA: readonly TabSchema[] = [
  { name: 'Deployments', headers: TABS.Deployments.headers.slice(0, 8), key: ['name'] },
  { name: 'Nodes', headers: TABS.Nodes.headers, key: ['name'] },
  { name: 'Pods', headers: TABS.Pods.headers.slice(0, 5), key: ['name'] },
  { name: 'Events', headers: TABS.Events.headers, key: [] },
];

export function tabSchema(name: string): TabSchema | undefined {
  return (TABS as Record<string, TabSchema>)[name];
}

// The sample deployments `setup` writes into a new cluster (spec §2.5: Apps Script setup() writes
// two samples). Both are WASM modules from the cluster's own image store, so they run on any node
// without Docker or the opt-in process runtime: "hello" prints and finishes (restart_policy
// OnFailure, so it ends Succeeded), "ticker" runs for good and logs a line every few seconds.
export const SAMPLE_WASM_IMAGE = 'hello-wasm:v1';
export const SAMPLE_TICKER_IMAGE = 'ticker-wasm:v1';

export const SAMPLE_DEPLOYMENTS: readonly Record<string, string | number>[] = [
  {
    name: 'hello',
    image: `sicf:${SAMPLE_WASM_IMAGE}`,
    replicas: 1,
    cpu_req: 50,
    mem_req: 16,
    command: '',
    restart_policy: 'OnFailure',
  },
  {
    name: 'ticker',
    image: `sicf:${SAMPLE_TICKER_IMAGE}`,
    replicas: 2,
    cpu_req: 50,
    mem_req: 16,
    command: '',
    restart_policy: 'Always',
  },
];
