// LauncherReady with KubeVirt present, against a real kube-apiserver: a KubeVirt CR, virt-controller
// and the launcher component's status ConfigMap exist as in a cluster, and the operator reports
// what it reads — no Sidecar gate, the stock launcher, the RISC5 launcher patched in (spec §2.1
// shape), a launcher component asking for consent, KubeVirt being deleted — and never writes any of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launcherPass } from '../../operator/src/controllers/launcher-component.ts';
import { launcherPatch } from '../../operator/src/controllers/launcher-plan.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { checkLauncher, type LauncherState } from '../../operator/src/controllers/oberonmachine-launcher.ts';
import { CORE_EVENT } from '../../operator/src/controllers/oberonmachine-observe.ts';
import { ApiError, KubeClient, type ResourceType, resourcePath } from '../../operator/src/runtime/client.ts';
import { freshNamespace, kubeconfigPath } from './harness.ts';
import { CORE, condition, type KubeObject, startOperator, testClient, waitFor } from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

// Test fixture, not KubeVirt's real CRD (that one is large and not vendored here): a minimal
// structural CRD for kubevirts.kubevirt.io whose spec and status keep any field
// (x-kubernetes-preserve-unknown-fields), with the status subresource as the real one has.
// It is enough for what LauncherReady reads: spec.configuration.developerConfiguration.featureGates,
// spec.customizeComponents and status.observedKubeVirtVersion.
const KUBEVIRT_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'kubevirts.kubevirt.io', labels: { 'retrokube.io/test-fixture': 'true' } },
  spec: {
    group: 'kubevirt.io',
    names: { kind: 'KubeVirt', plural: 'kubevirts', singular: 'kubevirt', listKind: 'KubeVirtList' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

const KV_VERSION = 'v1.8.4';
const STOCK = `quay.io/kubevirt/virt-launcher:${KV_VERSION}`;
// As the launcher table pins it: the family tag and the digest.
const PALEO = `ghcr.io/tym83/paleocomputing/virt-launcher:${KV_VERSION}-paleo-0.1.16@sha256:${'ab'.repeat(32)}`;
const merge = { contentType: 'application/merge-patch+json' };
/** The cluster admin's field manager, so managedFields show who wrote what (our client is "retrokube"). */
const ADMIN = { fieldManager: 'kubevirt-admin' };

/** The admin's writes: create, merge patch (optionally of a subresource), replace. */
const admin = {
  create: (k: KubeClient, t: ResourceType, obj: KubeObject) =>
    k.request<KubeObject>('POST', resourcePath(t, obj.metadata.namespace), { body: obj, query: ADMIN }),
  patch: (k: KubeClient, t: ResourceType, ns: string, name: string, body: unknown, sub?: string) =>
    k.request<KubeObject>('PATCH', resourcePath(t, ns, name, sub), { body, ...merge, query: ADMIN }),
  replace: (k: KubeClient, t: ResourceType, obj: KubeObject) =>
    k.request<KubeObject>('PUT', resourcePath(t, obj.metadata.namespace, obj.metadata.name), {
      body: obj,
      query: ADMIN,
    }),
};

async function installKubeVirtCrd(k: KubeClient): Promise<void> {
  await k.create(CORE.crd, KUBEVIRT_CRD as unknown as KubeObject).catch((err) => {
    if (!(err instanceof ApiError && err.status === 409)) throw err;
  });
  await waitFor('the KubeVirt CRD Established', async () => {
    const crd: Deep = await k.get(CORE.crd, undefined, 'kubevirts.kubevirt.io');
    return crd.status?.conditions?.some((c: Deep) => c.type === 'Established' && c.status === 'True');
  });
  // Served: a list answers (the discovery of a new group can lag the condition a little).
  await waitFor('kubevirts served', async () => !!(await k.list(KINDS_OWNED.kubevirt)));
}

/** Removes every KubeVirt CR and the CRD, so later files see a cluster without KubeVirt again. */
async function removeKubeVirt(k: KubeClient): Promise<void> {
  const list = await k.list(KINDS_OWNED.kubevirt).catch(() => ({ items: [] as KubeObject[] }));
  for (const kv of list.items)
    await k.delete(KINDS_OWNED.kubevirt, kv.metadata.namespace, kv.metadata.name as string).catch(() => {});
  await k.delete(CORE.crd, undefined, 'kubevirts.kubevirt.io').catch(() => {});
  await waitFor(
    'the KubeVirt CRD gone',
    async () => !(await k.getOrUndefined(CORE.crd, undefined, 'kubevirts.kubevirt.io')),
    60_000,
  );
}

/** The KubeVirt CR as the cluster admin (or Cozystack) wrote it, with its observed version. */
async function kubeVirtCr(k: KubeClient, ns: string, spec: Record<string, unknown>): Promise<KubeObject> {
  await admin.create(k, KINDS_OWNED.kubevirt, {
    apiVersion: 'kubevirt.io/v1',
    kind: 'KubeVirt',
    metadata: { name: 'kubevirt', namespace: ns },
    spec,
  } as KubeObject);
  return admin.patch(
    k,
    KINDS_OWNED.kubevirt,
    ns,
    'kubevirt',
    { status: { phase: 'Deployed', observedKubeVirtVersion: KV_VERSION } },
    'status',
  );
}

/** virt-controller as KubeVirt's operator deploys it: args[0] --launcher-image, args[1] the image. */
function virtController(ns: string, launcher: string): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'virt-controller', namespace: ns, labels: { 'kubevirt.io': 'virt-controller' } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'kubevirt.io': 'virt-controller' } },
      template: {
        metadata: { labels: { 'kubevirt.io': 'virt-controller' } },
        spec: {
          containers: [
            {
              name: 'virt-controller',
              image: `quay.io/kubevirt/virt-controller:${KV_VERSION}`,
              args: [
                '--launcher-image',
                launcher,
                '--exporter-image',
                `quay.io/kubevirt/virt-exportserver:${KV_VERSION}`,
              ],
            },
          ],
        },
      },
    },
  } as KubeObject;
}

/** What KubeVirt's operator does with the patch entry: virt-controller's args[1] becomes `image`. */
async function useLauncher(k: KubeClient, ns: string, image: string): Promise<void> {
  const dep: Deep = await k.get(CORE.deployment, ns, 'virt-controller');
  dep.spec.template.spec.containers[0].args[1] = image;
  await admin.replace(k, CORE.deployment, dep);
}

/** KubeVirt's spec with the Sidecar gate, and the launcher component's one patch entry (§2.1). */
const withSidecar = (extra: Record<string, unknown> = {}) => ({
  configuration: { developerConfiguration: { featureGates: ['Sidecar', 'Snapshot'] } },
  ...extra,
});
const paleoPatch = {
  customizeComponents: {
    patches: [
      {
        resourceType: 'Deployment',
        resourceName: 'virt-controller',
        type: 'json',
        patch: JSON.stringify([
          { op: 'test', path: '/spec/template/spec/containers/0/name', value: 'virt-controller' },
          { op: 'test', path: '/spec/template/spec/containers/0/args/0', value: '--launcher-image' },
          { op: 'replace', path: '/spec/template/spec/containers/0/args/1', value: PALEO },
        ]),
      },
    ],
  },
};

const fingerprint = (o: Deep) => ({
  resourceVersion: o.metadata.resourceVersion,
  managers: o.metadata.managedFields.map((m: Deep) => `${m.manager}/${m.operation}/${m.subresource ?? ''}`),
});

describe('LauncherReady with KubeVirt present (read, never patched)', () => {
  const client = testClient;
  let k: KubeClient;
  beforeAll(async () => {
    k = KubeClient.fromDefault(kubeconfigPath());
    await removeKubeVirt(k); // a clean start even after an interrupted run
    await installKubeVirtCrd(k);
  });
  afterAll(async () => {
    await removeKubeVirt(k);
    k.close();
  });

  it('each outcome: no Sidecar gate, the stock launcher, the RISC5 launcher patched in, a launcher asking for consent, KubeVirt being deleted', async () => {
    const kvNs = await freshNamespace('kubevirt');
    const c = client();
    const check = (): Promise<LauncherState> => checkLauncher(c);

    // A KubeVirt CR without the Sidecar gate.
    await kubeVirtCr(c, kvNs, { configuration: { developerConfiguration: { featureGates: ['Snapshot'] } } });
    await admin.create(c, CORE.deployment, virtController(kvNs, STOCK));
    expect(await check()).toMatchObject({ ready: false, reason: 'SidecarGateMissing' });
    expect((await check()).message).toMatch(/Sidecar feature gate/);

    // The gate, but virt-controller still hands out the stock launcher.
    await admin.patch(c, KINDS_OWNED.kubevirt, kvNs, 'kubevirt', { spec: withSidecar() });
    const stock = await check();
    expect(stock).toMatchObject({ ready: false, reason: 'StockLauncher' });
    expect(stock.message).toContain(STOCK);

    // The launcher component patched virt-controller (KubeVirt's operator applies customizeComponents;
    // played here): args[1] is the RISC5 launcher of the observed version, pinned by digest.
    await admin.patch(c, KINDS_OWNED.kubevirt, kvNs, 'kubevirt', { spec: paleoPatch });
    await useLauncher(c, kvNs, PALEO);
    expect(await check()).toMatchObject({ ready: true, reason: 'LauncherReady' });

    // A launcher image of another KubeVirt version is not trusted.
    await c.request('PATCH', resourcePath(KINDS_OWNED.kubevirt, kvNs, 'kubevirt', 'status'), {
      body: { status: { observedKubeVirtVersion: 'v1.9.0' } },
      ...merge,
    });
    expect(await check()).toMatchObject({ ready: false, reason: 'StockLauncher' });
    await c.request('PATCH', resourcePath(KINDS_OWNED.kubevirt, kvNs, 'kubevirt', 'status'), {
      body: { status: { observedKubeVirtVersion: KV_VERSION } },
      ...merge,
    });

    // The launcher component's own state is surfaced as it is (NeedsConsent, Unsupported, Doubt).
    await c.create(CORE.configMap, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'kubevirt-paleo-launcher-status', namespace: kvNs },
      data: { state: 'NeedsConsent', reason: 'workloadUpdateMethods is not empty' },
    } as KubeObject);
    const consent = await check();
    expect(consent).toMatchObject({ ready: false, reason: 'NeedsConsent' });
    expect(consent.message).toContain('workloadUpdateMethods is not empty');
    await c.mergePatch(CORE.configMap, kvNs, 'kubevirt-paleo-launcher-status', {
      data: { state: 'Applied' },
    });
    expect(await check()).toMatchObject({ ready: true, reason: 'LauncherReady' });

    // KubeVirt being uninstalled (its operator's finalizer holds the CR): no longer trusted.
    await admin.patch(c, KINDS_OWNED.kubevirt, kvNs, 'kubevirt', {
      metadata: { finalizers: ['example.org/uninstalling'] },
    });
    await c.delete(KINDS_OWNED.kubevirt, kvNs, 'kubevirt');
    expect(await check()).toMatchObject({ ready: false, reason: 'KubeVirtDeleting' });
    await admin.patch(c, KINDS_OWNED.kubevirt, kvNs, 'kubevirt', { metadata: { finalizers: null } });
    await waitFor(
      'the KubeVirt CR gone',
      async () => !(await c.getOrUndefined(KINDS_OWNED.kubevirt, kvNs, 'kubevirt')),
    );
  });

  it("the chart's launcher component (launcher.enabled) switches the launcher, and LauncherReady recognises it", async () => {
    const kvNs = await freshNamespace('kubevirt');
    const c = client();
    const OURS = `ghcr.io/retrokube/virt-launcher:${KV_VERSION}-risc5-0.1.0`;
    const theirs = {
      resourceType: 'Deployment',
      resourceName: 'virt-api',
      type: 'strategic',
      patch: '{"metadata":{"labels":{"a":"b"}}}',
    };
    await kubeVirtCr(
      c,
      kvNs,
      withSidecar({
        customizeComponents: { patches: [theirs] },
        workloadUpdateStrategy: { workloadUpdateMethods: ['LiveMigrate', 'Evict'] },
      }),
    );
    await c.request('PATCH', resourcePath(KINDS_OWNED.kubevirt, kvNs, 'kubevirt', 'status'), {
      body: { status: { targetKubeVirtVersion: KV_VERSION } },
      ...merge,
    });
    await admin.create(c, CORE.deployment, virtController(kvNs, STOCK));
    const pass = (allowWorkloadUpdate = false) =>
      launcherPass(c, { namespace: kvNs, table: { [KV_VERSION]: OURS }, allowWorkloadUpdate });
    const patches = async (): Promise<Deep[]> =>
      ((await c.get(KINDS_OWNED.kubevirt, kvNs, 'kubevirt')) as Deep).spec.customizeComponents.patches;

    try {
      // Cozystack's [LiveMigrate, Evict]: switching would move every VM, so it waits for consent.
      expect(await pass()).toMatchObject({ state: 'NeedsConsent', wrote: false });
      expect(await patches()).toEqual([theirs]);
      expect(await checkLauncher(c)).toMatchObject({ ready: false, reason: 'NeedsConsent' });

      // Allowed (the chart's launcher.allowWorkloadUpdate): its one entry joins the others.
      expect(await pass(true)).toMatchObject({ state: 'Applying', wrote: true });
      expect(await patches()).toEqual([theirs, launcherPatch(OURS)]);
      // …and KubeVirt admits our VMs' machine type; the rest of its configuration is kept.
      const conf: Deep = ((await c.get(KINDS_OWNED.kubevirt, kvNs, 'kubevirt')) as Deep).spec.configuration;
      expect(conf.architectureConfiguration.amd64.emulatedMachines).toEqual(['q35*', 'pc-q35*', 'oberon']);
      expect(conf.developerConfiguration.featureGates).toContain('Sidecar');
      expect(await pass(true)).toMatchObject({ state: 'Rolling', wrote: false });
      expect((await checkLauncher(c)).ready).toBe(false);

      // KubeVirt's operator rolls virt-controller out with it (played here): Applied, and steady
      // passes write nothing at all.
      await useLauncher(c, kvNs, OURS);
      expect(await pass(true)).toMatchObject({ state: 'Applied', wrote: false });
      const steady = {
        kv: fingerprint(await c.get(KINDS_OWNED.kubevirt, kvNs, 'kubevirt')),
        cm: fingerprint(await c.get(CORE.configMap, kvNs, 'kubevirt-paleo-launcher-status')),
      };
      await pass(true);
      expect(fingerprint(await c.get(KINDS_OWNED.kubevirt, kvNs, 'kubevirt'))).toEqual(steady.kv);
      expect(fingerprint(await c.get(CORE.configMap, kvNs, 'kubevirt-paleo-launcher-status'))).toEqual(
        steady.cm,
      );
      expect(await checkLauncher(c)).toMatchObject({ ready: true, reason: 'LauncherReady' });
      expect((await checkLauncher(c)).message).toContain(OURS);

      // A KubeVirt upgrade to a version the table lacks: its entry goes, others stay.
      await c.request('PATCH', resourcePath(KINDS_OWNED.kubevirt, kvNs, 'kubevirt', 'status'), {
        body: { status: { observedKubeVirtVersion: 'v1.9.0', targetKubeVirtVersion: 'v1.9.0' } },
        ...merge,
      });
      const dep: Deep = await c.get(CORE.deployment, kvNs, 'virt-controller');
      dep.spec.template.spec.containers[0].image = 'quay.io/kubevirt/virt-controller:v1.9.0';
      await admin.replace(c, CORE.deployment, dep);
      expect(await pass(true)).toMatchObject({ state: 'Unsupported', wrote: true });
      expect(await patches()).toEqual([theirs]);
      expect(await checkLauncher(c)).toMatchObject({ ready: false });
    } finally {
      await c.delete(KINDS_OWNED.kubevirt, kvNs, 'kubevirt');
    }
  });

  it('an OberonMachine reports LauncherReady from the cluster, and the operator never writes the KubeVirt CR or virt-controller', async () => {
    const kvNs = await freshNamespace('kubevirt');
    const c = client();
    await kubeVirtCr(c, kvNs, { configuration: { developerConfiguration: { featureGates: ['Snapshot'] } } });
    await admin.create(c, CORE.deployment, virtController(kvNs, STOCK));

    const machineIn = async (ns: string) => {
      await c.create(OBERONMACHINE, {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonMachine',
        metadata: { name: 'plane', namespace: ns },
        spec: { runtime: 'kubevirt', air: 'lab', role: 'plane', keySecretRef: { name: 'lab-key' } },
      } as KubeObject);
      return waitFor(`LauncherReady on the machine in ${ns}`, async () => {
        const o: Deep = await c.get(OBERONMACHINE, ns, 'plane');
        return condition(o, 'LauncherReady') && o;
      });
    };

    // No Sidecar gate: False with the reason, and the VM is still created (it waits, nothing is patched).
    const ns1 = await freshNamespace('m-launcher');
    await startOperator({ namespace: ns1, kubevirt: true });
    const m1: Deep = await machineIn(ns1);
    expect(condition(m1, 'LauncherReady')).toMatchObject({ status: 'False', reason: 'SidecarGateMissing' });
    expect(condition(m1, 'LauncherReady')?.message).toMatch(/add "Sidecar" to spec\.configuration/);
    await waitFor('the VirtualMachine', () => c.getOrUndefined(KINDS_OWNED.vm, ns1, 'rk-m-plane'));
    // Said once as a Warning Event on the machine too (kubectl describe, kubectl get events).
    const warned: Deep = await waitFor('a SidecarGateMissing Event', async () =>
      ((await c.list(CORE_EVENT, ns1)).items as Deep[]).find(
        (e) => e.involvedObject?.name === 'plane' && e.reason === 'SidecarGateMissing',
      ),
    );
    expect(warned.type).toBe('Warning');
    expect(warned.message).toMatch(/Sidecar feature gate/);

    // The cluster gets the gate and the RISC5 launcher; a machine checked now sees it (each
    // operator looks at the launcher at most once a minute, so a fresh one is started).
    await admin.patch(c, KINDS_OWNED.kubevirt, kvNs, 'kubevirt', {
      spec: { ...withSidecar(), ...paleoPatch },
    });
    await useLauncher(c, kvNs, PALEO);
    const before = {
      kv: fingerprint(await c.get(KINDS_OWNED.kubevirt, kvNs, 'kubevirt')),
      ctrl: fingerprint(await c.get(CORE.deployment, kvNs, 'virt-controller')),
    };
    const ns2 = await freshNamespace('m-launcher');
    await startOperator({ namespace: ns2, kubevirt: true });
    const m2: Deep = await machineIn(ns2);
    expect(condition(m2, 'LauncherReady')).toMatchObject({ status: 'True', reason: 'LauncherReady' });

    // Report, never patch: the KubeVirt CR and virt-controller are as the admin left them.
    await new Promise((r) => setTimeout(r, 1000));
    expect(fingerprint(await c.get(KINDS_OWNED.kubevirt, kvNs, 'kubevirt'))).toEqual(before.kv);
    expect(fingerprint(await c.get(CORE.deployment, kvNs, 'virt-controller'))).toEqual(before.ctrl);
    // Every field of both is the admin's (KubeVirt's operator, in a real cluster); none is retrokube's.
    expect(before.kv.managers.every((m: string) => m.startsWith('kubevirt-admin/'))).toBe(true);
    expect(before.ctrl.managers.every((m: string) => m.startsWith('kubevirt-admin/'))).toBe(true);
    await c.delete(KINDS_OWNED.kubevirt, kvNs, 'kubevirt');
  });
});
