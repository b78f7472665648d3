// The chart's RBAC in the test API server (rendered by helm, as a release named after the
// namespace), for tests that run the operator as its ServiceAccount, and a small process runner.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { expect, onTestFinished } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { KubeClient, KubeObject, ResourceType } from '../../operator/src/runtime/client.ts';
import { REPO_ROOT } from './control-plane.ts';
import { testBins } from './harness.ts';

const RBAC_TYPES: Record<string, ResourceType> = {
  ServiceAccount: {
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
  },
  ClusterRole: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    kind: 'ClusterRole',
    namespaced: false,
  },
  ClusterRoleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterrolebindings',
    kind: 'ClusterRoleBinding',
    namespaced: false,
  },
  Role: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'roles',
    kind: 'Role',
    namespaced: true,
  },
  RoleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    kind: 'RoleBinding',
    namespaced: true,
  },
};

export function run(bin: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(bin, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      ok({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** Installs the chart's RBAC (rendered by helm, release = namespace); returns the ServiceAccount's name. */
export async function installChartRbac(k: KubeClient, ns: string): Promise<string> {
  const r = await run(testBins().helm, [
    'template',
    ns,
    join(REPO_ROOT, 'charts/retrokube'),
    '--namespace',
    ns,
  ]);
  expect(r.code, r.stderr).toBe(0);
  const docs = parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((d): d is KubeObject => !!d && !!RBAC_TYPES[d.kind ?? '']);
  for (const d of docs) {
    const type = RBAC_TYPES[d.kind as string] as ResourceType;
    await k.apply(type, d, 'retrokube-envtest');
    if (!type.namespaced)
      onTestFinished(async () => {
        await k.delete(type, undefined, d.metadata.name as string).catch(() => undefined);
      });
  }
  const sa = docs.find((d) => d.kind === 'ServiceAccount');
  expect(sa).toBeDefined();
  return sa?.metadata.name as string;
}
