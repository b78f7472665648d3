// OberonAir against a real kube-apiserver: the operator listens to every air — also one no
// OberonKube owns — and its status says what is heard (senders, clusters, frames/s), driven here
// by scripted stations (the air toolkit) on a real local relay. A steady air writes nothing; an
// OberonKube's air is heard through the same one station, which also judges the cluster's key.
import { describe, expect, it, onTestFinished } from 'vitest';
import { assignDatagram, clusterTag, heartbeatDatagram, keyFromHex } from '../../operator/src/air/kubenet.ts';
import { startRelay } from '../../operator/src/air/relay.ts';
import { openStation } from '../../operator/src/air/station.ts';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { derivedKey } from '../../operator/src/controllers/oberonkube-render.ts';
import type { Manager } from '../../operator/src/runtime/manager.ts';
import { freshNamespace } from './harness.ts';
import {
  air,
  condition,
  type KubeObject,
  OBERONAIR,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

/** A local relay and one scripted station that sends `frames()` every `everyMs`; all closed at the end. */
async function scriptedAir(everyMs: number, frames: () => Uint8Array[]) {
  const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
  const st = await openStation({ host: '127.0.0.1', port: relay.address.port });
  const timer = setInterval(() => {
    for (const f of frames()) void st.send(f);
  }, everyMs);
  onTestFinished(async () => {
    clearInterval(timer);
    await st.close();
    await relay.close();
  });
  return { relay, st, address: () => ({ host: '127.0.0.1', port: relay.address.port }) };
}

/** How many times the operator's `controller` has reconciled (each reconcile of an air reads its census). */
async function looksAt(mgr: Manager, controller: string): Promise<number> {
  const { values } = await mgr.metrics.reconcileTotal.get();
  return values.filter((v) => v.labels.controller === controller).reduce((n, v) => n + v.value, 0);
}

describe('OberonAir: what the operator hears', () => {
  it('a standalone air is heard: senders, clusters with their nodes and plane, frames/s — and a steady air makes zero writes', async () => {
    const ns = await freshNamespace('air-heard');
    const k = testClient();
    // Two clusters whose keys the operator does not know: it can list them, never verify them.
    const LAB = clusterTag('lab');
    const FARM = clusterTag('farm');
    const key = keyFromHex('0123456789abcdef');
    let ctr = 1;
    const nodes = new Set(['node-a', 'node-b']);
    const scripted = await scriptedAir(500, () => [
      ...[...nodes].map((node) => heartbeatDatagram({ cluster: LAB, node, ids: [], counter: ctr++ }, key)),
      assignDatagram({ cluster: LAB, node: 'node-a', ids: [], counter: ctr++ }, key, { sadr: 9 }),
      assignDatagram({ cluster: LAB, node: 'node-b', ids: [], counter: ctr++ }, key, { sadr: 9 }),
      heartbeatDatagram({ cluster: FARM, node: 'n1', ids: [], counter: ctr++ }, key),
    ]);
    const mgr = await startOperator({ namespace: ns, airAddress: scripted.address });
    await k.create(OBERONAIR, air(ns, 'solo'));

    // 5 frames every 0.5 s: 10 frames/s once the 10-s window is full.
    const solo: Deep = await waitFor(
      'the air heard at its full rate',
      async () => {
        const o: Deep = await k.get(OBERONAIR, ns, 'solo');
        return o.status?.heard?.framesPerSecond >= 8 && o;
      },
      40_000,
    );
    const heard = solo.status.heard;
    expect(heard.stations).toBe(4); // node-a, node-b, lab's plane, farm's n1
    expect(heard.framesPerSecond).toBeLessThanOrEqual(12);
    expect(heard.clusters).toEqual(
      [
        { tag: LAB, name: '', verified: false, nodes: ['node-a', 'node-b'], plane: true, forgedFrames: 0 },
        { tag: FARM, name: '', verified: false, nodes: ['n1'], plane: false, forgedFrames: 0 },
      ].sort((a, b) => a.tag - b.tag),
    );
    // Hearing is not readiness: the relay pod is still not ready (no kubelet here).
    expect(condition(solo, 'Ready')?.status).toBe('False');

    // Steady state: the air keeps talking at the same rate, the operator keeps listening — no writes.
    // Judged by counters, not by a sleep: the window closes once the relay has carried half a census
    // window of frames (5 s of talk) to the operator's station and the operator has looked at the
    // air after that, at least twice in all (its reconcile counter; each look reads the census and
    // would write a change) — a write would show in its write counter and the resourceVersion.
    const rv = solo.metadata.resourceVersion;
    const writes = mgr.client.writes;
    const frames = scripted.relay.stats().framesOut;
    const looks = await looksAt(mgr, 'oberonair');
    await waitFor('5 s of talk on the air', async () => scripted.relay.stats().framesOut >= frames + 50);
    const talked = await looksAt(mgr, 'oberonair');
    await waitFor('the operator looks at the air after that, twice in all', async () => {
      const n = await looksAt(mgr, 'oberonair');
      return n > talked && n >= looks + 2;
    });
    expect(((await k.get(OBERONAIR, ns, 'solo')) as KubeObject).metadata.resourceVersion).toBe(rv);
    expect(mgr.client.writes).toBe(writes);

    // A new node joins: status follows (one write, rate-limited).
    nodes.add('node-c');
    const joined: Deep = await waitFor(
      'node-c heard',
      async () => {
        const o: Deep = await k.get(OBERONAIR, ns, 'solo');
        return o.status.heard.stations === 5 && o;
      },
      20_000,
    );
    expect(joined.status.heard.clusters.find((c: Deep) => c.tag === LAB).nodes).toEqual([
      'node-a',
      'node-b',
      'node-c',
    ]);
  }, 90_000);

  it("an OberonKube's air is heard by one station: the air names the cluster, verified with its key, and counts forged frames", async () => {
    const ns = await freshNamespace('air-kube');
    const k = testClient();
    const SEED = 'envtest-seed';
    const TAG = clusterTag('kube');
    let key: Uint8Array | undefined;
    let forge = 0;
    let ctr = 1;
    const bad = keyFromHex('ffffffffffffffff');
    const scripted = await scriptedAir(500, () => {
      if (!key) return [];
      const out = [heartbeatDatagram({ cluster: TAG, node: 'node-a', ids: [], counter: ctr++ }, key)];
      for (; forge > 0; forge--)
        out.push(heartbeatDatagram({ cluster: TAG, node: 'evil', ids: [9], counter: 9000 + forge }, bad));
      return out;
    });
    await startOperator({ namespace: ns, keySeed: SEED, airAddress: scripted.address });
    const created = await k.create<KubeObject>(OBERONKUBE, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonKube',
      metadata: { name: 'lab', namespace: ns },
      spec: { nodes: 1 },
    });
    key = keyFromHex(derivedKey(SEED, created.metadata.uid as string));
    forge = 2;

    const a: Deep = await waitFor(
      "the cluster's forged frames on its air's status",
      async () => {
        const o: Deep = await k.getOrUndefined(OBERONAIR, ns, 'lab-air');
        const c = o?.status?.heard?.clusters?.find((x: Deep) => x.tag === TAG);
        return c?.forgedFrames === 2 && o;
      },
      30_000,
    );
    // The forger's name crossed the air too: the census lists it, unverified by nature.
    expect(a.status.heard.clusters).toEqual([
      { tag: TAG, name: 'kube', verified: true, nodes: ['evil', 'node-a'], plane: false, forgedFrames: 2 },
    ]);
    // ... and the cluster's own status, from the same station, counts the same forgeries.
    const kube: Deep = await waitFor('the OberonKube counts them', async () => {
      const o: Deep = await k.get(OBERONKUBE, ns, 'lab');
      return o.status?.forgedFrames === 2 && o;
    });
    expect(kube.status.nodes).toBe('1/1');
  }, 60_000);
});
