// A plane's live channel on a real API server with RBAC: the operator renders the plane pod's
// ServiceAccount and a Role that reads its one deployments ConfigMap; a token of that account (the
// TokenRequest API, as the kubelet projects it) follows the ConfigMap through a watch — an edit
// arrives in seconds — and may read or change nothing else.
import { describe, expect, it } from 'vitest';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { RBAC_TYPES } from '../../operator/src/controllers/oberonmachine-live.ts';
import { watchLiveConfigMap } from '../../operator/src/machine/live-configmap.ts';
import { ApiError, KubeClient } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import { CORE, serviceAccountKubeconfig, startOperator, testClient, waitFor } from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const status = async (p: Promise<unknown>): Promise<number> =>
  p.then(
    () => 200,
    (e) => (e instanceof ApiError ? e.status : Promise.reject(e)),
  );

describe('the live channel of a plane pod (real API server, RBAC)', () => {
  it('runs as its own ServiceAccount that reads and watches its one ConfigMap, nothing else; an edit is heard in seconds', async () => {
    const ns = await freshNamespace('live');
    const k = testClient();
    await startOperator({ namespace: ns });
    await k.create(OBERONMACHINE, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonMachine',
      metadata: { name: 'lab-plane', namespace: ns },
      spec: { role: 'plane', air: 'lab', cluster: 'lab', liveCommandsConfigMap: 'rk-kube-lab-deployments' },
    });
    const sts: Deep = await waitFor('the StatefulSet', () =>
      k.getOrUndefined(KINDS_OWNED.statefulSet, ns, 'rk-m-lab-plane'),
    ).catch(async (e) => {
      throw new Error(
        `${e.message}; machine status ${JSON.stringify((await k.get(OBERONMACHINE, ns, 'lab-plane')).status)}`,
      );
    });
    const pod = sts.spec.template.spec;
    expect([pod.serviceAccountName, pod.automountServiceAccountToken]).toEqual(['rk-m-lab-plane-live', true]);
    const args: string[] = pod.containers[0].args;
    expect(args.slice(args.indexOf('--live-configmap'), args.indexOf('--live-configmap') + 2)).toEqual([
      '--live-configmap',
      `${ns}/rk-kube-lab-deployments`,
    ]);
    expect(args).not.toContain('--live-commands');
    expect((pod.volumes ?? []).filter((v: Deep) => v.configMap)).toEqual([]);
    const role: Deep = await k.get(RBAC_TYPES.role, ns, 'rk-m-lab-plane-live');
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: ['rk-kube-lab-deployments'],
        verbs: ['get', 'list', 'watch'],
      },
    ]);
    expect(role.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'OberonMachine', name: 'lab-plane' });

    // As the pod: a token of its ServiceAccount.
    const work = `/tmp/rk-live-${ns}`;
    const kc = await serviceAccountKubeconfig(k, ns, 'rk-m-lab-plane-live', work);
    const asPod = KubeClient.fromDefault(kc);
    try {
      await k.create(CORE.configMap, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'other', namespace: ns },
        data: { x: 'y' },
      });
      // Least privilege, judged by the API server's RBAC.
      expect(await status(asPod.get(CORE.configMap, ns, 'other'))).toBe(403);
      expect(await status(asPod.list(CORE.configMap, ns))).toBe(403);
      expect(await status(asPod.list(CORE.secret, ns))).toBe(403);
      expect(await status(asPod.get(CORE.configMap, 'default', 'rk-kube-lab-deployments'))).toBe(403);
      // Not there yet: a 404 (allowed to look), not a 403.
      expect(await status(asPod.get(CORE.configMap, ns, 'rk-kube-lab-deployments'))).toBe(404);

      const fed: Array<{ at: number; text: string }> = [];
      const warnings: string[] = [];
      const live = watchLiveConfigMap({
        client: asPod,
        namespace: ns,
        name: 'rk-kube-lab-deployments',
        key: 'deployments',
        feed: (text) => fed.push({ at: Date.now(), text }),
        warn: (m) => warnings.push(m),
      });
      try {
        await waitFor('the missing ConfigMap said once', async () => warnings.length > 0 && warnings);
        expect(warnings[0]).toMatch(/does not exist yet; waiting/);
        await k.create(CORE.configMap, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'rk-kube-lab-deployments', namespace: ns },
          data: { deployments: 'Kube.Hold 1\nKube.Apply web 2 Ticker\n' },
        });
        await waitFor('the first lines fed', async () => fed.length === 1, 10_000);
        expect(fed[0]?.text).toBe('\nKube.Hold 1\nKube.Apply web 2 Ticker\n');
        // An edit: only the changed line is sent, within seconds (not a kubelet sync, ~1 min).
        const t0 = Date.now();
        await k.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/rk-kube-lab-deployments`, {
          body: { data: { deployments: 'Kube.Hold 1\nKube.Apply web 3 Ticker2\n' } },
          contentType: 'application/merge-patch+json',
        });
        await waitFor('the edit fed', async () => fed.length === 2, 10_000);
        expect(fed[1]?.text).toBe('\nKube.Apply web 3 Ticker2\n');
        expect((fed[1]?.at ?? 0) - t0).toBeLessThan(5_000);
        // The channel cannot write back.
        expect(
          await status(
            asPod.request('PATCH', `/api/v1/namespaces/${ns}/configmaps/rk-kube-lab-deployments`, {
              body: { data: { deployments: 'Kube.Apply evil 9 Ticker' } },
              contentType: 'application/merge-patch+json',
            }),
          ),
        ).toBe(403);
        expect(warnings.filter((w) => /not allowed/.test(w))).toEqual([]);
      } finally {
        live.stop();
        await live.done;
      }
    } finally {
      asPod.close();
    }
  }, 120_000);
});
