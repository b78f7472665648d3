// SheetCluster on a real kube-apiserver: admission (CEL rules and patterns refuse bad specs naming
// the field) and the object graph the operator renders for both stores — the apiserver Deployment
// (one replica, Recreate, the workbook PVC or the Google credentials), its Service, the generated
// Secrets (derived, never in status), and the node agents' StatefulSet with hardened pods that take
// their token and key from Secrets by env, never argv.
import { describe, expect, it } from 'vitest';
import { PDB } from '../../operator/src/controllers/placement.ts';
import { SHEETCLUSTER } from '../../operator/src/controllers/sheetcluster.ts';
import { derivedSecret } from '../../operator/src/controllers/sheetcluster-render.ts';
import { ApiError, type KubeObject } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import { CORE, condition, quiescent, startOperator, testClient, waitFor } from './operator-harness.ts';
import { kubeletWarning, PVC, STS, sheetCluster } from './sheetcluster-kit.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const SEED = 'envtest-sheet-seed';

describe('SheetCluster admission', () => {
  it('refuses specs the cluster cannot serve, naming the field', async () => {
    const ns = await freshNamespace('sheet-valid');
    const k = testClient();
    let n = 0;
    const refused = async (spec: Record<string, unknown>, name = `x${n++}`) => {
      try {
        await k.create(SHEETCLUSTER, sheetCluster(ns, name, spec));
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).status).toBe(422);
        return (err as ApiError).message;
      }
      throw new Error(`the API server accepted SheetCluster ${JSON.stringify(spec)}`);
    };
    expect(await refused({ nodes: 51 })).toMatch(/spec\.nodes/);
    expect(await refused({ nodes: -1 })).toMatch(/spec\.nodes/);
    expect(await refused({ runtimes: ['docker'] })).toMatch(/spec\.dockerSocket.*needs dockerSocket/);
    expect(await refused({ dockerSocket: '/var/run/docker.sock' })).toMatch(/spec\.dockerSocket/);
    expect(await refused({ runtimes: ['java'] })).toMatch(/spec\.runtimes/);
    expect(await refused({ runtimes: ['wasm', 'wasm'] })).toMatch(/spec\.runtimes/);
    expect(await refused({ runtimes: [] })).toMatch(/spec\.runtimes/);
    expect(await refused({ failoverSeconds: 1 })).toMatch(/spec\.failoverSeconds/);
    expect(await refused({ failoverSeconds: 4000 })).toMatch(/spec\.failoverSeconds/);
    expect(await refused({ nodeCpu: 0 })).toMatch(/spec\.nodeCpu/);
    expect(await refused({ store: { type: 'google' } })).toMatch(/spec\.store\.google.*required/);
    expect(
      await refused({
        store: {
          type: 'xlsx',
          google: { spreadsheetId: 'abcdefghijk', credentialsSecretRef: { name: 'c' } },
        },
      }),
    ).toMatch(/spec\.store\.google/);
    expect(await refused({ store: { type: 'xlsx', xlsx: { size: '1Ti' } } })).toMatch(
      /spec\.store\.xlsx\.size/,
    );
    expect(await refused({ store: { type: 'xlsx', xlsx: { size: '1Mi' } } })).toMatch(
      /spec\.store\.xlsx\.size/,
    );
    expect(
      await refused({
        store: { type: 'google', google: { spreadsheetId: 'bad id!', credentialsSecretRef: { name: 'c' } } },
      }),
    ).toMatch(/spec\.store\.google\.spreadsheetId/);
    expect(await refused({ tokenSecretRef: { name: 'Bad_Name' } })).toMatch(/spec\.tokenSecretRef\.name/);
    expect(await refused({ deployments: [{ name: 'web' }, { name: 'web' }] })).toMatch(
      /spec\.deployments\[1\]/,
    );
    expect(await refused({ deployments: [{ name: 'web', replicas: 1001 }] })).toMatch(
      /spec\.deployments\[0\]\.replicas/,
    );
    expect(await refused({ deployments: [{ name: 'Web' }] })).toMatch(/spec\.deployments\[0\]\.name/);
    expect(
      await refused({ nodeResources: { requests: { memory: '1Gi' }, limits: { memory: '64Mi' } } }),
    ).toMatch(/spec\.nodeResources\.limits\[memory\]/);
    expect(await refused({}, 'a'.repeat(31))).toMatch(/metadata\.name must be at most 30/);

    // The store type is fixed once created: the cluster lives in its workbook.
    const ok = await k.create<Deep>(SHEETCLUSTER, sheetCluster(ns, 'fixed', {}));
    expect(ok.spec.store.type).toBe('xlsx');
    expect(ok.spec.runtimes).toEqual(['wasm']); // process never by default
    await expect(
      k.mergePatch(SHEETCLUSTER, ns, 'fixed', {
        spec: {
          store: {
            type: 'google',
            google: { spreadsheetId: 'abcdefghijk', credentialsSecretRef: { name: 'c' } },
          },
        },
      }),
    ).rejects.toThrow(/spec\.store\.type.*cannot change/);
  });
});

describe('SheetCluster object graph', () => {
  it('xlsx: PVC, Recreate apiserver, Service, derived Secrets, hardened agents with stable names; zero writes when steady', async () => {
    const ns = await freshNamespace('sheet-graph');
    const k = testClient();
    const mgr = await startOperator({
      namespace: ns,
      keySeed: SEED,
      sheetsAddress: () => 'http://127.0.0.1:9', // nothing answers there: status says so
      sheetTiming: { startGraceMs: 1_000 },
    });
    const c = await k.create<KubeObject>(
      SHEETCLUSTER,
      sheetCluster(ns, 'alpha', {
        nodes: 3,
        store: { type: 'xlsx', xlsx: { size: '2Gi', storageClass: 'fast' } },
        failoverSeconds: 12,
        nodeMemory: 256,
      }),
    );
    const uid = c.metadata.uid as string;
    const dep = await waitFor('apiserver Deployment', () =>
      k.getOrUndefined<Deep>(CORE.deployment, ns, 'rk-sheets-alpha'),
    );
    const svc = await waitFor('Service', () => k.getOrUndefined<Deep>(CORE.service, ns, 'rk-sheets-alpha'));
    const pvc = await waitFor('workbook PVC', () =>
      k.getOrUndefined<Deep>(PVC, ns, 'rk-sheets-alpha-workbook'),
    );
    const sts = await waitFor('agents StatefulSet', () =>
      k.getOrUndefined<Deep>(STS, ns, 'rk-sheets-alpha-node'),
    );
    const tok = await waitFor('token Secret', () =>
      k.getOrUndefined<Deep>(CORE.secret, ns, 'rk-sheets-alpha-token'),
    );
    const sig = await waitFor('signing Secret', () =>
      k.getOrUndefined<Deep>(CORE.secret, ns, 'rk-sheets-alpha-signing'),
    );
    for (const o of [dep, svc, pvc, sts, tok, sig]) {
      expect(o.metadata.ownerReferences[0]).toMatchObject({
        kind: 'SheetCluster',
        name: 'alpha',
        uid,
        controller: true,
      });
    }
    // Derived values: the operator can recompute them without reading the Secrets.
    const token = Buffer.from(tok.data.token, 'base64').toString();
    const key = Buffer.from(sig.data.key, 'base64').toString();
    expect(token).toBe(derivedSecret(SEED, 'token', uid));
    expect(key).toBe(derivedSecret(SEED, 'signing', uid));
    expect(token).not.toBe(key);

    expect(pvc.spec).toMatchObject({
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'fast',
      resources: { requests: { storage: '2Gi' } },
    });
    expect(dep.spec.replicas).toBe(1);
    expect(dep.spec.strategy.type).toBe('Recreate');
    const pod = dep.spec.template.spec;
    const api = pod.containers[0];
    expect(pod.volumes).toContainEqual({
      name: 'workbook',
      persistentVolumeClaim: { claimName: 'rk-sheets-alpha-workbook' },
    });
    expect(api.args).toEqual(
      expect.arrayContaining(['sheets', 'serve', '--workbook', '/data/cluster.xlsx', '--node-ttl', '12']),
    );
    expect(api.env).toContainEqual({
      name: 'TOKEN',
      valueFrom: { secretKeyRef: { name: 'rk-sheets-alpha-token', key: 'token' } },
    });
    expect(api.env).toContainEqual({
      name: 'SIGNING_KEY',
      valueFrom: { secretKeyRef: { name: 'rk-sheets-alpha-signing', key: 'key' } },
    });
    expect(svc.spec.ports[0]).toMatchObject({ port: 8787, targetPort: 'http' });
    expect(svc.spec.selector).toEqual(dep.spec.selector.matchLabels);

    expect(sts.spec.replicas).toBe(3);
    const agent = sts.spec.template.spec.containers[0];
    expect(agent.args).toEqual([
      'sheets',
      'node',
      '--runtime',
      'wasm',
      '--interval',
      '4',
      '--work-dir',
      '/work',
    ]);
    const env = Object.fromEntries(agent.env.map((e: Deep) => [e.name, e]));
    expect(env.NODE_NAME.value).toBe('node-$(POD_INDEX)');
    expect(env.POD_INDEX.valueFrom.fieldRef.fieldPath).toBe(
      "metadata.labels['apps.kubernetes.io/pod-index']",
    );
    expect(env.WEBAPP_URL.value).toBe(`http://rk-sheets-alpha.${ns}.svc.cluster.local:8787`);
    expect(env.TOKEN.valueFrom.secretKeyRef.name).toBe('rk-sheets-alpha-token');
    expect(env.MEM_TOTAL.value).toBe('256');
    expect(env.CPU_TOTAL.valueFrom.resourceFieldRef).toMatchObject({ resource: 'limits.cpu', divisor: '1m' });
    // Hardened like the machine pods; nothing secret on any command line.
    for (const p of [pod, sts.spec.template.spec]) {
      expect(p.automountServiceAccountToken).toBe(false);
      expect(p.securityContext).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      const ctr = p.containers[0];
      expect(ctr.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      expect(JSON.stringify(ctr.args)).not.toContain(token);
      expect(JSON.stringify(ctr.args)).not.toContain(key);
    }

    // Nothing answers at the address: Degraded says so, and the secrets are nowhere in status.
    const sc = await waitFor('Degraded ApiserverNotAnswering', async () => {
      const o = await k.get<Deep>(SHEETCLUSTER, ns, 'alpha');
      return condition(o, 'Degraded')?.reason === 'ApiserverNotAnswering' ? o : undefined;
    });
    expect(condition(sc, 'Ready')?.status).toBe('False');
    expect(condition(sc, 'Degraded')?.message).toMatch(/does not answer/);
    expect(sc.status.nodes).toBe('?/3');
    expect(JSON.stringify(sc.status)).not.toContain(token);
    expect(JSON.stringify(sc.status)).not.toContain(key);

    // Steady: no writes to the SheetCluster or any child for a while (it still polls the address).
    await quiescent(mgr, 1000);
    const versions = async () =>
      JSON.stringify(
        await Promise.all([
          k.get<Deep>(SHEETCLUSTER, ns, 'alpha'),
          k.get<Deep>(CORE.deployment, ns, 'rk-sheets-alpha'),
          k.get<Deep>(STS, ns, 'rk-sheets-alpha-node'),
          k.get<Deep>(PVC, ns, 'rk-sheets-alpha-workbook'),
          k.get<Deep>(CORE.service, ns, 'rk-sheets-alpha'),
          k.get<Deep>(PDB, ns, 'rk-sheets-alpha-node'),
        ]).then((l) => l.map((o) => o.metadata.resourceVersion)),
      );
    const before = await versions();
    await new Promise((r) => setTimeout(r, 12_000));
    expect(await versions()).toBe(before);
  });

  it('google: credentials Secret mounted into the apiserver only, no PVC; a missing one is Degraded with the fix, nothing deleted', async () => {
    const ns = await freshNamespace('sheet-google');
    const k = testClient();
    await startOperator({
      namespace: ns,
      keySeed: SEED,
      sheetsAddress: () => 'http://127.0.0.1:9',
      sheetTiming: { startGraceMs: 1_000 },
    });
    await k.create(
      SHEETCLUSTER,
      sheetCluster(ns, 'gs', {
        nodes: 2,
        runtimes: ['wasm', 'process'],
        samples: false,
        store: {
          type: 'google',
          google: {
            spreadsheetId: 'sheet-0123456789',
            credentialsSecretRef: { name: 'gcreds' },
            rootUrl: 'http://127.0.0.1:9/',
          },
        },
      }),
    );
    const dep = await waitFor('apiserver Deployment', () =>
      k.getOrUndefined<Deep>(CORE.deployment, ns, 'rk-sheets-gs'),
    );
    await waitFor('agents', () => k.getOrUndefined<Deep>(STS, ns, 'rk-sheets-gs-node'));
    expect(await k.getOrUndefined(PVC, ns, 'rk-sheets-gs-workbook')).toBeUndefined();
    const pod = dep.spec.template.spec;
    expect(pod.volumes).toContainEqual({
      name: 'google',
      secret: {
        secretName: 'gcreds',
        items: [{ key: 'credentials.json', path: 'credentials.json' }],
        defaultMode: 0o440,
      },
    });
    expect(pod.containers[0].args).toEqual(
      expect.arrayContaining([
        '--workbook',
        'google:sheet-0123456789',
        '--google-credentials',
        '/var/run/secrets/retrokube/google/credentials.json',
        '--google-root-url',
        'http://127.0.0.1:9/',
        '--no-samples',
      ]),
    );
    const sts = await k.get<Deep>(STS, ns, 'rk-sheets-gs-node');
    expect(JSON.stringify(sts.spec.template.spec)).not.toContain('gcreds'); // agents never see the credentials
    expect(sts.spec.template.spec.containers[0].args).toEqual(
      expect.arrayContaining(['wasm,process', '--allow-process']),
    );

    // The kubelet cannot mount the missing Secret (the test API server runs no kubelet: we write its Event).
    await kubeletWarning(k, ns, {
      name: 'rk-sheets-gs-7d9f-x1.failedmount',
      pod: 'rk-sheets-gs-7d9f8c-x1',
      reason: 'FailedMount',
      message: 'MountVolume.SetUp failed for volume "google" : secret "gcreds" not found',
    });
    const sc = await waitFor('Degraded PodCannotStart', async () => {
      const o = await k.get<Deep>(SHEETCLUSTER, ns, 'gs');
      return condition(o, 'Degraded')?.reason === 'PodCannotStart' ? o : undefined;
    });
    expect(condition(sc, 'Degraded')?.message).toMatch(
      /Secret gcreds \(store.google.credentialsSecretRef\) does not exist .*kubectl -n \S+ create secret generic gcreds --from-file=credentials.json=KEY.json/,
    );
    expect(await k.getOrUndefined(CORE.deployment, ns, 'rk-sheets-gs')).toBeDefined();
    expect(await k.getOrUndefined(STS, ns, 'rk-sheets-gs-node')).toBeDefined();
  });
});
