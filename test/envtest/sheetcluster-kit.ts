// Helpers for the SheetCluster envtest files: the object, and a stand-in for the kubelet that runs
// the operator's rendered pods as real local processes — the container's own args, its env with
// secretKeyRef values read from the API server's Secrets (as the kubelet does), volume paths mapped
// to temp folders, and the Service address swapped for the local apiserver.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeClient, KubeObject, ResourceType } from '../../operator/src/runtime/client.ts';
import { REPO_ROOT } from './control-plane.ts';
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

// biome-ignore lint/suspicious/noExplicitAny: a Pod template's container, navigated freely
type Container = any;

/** The container's env as the kubelet resolves it (secretKeyRef read from the API server; $(VAR) expanded). */
export async function resolveEnv(
  k: KubeClient,
  namespace: string,
  c: Container,
  fields: Record<string, string>,
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const e of (c.env ?? []) as Container[]) {
    if (e.value !== undefined)
      env[e.name] = String(e.value).replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (_m, v) => env[v] ?? '');
    else if (e.valueFrom?.secretKeyRef) {
      const ref = e.valueFrom.secretKeyRef;
      const sec = await k.get<KubeObject & { data?: Record<string, string> }>(
        CORE.secret,
        namespace,
        ref.name,
      );
      env[e.name] = Buffer.from(sec.data?.[ref.key] ?? '', 'base64').toString('utf8');
    } else if (e.valueFrom?.fieldRef) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath] ?? '';
    else if (e.valueFrom?.resourceFieldRef) {
      const r = e.valueFrom.resourceFieldRef;
      env[e.name] = r.resource === 'limits.cpu' ? '1000' : '512';
    }
  }
  return env;
}

export interface LocalPod {
  proc: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** Runs the image's entrypoint (the retrokube CLI) with the container's args and env. */
export function runLocally(args: string[], env: Record<string, string>): LocalPod {
  const proc = spawn(`${REPO_ROOT}/node_modules/.bin/node`, ['operator/src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (b) => {
    out += b;
  });
  proc.stderr?.on('data', (b) => {
    out += b;
  });
  return {
    proc,
    output: () => out,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill(signal);
      await exited;
    },
  };
}

/** The apiserver pod of a SheetCluster on this host: the PVC is `dataDir`, it listens on loopback. */
export async function runApiserverPod(
  k: KubeClient,
  namespace: string,
  cluster: string,
  dataDir: string,
): Promise<{ pod: LocalPod; url: string }> {
  const dep = await k.get<KubeObject & { spec: Container }>(
    CORE.deployment,
    namespace,
    `rk-sheets-${cluster}`,
  );
  const c = dep.spec.template.spec.containers[0];
  const env = await resolveEnv(k, namespace, c, {});
  const args = (c.args as string[]).map((a, i, all) => {
    if (all[i - 1] === '--host') return '127.0.0.1';
    if (all[i - 1] === '--port') return '0';
    return a.startsWith('/data/') ? join(dataDir, a.slice('/data/'.length)) : a;
  });
  const pod = runLocally(args, env);
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the apiserver did not start: ${pod.output()}`)), 60_000);
    const look = () => {
      const m = /listening on (http:\/\/\S+)/.exec(pod.output());
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    };
    pod.proc.stdout?.on('data', look);
    pod.proc.once('exit', () => reject(new Error(`the apiserver exited: ${pod.output()}`)));
  });
  return { pod, url };
}

/** Agent pod `index` of the StatefulSet, reaching the local apiserver instead of the Service. */
export async function runAgentPod(
  k: KubeClient,
  namespace: string,
  cluster: string,
  index: number,
  url: string,
): Promise<LocalPod> {
  const sts = await k.get<KubeObject & { spec: Container }>(STS, namespace, `rk-sheets-${cluster}-node`);
  const c = sts.spec.template.spec.containers[0];
  const env = await resolveEnv(k, namespace, c, {
    "metadata.labels['apps.kubernetes.io/pod-index']": String(index),
    'status.podIP': '127.0.0.1',
  });
  env.WEBAPP_URL = url;
  const work = mkdtempSync(join(tmpdir(), `rk-agent-${index}-`));
  const args = (c.args as string[]).map((a) => (a === '/work' ? work : a));
  return runLocally(args, env);
}
