// Helpers for the `cluster` project: tests against a real cluster (the node of hack/node-up.sh,
// or any kubeconfig given in RETROKUBE_CLUSTER_KUBECONFIG). Reusable by every kind's tests: the
// chart installed once per file, namespaces, kubectl/helm, pods, port-forwards, polling.
import { type ChildProcess, spawn } from 'node:child_process';
import { inject, onTestFinished } from 'vitest';
import { KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import type { ClusterNodeInfo } from './global-setup.ts';

export { waitFor } from '../envtest/operator-harness.ts';
export type { KubeObject };

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
export type Deep = any;

const LIMITS = {
  commandTimeoutMs: 120_000, // one kubectl/helm call; `helm install --wait` gets its own
  portForwardReadyMs: 30_000, // kubectl port-forward prints its local port within seconds
  outputBytes: 4_000, // how much of a failed command's output goes into the error
} as const;

/** Why the suite does not run here ('' when it does). */
export function skipReason(): string {
  return inject('clusterSkip');
}
export function kubeconfigPath(): string {
  return inject('clusterKubeconfig');
}
/** The product image as the cluster knows it (imported, never pulled). */
export function productImage(): { repository: string; tag: string; ref: string } {
  const ref = inject('clusterImage');
  const i = ref.lastIndexOf(':');
  return { repository: ref.slice(0, i), tag: ref.slice(i + 1), ref };
}
/** The node of hack/node-up.sh, when the suite runs on it (undefined on kind and other clusters). */
export function localNode(): ClusterNodeInfo | undefined {
  return inject('clusterNode');
}

/** A client (the operator's own runtime client) as the kubeconfig's user; closed after the test. */
export function client(): KubeClient {
  const c = KubeClient.fromDefault(kubeconfigPath());
  onTestFinished(() => c.close());
  return c;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to the end; rejects with its output unless it exits 0 (or `allowFail`). */
export function run(
  file: string,
  args: string[],
  o: { input?: string; timeoutMs?: number; allowFail?: boolean } = {},
): Promise<RunResult> {
  return new Promise((ok, fail) => {
    const p = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b) => {
      stdout += b;
    });
    p.stderr.on('data', (b) => {
      stderr += b;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), o.timeoutMs ?? LIMITS.commandTimeoutMs);
    p.on('error', fail);
    p.on('close', (code) => {
      clearTimeout(timer);
      const r = { code: code ?? -1, stdout, stderr };
      if (r.code === 0 || o.allowFail) ok(r);
      else
        fail(
          new Error(
            `${file.split('/').pop()} ${args.join(' ')} exited ${r.code}: ${(stderr || stdout).slice(-LIMITS.outputBytes)}`,
          ),
        );
    });
    p.stdin.end(o.input ?? '');
  });
}

export async function kubectl(
  args: string[],
  o: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  return (await run(inject('clusterTools').kubectl, ['--kubeconfig', kubeconfigPath(), ...args], o)).stdout;
}

export async function helm(args: string[], timeoutMs = 300_000): Promise<string> {
  return (await run(inject('clusterTools').helm, ['--kubeconfig', kubeconfigPath(), ...args], { timeoutMs }))
    .stdout;
}

/** kubectl get -o json, parsed. */
export async function getJson(args: string[]): Promise<Deep> {
  return JSON.parse(await kubectl(['get', ...args, '-o', 'json']));
}

/** Applies YAML or JSON objects (server-side). */
export async function apply(doc: unknown): Promise<void> {
  const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
  await kubectl(['apply', '--server-side', '--field-manager=retrokube-cluster-test', '-f', '-'], {
    input: text,
  });
}

/**
 * A new namespace (generateName), deleted when the current test (or the file, from beforeAll)
 * finishes; on a real cluster the namespace controller really removes everything inside.
 */
export async function freshNamespace(prefix: string): Promise<string> {
  const created = JSON.parse(
    await kubectl(['create', '-o', 'json', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { generateName: `${prefix}-`, labels: { 'retrokube.io/cluster-test': 'true' } },
      }),
    }),
  );
  return created.metadata.name as string;
}

export async function deleteNamespace(ns: string): Promise<void> {
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
}

/** The pods matching a label selector. */
export async function pods(ns: string, selector: string): Promise<Deep[]> {
  return (await getJson(['pods', '-n', ns, '-l', selector])).items;
}

export function podReady(p: Deep): boolean {
  return (
    p?.status?.phase === 'Running' &&
    !p.metadata.deletionTimestamp &&
    (p.status.conditions ?? []).some((c: Deep) => c.type === 'Ready' && c.status === 'True')
  );
}

export interface Chart {
  namespace: string;
  release: string;
  uninstall(): Promise<void>;
}

/**
 * `helm install` of charts/retrokube with the product image (pullPolicy Never: it was imported,
 * there is no registry), waiting until the operator Deployment is available.
 */
export async function installChart(
  namespace: string,
  release = 'retrokube',
  extra: string[] = [],
): Promise<Chart> {
  const img = productImage();
  await helm(
    [
      'install',
      release,
      'charts/retrokube',
      '--namespace',
      namespace,
      '--set',
      `image.repository=${img.repository}`,
      '--set',
      `image.tag=${img.tag}`,
      '--set',
      'image.pullPolicy=Never',
      '--wait',
      '--timeout',
      '4m',
      ...extra,
    ],
    300_000,
  );
  return {
    namespace,
    release,
    uninstall: async () => {
      await helm(['uninstall', release, '--namespace', namespace, '--wait', '--timeout', '2m']);
    },
  };
}

/** `kubectl port-forward` to `target` (e.g. svc/name); resolves with the local port once it listens. */
export async function portForward(
  ns: string,
  target: string,
  remotePort: number,
): Promise<{ port: number; close(): void }> {
  const p: ChildProcess = spawn(
    inject('clusterTools').kubectl,
    [
      '--kubeconfig',
      kubeconfigPath(),
      'port-forward',
      '-n',
      ns,
      '--address',
      '127.0.0.1',
      target,
      `:${remotePort}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const close = (): void => {
    p.kill('SIGTERM');
  };
  onTestFinished(close);
  return await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => {
      close();
      fail(new Error(`port-forward ${target}: no local port after ${LIMITS.portForwardReadyMs} ms: ${out}`));
    }, LIMITS.portForwardReadyMs);
    const onData = (b: Buffer) => {
      out += b;
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok({ port: Number(m[1]), close });
      }
    };
    p.stdout?.on('data', onData);
    p.stderr?.on('data', onData);
    p.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`port-forward ${target} exited ${code}: ${out}`));
    });
  });
}
