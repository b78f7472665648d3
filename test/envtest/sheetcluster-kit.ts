// Helpers for the SheetCluster envtest files: the object, and a stand-in for the kubelet that runs
// the operator's rendered pods as real local processes — the container's own args, its env with
// secretKeyRef values read from the API server's Secrets (as the kubelet does), volume paths mapped
// to temp folders, and the Service address swapped for the local apiserver.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Container,
  type LocalProcess,
  localArgs,
  resolveEnv,
  runCli,
} from '../../operator/src/local/pods.ts';
import type { KubeClient, KubeObject, ResourceType } from '../../operator/src/runtime/client.ts';
import { CORE } from './operator-harness.ts';

export const STS: ResourceType = {
  group: 'apps',
  version: 'v1',
  plural: 'statefulsets',
  kind: 'StatefulSet',
  namespaced: true,
};
export const PVC: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'persistentvolumeclaims',
  kind: 'PersistentVolumeClaim',
  namespaced: true,
};

export function sheetCluster(namespace: string, name: string, spec: Record<string, unknown>): KubeObject {
  return { apiVersion: 'retrokube.io/v1alpha1', kind: 'SheetCluster', metadata: { name, namespace }, spec };
}

/** How the kubelet resolves a secretKeyRef: from the API server's Secret. */
const fromApi = (k: KubeClient, namespace: string) => async (ref: { name: string; key: string }) => {
  const sec = await k.get<KubeObject & { data?: Record<string, string> }>(CORE.secret, namespace, ref.name);
  return Buffer.from(sec.data?.[ref.key] ?? '', 'base64').toString('utf8');
};

const firstContainer = (o: KubeObject): Container =>
  (o as unknown as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec
    .containers[0];

/** The apiserver pod of a SheetCluster on this host: the PVC is `dataDir`, it listens on loopback. */
export async function runApiserverPod(
  k: KubeClient,
  namespace: string,
  cluster: string,
  dataDir: string,
): Promise<{ pod: LocalProcess; url: string }> {
  const c = firstContainer(await k.get(CORE.deployment, namespace, `rk-sheets-${cluster}`));
  const env = await resolveEnv(c, { secret: fromApi(k, namespace), fields: {} });
  const pod = runCli(
    localArgs(c, { workbook: dataDir, tmp: dataDir }, { '--host': '127.0.0.1', '--port': '0' }),
    env,
  );
  const url = (await pod.waitFor(/listening on (http:\/\/\S+)/, 60_000))[1];
  return { pod, url };
}

/** Agent pod `index` of the StatefulSet, reaching the local apiserver instead of the Service. */
export async function runAgentPod(
  k: KubeClient,
  namespace: string,
  cluster: string,
  index: number,
  url: string,
): Promise<LocalProcess> {
  const c = firstContainer(await k.get(STS, namespace, `rk-sheets-${cluster}-node`));
  const env = await resolveEnv(c, {
    secret: fromApi(k, namespace),
    fields: { "metadata.labels['apps.kubernetes.io/pod-index']": String(index), 'status.podIP': '127.0.0.1' },
    resources: { 'limits.cpu': '1000', 'limits.memory': '512' },
  });
  const work = mkdtempSync(join(tmpdir(), `rk-agent-${index}-`));
  return runCli(localArgs(c, { work, tmp: work }), { ...env, WEBAPP_URL: url });
}

/** What the kubelet writes about a pod (the test API server runs no kubelet): a core/v1 Warning Event. */
export async function kubeletWarning(
  k: KubeClient,
  ns: string,
  o: { name: string; pod: string; reason: string; message: string; count?: number },
): Promise<void> {
  const at = new Date().toISOString();
  await k.create({ group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true }, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: o.name, namespace: ns },
    involvedObject: { kind: 'Pod', name: o.pod, namespace: ns },
    type: 'Warning',
    reason: o.reason,
    message: o.message,
    firstTimestamp: at,
    lastTimestamp: at,
    count: o.count ?? 1,
    source: { component: 'kubelet' },
  } as KubeObject);
}
