// The chart's RBAC, proven by impersonating its ServiceAccount against the real test API server:
// what each controller needs is allowed, Secrets and escalation are not, and namespaced mode
// (operator.watchNamespace) writes only in the watched namespace.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  EventsV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CHART, only, operatorContainer, render, serverSideApply } from './chart-tools.ts';
import { adminKubeConfig, freshNamespace, serviceAccountKubeConfig } from './harness.ts';

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
