import { describe, expect, it } from 'vitest';
import {
  assignDatagram,
  clusterTag,
  failedDatagram,
  heartbeatDatagram,
  refusalDatagrams,
  specDatagram,
  ZERO_KEY,
} from '../air/kubenet.ts';
import { AirView, type ClusterView } from '../air/view.ts';
import { kubeSettings, type OberonKube } from './oberonkube-render.ts';
import {
  computeKubeStatus,
  heardFullWindow,
  nodesCannotStart,
  planeRefusal,
  planeSays,
} from './oberonkube-status.ts';

const kube = (spec: Record<string, unknown>): OberonKube => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonKube',
  metadata: { name: 'farm', namespace: 'ns', generation: 1, uid: 'u' },
  spec,
});
/** Status of `k` with nothing wrong but what `view` (or its absence) says. */
const plainStatus = (k: OberonKube, view?: ClusterView) =>
  computeKubeStatus(k, kubeSettings(k), {
    view,
    keyProblem: '',
    conflicts: [],
    withPlane: true,
    forgedRecent: false,
  });
const degraded = (status: Record<string, unknown>) =>
  (status.conditions as Array<{ type: string; status: string; reason: string; message: string }>).find(
    (c) => c.type === 'Degraded',
  );

describe('OberonKube status: what the plane will refuse is said in status', () => {
  it('more pods than the nodes can hold (10 per node) or than the store holds is named', () => {
    expect(planeRefusal(kubeSettings(kube({ nodes: 3, deployments: 'web 30 Ticker' })))).toBe('');
    expect(planeRefusal(kubeSettings(kube({ nodes: 3, deployments: 'web 31 Ticker' })))).toMatch(
      /^31 pods wanted but 3 node\(s\) hold at most 30 .* 1 stay Pending: add nodes or lower the replicas$/,
    );
    expect(
      planeRefusal(kubeSettings(kube({ nodes: 20, deployments: 'web 200 Ticker; api 50 Ticker2' }))),
    ).toMatch(/need 274 objects; the plane's store holds 256/);
    const st = plainStatus(kube({ nodes: 1, deployments: 'web 11 Ticker' }));
    expect(degraded(st)).toMatchObject({ status: 'True', reason: 'PlaneCannotPlace' });
  });

  it('a key that is not hex is Degraded, not only a message', () => {
    const k = kube({ nodes: 1, keySecretRef: { name: 's' } });
    const st = computeKubeStatus(k, kubeSettings(k), {
      keyProblem: 'Secret s entry key is not 0–16 hex digits',
      keyInvalid: true,
      conflicts: [],
      withPlane: false,
      forgedRecent: false,
    });
    expect(degraded(st)).toMatchObject({
      status: 'True',
      reason: 'KeyInvalid',
      message: expect.stringMatching(/hex/),
    });
  });

  it('not listening yet says why: the key first, then the relay it waits for; neither is Degraded', () => {
    const k = kube({ nodes: 1 });
    const ready = (o: { keyProblem: string; notListening?: string }) => {
      const st = computeKubeStatus(k, kubeSettings(k), {
        ...o,
        conflicts: [],
        withPlane: false,
        forgedRecent: false,
      });
      const conds = st.conditions as Array<{ type: string; status: string; reason: string; message: string }>;
      return [conds.find((c) => c.type === 'Ready'), degraded(st)?.status];
    };
    const relay = 'waiting for OberonAir farm-air to be Ready (its relay) before listening to the air';
    expect(ready({ keyProblem: '', notListening: relay })).toEqual([
      expect.objectContaining({ status: 'Unknown', reason: 'AirNotJudged', message: relay }),
      'False',
    ]);
    expect(ready({ keyProblem: 'cannot read Secret s', notListening: relay })[0]).toMatchObject({
      message: 'cannot read Secret s',
    });
    expect(ready({ keyProblem: '' })[0]).toMatchObject({ message: 'not listening yet' });
  });
});

describe('a new station keeps the last status until it has heard a full window', () => {
  const limits = { hearWindowMs: 6_000, specRoundPerPodMs: 2_000 };
  const TAG = clusterTag('kube');
  // A cluster at rest as a station that began listening at t=0 hears it: two nodes, four pods, the
  // plane's one spec a second, round-robin — the image of pod 4 comes by only at 7 s.
  const heard = (untilMs: number) => {
    const v = new AirView({ cluster: 'kube' });
    let ctr = 1;
    for (let t = 0; t <= untilMs; t += 1_000) {
      v.ingest(t, heartbeatDatagram({ cluster: TAG, node: 'node-a', ids: [1, 2], counter: ctr++ }, ZERO_KEY));
      v.ingest(t, heartbeatDatagram({ cluster: TAG, node: 'node-b', ids: [3, 4], counter: ctr++ }, ZERO_KEY));
      v.ingest(t, assignDatagram({ cluster: TAG, node: 'node-a', ids: [1, 2], counter: ctr++ }, ZERO_KEY));
      v.ingest(t, assignDatagram({ cluster: TAG, node: 'node-b', ids: [3, 4], counter: ctr++ }, ZERO_KEY));
      const id = t < 7_000 ? 1 + ((t / 1_000) % 3) : 4;
      v.ingest(t, specDatagram({ cluster: TAG, podId: id, image: 'Ticker', counter: ctr++ }, ZERO_KEY));
    }
    return { view: v.view(untilMs), listeningMs: untilMs };
  };

  it('not before the node window, nor while a pod heard of has no image; then yes', () => {
    expect(heardFullWindow(heard(5_000), limits)).toBe(false);
    expect(heardFullWindow(heard(6_000), limits)).toBe(false); // pod 4's image not heard yet
    expect(heardFullWindow(heard(7_000), limits)).toBe(true);
  });

  it('an image never heard does not hold the status for ever: twice the round per pod, then the truth', () => {
    const h = heard(6_000);
    expect(heardFullWindow({ ...h, listeningMs: 6_000 + 4 * 2_000 - 1 }, limits)).toBe(false);
    expect(heardFullWindow({ ...h, listeningMs: 6_000 + 4 * 2_000 }, limits)).toBe(true);
  });
});

describe('Applied: the plane has spec.deployments only when its pods are heard running it (#31 item 3)', () => {
  const TAG = clusterTag('kube');
  // What a station hears from a plane running `running` (pod id → module) on two Ready nodes; a
  // module of null is a pod whose spec frame has not come by yet.
  const air = (running: Record<number, string | null>) => {
    const v = new AirView({ cluster: 'kube' });
    const ids = Object.keys(running).map(Number);
    const a = ids.filter((_, i) => i % 2 === 0);
    const b = ids.filter((_, i) => i % 2 === 1);
    let ctr = 1;
    for (const [node, mine] of [
      ['node-a', a],
      ['node-b', b],
    ] as const) {
      v.ingest(0, heartbeatDatagram({ cluster: TAG, node, ids: mine, counter: ctr++ }, ZERO_KEY));
      v.ingest(0, assignDatagram({ cluster: TAG, node, ids: mine, counter: ctr++ }, ZERO_KEY));
    }
    for (const [id, image] of Object.entries(running))
      if (image)
        v.ingest(0, specDatagram({ cluster: TAG, podId: Number(id), image, counter: ctr++ }, ZERO_KEY));
    return v.view(0);
  };
  const status = (deployments: string, running: Record<number, string | null>) => {
    const st = plainStatus(kube({ nodes: 2, deployments }), air(running));
    const cond = (t: string) => (st.conditions as Array<{ type: string }>).find((c) => c.type === t);
    return { applied: cond('Applied'), converged: cond('Converged') };
  };

  it('a changed module with the same count is not Applied while the old module runs (Converged alone would say yes)', () => {
    const old = { 1: 'Ticker', 2: 'Ticker', 3: 'Ticker', 4: 'Ticker' };
    expect(status('web 4 Ticker', old).applied).toMatchObject({
      status: 'True',
      reason: 'HeardRunning',
      message: 'heard running Ticker ×4',
    });
    const st = status('web 4 Ticker2', old);
    expect(st.converged).toMatchObject({ status: 'True' });
    expect(st.applied).toMatchObject({
      status: 'False',
      reason: 'NotHeardRunning',
      message: 'ordered Ticker2 ×4; heard running Ticker ×4',
    });
    expect(
      status('web 4 Ticker2', { 1: 'Ticker', 2: 'Ticker2', 5: 'Ticker2', 6: 'Ticker2' }).applied,
    ).toMatchObject({ status: 'False' });
    expect(
      status('web 4 Ticker2', { 5: 'Ticker2', 6: 'Ticker2', 7: 'Ticker2', 8: 'Ticker2' }).applied,
    ).toMatchObject({ status: 'True' });
  });

  it('a pod whose module is not heard yet, a scale not yet reached, or an extra pod is not Applied', () => {
    expect(status('web 2 Ticker', { 1: 'Ticker', 2: null }).applied).toMatchObject({
      status: 'False',
      message: 'ordered Ticker ×2; heard running Ticker ×1 and 1 pod(s) whose module is not heard yet',
    });
    expect(status('web 3 Ticker', { 1: 'Ticker', 2: 'Ticker' }).applied).toMatchObject({ status: 'False' });
    expect(status('web 1 Ticker', { 1: 'Ticker', 2: 'Ticker' }).applied).toMatchObject({ status: 'False' });
    expect(status('web 0 Ticker', {}).applied).toMatchObject({
      status: 'True',
      message: 'heard running nothing',
    });
    expect(
      status('web 2 Ticker; api 1 Ticker2', { 1: 'Ticker', 2: 'Ticker2', 3: 'Ticker' }).applied,
    ).toMatchObject({
      status: 'True',
      message: 'heard running Ticker ×2, Ticker2 ×1',
    });
  });

  it('before the air is judged it is Unknown, never True', () => {
    const st = plainStatus(kube({ nodes: 2, deployments: 'web 4 Ticker' }));
    expect((st.conditions as Array<{ type: string }>).find((c) => c.type === 'Applied')).toMatchObject({
      status: 'Unknown',
    });
  });
});

describe('what the plane says it refuses is a condition (#31 item 5)', () => {
  const TAG = clusterTag('kube');
  const WORDS = 'the store is full (256 objects), nothing is created';
  // Two Ready nodes running 20 Ticker pods; the plane says `refusal` at t=0 (or nothing).
  const air = (refusal: string | null, atMs: number) => {
    const v = new AirView({ cluster: 'kube' });
    let ctr = 1;
    for (const [node, ids] of [
      ['node-a', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]],
      ['node-b', [11, 12, 13, 14, 15, 16, 17, 18, 19, 20]],
    ] as const) {
      v.ingest(atMs, heartbeatDatagram({ cluster: TAG, node, ids, counter: ctr++ }, ZERO_KEY));
      v.ingest(atMs, assignDatagram({ cluster: TAG, node, ids, counter: ctr++ }, ZERO_KEY));
      for (const id of ids)
        v.ingest(atMs, specDatagram({ cluster: TAG, podId: id, image: 'Ticker', counter: ctr++ }, ZERO_KEY));
    }
    if (refusal !== null)
      for (const d of refusalDatagrams({ cluster: TAG, text: refusal, counter: ctr }, ZERO_KEY))
        v.ingest(0, d);
    return v.view(atMs);
  };
  const conds = (deployments: string, v: ClusterView) => {
    const st = plainStatus(kube({ nodes: 2, deployments }), v);
    const c = (t: string) => (st.conditions as Array<{ type: string }>).find((x) => x.type === t);
    return { applied: c('Applied'), degraded: c('Degraded'), ready: c('Ready') };
  };

  it("Applied=False PlaneRefused and Degraded=True with the plane's own words, while it says them", () => {
    const c = conds('a 250 Ticker; b 20 Ticker', air(WORDS, 0));
    expect(c.applied).toMatchObject({
      status: 'False',
      reason: 'PlaneRefused',
      message: `the plane refuses: ${WORDS}`,
    });
    expect(c.degraded).toMatchObject({
      status: 'True',
      reason: 'PlaneRefused',
      message: `the plane refuses: ${WORDS}`,
    });
    expect(planeSays(air(WORDS, 0))).toBe(`the plane refuses: ${WORDS}`);
  });

  it('a refusal no longer said (the spec fixed) is over once the TTL has passed: level, not history', () => {
    const c = conds('a 10 Ticker; b 10 Ticker', air(WORDS, 5_001));
    expect(c.applied).toMatchObject({ status: 'True', reason: 'HeardRunning' });
    expect(c.degraded).toMatchObject({ status: 'False' });
    expect(conds('a 10 Ticker; b 10 Ticker', air(null, 0)).applied).toMatchObject({ status: 'True' });
  });
});

describe('what the kubelets say they could not start is a condition (a module no node has)', () => {
  const TAG = clusterTag('kube');
  const air = (failed: boolean) => {
    const v = new AirView({ cluster: 'kube' });
    let ctr = 1;
    for (const [node, ids] of [
      ['node-a', [1, 3]],
      ['node-b', [2]],
    ] as const) {
      v.ingest(
        0,
        heartbeatDatagram({ cluster: TAG, node, ids: failed ? [] : ids, counter: ctr++ }, ZERO_KEY),
      );
      v.ingest(0, assignDatagram({ cluster: TAG, node, ids, counter: ctr++ }, ZERO_KEY));
      if (failed) v.ingest(0, failedDatagram({ cluster: TAG, node, ids, counter: ctr++ }, ZERO_KEY));
      for (const id of ids)
        v.ingest(0, specDatagram({ cluster: TAG, podId: id, image: 'Tiker', counter: ctr++ }, ZERO_KEY));
    }
    return v.view(0);
  };
  it('Applied=False NodesCannotStart and Degraded=True, naming the nodes, the module and the pods', () => {
    const st = plainStatus(kube({ nodes: 2, deployments: 'web 3 Tiker' }), air(true));
    const c = (t: string) => (st.conditions as Array<{ type: string }>).find((x) => x.type === t);
    const words =
      'kubelet node-a could not start Tiker (pods 1, 3); kubelet node-b could not start Tiker (pod 2): the node has no module of that name, or its Start refused or trapped';
    expect(c('Applied')).toMatchObject({ status: 'False', reason: 'NodesCannotStart', message: words });
    expect(c('Degraded')).toMatchObject({ status: 'True', reason: 'NodesCannotStart', message: words });
    expect(nodesCannotStart(air(false))).toBe('');
  });
});

describe('a node that left by a scale-down is not a NotReady node of the cluster', () => {
  const TAG = clusterTag('kube');
  // node-a and node-b heard now; node-c heard 10 s ago (past the TTL), as after nodes 3 → 2.
  const air = (cReadyToo: boolean) => {
    const v = new AirView({ cluster: 'kube' });
    let ctr = 1;
    const beat = (t: number, node: string) =>
      v.ingest(t, heartbeatDatagram({ cluster: TAG, node, ids: [], counter: ctr++ }, ZERO_KEY));
    beat(0, 'node-c');
    if (cReadyToo) beat(10_000, 'node-c');
    beat(10_000, 'node-a');
    beat(10_000, 'node-b');
    return v.view(10_000);
  };
  it('nodes 3 → 2: node-c heard NotReady is neither a row nor Degraded; heard Ready it is listed', () => {
    const left = plainStatus(kube({ nodes: 2, deployments: 'web 0 Ticker' }), air(false));
    expect(degraded(left)).toMatchObject({ status: 'False' });
    expect((left.nodeTable as Array<{ name: string }>).map((r) => r.name)).toEqual(['node-a', 'node-b']);
    const joined = plainStatus(kube({ nodes: 2, deployments: 'web 0 Ticker' }), air(true));
    expect((joined.nodeTable as Array<{ name: string }>).map((r) => r.name)).toEqual([
      'node-a',
      'node-b',
      'node-c',
    ]);
  });
  it('the same view with node-c still wanted: Degraded NodesNotReady names it', () => {
    const st = plainStatus(kube({ nodes: 3, deployments: 'web 0 Ticker' }), air(false));
    expect(degraded(st)).toMatchObject({
      status: 'True',
      reason: 'NodesNotReady',
      message: 'NotReady: node-c',
    });
  });
});
