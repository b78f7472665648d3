// The Helm chart, checked with the real helm binary and the real test API server: lint, render
// matrices, values.schema.json refusals, server-side dry-run apply of everything it renders, a real
// install and uninstall, and the NetworkPolicies. Its RBAC is proven in chart-impersonate.test.ts.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiException, ApiextensionsV1Api, AppsV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { OPERATOR_ENV } from '../../operator/src/cli/operator-env.ts';
import { airLabels, render as renderAir, withDefaults } from '../../operator/src/controllers/oberonair.ts';
import {
  machineSettings,
  type OberonMachine,
  renderPod,
} from '../../operator/src/controllers/oberonmachine-render.ts';
import {
  CHART,
  type Deep,
  helm,
  type Manifest,
  only,
  operatorContainer,
  render,
  serverSideApply,
  setArgs,
} from './chart-tools.ts';
import { REPO_ROOT } from './control-plane.ts';
import { adminKubeConfig, freshNamespace, kubeconfigPath } from './harness.ts';

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
