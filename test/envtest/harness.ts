// Helpers for tests of the `envtest` project (see test/envtest/README.md).
// The global setup (global-setup.ts) started one kine + kube-apiserver for the whole run.
import { readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { inject, onTestFinished } from 'vitest';
import type { TestBins } from './control-plane.ts';

const LIMITS = {
  namespacePrefixMax: 40, // generateName adds 5 chars; namespace names are at most 63
} as const;

/** Path of the admin kubeconfig (user `admin`, group system:masters). */
export function kubeconfigPath(): string {
  return inject('envtestKubeconfig');
}

/** Paths of the test binaries (kube-apiserver, kine, helm, kubectl). */
export function testBins(): TestBins {
  return inject('envtestBins');
}

/** A KubeConfig for the admin user of the test API server. */
export function adminKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(readFileSync(kubeconfigPath(), 'utf8'));
  return kc;
}

/**
 * A KubeConfig that authenticates as admin but acts as `user` (Impersonate-User header), so RBAC
 * decides as if `user` called. Service-account users get their groups
 * (system:serviceaccounts, system:serviceaccounts:<ns>) from the API server automatically.
 */
export function impersonatingKubeConfig(user: string): KubeConfig {
  const kc = adminKubeConfig();
  kc.loadFromOptions({
    clusters: kc.clusters,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
    users: kc.users.map((u) => ({ ...u, impersonateUser: user })),
  });
  return kc;
}

/** The username of a ServiceAccount as RBAC sees it. */
export function serviceAccountUser(namespace: string, name: string): string {
  return `system:serviceaccount:${namespace}:${name}`;
}

/** A KubeConfig acting as ServiceAccount `namespace/name` (impersonation). */
export function serviceAccountKubeConfig(namespace: string, name: string): KubeConfig {
  return impersonatingKubeConfig(serviceAccountUser(namespace, name));
}

/**
 * Creates a fresh namespace (generateName) and deletes it when the current test finishes.
 * Namespaces never finish deleting on a bare API server (no namespace controller), so each test
 * must use its own. Call inside a test (or beforeEach) so cleanup attaches to that test.
 */
export async function freshNamespace(prefix = 't', kc: KubeConfig = adminKubeConfig()): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const base = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, LIMITS.namespacePrefixMax);
  const ns = await core.createNamespace({
    body: {
      metadata: { generateName: `${base.replace(/-+$/, '')}-`, labels: { 'retrokube.io/envtest': 'true' } },
    },
  });
  const name = ns.metadata?.name;
  if (!name) throw new Error('envtest: the API server returned a namespace without a name');
  onTestFinished(async () => {
    await core.deleteNamespace({ name }).catch(() => undefined);
  });
  return name;
}

/**
 * Stops kube-apiserver, keeps it down for `downMs`, starts it again on the same port with the
 * same datastore (kine keeps running), and resolves once /readyz answers 200.
 * Other test files share this API server; restart only in files that expect it.
 */
export async function restartApiServer(downMs = 0): Promise<{ downMs: number; readyMs: number }> {
  const res = await fetch(`${inject('envtestControl')}/apiserver/restart?downMs=${downMs}`, {
    method: 'POST',
  });
  const body = (await res.json()) as { downMs: number; readyMs: number; error?: string };
  if (!res.ok) throw new Error(`envtest: restart failed (${res.status}): ${body.error}`);
  return body;
}
