// The Helm chart, checked with the real helm binary and the real test API server: lint, render
// matrices, values.schema.json refusals, server-side dry-run apply of everything it renders, and
// RBAC by impersonating the chart's ServiceAccount.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  EventsV1Api,
  type KubeConfig,
  type KubernetesObject,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { OPERATOR_ENV } from '../../operator/src/cli/operator-env.ts';
import { airLabels, render as renderAir, withDefaults } from '../../operator/src/controllers/oberonair.ts';
import {
  machineSettings,
  type OberonMachine,
  renderPod,
} from '../../operator/src/controllers/oberonmachine-render.ts';
import { REPO_ROOT } from './control-plane.ts';
import {
  adminKubeConfig,
  freshNamespace,
  kubeconfigPath,
  serviceAccountKubeConfig,
  testBins,
} from './harness.ts';

const CHART = join(REPO_ROOT, 'charts/retrokube');
// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered API objects freely
type Deep = any;
const FIELD_MANAGER = 'retrokube-chart-test';

interface Manifest extends KubernetesObject {
  spec?: Record<string, unknown> & {
    template?: { spec: { securityContext: Record<string, unknown>; containers: Container[] } };
  };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
}
interface Container {
  image: string;
  args: string[];
  env: { name: string; value?: string }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: Record<string, unknown>;
  securityContext: Record<string, unknown>;
}

function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((ok) => {
    execFile(testBins().helm, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      ok({ code, stdout, stderr });
    });
  });
}

/** kubectl from the helm layer, admin kubeconfig, manifests on stdin. */
function kubectl(args: string[], stdin: string): Promise<{ code: number; stdout: string; stderr: string }> {
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
function serverSideApply(docs: Manifest[], dryRun: boolean) {
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

function setArgs(values: Record<string, string>): string[] {
  return Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${v}`]);
}

async function render(
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

function only(ms: Manifest[], kind: string): Manifest {
  const found = ms.filter((m) => m.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

function operatorContainer(ms: Manifest[]): Container {
  const containers = only(ms, 'Deployment').spec?.template?.spec.containers ?? [];
  expect(containers).toHaveLength(1);
  return containers[0]!;
}

const generatedCrdFiles = (() => {
  try {
    return readdirSync(join(CHART, 'files/crds')).filter((f) => f.endsWith('.yaml'));
  } catch {
    return [];
  }
})();

/** A copy of the chart with one extra CRD in files/crds, to prove the CRD template on any input. */
const scratch = mkdtempSync(join(tmpdir(), 'retrokube-chart-'));
const chartWithFixtureCrd = join(scratch, 'retrokube');
cpSync(CHART, chartWithFixtureCrd, { recursive: true });
cpSync(
  join(REPO_ROOT, 'test/fixtures/kubevirt/virtualmachines.kubevirt.io.yaml'),
  join(chartWithFixtureCrd, 'files/crds/zz-fixture-virtualmachines.yaml'),
);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('helm chart charts/retrokube', () => {
  it('passes helm lint --strict with the defaults and with every value matrix', async () => {
    const matrices: Record<string, string>[] = [
      {},
      { 'operator.leaderElection.enabled': 'false' },
      { 'serviceAccount.create': 'false', 'serviceAccount.name': 'preexisting' },
      { 'crds.install': 'false', 'metrics.service.enabled': 'false', replicaCount: '2' },
      { 'image.tag': 'sha256:' + 'a'.repeat(64) },
      { 'kubevirt.enabled': 'true' },
      {
        'launcher.enabled': 'true',
        'launcher.images.v1\\.8\\.4': 'ghcr.io/retrokube/virt-launcher:v1.8.4-risc5-0.1.0',
      },
    ];
    for (const values of matrices) {
      const r = await helm(['lint', '--strict', CHART, ...setArgs(values)]);
      expect(r.code, `${JSON.stringify(values)}: ${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('0 chart(s) failed');
    }
  });

  it('renders the operator Deployment restricted: non-root, read-only root, no capabilities, seccomp, probes, resources', async () => {
    const ms = await render();
    const dep = only(ms, 'Deployment');
    const c = operatorContainer(ms);
    expect(c.args[0]).toBe('operator');
    expect(c.args).toContain('--leader-elect');
    expect(c.args).toContain('--leader-election-namespace=retrokube-system');
    // One image for every role: the relays the operator creates run the operator's own image.
    expect(c.args).toContain(`--air-image=${c.image}`);
    expect(c.image).toBe('ghcr.io/retrokube/retrokube:0.1.0');
    expect(c.ports).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'metrics', containerPort: 8080 }),
        expect.objectContaining({ name: 'health', containerPort: 8081 }),
      ]),
    );
    // The process environment the operator is measured with (operator-env.ts: glibc reads it at start).
    for (const [name, value] of Object.entries(OPERATOR_ENV)) expect(c.env).toContainEqual({ name, value });
    expect(c.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(c.resources).toMatchObject({
      requests: { cpu: '50m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    });
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(dep.spec?.template?.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    // With leader election on, a rolling update is safe (the new pod waits for the Lease).
    expect(dep.spec?.strategy).toBeUndefined();
    const svc = only(ms, 'Service');
    expect(svc.spec?.ports).toEqual([
      { name: 'metrics', port: 8080, targetPort: 'metrics', protocol: 'TCP' },
    ]);
  });

  it('without leader election: Recreate strategy, no --leader-elect, no Lease Role', async () => {
    const ms = await render({ 'operator.leaderElection.enabled': 'false' });
    expect(only(ms, 'Deployment').spec?.strategy).toEqual({ type: 'Recreate' });
    expect(operatorContainer(ms).args).not.toContain('--leader-elect');
    expect(ms.filter((m) => m.kind === 'Role' || m.kind === 'RoleBinding')).toEqual([]);
  });

  it('binds RBAC to an existing ServiceAccount when serviceAccount.create is false', async () => {
    const ms = await render({ 'serviceAccount.create': 'false', 'serviceAccount.name': 'preexisting' });
    expect(ms.filter((m) => m.kind === 'ServiceAccount')).toEqual([]);
    const crb = only(ms, 'ClusterRoleBinding') as Manifest & { subjects: { name: string }[] };
    expect(crb.subjects[0]?.name).toBe('preexisting');
    const r = await helm(['template', 'rk', CHART, '--set', 'serviceAccount.create=false']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('serviceAccount.name is required when serviceAccount.create is false');
  });

  it('renders one CRD per files/crds/*.yaml, annotated helm.sh/resource-policy: keep, and none with crds.install=false', async () => {
    const ms = await render();
    const crds = ms.filter((m) => m.kind === 'CustomResourceDefinition');
    expect(crds).toHaveLength(generatedCrdFiles.length);
    for (const c of crds) expect(c.metadata?.annotations?.['helm.sh/resource-policy']).toBe('keep');
    const withFixture = await render({}, { chart: chartWithFixtureCrd });
    const fixture = withFixture.find((m) => m.metadata?.name === 'virtualmachines.kubevirt.io');
    expect(fixture?.metadata?.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(fixture?.metadata?.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    expect(withFixture.filter((m) => m.kind === 'CustomResourceDefinition')).toHaveLength(
      generatedCrdFiles.length + 1,
    );
    const off = await render({ 'crds.install': 'false' }, { chart: chartWithFixtureCrd });
    expect(off.filter((m) => m.kind === 'CustomResourceDefinition')).toEqual([]);
  });

  it('values.schema.json refuses bad values with a message naming each field', async () => {
    const r = await helm([
      'template',
      'rk',
      CHART,
      ...setArgs({ 'metrics.port': '70000', 'operator.logLevel': 'loud', 'resources.limits.memory': 'lots' }),
      '--set',
      'colour=blue',
    ]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("values don't meet the specifications of the schema");
    expect(r.stderr).toMatch(/\/metrics\/port.*65,?535/);
    expect(r.stderr).toMatch(/\/operator\/logLevel.*one of/);
    expect(r.stderr).toMatch(/\/resources\/limits\/memory/);
    expect(r.stderr).toMatch(/'colour' not allowed/);
    const lint = await helm(['lint', '--strict', CHART, '--set', 'replicaCount=0']);
    expect(lint.code).not.toBe(0);
    expect(`${lint.stdout}${lint.stderr}`).toMatch(/\/replicaCount.*minimum/);
  });

  it('kubevirt.enabled turns the kubevirt runtime on (--kubevirt), off by default; the schema refuses a non-boolean', async () => {
    expect(operatorContainer(await render()).args).not.toContain('--kubevirt');
    expect(operatorContainer(await render({ 'kubevirt.enabled': 'false' })).args).not.toContain('--kubevirt');
    const on = operatorContainer(await render({ 'kubevirt.enabled': 'true' }));
    expect(on.args.filter((a: string) => a === '--kubevirt')).toHaveLength(1);
    expect(on.args[0]).toBe('operator');
    const bad = await helm(['template', 'x', CHART, '--set-string', 'kubevirt.enabled=yes']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/kubevirt\/enabled|kubevirt\.enabled/);
    const typo = await helm(['template', 'x', CHART, '--set', 'kubevirt.enable=true']);
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/'enable' not allowed/);
  });

  it('launcher.enabled installs the launcher component in the KubeVirt namespace: restricted, Recreate, a Role by resource name; off by default', async () => {
    expect((await render()).filter((m) => m.metadata?.name?.endsWith('-launcher'))).toEqual([]);
    const ns = await freshNamespace('chart-kubevirt');
    const image = 'ghcr.io/retrokube/virt-launcher:v1.8.4-risc5-0.1.0';
    const ms = (
      await render({
        'launcher.enabled': 'true',
        'launcher.namespace': ns,
        'launcher.allowWorkloadUpdate': 'true',
        'launcher.images.v1\\.8\\.4': image,
      })
    ).filter((m) => m.metadata?.namespace === ns);
    expect(ms.map((m) => m.kind).sort()).toEqual([
      'ConfigMap',
      'Deployment',
      'Role',
      'RoleBinding',
      'ServiceAccount',
    ]);
    const dep: Deep = only(ms, 'Deployment');
    expect(dep.spec.strategy).toEqual({ type: 'Recreate' });
    expect(dep.spec.replicas).toBe(1);
    const c: Deep = dep.spec.template.spec.containers[0];
    expect(c.args).toEqual([
      'launcher',
      `--namespace=${ns}`,
      '--table=/etc/retrokube/launcher/table',
      '--interval=30',
      '--allow-workload-update',
    ]);
    expect(c.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect((only(ms, 'ConfigMap') as Deep).data.table.trim()).toBe(`v1.8.4 ${image}`);
    // Writes only to the KubeVirt CR and its status ConfigMap, each by name.
    const rules: Deep[] = only(ms, 'Role').rules ?? [];
    for (const r of rules.filter((r) =>
      r.verbs.some((v: string) => ['patch', 'update', 'delete'].includes(v)),
    ))
      expect(r.resourceNames?.length, JSON.stringify(r)).toBe(1);
    expect(rules.flatMap((r) => r.verbs)).not.toContain('delete');
    const applied = await serverSideApply(ms, true);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
  });

  it('every rendered manifest passes a server-side dry-run apply against the real API server', async () => {
    const ns = await freshNamespace('chart-dryrun');
    const ms = await render({ replicaCount: '2' }, { namespace: ns, release: 'dry' });
    expect(ms.length).toBeGreaterThanOrEqual(7);
    const r = await serverSideApply(ms, true);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const m of ms) {
      expect(r.stdout).toContain(`${m.metadata?.name} serverside-applied (server dry run)`);
    }
    // The fixture CRD through the chart's CRD template is accepted too (kept fields intact).
    const fixture = (await render({}, { chart: chartWithFixtureCrd })).filter(
      (m) => m.metadata?.name === 'virtualmachines.kubevirt.io',
    );
    expect(fixture).toHaveLength(1);
    const f = await serverSideApply(fixture, true);
    expect(`${f.stdout}${f.stderr}`).toContain(
      'virtualmachines.kubevirt.io serverside-applied (server dry run)',
    );
    // Dry run means nothing was created.
    const apps = adminKubeConfig().makeApiClient(AppsV1Api);
    expect((await apps.listNamespacedDeployment({ namespace: ns })).items).toEqual([]);
  });

  it('the server-side dry run refuses a broken manifest (the check can fail)', async () => {
    const ns = await freshNamespace('chart-dryrun-bad');
    const dep = only(await render({}, { namespace: ns }), 'Deployment');
    const broken = structuredClone(dep);
    (broken.spec as { replicas: unknown }).replicas = 'two';
    const r = await serverSideApply([broken], true);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('replicas');
  });
});

describe('helm install and uninstall against the real API server', () => {
  it('installs the chart for real, and uninstalling removes the operator but keeps the CRDs', async () => {
    const ns = await freshNamespace('chart-install');
    // A chart copy whose only CRD is a small test kind, so the real CRDs installed by the
    // harness (owned by it) are not touched.
    const dir = mkdtempSync(join(tmpdir(), 'retrokube-chart-install-'));
    try {
      const chart = join(dir, 'retrokube');
      cpSync(CHART, chart, { recursive: true });
      rmSync(join(chart, 'files/crds'), { recursive: true, force: true });
      mkdirSync(join(chart, 'files/crds'));
      const group = `${ns}.envtest.retrokube.io`;
      writeFileSync(
        join(chart, 'files/crds/widgets.yaml'),
        stringify({
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: { name: `widgets.${group}` },
          spec: {
            group,
            scope: 'Namespaced',
            names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
            versions: [
              {
                name: 'v1',
                served: true,
                storage: true,
                schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
              },
            ],
          },
        }),
      );
      const release = ns;
      const kube = ['--kubeconfig', kubeconfigPath(), '--namespace', ns];
      const install = await helm(['install', release, chart, ...kube]);
      expect(install.stderr).not.toMatch(/Error/);
      expect(install.code).toBe(0);
      expect(install.stdout).toContain('STATUS: deployed');

      const apps = adminKubeConfig().makeApiClient(AppsV1Api);
      const dep = await apps.readNamespacedDeployment({ namespace: ns, name: `${release}-retrokube` });
      expect(dep.spec?.template.spec?.containers[0]?.args?.[0]).toBe('operator');
      const ext = adminKubeConfig().makeApiClient(ApiextensionsV1Api);
      const crd = await ext.readCustomResourceDefinition({ name: `widgets.${group}` });
      expect(crd.metadata?.annotations?.['helm.sh/resource-policy']).toBe('keep');

      const uninstall = await helm(['uninstall', release, ...kube]);
      expect(uninstall.code).toBe(0);
      const gone = await apps.readNamespacedDeployment({ namespace: ns, name: `${release}-retrokube` }).then(
        () => 200,
        (e: unknown) => (e instanceof ApiException ? e.code : 0),
      );
      expect(gone).toBe(404);
      const rbac = adminKubeConfig().makeApiClient(RbacAuthorizationV1Api);
      const roleGone = await rbac.readClusterRole({ name: `${release}-retrokube` }).then(
        () => 200,
        (e: unknown) => (e instanceof ApiException ? e.code : 0),
      );
      expect(roleGone).toBe(404);
      // The CRD (and so every user's resource of that kind) survives the uninstall.
      const kept = await ext.readCustomResourceDefinition({ name: `widgets.${group}` });
      expect(kept.metadata?.uid).toBe(crd.metadata?.uid);
      await ext.deleteCustomResourceDefinition({ name: `widgets.${group}` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('RBAC of the chart, impersonating its ServiceAccount', () => {
  async function installRbac(): Promise<{ ns: string; other: string; sa: KubeConfig; user: string }> {
    const ns = await freshNamespace('chart-rbac');
    const other = await freshNamespace('chart-rbac-other');
    const release = ns; // cluster-scoped names (ClusterRole) stay unique per test
    const ms = await render({}, { namespace: ns, release });
    const rbacKinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
    const applied = await serverSideApply(
      ms.filter((x) => rbacKinds.includes(x.kind ?? '')),
      false,
    );
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    const saName = only(ms, 'ServiceAccount').metadata?.name ?? '';
    return {
      ns,
      other,
      sa: serviceAccountKubeConfig(ns, saName),
      user: `system:serviceaccount:${ns}:${saName}`,
    };
  }

  async function can(
    kc: KubeConfig,
    a: { verb: string; group?: string; resource: string; subresource?: string; namespace?: string },
  ): Promise<boolean> {
    const authz = kc.makeApiClient(AuthorizationV1Api);
    const review = await authz.createSelfSubjectAccessReview({
      body: {
        spec: {
          resourceAttributes: {
            verb: a.verb,
            group: a.group ?? '',
            resource: a.resource,
            subresource: a.subresource,
            namespace: a.namespace,
          },
        },
      },
    });
    return review.status?.allowed === true;
  }

  async function code(p: Promise<unknown>): Promise<number> {
    try {
      await p;
      return 200;
    } catch (err) {
      if (err instanceof ApiException) return err.code;
      throw err;
    }
  }

  it('the operator can do what the OberonMachine and OberonKube controllers need, and only create Secrets', async () => {
    const { other, sa } = await installRbac();
    type Need = { verb: string; group?: string; resource: string; subresource?: string };
    const child = (group: string, resource: string): Need[] =>
      ['get', 'list', 'watch', 'create', 'patch', 'delete'].map((verb) => ({ verb, group, resource }));
    const needs: Need[] = [
      ...['oberonmachines', 'oberonkubes'].flatMap((resource) => [
        ...['get', 'list', 'watch'].map((verb) => ({ verb, group: 'retrokube.io', resource })),
        { verb: 'patch', group: 'retrokube.io', resource, subresource: 'status' },
      ]),
      ...child('retrokube.io', 'oberonmachines'),
      ...['create', 'patch'].map((verb) => ({ verb, group: 'retrokube.io', resource: 'oberonairs' })),
      ...child('apps', 'statefulsets'),
      ...child('', 'persistentvolumeclaims'),
      ...child('', 'configmaps'),
      ...child('batch', 'jobs'),
      ...child('kubevirt.io', 'virtualmachines'),
      {
        verb: 'update',
        group: 'subresources.kubevirt.io',
        resource: 'virtualmachines',
        subresource: 'restart',
      },
      ...['get', 'list'].map((verb) => ({ verb, group: 'kubevirt.io', resource: 'kubevirts' })),
      // A kubevirt plane's live deployments: which VMI runs, and its serial console.
      { verb: 'get', group: 'kubevirt.io', resource: 'virtualmachineinstances' },
      {
        verb: 'get',
        group: 'subresources.kubevirt.io',
        resource: 'virtualmachineinstances',
        subresource: 'console',
      },
      { verb: 'create', resource: 'secrets' },
      // Machine status: its pod's/VM's Events and its relay's EndpointSlices, read-only.
      ...['list', 'watch'].map((verb) => ({ verb, resource: 'events' })),
      ...['list', 'watch'].map((verb) => ({ verb, group: 'discovery.k8s.io', resource: 'endpointslices' })),
    ];
    for (const n of needs) {
      expect(
        await can(sa, { ...n, namespace: other }),
        `${n.verb} ${n.group ?? ''}/${n.resource} in ${other}`,
      ).toBe(true);
    }
    // Never: reading Secrets, patching KubeVirt, deleting airs (the garbage collector does).
    const never: Need[] = [
      ...['get', 'list', 'watch', 'patch', 'update', 'delete'].map((verb) => ({ verb, resource: 'secrets' })),
      ...['patch', 'update', 'create', 'delete'].map((verb) => ({
        verb,
        group: 'kubevirt.io',
        resource: 'kubevirts',
      })),
      { verb: 'delete', group: 'retrokube.io', resource: 'oberonairs' },
      // The console only: no VNC, no changes to a VMI.
      ...['update', 'patch', 'delete', 'list'].map((verb) => ({
        verb,
        group: 'kubevirt.io',
        resource: 'virtualmachineinstances',
      })),
      {
        verb: 'get',
        group: 'subresources.kubevirt.io',
        resource: 'virtualmachineinstances',
        subresource: 'vnc',
      },
    ];
    for (const n of never) {
      expect(await can(sa, { ...n, namespace: other }), `${n.verb} ${n.group ?? ''}/${n.resource}`).toBe(
        false,
      );
    }
  });

  it('the operator can do what the Rollout controller needs: read SheetClusters, switch a federation, never a Secret', async () => {
    const { other, sa } = await installRbac();
    type Need = { verb: string; group?: string; resource: string; subresource?: string };
    const g = 'retrokube.io';
    const needs: Need[] = [
      ...['get', 'list', 'watch'].map((verb) => ({ verb, group: g, resource: 'rollouts' })),
      { verb: 'patch', group: g, resource: 'rollouts', subresource: 'status' },
      ...['get', 'list', 'watch', 'patch'].map((verb) => ({ verb, group: g, resource: 'oberonkubes' })),
      ...['get', 'list', 'watch'].map((verb) => ({ verb, group: g, resource: 'sheetclusters' })),
      // blue/green over a federation writes its spec.active
      ...['get', 'list', 'watch', 'patch'].map((verb) => ({ verb, group: g, resource: 'sheetfederations' })),
    ];
    for (const n of needs)
      expect(await can(sa, { ...n, namespace: other }), `${n.verb} ${n.group ?? ''}/${n.resource}`).toBe(
        true,
      );
    // A SheetCluster is changed through its apiserver's contract with derived keys: the operator
    // never writes one, and reads no Secret to reach it.
    const never: Need[] = [
      ...['patch', 'update', 'delete'].map((verb) => ({ verb, group: g, resource: 'sheetclusters' })),
      ...['update', 'delete', 'create'].map((verb) => ({ verb, group: g, resource: 'sheetfederations' })),
      ...['get', 'list', 'watch'].map((verb) => ({ verb, resource: 'secrets' })),
      ...['patch', 'update', 'delete', 'create'].map((verb) => ({ verb, group: g, resource: 'rollouts' })),
    ];
    for (const n of never)
      expect(await can(sa, { ...n, namespace: other }), `${n.verb} ${n.group ?? ''}/${n.resource}`).toBe(
        false,
      );
  });

  it('the operator can do what the OberonAir controller needs, in any namespace', async () => {
    const { ns, other, sa } = await installRbac();
    type Need = { verb: string; group?: string; resource: string; subresource?: string };
    const needs: Need[] = [
      ...['get', 'list', 'watch'].map((verb) => ({ verb, group: 'retrokube.io', resource: 'oberonairs' })),
      ...['get', 'patch'].map((verb) => ({
        verb,
        group: 'retrokube.io',
        resource: 'oberonairs',
        subresource: 'status',
      })),
      { verb: 'update', group: 'retrokube.io', resource: 'oberonairs', subresource: 'finalizers' },
      ...['get', 'list', 'watch', 'create', 'patch', 'delete'].map((verb) => ({
        verb,
        group: 'apps',
        resource: 'deployments',
      })),
      ...['get', 'list', 'watch', 'create', 'patch', 'delete'].map((verb) => ({
        verb,
        resource: 'services',
      })),
      ...['create', 'patch'].map((verb) => ({ verb, group: 'events.k8s.io', resource: 'events' })),
    ];
    for (const n of needs) {
      // Cluster-wide (namespace unset) covers list/watch across namespaces; `other` is a random one.
      expect(await can(sa, n), `${n.verb} ${n.group ?? ''}/${n.resource} cluster-wide`).toBe(true);
      expect(await can(sa, { ...n, namespace: other }), `${n.verb} ${n.resource} in ${other}`).toBe(true);
    }

    // The same, for real: create children and an Event in a namespace that is not the release's.
    const apps = sa.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace: other,
      body: {
        metadata: { name: 'relay' },
        spec: {
          selector: { matchLabels: { app: 'relay' } },
          template: {
            metadata: { labels: { app: 'relay' } },
            spec: { containers: [{ name: 'relay', image: 'retrokube:test' }] },
          },
        },
      },
    });
    const core = sa.makeApiClient(CoreV1Api);
    await core.createNamespacedService({
      namespace: other,
      body: { metadata: { name: 'relay' }, spec: { ports: [{ port: 7524, protocol: 'UDP' }] } },
    });
    expect((await apps.listDeploymentForAllNamespaces()).items.map((d) => d.metadata?.name)).toContain(
      'relay',
    );
    await sa.makeApiClient(EventsV1Api).createNamespacedEvent({
      namespace: other,
      body: {
        metadata: { generateName: 'relay-' },
        eventTime: new Date().toISOString().replace('Z', '000Z') as unknown as Date,
        reportingController: 'retrokube.io/operator',
        reportingInstance: 'test',
        action: 'Reconcile',
        reason: 'Created',
        type: 'Normal',
        note: 'created the relay',
        regarding: { kind: 'Deployment', apiVersion: 'apps/v1', name: 'relay', namespace: other },
      },
    });

    // Leader election: a Lease in the release namespace only.
    const leases = sa.makeApiClient(CoordinationV1Api);
    const lease = await leases.createNamespacedLease({
      namespace: ns,
      body: {
        metadata: { name: 'retrokube-operator' },
        spec: { holderIdentity: 'a', leaseDurationSeconds: 15 },
      },
    });
    await leases.replaceNamespacedLease({
      namespace: ns,
      name: 'retrokube-operator',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } },
    });
    expect(
      (await leases.readNamespacedLease({ namespace: ns, name: 'retrokube-operator' })).spec?.holderIdentity,
    ).toBe('b');
    expect(
      await code(
        leases.createNamespacedLease({
          namespace: other,
          body: { metadata: { name: 'elsewhere' }, spec: {} },
        }),
      ),
    ).toBe(403);
  });

  it('the operator cannot read Secrets or Pods, nor grant itself more (no escalation)', async () => {
    const { ns, other, sa, user } = await installRbac();
    const admin = adminKubeConfig().makeApiClient(CoreV1Api);
    await admin.createNamespacedSecret({
      namespace: other,
      body: { metadata: { name: 'db' }, stringData: { pw: 'x' } },
    });
    const core = sa.makeApiClient(CoreV1Api);

    expect(await code(core.listSecretForAllNamespaces())).toBe(403);
    expect(await code(core.listNamespacedSecret({ namespace: other }))).toBe(403);
    expect(await code(core.readNamespacedSecret({ namespace: other, name: 'db' }))).toBe(403);
    expect(await code(core.listNamespacedSecret({ namespace: ns }))).toBe(403);
    expect(await code(core.listPodForAllNamespaces())).toBe(403);
    expect(await code(core.listNamespacedPod({ namespace: other }))).toBe(403);
    for (const verb of ['get', 'list', 'watch']) {
      expect(await can(sa, { verb, resource: 'secrets' }), `${verb} secrets`).toBe(false);
    }
    expect(await can(sa, { verb: 'delete', group: 'retrokube.io', resource: 'oberonairs' })).toBe(false);
    expect(
      await can(sa, { verb: 'create', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions' }),
    ).toBe(false);

    // No RBAC verbs at all: it can neither bind cluster-admin nor write itself a Role.
    const rbac = sa.makeApiClient(RbacAuthorizationV1Api);
    const bind = await code(
      rbac.createClusterRoleBinding({
        body: {
          metadata: { name: `${ns}-escalate` },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
          subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
        },
      }),
    );
    expect(bind).toBe(403);
    const role = await code(
      rbac.createNamespacedRole({
        namespace: ns,
        body: {
          metadata: { name: 'read-secrets' },
          rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }],
        },
      }),
    );
    expect(role).toBe(403);
    for (const verb of ['bind', 'escalate']) {
      expect(await can(sa, { verb, group: 'rbac.authorization.k8s.io', resource: 'clusterroles' })).toBe(
        false,
      );
    }
    expect(await can(sa, { verb: 'impersonate', resource: 'users' })).toBe(false);
    expect(
      await can(sa, { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: ns }),
    ).toBe(false);
  });

  it('the chart grants files/rbac-rules.yaml cluster-wide except Leases (release namespace only), no wildcards', async () => {
    const ms = await render();
    const cr = only(ms, 'ClusterRole');
    const fromFile = parseAllDocuments(
      readFileSync(join(CHART, 'files/rbac-rules.yaml'), 'utf8'),
    )[0]?.toJS() as {
      apiGroups: string[];
      resources: string[];
    }[];
    const leaseOnly = (r: { apiGroups: string[]; resources: string[] }) =>
      r.apiGroups.join() === 'coordination.k8s.io' && r.resources.join() === 'leases';
    expect(cr.rules).toEqual(fromFile.filter((r) => !leaseOnly(r)));
    expect(cr.rules?.some((r) => r.resources.includes('leases'))).toBe(false);
    const role = ms.find((m) => m.kind === 'Role');
    expect(role?.metadata?.namespace).toBe('retrokube-system');
    expect(role?.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
    ]);
    for (const r of cr.rules ?? []) {
      expect(r.verbs).not.toContain('*');
      expect(r.resources).not.toContain('*');
      expect(r.apiGroups).not.toContain('*');
      // Secrets: create only (the generated cluster key); never get, list or watch.
      if (r.resources.includes('secrets')) expect(r.verbs).toEqual(['create']);
    }
  });
});

describe('#17.8 namespaced mode (operator.watchNamespace), impersonating the ServiceAccount', () => {
  it('the operator gets a Role in the watched namespace only: it writes there, nowhere else, and nothing cluster-wide but KubeVirt reads', async () => {
    const release = await freshNamespace('chart-ns-rel');
    const watched = await freshNamespace('chart-ns-watch');
    const other = await freshNamespace('chart-ns-other');
    const ms = await render({ 'operator.watchNamespace': watched }, { namespace: release, release });
    expect(operatorContainer(ms).args).toContain(`--namespace=${watched}`);
    // Cluster-wide: one read-only ClusterRole (the KubeVirt CR), no writes of any kind.
    const clusterRoles = ms.filter((m) => m.kind === 'ClusterRole');
    expect(clusterRoles).toHaveLength(1);
    for (const r of clusterRoles[0]?.rules ?? [])
      expect(r.verbs.every((v) => v === 'get' || v === 'list')).toBe(true);
    const roles = ms.filter((m) => m.kind === 'Role');
    expect(roles.map((r) => r.metadata?.namespace).sort()).toEqual([release, watched].sort());

    const rbacKinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
    const applied = await serverSideApply(
      ms.filter((x) => rbacKinds.includes(x.kind ?? '')),
      false,
    );
    expect(applied.stderr).toBe('');
    const saName = only(ms, 'ServiceAccount').metadata?.name ?? '';
    const sa = serviceAccountKubeConfig(release, saName);
    const authz = sa.makeApiClient(AuthorizationV1Api);
    const can = async (verb: string, group: string, resource: string, namespace?: string) =>
      (
        await authz.createSelfSubjectAccessReview({
          body: { spec: { resourceAttributes: { verb, group, resource, namespace } } },
        })
      ).status?.allowed === true;
    const writes: [string, string][] = [
      ['apps', 'statefulsets'],
      ['apps', 'deployments'],
      ['batch', 'jobs'],
      ['', 'services'],
      ['', 'configmaps'],
      ['', 'persistentvolumeclaims'],
      ['retrokube.io', 'oberonmachines'],
    ];
    for (const [group, resource] of writes) {
      for (const verb of ['create', 'update', 'patch', 'delete']) {
        expect(
          await can(verb, group, resource, watched),
          `${verb} ${resource} in the watched namespace`,
        ).toBe(true);
        expect(await can(verb, group, resource, other), `${verb} ${resource} in another namespace`).toBe(
          false,
        );
        expect(await can(verb, group, resource), `${verb} ${resource} cluster-wide`).toBe(false);
      }
    }
    expect(await can('watch', 'retrokube.io', 'oberonkubes', watched)).toBe(true);
    expect(await can('watch', 'retrokube.io', 'oberonkubes', other)).toBe(false);
    expect(await can('get', '', 'secrets', watched)).toBe(false); // create only, as cluster-wide
    expect(await can('create', '', 'secrets', other)).toBe(false);
    expect(await can('list', 'kubevirt.io', 'kubevirts')).toBe(true);
  });
});

describe('#17.4 NetworkPolicies for machines and air relays', () => {
  it('machines take no connection, relays take the air only from machines of an air and the operator; the API server accepts them', async () => {
    const ns = await freshNamespace('chart-netpol');
    const ms = await render({ 'networkPolicy.namespaces[0]': ns }, { namespace: 'retrokube-system' });
    const pols = ms.filter((m) => m.kind === 'NetworkPolicy') as (Manifest & { spec: Deep })[];
    expect(pols.map((p) => p.metadata?.namespace)).toEqual([ns, ns]);
    const machines = pols.find((p) => p.metadata?.name?.endsWith('-machines'))!;
    const relays = pols.find((p) => p.metadata?.name?.endsWith('-air-relays'))!;
    // The selectors are the labels the operator puts on its pods.
    const m: OberonMachine = {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonMachine',
      metadata: { name: 'x', namespace: ns, uid: 'u' },
      spec: { air: 'lab' },
    };
    const podLabels = (renderPod(m, machineSettings(m), 'img').statefulSet.spec as Deep).template.metadata
      .labels;
    expect(podLabels).toMatchObject(machines.spec.podSelector.matchLabels);
    expect(machines.spec).toMatchObject({ policyTypes: ['Ingress'], ingress: [] });
    const air = {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonAir',
      metadata: { name: 'lab', namespace: ns, uid: 'a' },
    };
    expect(airLabels(air)).toMatchObject(relays.spec.podSelector.matchLabels);
    const [fromAir, metrics] = relays.spec.ingress;
    expect(fromAir.ports).toEqual([{ port: 'air', protocol: 'UDP' }]);
    expect(podLabels[fromAir.from[0].podSelector.matchExpressions[0].key]).toBe('lab');
    expect(fromAir.from[1].namespaceSelector.matchLabels).toEqual({
      'kubernetes.io/metadata.name': 'retrokube-system',
    });
    expect(metrics.ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
    // Named ports exist on the pods the operator renders.
    const relayPorts = (
      renderAir(air, withDefaults({}, 'img')).deployment.spec as Deep
    ).template.spec.containers[0].ports.map((p: { name: string }) => p.name);
    expect(relayPorts).toEqual(expect.arrayContaining(['air', 'metrics']));
    const applied = await serverSideApply(pols, true);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    // Namespaced mode protects the watched namespace without a list.
    const nsMode = await render({ 'operator.watchNamespace': ns });
    expect(nsMode.filter((x) => x.kind === 'NetworkPolicy').map((p) => p.metadata?.namespace)).toEqual([
      ns,
      ns,
    ]);
  });
});
