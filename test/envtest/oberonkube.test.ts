// OberonKube against a real kube-apiserver: the owned graph (air, machines, generated key
// Secret), scaling and deployment changes, and a status made only of what is heard on the air,
// driven here by scripted air stations (the air toolkit) on a real local relay.
import { describe, expect, it } from 'vitest';
import {
  assignDatagram,
  clusterTag,
  heartbeatDatagram,
  keyFromHex,
  specDatagram,
} from '../../operator/src/air/kubenet.ts';
import { startRelay } from '../../operator/src/air/relay.ts';
import { openStation } from '../../operator/src/air/station.ts';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { derivedKey } from '../../operator/src/controllers/oberonkube-render.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { PDB } from '../../operator/src/controllers/placement.ts';
import { resourcePath } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import {
  CORE,
  condition,
  type KubeObject,
  markStatefulSetReady,
  OBERONAIR,
  publishRelayEndpoint,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const SEED = 'envtest-seed';
const kube = (ns: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonKube',
  metadata: { name, namespace: ns },
  spec,
});
const merge = { contentType: 'application/merge-patch+json' };

async function stsReady(k: ReturnType<typeof testClient>, ns: string, machine: string) {
  const name = `rk-m-${machine}`;
  await waitFor(`StatefulSet ${name}`, () => k.getOrUndefined(KINDS_OWNED.statefulSet, ns, name));
  await markStatefulSetReady(k, ns, name, 1);
}

describe('OberonKube on a real API server', () => {
  it('owns an air, nodes first then the plane, a generated key Secret never shown; scales, and changes deployments live without touching the plane', async () => {
    const ns = await freshNamespace('kube-graph');
    const k = testClient();
    await startOperator({ namespace: ns, keySeed: SEED });
    const created = await k.create(
      OBERONKUBE,
      kube(ns, 'farm', { nodes: 2, deployments: 'web 3 Ticker', storageClass: 'standard' }),
    );
    const uid = created.metadata.uid as string;
    const owner = {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonKube',
      name: 'farm',
      uid,
      controller: true,
      blockOwnerDeletion: true,
    };

    const air: Deep = await waitFor('the OberonAir', () => k.getOrUndefined(OBERONAIR, ns, 'farm-air'));
    expect(air.metadata.ownerReferences).toEqual([owner]);
    const a: Deep = await waitFor('node-a', () => k.getOrUndefined(OBERONMACHINE, ns, 'farm-node-a'));
    await waitFor('node-b', () => k.getOrUndefined(OBERONMACHINE, ns, 'farm-node-b'));
    expect(a.metadata.ownerReferences).toEqual([owner]);
    // The spec is applied by retrokube; so is the status, once its controller has run (a second
    // entry, subresource "status"). Nobody else writes the machine.
    const managers = a.metadata.managedFields.map(
      (m: Deep) => `${m.manager}/${m.operation}${m.subresource ? `/${m.subresource}` : ''}`,
    );
    expect(managers).toContain('retrokube/Apply');
    expect(managers.every((m: string) => m === 'retrokube/Apply' || m === 'retrokube/Apply/status')).toBe(
      true,
    );
    expect(a.spec).toMatchObject({
      air: 'farm-air',
      role: 'node',
      nodeName: 'node-a',
      cluster: 'kube',
      keySecretRef: { name: 'rk-kube-farm-key', key: 'key' },
      runtime: 'pod',
      disk: { storageClass: 'standard' },
    });

    // The generated key: in a Secret owned by the cluster, and nowhere else.
    const secret: Deep = await waitFor('the key Secret', () =>
      k.getOrUndefined(CORE.secret, ns, 'rk-kube-farm-key'),
    );
    expect(secret.metadata.ownerReferences).toEqual([owner]);
    const key = Buffer.from(secret.data.key, 'base64').toString();
    expect(key).toBe(derivedKey(SEED, uid));
    expect(key).toMatch(/^[0-9a-f]{16}$/);

    // The plane waits for the nodes: here their machines become Ready (the harness plays the
    // endpointslice controller for the relay, which machines wait for, and the StatefulSet controller).
    await publishRelayEndpoint(k, ns, 'farm-air');
    await new Promise((r) => setTimeout(r, 1000));
    expect(await k.getOrUndefined(OBERONMACHINE, ns, 'farm-plane')).toBeUndefined();
    await stsReady(k, ns, 'farm-node-a');
    await stsReady(k, ns, 'farm-node-b');
    const plane: Deep = await waitFor('the plane', () => k.getOrUndefined(OBERONMACHINE, ns, 'farm-plane'));
    expect(plane.spec).toMatchObject({ role: 'plane', liveCommandsConfigMap: 'rk-kube-farm-deployments' });
    expect(plane.spec.commands).toBeUndefined();
    const planeSts: Deep = await waitFor('the plane StatefulSet', () =>
      k.getOrUndefined(KINDS_OWNED.statefulSet, ns, 'rk-m-farm-plane'),
    );
    const planeArgs = planeSts.spec.template.spec.containers[0].args;
    expect(planeArgs).toContain('Kube.Start;KubeNet.Serve kube $$(RK_KEY)');
    // The plane's pod watches its deployments ConfigMap through the API (seconds, not the kubelet's
    // volume refresh), as its own ServiceAccount allowed that one ConfigMap only.
    expect(planeArgs.slice(-2)).toEqual(['--live-configmap', `${ns}/rk-kube-farm-deployments`]);
    expect(planeSts.spec.template.spec.serviceAccountName).toBeTruthy();
    const live: Deep = await waitFor('the live deployments ConfigMap', () =>
      k.getOrUndefined(CORE.configMap, ns, 'rk-kube-farm-deployments'),
    );
    expect(live.metadata.ownerReferences).toEqual([owner]);
    // Hold first: the new plane binds no pod before both nodes are heard (the first pods spread).
    expect(live.data).toEqual({ deployments: 'Kube.Hold 2\nKube.Apply web 3 Ticker\n' });

    // The node machines' disruption budget (docs/operator.md § Placement): owned, one at a time,
    // selecting the node machines by air and role; rewritten by no later reconcile.
    const pdb: Deep = await waitFor('the PodDisruptionBudget', () =>
      k.getOrUndefined(PDB, ns, 'rk-kube-farm-nodes'),
    );
    expect(pdb.metadata.ownerReferences).toEqual([owner]);
    expect(pdb.spec).toMatchObject({
      maxUnavailable: 1,
      selector: { matchLabels: { 'retrokube.io/air': 'farm-air', 'retrokube.io/role': 'node' } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
    expect(planeSts.spec.template.metadata.labels['retrokube.io/role']).toBe('plane');

    // Scaling adds and removes node machines; changed deployments reach the running plane through
    // its ConfigMap: the plane's StatefulSet (and so its pod) is not touched.
    const planeGeneration = planeSts.metadata.generation;
    await k.request('PATCH', resourcePath(OBERONKUBE, ns, 'farm'), {
      body: { spec: { nodes: 3, deployments: 'web 6 Ticker2; api 2 Ticker2' } },
      ...merge,
    });
    await waitFor('node-c', () => k.getOrUndefined(OBERONMACHINE, ns, 'farm-node-c'));
    await waitFor(
      'the new deployments in the ConfigMap',
      async () =>
        ((await k.get(CORE.configMap, ns, 'rk-kube-farm-deployments')) as Deep).data.deployments ===
        'Kube.Hold 3\nKube.Apply web 6 Ticker2\nKube.Apply api 2 Ticker2\n',
    );
    await new Promise((r) => setTimeout(r, 1500));
    const after: Deep = await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-farm-plane');
    expect(after.metadata.generation).toBe(planeGeneration);
    await k.request('PATCH', resourcePath(OBERONKUBE, ns, 'farm'), {
      body: { spec: { nodes: 1 } },
      ...merge,
    });
    await waitFor(
      'node-b and node-c removed',
      async () =>
        !(await k.getOrUndefined(OBERONMACHINE, ns, 'farm-node-b')) &&
        !(await k.getOrUndefined(OBERONMACHINE, ns, 'farm-node-c')),
    );

    expect(((await k.get(PDB, ns, 'rk-kube-farm-nodes')) as Deep).metadata.resourceVersion).toBe(
      pdb.metadata.resourceVersion,
    );

    // The key is in no status, no child spec and no Event.
    const everything = JSON.stringify([
      await k.get(OBERONKUBE, ns, 'farm'),
      await k.list(OBERONMACHINE, ns),
      await k.list(OBERONAIR, ns),
      await k.list(KINDS_OWNED.statefulSet, ns),
      await k.list(CORE.event, ns),
    ]);
    expect(everything).not.toContain(key);
  });

  it('status is what the air says: join, rollout, node loss and forged frames (scripted stations on a real relay)', async () => {
    const ns = await freshNamespace('kube-air');
    const k = testClient();
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    const stations: Array<{ close(): Promise<void> }> = [];
    const timers: NodeJS.Timeout[] = [];
    try {
      await startOperator({
        namespace: ns,
        keySeed: SEED,
        airAddress: () => ({ host: '127.0.0.1', port: relay.address.port }),
      });
      const created = await k.create(OBERONKUBE, kube(ns, 'lab', { nodes: 2, deployments: 'web 3 Ticker' }));
      const KEY = keyFromHex(derivedKey(SEED, created.metadata.uid as string));
      const TAG = clusterTag('kube');
      const st = await openStation({ host: '127.0.0.1', port: relay.address.port });
      stations.push(st);
      // The scripted cluster: what each node runs, what the plane assigns, which images.
      const running = new Map<string, number[]>([
        ['node-a', []],
        ['node-b', []],
      ]);
      const assigned = new Map<string, number[]>();
      const images = new Map<number, string>();
      let planeOn = false;
      let ctr = 100;
      timers.push(
        setInterval(() => {
          for (const [node, ids] of running)
            void st.send(heartbeatDatagram({ cluster: TAG, node, ids, counter: ctr++ }, KEY));
          if (!planeOn) return;
          for (const [node, ids] of assigned)
            void st.send(assignDatagram({ cluster: TAG, node, ids, counter: ctr++ }, KEY, { sadr: 9 }));
          for (const [id, image] of images)
            void st.send(specDatagram({ cluster: TAG, podId: id, image, counter: ctr++ }, KEY, { sadr: 9 }));
        }, 300),
      );
      const status = async () => ((await k.get(OBERONKUBE, ns, 'lab')) as Deep).status ?? {};

      // Join: both nodes heard → the plane machine is created; no plane heard yet → not Ready.
      await waitFor(
        'the plane machine after the nodes are heard',
        () => k.getOrUndefined(OBERONMACHINE, ns, 'lab-plane'),
        30_000,
      );
      let s: Deep = await waitFor(
        '2/2 nodes heard',
        async () => {
          const x: Deep = await status();
          return x.nodes === '2/2' && x;
        },
        30_000,
      );
      expect(condition({ status: s } as Deep, 'Ready')).toMatchObject({
        status: 'False',
        reason: 'PlaneNotHeard',
      });

      // The plane assigns and the nodes run what they were assigned → Ready and Converged.
      planeOn = true;
      assigned.set('node-a', [1, 2]).set('node-b', [3]);
      for (const id of [1, 2, 3]) images.set(id, 'Ticker');
      running.set('node-a', [1, 2]).set('node-b', [3]);
      s = await waitFor(
        'Ready and Converged',
        async () => {
          const x: Deep = await status();
          return x.converged && x;
        },
        30_000,
      );
      expect(s).toMatchObject({ nodes: '2/2', pods: '3/3', planeHeard: true, forgedFrames: 0 });
      expect(condition({ status: s } as Deep, 'Ready')?.status).toBe('True');
      expect(s.nodeTable).toEqual([
        { name: 'node-a', ready: true, running: [1, 2], assigned: [1, 2], images: ['Ticker', 'Ticker'] },
        { name: 'node-b', ready: true, running: [3], assigned: [3], images: ['Ticker'] },
      ]);

      expect(condition({ status: s } as Deep, 'Applied')).toMatchObject({
        status: 'True',
        message: 'heard running Ticker ×3',
      });

      // A changed list is not Applied while the plane's pods still run the old module (#31.3), even
      // though the counts alone (Converged) are all there.
      await k.request('PATCH', resourcePath(OBERONKUBE, ns, 'lab'), {
        body: { spec: { deployments: 'web 3 Ticker2' } },
        ...merge,
      });
      s = await waitFor(
        'the new generation observed',
        async () => {
          const o: Deep = await k.get(OBERONKUBE, ns, 'lab');
          return o.status?.observedGeneration === o.metadata.generation && o.status;
        },
        30_000,
      );
      expect(s.converged).toBe(true);
      expect(condition({ status: s } as Deep, 'Applied')).toMatchObject({
        status: 'False',
        reason: 'NotHeardRunning',
        message: 'ordered Ticker2 ×3; heard running Ticker ×3',
      });

      // Rollout: new ids with a new image replace the old ones.
      images.clear();
      for (const id of [4, 5, 6]) images.set(id, 'Ticker2');
      assigned.set('node-a', [4, 5]).set('node-b', [6]);
      running.set('node-a', [4, 5]).set('node-b', [6]);
      s = await waitFor(
        'rolled out',
        async () => {
          const x: Deep = await status();
          return x.converged && x.nodeTable?.[0]?.images?.[0] === 'Ticker2' && x;
        },
        30_000,
      );
      expect(s.pods).toBe('3/3');
      s = await waitFor(
        'Applied once Ticker2 is heard running',
        async () => {
          const x: Deep = await status();
          return condition({ status: x } as Deep, 'Applied')?.status === 'True' && x;
        },
        30_000,
      );
      expect(condition({ status: s } as Deep, 'Applied')?.message).toBe('heard running Ticker2 ×3');

      // Node loss: node-b goes silent → NotReady after 5 s, Degraded, an Event.
      running.delete('node-b');
      s = await waitFor(
        'node-b NotReady',
        async () => {
          const x: Deep = await status();
          return x.nodes === '1/2' && x;
        },
        30_000,
      );
      expect(condition({ status: s } as Deep, 'Degraded')).toMatchObject({
        status: 'True',
        reason: 'NodesNotReady',
      });
      expect(condition({ status: s } as Deep, 'Ready')?.status).toBe('False');

      // Forged frames: this cluster's tag with the wrong key.
      const bad = keyFromHex('ffffffffffffffff');
      for (let i = 0; i < 3; i++)
        await st.send(heartbeatDatagram({ cluster: TAG, node: 'evil', ids: [9], counter: 5000 + i }, bad));
      s = await waitFor(
        'forged frames counted',
        async () => {
          const x: Deep = await status();
          return x.forgedFrames >= 3 && x;
        },
        30_000,
      );
      expect(condition({ status: s } as Deep, 'Degraded')).toMatchObject({
        status: 'True',
        reason: 'ForgedFrames',
      });

      const reasons = ((await k.list(CORE.event, ns)).items as Deep[]).map((e) => e.reason);
      expect(reasons).toEqual(
        expect.arrayContaining(['NodeReady', 'NodeNotReady', 'ForgedFrames', 'KeyGenerated']),
      );
    } finally {
      for (const t of timers) clearInterval(t);
      await Promise.all(stations.map((x) => x.close()));
      await relay.close();
    }
  }, 120_000);

  it("a new operator at rest writes nothing and announces nothing, though the plane names each image only once a round (scripted stations at the machines' cadence)", async () => {
    const ns = await freshNamespace('kube-rest');
    const k = testClient();
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    const timers: NodeJS.Timeout[] = [];
    const opts = {
      namespace: ns,
      keySeed: SEED,
      airAddress: () => ({ host: '127.0.0.1', port: relay.address.port }),
    };
    const st = await openStation({ host: '127.0.0.1', port: relay.address.port });
    try {
      const first = await startOperator(opts);
      const created = await k.create(OBERONKUBE, kube(ns, 'rest', { nodes: 2, deployments: 'web 8 Ticker' }));
      const KEY = keyFromHex(derivedKey(SEED, created.metadata.uid as string));
      const TAG = clusterTag('kube');
      // As the machines do (spec §3.5): a heartbeat and an assignment per node a second, and one
      // pod's spec a second, round-robin — the eight images take eight seconds to come by, longer
      // than the nodes' window (a TTL and a period).
      const pods = new Map<string, number[]>([
        ['node-a', [1, 2, 3, 4]],
        ['node-b', [5, 6, 7, 8]],
      ]);
      let ctr = 100;
      let cursor = 0;
      timers.push(
        setInterval(() => {
          for (const [node, ids] of pods) {
            void st.send(heartbeatDatagram({ cluster: TAG, node, ids, counter: ctr++ }, KEY));
            void st.send(assignDatagram({ cluster: TAG, node, ids, counter: ctr++ }, KEY, { sadr: 9 }));
          }
          const id = 1 + (cursor++ % 8);
          void st.send(
            specDatagram({ cluster: TAG, podId: id, image: 'Ticker', counter: ctr++ }, KEY, { sadr: 9 }),
          );
        }, 1_000),
      );
      const get = async (): Promise<Deep> => k.get(OBERONKUBE, ns, 'rest');
      await waitFor(
        'Ready, converged, every image known',
        async () => {
          const o = await get();
          const images = (o.status?.nodeTable ?? []).flatMap((n: Deep) => n.images);
          return o.status?.converged && images.length === 8 && !images.includes('?') && o;
        },
        60_000,
      );
      const nodeReady = async () =>
        ((await k.list(CORE.event, ns)).items as Deep[]).filter((e) => e.reason === 'NodeReady').length;
      await new Promise((r) => setTimeout(r, 6_000)); // past the status rate limit: the first operator is done
      const atRest = await get();
      expect(condition(atRest, 'Ready')?.status).toBe('True');
      const joined = await nodeReady();
      expect(joined).toBe(2);

      await first.stop();
      await startOperator(opts);
      // Longer than the new station's whole window (6 s, then up to 2 s per pod for images).
      const until = Date.now() + 30_000;
      while (Date.now() < until) {
        const o = await get();
        expect([o.metadata.resourceVersion, o.status]).toEqual([
          atRest.metadata.resourceVersion,
          atRest.status,
        ]);
        await new Promise((r) => setTimeout(r, 500));
      }
      expect(await nodeReady()).toBe(joined);

      // It does hear: a real change (node-b silent) is written, with its Event.
      pods.delete('node-b');
      const s: Deep = await waitFor(
        'node-b NotReady',
        async () => {
          const o = await get();
          return o.status?.nodes === '1/2' && o;
        },
        30_000,
      );
      expect(condition(s, 'Degraded')).toMatchObject({ status: 'True', reason: 'NodesNotReady' });
      await waitFor('the NodeNotReady Event', async () =>
        ((await k.list(CORE.event, ns)).items as Deep[]).some((e) => e.reason === 'NodeNotReady'),
      );
    } finally {
      for (const t of timers) clearInterval(t);
      await st.close();
      await relay.close();
    }
  }, 180_000);
});
