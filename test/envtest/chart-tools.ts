// Shared by the chart's tests (chart.test.ts, chart-impersonate.test.ts): the real helm and kubectl
// binaries of the test layer, rendering the chart, and server-side apply as our field manager.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { run } from './chart-rbac.ts';
import { REPO_ROOT } from './control-plane.ts';
import { kubeconfigPath, testBins } from './harness.ts';

export const CHART = join(REPO_ROOT, 'charts/retrokube');
// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered API objects freely
export type Deep = any;
const FIELD_MANAGER = 'retrokube-chart-test';

export interface Manifest extends KubernetesObject {
  spec?: Record<string, unknown> & {
    template?: { spec: { securityContext: Record<string, unknown>; containers: Container[] } };
  };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
}
export interface Container {
  image: string;
  args: string[];
  env: { name: string; value?: string }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: Record<string, unknown>;
  securityContext: Record<string, unknown>;
}

export function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(testBins().helm, args);
}

/** kubectl from the helm layer, admin kubeconfig, manifests on stdin. */
export function kubectl(
  args: string[],
  stdin: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    const child = execFile(
      testBins().kubectl,
      ['--kubeconfig', kubeconfigPath(), ...args],
      { maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        ok({ code, stdout, stderr });
      },
    );
    child.stdin?.end(stdin);
  });
}

/** Server-side apply of YAML documents (dry run when asked), as our field manager. */
export function serverSideApply(docs: Manifest[], dryRun: boolean) {
  const yaml = docs.map((d) => `---\n${stringify(d)}`).join('');
  const flags = [
    'apply',
    '--server-side',
    '--force-conflicts',
    `--field-manager=${FIELD_MANAGER}`,
    '-f',
    '-',
  ];
  return kubectl(dryRun ? [...flags, '--dry-run=server'] : flags, yaml);
}

export function setArgs(values: Record<string, string>): string[] {
  return Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
}

export async function render(
  values: Record<string, string> = {},
  opts: { namespace?: string; release?: string; chart?: string } = {},
): Promise<Manifest[]> {
  const r = await helm([
    'template',
    opts.release ?? 'rk',
    opts.chart ?? CHART,
    '--namespace',
    opts.namespace ?? 'retrokube-system',
    ...setArgs(values),
  ]);
  expect(r.stderr, 'helm template stderr').not.toMatch(/Error/);
  expect(r.code).toBe(0);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest | null)
    .filter((m): m is Manifest => m !== null);
}

export function only(ms: Manifest[], kind: string): Manifest {
  const found = ms.filter((m) => m.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

export function operatorContainer(ms: Manifest[]): Container {
  const containers = only(ms, 'Deployment').spec?.template?.spec.containers ?? [];
  expect(containers).toHaveLength(1);
  return containers[0]!;
}
