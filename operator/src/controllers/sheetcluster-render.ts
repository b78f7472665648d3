// SheetCluster rendering (pure): the settings a spec means, the generated Secrets' values (derived
// from the operator's seed and the object's uid, so a restarted operator recomputes them and never
// reads a Secret), and the children — the workbook PVC (xlsx), the apiserver Deployment (one
// replica, Recreate: one writer per workbook) and its Service, and the node agents' StatefulSet
// (pods register as node-0, node-1, ... by their StatefulSet index, so a replaced pod rejoins
// under its old name), spread over the Kubernetes nodes with a disruption budget (placement.ts).
import { createHmac } from 'node:crypto';
import { type PlacementSettings, placementSettings } from '../api/placement-settings.ts';
import type { SheetClusterSpecT, SheetDeploymentT } from '../api/sheetcluster.ts';
import { SHEET_DEFAULTS, type SheetRuntime } from '../api/sheetcluster-limits.ts';
import type { KubeObject } from '../runtime/client.ts';
import { controllerRef, MANAGED_BY } from '../runtime/objects.ts';
import { disruptionBudget, type PodPlacement, spreadTogether } from './placement.ts';
import { restrictedContainerSecurity, restrictedPodSecurity } from './pod-security.ts';

export const LIMITS = {
  uid: 65532, // the agents and apiserver need no identity; a fixed non-root id owns the PVC (fsGroup)
  workbookDir: '/data', // the PVC's mount in the apiserver
  googleDir: '/var/run/secrets/retrokube/google', // the credentials Secret's mount (apiserver only)
  workDir: '/work', // agents: pod logs and secret files (an emptyDir)
  tmpSizeLimit: '64Mi', // /tmp of every container (read-only roots write nowhere else)
  workSizeLimit: '1Gi', // an agent's work dir (pod logs, secret files, wasm modules)
  generatedBytes: 24, // generated token / signing key: 192 bits, hex
} as const;

export interface SecretRef {
  name: string;
  key: string;
}

export interface SheetSettings {
  name: string;
  namespace: string;
  store:
    | { type: 'xlsx'; size: string; storageClass?: string }
    | { type: 'google'; spreadsheetId: string; credentials: SecretRef; rootUrl?: string };
  nodes: number;
  runtimes: SheetRuntime[];
  dockerSocket?: string;
  nodeCpu?: number;
  nodeMemory?: number;
  failoverSeconds: number;
  samples: boolean;
  token: SecretRef;
  tokenGenerated: boolean;
  signingKey: SecretRef;
  signingKeyGenerated: boolean;
  deployments: SheetDeploymentT[];
  image: string;
  resources: Record<string, unknown>;
  nodeResources: Record<string, unknown>;
  placement: PlacementSettings;
}

export interface SheetClusterObject extends KubeObject {
  spec?: Partial<SheetClusterSpecT>;
}

export const sheetChild = (cluster: string): string => `rk-sheets-${cluster}`;
export const agentsName = (cluster: string): string => `${sheetChild(cluster)}-node`;
export const workbookClaim = (cluster: string): string => `${sheetChild(cluster)}-workbook`;
export const tokenSecretName = (cluster: string): string => `${sheetChild(cluster)}-token`;
export const signingSecretName = (cluster: string): string => `${sheetChild(cluster)}-signing`;
/** The name node i registers under (its StatefulSet pod index). */
export const sheetNodeName = (i: number): string => `node-${i}`;

export function sheetSettings(c: SheetClusterObject, defaultImage: string): SheetSettings {
  const s = c.spec ?? {};
  const name = c.metadata.name as string;
  const st = s.store ?? { type: 'xlsx' as const };
  const store: SheetSettings['store'] =
    st.type === 'google' && st.google
      ? {
          type: 'google',
          spreadsheetId: st.google.spreadsheetId,
          credentials: {
            name: st.google.credentialsSecretRef.name,
            key: st.google.credentialsSecretRef.key ?? 'credentials.json',
          },
          rootUrl: st.google.rootUrl,
        }
      : {
          type: 'xlsx',
          size: String(st.xlsx?.size ?? SHEET_DEFAULTS.workbookSize),
          storageClass: st.xlsx?.storageClass,
        };
  return {
    name,
    namespace: c.metadata.namespace as string,
    store,
    nodes: s.nodes ?? SHEET_DEFAULTS.nodes,
    runtimes: [...(s.runtimes ?? SHEET_DEFAULTS.runtimes)],
    dockerSocket: s.dockerSocket,
    nodeCpu: s.nodeCpu,
    nodeMemory: s.nodeMemory,
    failoverSeconds: s.failoverSeconds ?? SHEET_DEFAULTS.failoverSeconds,
    samples: s.samples ?? SHEET_DEFAULTS.samples,
    token: s.tokenSecretRef
      ? { name: s.tokenSecretRef.name, key: s.tokenSecretRef.key ?? 'token' }
      : { name: tokenSecretName(name), key: 'token' },
    tokenGenerated: !s.tokenSecretRef,
    signingKey: s.signingKeySecretRef
      ? { name: s.signingKeySecretRef.name, key: s.signingKeySecretRef.key ?? 'key' }
      : { name: signingSecretName(name), key: 'key' },
    signingKeyGenerated: !s.signingKeySecretRef,
    deployments: s.deployments ?? [],
    image: s.image || defaultImage,
    resources: (s.resources as Record<string, unknown>) ?? structuredClone(SHEET_DEFAULTS.apiserverResources),
    nodeResources:
      (s.nodeResources as Record<string, unknown>) ?? structuredClone(SHEET_DEFAULTS.nodeResources),
    placement: placementSettings(s.placement),
  };
}

/** A generated secret value: HMAC(seed, purpose/uid) — random to everyone without the seed. */
export function derivedSecret(seed: string, purpose: 'token' | 'signing', uid: string): string {
  return createHmac('sha256', seed)
    .update(`sheetcluster-${purpose}/${uid}`)
    .digest('hex')
    .slice(0, LIMITS.generatedBytes * 2);
}

/** Where the apiserver answers inside the cluster. */
export function serviceUrl(s: Pick<SheetSettings, 'name' | 'namespace'>): string {
  return `http://${sheetChild(s.name)}.${s.namespace}.svc.cluster.local:${SHEET_DEFAULTS.port}`;
}

const COMPONENT = 'app.kubernetes.io/component';
/** The apiserver and the agents spread together, the apiserver softly (placement.ts). */
const SHEET_ROLES = { leader: 'apiserver', member: 'node' };

function labels(s: SheetSettings, component?: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'retrokube-sheets',
    'app.kubernetes.io/instance': s.name,
    ...(component ? { [COMPONENT]: component } : {}),
  };
}

const envFromSecret = (name: string, ref: SecretRef) => ({
  name,
  valueFrom: { secretKeyRef: { name: ref.name, key: ref.key } },
});

const tmpVolume = { name: 'tmp', emptyDir: { sizeLimit: LIMITS.tmpSizeLimit } };
const tmpMount = { name: 'tmp', mountPath: '/tmp' };

/**
 * A pod template for the cluster's image, hardened like the machine pods: no ServiceAccount token,
 * no service links, non-root with the PVC's group, and one container with a read-only root (it
 * writes only to the volumes given: a `/tmp` emptyDir and its own).
 */
function hardenedPod(
  s: SheetSettings,
  podLabels: Record<string, string>,
  container: Record<string, unknown>,
  volumes: unknown[],
  where: PodPlacement,
) {
  return {
    metadata: { labels: podLabels },
    spec: {
      ...where,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: restrictedPodSecurity({ user: LIMITS.uid, group: LIMITS.uid, fsGroup: LIMITS.uid }),
      containers: [
        {
          ...container,
          image: s.image,
          securityContext: restrictedContainerSecurity({ readOnlyRoot: true }),
        },
      ],
      volumes,
    },
  };
}

/** The generated Secrets (only for refs the spec leaves out). Values are derived, never read back. */
export function renderSecrets(
  c: KubeObject,
  s: SheetSettings,
  values: { token: string; signingKey: string },
) {
  const out: KubeObject[] = [];
  const secret = (ref: SecretRef, value: string, component: string): KubeObject => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: ref.name,
      namespace: s.namespace,
      labels: { ...labels(s, component), 'app.kubernetes.io/managed-by': MANAGED_BY },
      ownerReferences: [controllerRef(c)],
    },
    type: 'Opaque',
    stringData: { [ref.key]: value },
  });
  if (s.tokenGenerated) out.push(secret(s.token, values.token, 'token'));
  if (s.signingKeyGenerated) out.push(secret(s.signingKey, values.signingKey, 'signing-key'));
  return out;
}

/** The apiserver's arguments to the image's `retrokube` entrypoint (secrets come by env, never argv). */
export function apiserverArgs(s: SheetSettings): string[] {
  const workbook =
    s.store.type === 'xlsx' ? `${LIMITS.workbookDir}/cluster.xlsx` : `google:${s.store.spreadsheetId}`;
  return [
    'sheets',
    'serve',
    '--workbook',
    workbook,
    '--host',
    '0.0.0.0', // reached through its Service; a pod's loopback would serve nobody
    '--port',
    String(SHEET_DEFAULTS.port),
    '--node-ttl',
    String(s.failoverSeconds),
    ...(s.samples ? [] : ['--no-samples']),
    ...(s.store.type === 'google'
      ? [
          '--google-credentials',
          `${LIMITS.googleDir}/${s.store.credentials.key}`,
          ...(s.store.rootUrl ? ['--google-root-url', s.store.rootUrl] : []),
        ]
      : []),
  ];
}

/** The node agent's arguments; the node name, server, token and key come by env. */
export function agentArgs(s: SheetSettings): string[] {
  return [
    'sheets',
    'node',
    '--runtime',
    s.runtimes.join(','),
    // The agent refuses the process runtime without this opt-in: the spec named it explicitly.
    ...(s.runtimes.includes('process') ? ['--allow-process'] : []),
    '--interval',
    String(Math.min(SHEET_DEFAULTS.heartbeatSeconds, Math.max(1, Math.floor(s.failoverSeconds / 3)))),
    '--work-dir',
    LIMITS.workDir,
  ];
}

export interface SheetChildren {
  secrets: KubeObject[];
  pvc?: KubeObject;
  deployment: KubeObject;
  service: KubeObject;
  agents: KubeObject;
  /** At most one agent evicted at a time (placement.ts). */
  budget: KubeObject;
}

/** Every child of a SheetCluster, desired. Pure. */
export function renderSheetCluster(
  c: KubeObject,
  s: SheetSettings,
  values: { token: string; signingKey: string },
): SheetChildren {
  const meta = (name: string, component: string) => ({
    name,
    namespace: s.namespace,
    labels: { ...labels(s, component), 'app.kubernetes.io/managed-by': MANAGED_BY },
    ownerReferences: [controllerRef(c)],
  });
  const name = sheetChild(s.name);
  const selector = labels(s, 'apiserver');
  const pvc: KubeObject | undefined =
    s.store.type === 'xlsx'
      ? {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: meta(workbookClaim(s.name), 'workbook'),
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: s.store.size } },
            ...(s.store.storageClass ? { storageClassName: s.store.storageClass } : {}),
          },
        }
      : undefined;
  const storeVolume =
    s.store.type === 'xlsx'
      ? { name: 'workbook', persistentVolumeClaim: { claimName: workbookClaim(s.name) } }
      : {
          name: 'google',
          secret: {
            secretName: s.store.credentials.name,
            items: [{ key: s.store.credentials.key, path: s.store.credentials.key }],
            defaultMode: 0o440,
          },
        };
  const storeMount =
    s.store.type === 'xlsx'
      ? { name: 'workbook', mountPath: LIMITS.workbookDir }
      : { name: 'google', mountPath: LIMITS.googleDir, readOnly: true };
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: meta(name, 'apiserver'),
    spec: {
      // One writer per workbook: the old pod stops before the new one opens the file.
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selector },
      template: hardenedPod(
        s,
        selector,
        {
          name: 'apiserver',
          args: apiserverArgs(s),
          env: [envFromSecret('TOKEN', s.token), envFromSecret('SIGNING_KEY', s.signingKey)],
          ports: [{ name: 'http', containerPort: SHEET_DEFAULTS.port, protocol: 'TCP' }],
          readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 5 },
          resources: s.resources,
          volumeMounts: [storeMount, tmpMount],
        },
        [storeVolume, tmpVolume],
        spreadTogether(labels(s), COMPONENT, SHEET_ROLES, 'leader', s.placement), // off the agents' nodes, where it can
      ),
    },
  };
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name, 'apiserver'),
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{ name: 'http', port: SHEET_DEFAULTS.port, targetPort: 'http', protocol: 'TCP' }],
    },
  };
  const agentSelector = labels(s, 'node');
  const limitsRef = (resource: string, divisor: string) => ({
    resourceFieldRef: { containerName: 'agent', resource, divisor },
  });
  const docker = s.runtimes.includes('docker') && s.dockerSocket;
  const agents: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: meta(agentsName(s.name), 'node'),
    spec: {
      replicas: s.nodes,
      serviceName: agentsName(s.name),
      // Nodes are peers: all start at once, and one that is replaced keeps its index (its name).
      podManagementPolicy: 'Parallel',
      selector: { matchLabels: agentSelector },
      template: hardenedPod(
        s,
        agentSelector,
        {
          name: 'agent',
          args: agentArgs(s),
          env: [
            {
              name: 'POD_INDEX',
              valueFrom: { fieldRef: { fieldPath: "metadata.labels['apps.kubernetes.io/pod-index']" } },
            },
            { name: 'NODE_NAME', value: 'node-$(POD_INDEX)' },
            { name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
            { name: 'WEBAPP_URL', value: serviceUrl(s) },
            envFromSecret('TOKEN', s.token),
            envFromSecret('SIGNING_KEY', s.signingKey),
            s.nodeCpu !== undefined
              ? { name: 'CPU_TOTAL', value: String(s.nodeCpu) }
              : { name: 'CPU_TOTAL', valueFrom: limitsRef('limits.cpu', '1m') },
            s.nodeMemory !== undefined
              ? { name: 'MEM_TOTAL', value: String(s.nodeMemory) }
              : { name: 'MEM_TOTAL', valueFrom: limitsRef('limits.memory', '1Mi') },
          ],
          resources: s.nodeResources,
          volumeMounts: [
            { name: 'work', mountPath: LIMITS.workDir },
            tmpMount,
            ...(docker ? [{ name: 'docker', mountPath: '/var/run/docker.sock' }] : []),
          ],
        },
        [
          { name: 'work', emptyDir: { sizeLimit: LIMITS.workSizeLimit } },
          tmpVolume,
          ...(docker ? [{ name: 'docker', hostPath: { path: s.dockerSocket, type: 'Socket' } }] : []),
        ],
        spreadTogether(labels(s), COMPONENT, SHEET_ROLES, 'member', s.placement),
      ),
    },
  };
  const budget = disruptionBudget(meta(agentsName(s.name), 'node'), agentSelector);
  return { secrets: renderSecrets(c, s, values), pvc, deployment, service, agents, budget };
}
