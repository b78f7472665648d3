// Proves the envtest harness itself: a real kube-apiserver on kine with token auth, RBAC,
// the KubeVirt VirtualMachine CRD schema enforced, impersonation and a mid-test restart.
import { readFileSync } from 'node:fs';
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { crdFiles } from './control-plane.ts';
import {
  adminKubeConfig,
  freshNamespace,
  restartApiServer,
  serviceAccountKubeConfig,
  serviceAccountUser,
} from './harness.ts';

function vm(name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name }, spec };
}

const validVmSpec = {
  runStrategy: 'Halted',
  template: {
    spec: {
      domain: { devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] }, memory: { guest: '64Mi' } },
      volumes: [{ name: 'root', containerDisk: { image: 'quay.io/kubevirt/cirros-container-disk-demo' } }],
    },
  },
};

async function statusOf(p: Promise<unknown>): Promise<{ code: number; body: string }> {
  try {
    await p;
    return { code: 200, body: '' };
  } catch (err) {
    if (err instanceof ApiException) return { code: err.code, body: String(err.body) };
    throw err;
  }
}

describe('envtest harness', () => {
  it('serves a real API server: an admin creates and reads back a ConfigMap in a fresh namespace', async () => {
    const ns = await freshNamespace('harness-cm');
    const core = adminKubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'greeting' }, data: { hello: 'oberon' } },
    });
    const cm = await core.readNamespacedConfigMap({ namespace: ns, name: 'greeting' });
    expect(cm.data).toEqual({ hello: 'oberon' });
    expect(cm.metadata?.resourceVersion).toMatch(/^\d+$/);
  });

  it('installed every CRD of crds/ and the KubeVirt VirtualMachine CRD, all Established', async () => {
    const ext = adminKubeConfig().makeApiClient(ApiextensionsV1Api);
    const expected = crdFiles().flatMap((f) =>
      parseAllDocuments(readFileSync(f, 'utf8'))
        .map((d) => (d.toJS() as { metadata?: { name?: string } } | null)?.metadata?.name)
        .filter((n): n is string => Boolean(n)),
    );
    expect(expected).toContain('virtualmachines.kubevirt.io');
    for (const name of expected) {
      const crd = await ext.readCustomResourceDefinition({ name });
      expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status, name).toBe('True');
    }
  });

  it('accepts a valid KubeVirt VirtualMachine and refuses one that breaks its schema, naming the field', async () => {
    const ns = await freshNamespace('harness-vm');
    const custom = adminKubeConfig().makeApiClient(CustomObjectsApi);
    const target = { group: 'kubevirt.io', version: 'v1', namespace: ns, plural: 'virtualmachines' };
    const created = (await custom.createNamespacedCustomObject({
      ...target,
      body: vm('good', validVmSpec),
    })) as {
      spec: typeof validVmSpec;
    };
    expect(created.spec.template.spec.volumes[0]?.containerDisk.image).toContain('cirros');

    // spec.template is required by the v1.8.4 schema.
    const noTemplate = await statusOf(
      custom.createNamespacedCustomObject({ ...target, body: vm('no-template', { runStrategy: 'Always' }) }),
    );
    expect(noTemplate.code).toBe(422);
    expect(noTemplate.body).toContain('spec.template');

    // A disk without a name breaks `required: [name]` deep inside the template.
    const badDisk = structuredClone(validVmSpec) as { template: { spec: { domain: { devices: unknown } } } };
    badDisk.template.spec.domain.devices = { disks: [{ disk: { bus: 'virtio' } }] };
    const refused = await statusOf(
      custom.createNamespacedCustomObject({ ...target, body: vm('bad-disk', badDisk) }),
    );
    expect(refused.code).toBe(422);
    expect(refused.body).toContain('spec.template.spec.domain.devices.disks[0].name');
  });

  it('impersonates a ServiceAccount: RBAC refuses it until a Role grants the verb', async () => {
    const ns = await freshNamespace('harness-rbac');
    const sa = serviceAccountKubeConfig(ns, 'robot').makeApiClient(CoreV1Api);
    const before = await statusOf(sa.listNamespacedConfigMap({ namespace: ns }));
    expect(before.code).toBe(403);
    expect(before.body).toContain(serviceAccountUser(ns, 'robot'));

    const rbac = adminKubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: {
        metadata: { name: 'read-cm' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'read-cm' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-cm' },
        subjects: [{ kind: 'ServiceAccount', name: 'robot', namespace: ns }],
      },
    });
    // RBAC changes reach the authorizer through its informer cache: poll briefly.
    await expect
      .poll(async () => (await statusOf(sa.listNamespacedConfigMap({ namespace: ns }))).code)
      .toBe(200);
    expect((await statusOf(sa.listNamespacedSecret({ namespace: ns }))).code).toBe(403);
  });

  it('restarts kube-apiserver mid-test on the same port: requests fail while down, data survives', async () => {
    const ns = await freshNamespace('harness-restart');
    const core = adminKubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'before' }, data: { a: '1' } },
    });

    const restart = restartApiServer(1_500);
    // While it is down the same client gets connection errors, not answers.
    await new Promise((r) => setTimeout(r, 700));
    await expect(core.readNamespacedConfigMap({ namespace: ns, name: 'before' })).rejects.toThrow();
    const r = await restart;
    expect(r.downMs).toBeGreaterThanOrEqual(1_500);

    const back = await core.readNamespacedConfigMap({ namespace: ns, name: 'before' });
    expect(back.data).toEqual({ a: '1' });
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after' } } });
    const list = await core.listNamespacedConfigMap({ namespace: ns });
    // No controller-manager runs, so nothing else (e.g. kube-root-ca.crt) appears in the namespace.
    expect(list.items.map((c) => c.metadata?.name).sort()).toEqual(['after', 'before']);
  });
});
