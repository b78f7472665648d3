// The control plane on a real etcd (the operator bench at 1,000 OberonKubes uses it): it serves
// our CRDs, keeps what is written across a kube-apiserver restart (the data is etcd's, not the
// apiserver's), and its apiserver pid is the one a bench pauses.
import { existsSync } from 'node:fs';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { OBERONAIR } from '../../operator/src/controllers/oberonair.ts';
import { CORE, KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import { startControlPlane } from './control-plane.ts';

describe('startControlPlane({ datastore: "etcd" })', () => {
  it('serves our kinds from etcd, keeps them across an apiserver restart, and stops everything', async () => {
    const plane = await startControlPlane({ bins: inject('envtestBins'), datastore: 'etcd' });
    onTestFinished(() => plane.stop());
    expect(plane.datastore).toBe('etcd');
    expect(existsSync(`${plane.dir}/etcd`)).toBe(true);
    const pid = plane.apiServerPid;
    expect(pid).toBeGreaterThan(0);
    const k = KubeClient.fromDefault(plane.kubeconfigPath);
    onTestFinished(() => k.close());
    await k.create(CORE.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'e' } });
    await k.create<KubeObject>(OBERONAIR, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonAir',
      metadata: { name: 'air', namespace: 'e' },
      spec: { loss: 0.5 },
    });
    await plane.restartApiServer();
    expect(plane.apiServerPid).not.toBe(pid);
    const k2 = KubeClient.fromDefault(plane.kubeconfigPath); // the old keep-alive sockets are gone
    onTestFinished(() => k2.close());
    const air = await k2.get<KubeObject & { spec: { loss: number } }>(OBERONAIR, 'e', 'air');
    expect(air.spec.loss).toBe(0.5);
    await plane.stop();
    expect(existsSync(plane.dir)).toBe(false);
  });
});
