import { describe, expect, it } from 'vitest';
import { kubeSettings, type OberonKube, renderKube } from '../controllers/oberonkube-render.ts';
import {
  machineSettings,
  type OberonMachine,
  renderKubeVirt,
  renderPod,
} from '../controllers/oberonmachine-render.ts';
import { renderSheetCluster, sheetSettings } from '../controllers/sheetcluster-render.ts';
import { CACHE_TRIMS, trimForCache, without } from './cache-trim.ts';
import type { KubeObject } from './client.ts';
import { isSubset, withAppliedHash } from './objects.ts';

/** Whether `v` has a field at `path` ('*': in any element). */
function has(v: unknown, path: readonly string[]): boolean {
  if (!path.length) return true;
  if (v === null || typeof v !== 'object') return false;
  const [head, ...rest] = path as [string, ...string[]];
  if (Array.isArray(v)) return head === '*' && v.some((e) => has(e, rest));
  return head in v && has((v as Record<string, unknown>)[head], rest);
}

/** Every Kubernetes object in a render's result (objects with apiVersion and kind, at any depth). */
function objectsIn(v: unknown, out: KubeObject[] = []): KubeObject[] {
  if (Array.isArray(v)) for (const x of v) objectsIn(x, out);
  else if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o.apiVersion === 'string' && typeof o.kind === 'string' && o.metadata)
      out.push(o as KubeObject);
    else for (const x of Object.values(o)) objectsIn(x, out);
  }
  return out;
}

const machine = (spec: Record<string, unknown>): OberonMachine => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonMachine',
  metadata: { name: 'p', namespace: 'lab', uid: 'u1' },
  spec: { air: 'lab', role: 'plane', keySecretRef: { name: 's', key: 'key' }, ...spec },
});

/** What the operator applies, over the settings that change the shape of a child. */
function everyRender(): KubeObject[] {
  const machines = [
    machine({ runtime: 'pod', cluster: 'kube', commands: 'Kube.Ensure web 4 Ticker' }),
    machine({ runtime: 'pod', role: 'node', disk: { storageClass: 'fast' } }),
    machine({ runtime: 'pod', liveCommandsConfigMap: 'live', vncPasswordRef: { name: 'v', key: 'p' } }),
    machine({ runtime: 'kubevirt', disk: { storageClass: 'fast' } }),
  ];
  const kube = {
    apiVersion: 'retrokube.io/v1alpha1',
    kind: 'OberonKube',
    metadata: { name: 'k', namespace: 'lab', uid: 'u2' },
    spec: { nodes: 3 },
  } as OberonKube;
  const sheets = (spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'retrokube.io/v1alpha1',
    kind: 'SheetCluster',
    metadata: { name: 'demo', namespace: 'lab', uid: 'u3' },
    spec,
  });
  const values = { token: 't', signingKey: 'k' };
  return objectsIn([
    ...machines.map((m) => renderPod(m, machineSettings(m), 'img', { held: true })),
    ...machines.map((m) => renderPod(m, machineSettings(m), 'img')),
    ...machines.map((m) => renderKubeVirt(m, machineSettings(m), 'img', { seeded: false })),
    renderKube(kube, kubeSettings(kube), true),
    renderSheetCluster(sheets({ nodes: 2 }), sheetSettings(sheets({ nodes: 2 }), 'img'), values),
    renderSheetCluster(
      sheets({ nodes: 1, store: { xlsx: { storageClass: 'fast' } } }),
      sheetSettings(sheets({ nodes: 1, store: { xlsx: { storageClass: 'fast' } } }), 'img'),
      values,
    ),
  ]);
}

/** A rendered child as the API server returns it: the defaults of cache-trim.ts added, and status. */
function asServed(desired: KubeObject): KubeObject {
  const served = structuredClone(withAppliedHash(desired)) as KubeObject & Record<string, unknown>;
  served.metadata = { ...served.metadata, uid: 'c1', resourceVersion: '7', generation: 1 };
  const spec = served.spec as Record<string, unknown>;
  if (desired.kind === 'StatefulSet') {
    spec.revisionHistoryLimit = 10;
    spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: 0 } };
    const tpl = spec.template as { metadata: Record<string, unknown>; spec: Record<string, unknown> };
    tpl.metadata.creationTimestamp = null;
    Object.assign(tpl.spec, {
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
    });
    for (const c of [
      ...((tpl.spec.containers ?? []) as object[]),
      ...((tpl.spec.initContainers ?? []) as object[]),
    ])
      Object.assign(c, {
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        imagePullPolicy: 'IfNotPresent',
      });
    for (const t of (spec.volumeClaimTemplates ?? []) as Array<Record<string, unknown>>) {
      t.status = { phase: 'Pending' };
      (t.spec as Record<string, unknown>).volumeMode = 'Filesystem';
    }
    served.status = {
      observedGeneration: 1,
      replicas: 1,
      readyReplicas: 1,
      currentRevision: 'r1',
      updateRevision: 'r1',
    };
  } else if (desired.kind === 'Service') {
    Object.assign(spec, { clusterIP: '10.0.0.7', clusterIPs: ['10.0.0.7'], ipFamilies: ['IPv4'] });
    Object.assign(spec, {
      ipFamilyPolicy: 'SingleStack',
      sessionAffinity: 'None',
      internalTrafficPolicy: 'Cluster',
    });
    served.status = { loadBalancer: {} };
  } else if (desired.kind === 'PersistentVolumeClaim') {
    spec.volumeMode = 'Filesystem';
    served.status = { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] };
  }
  return served;
}

describe('cache-trim', () => {
  it('without: drops one path, copying along it; leaves the input and what is absent alone', () => {
    const v = { a: { b: 1, c: 2 }, l: [{ x: 1, y: 2 }, { y: 3 }], k: 'kept' };
    const out = without(v, ['a', 'b']) as typeof v;
    expect(out).toEqual({ a: { c: 2 }, l: v.l, k: 'kept' });
    expect(out.l).toBe(v.l); // untouched subtrees are shared, not copied
    expect(v.a).toEqual({ b: 1, c: 2 });
    expect(without(v, ['l', '*', 'x'])).toEqual({ ...v, l: [{ y: 2 }, { y: 3 }] });
    expect(without(v, ['a', 'zz'])).toBe(v);
    expect(without(v, ['l', 'x'])).toBe(v); // not '*': an array is left as it is
  });

  it('no render sets a field the cache drops, nor a status', () => {
    const renders = everyRender();
    const kinds = new Set(renders.map((o) => `${o.apiVersion}/${o.kind}`));
    for (const k of Object.keys(CACHE_TRIMS)) expect(kinds).toContain(k); // each trimmed kind is checked
    for (const o of renders) {
      const trim = CACHE_TRIMS[`${o.apiVersion}/${o.kind}`];
      if (!trim) continue;
      for (const p of trim.drop)
        expect(has(o, p), `${o.kind} ${o.metadata.name} sets ${p.join('.')}`).toBe(false);
      expect(o.status).toBeUndefined();
    }
  });

  it('a trimmed child still matches what was applied (no write at rest), and a hand edit still does not', () => {
    let trimmed = 0;
    for (const desired of everyRender()) {
      if (!CACHE_TRIMS[`${desired.apiVersion}/${desired.kind}`]) continue;
      const served = asServed(desired);
      const cached = structuredClone(served);
      trimForCache(cached);
      trimmed++;
      expect(JSON.stringify(cached).length).toBeLessThan(JSON.stringify(served).length);
      expect(isSubset(withAppliedHash(desired), cached)).toBe(true);
      const edited = structuredClone(cached) as KubeObject & { spec: Record<string, unknown> };
      edited.spec.handEdit = undefined;
      const firstKey = Object.keys(desired.spec ?? {})[0] as string;
      edited.spec[firstKey] = 'edited by hand';
      expect(isSubset(withAppliedHash(desired), edited)).toBe(false);
    }
    expect(trimmed).toBeGreaterThan(5);
  });

  it('keeps the status fields controllers read and drops the rest', () => {
    const sts = asServed(everyRender().find((o) => o.kind === 'StatefulSet') as KubeObject);
    trimForCache(sts);
    expect(sts.status).toEqual({ readyReplicas: 1 });
    expect(sts.metadata.uid).toBe('c1');
    const classed = (o: KubeObject) =>
      o.kind === 'PersistentVolumeClaim' && (o.spec as Record<string, unknown>).storageClassName === 'fast';
    const pvc = asServed(everyRender().find(classed) as KubeObject);
    trimForCache(pvc);
    expect(pvc.status).toEqual({ phase: 'Bound' });
    expect((pvc.spec as Record<string, unknown>).storageClassName).toBe('fast');
  });

  it('leaves kinds it does not list as they arrive', () => {
    const dep = everyRender().find((o) => o.kind === 'Deployment') as KubeObject;
    const served = { ...structuredClone(dep), status: { readyReplicas: 1, observedGeneration: 2 } };
    const before = structuredClone(served);
    trimForCache(served);
    expect(served).toEqual(before);
  });
});
