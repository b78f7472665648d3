import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { forge } from './inject.ts';
import { assignDatagram, clusterTag, heartbeatDatagram, keyFromHex, specDatagram } from './kubenet.ts';
import { AirView, formatRecord, formatView, isConverged } from './view.ts';
import { encodeDatagram, fromHex } from './wire.ts';

const KEY = keyFromHex('0123456789abcdef');
const TAG = clusterTag('kube');

/** A generated KubeNet cluster on the air: a plane and nodes with their own counters. */
class Air {
  t = 0;
  planeCtr = 40_000;
  nodeCtr = new Map<string, number>();
  view = new AirView({ cluster: 'kube', key: KEY });
  sent: Uint8Array[] = [];

  feed(d: Uint8Array) {
    this.sent.push(d);
    return this.view.ingest(this.t, d);
  }
  beat(node: string, ids: number[]) {
    const c = this.nodeCtr.get(node) ?? 7;
    this.nodeCtr.set(node, (c + 1) % 65536);
    return this.feed(heartbeatDatagram({ cluster: TAG, node, ids, counter: c }, KEY));
  }
  assign(node: string, ids: number[]) {
    const d = assignDatagram({ cluster: TAG, node, ids, counter: this.planeCtr }, KEY, { sadr: 9 });
    this.planeCtr = (this.planeCtr + 1) % 65536;
    this.feed(d);
    return d;
  }
  spec(id: number, image: string) {
    this.feed(specDatagram({ cluster: TAG, podId: id, image, counter: this.planeCtr }, KEY, { sadr: 9 }));
    this.planeCtr = (this.planeCtr + 1) % 65536;
  }
  at(ms: number) {
    this.t = ms;
    return this;
  }
  now() {
    return this.view.view(this.t);
  }
}

describe('the cluster view rebuilt from the air', () => {
  it('follows joins, convergence, node loss, failover and a rollout', () => {
    const air = new Air();
    // join: both kubelets heartbeat with nothing running
    air.beat('node-a', []);
    air.beat('node-b', []);
    let v = air.now();
    expect(v.nodes.map((n) => [n.name, n.ready, n.assigned])).toEqual([
      ['node-a', true, null],
      ['node-b', true, null],
    ]);
    expect(v.converged).toBe(false);

    // the plane assigns 4 pods and announces their image
    air.at(500);
    air.assign('node-a', [1, 2]);
    air.assign('node-b', [3, 4]);
    for (const id of [1, 2, 3, 4]) air.spec(id, 'Ticker');
    v = air.now();
    expect(v.nodes.every((n) => !n.converged)).toBe(true);
    expect(v.plane).toMatchObject({ heard: true, lastHeardMs: 500 });

    // kubelets start them
    air.at(1000);
    air.beat('node-a', [1, 2]);
    air.beat('node-b', [4, 3]); // order does not matter for convergence
    v = air.now();
    expect(v.converged).toBe(true);
    expect(isConverged(v, 4)).toBe(true);
    expect(isConverged(v, 6)).toBe(false);
    expect(v.pods).toEqual([
      { id: 1, image: 'Ticker', assignedTo: ['node-a'], runningOn: ['node-a'] },
      { id: 2, image: 'Ticker', assignedTo: ['node-a'], runningOn: ['node-a'] },
      { id: 3, image: 'Ticker', assignedTo: ['node-b'], runningOn: ['node-b'] },
      { id: 4, image: 'Ticker', assignedTo: ['node-b'], runningOn: ['node-b'] },
    ]);

    // node-b goes silent: Ready until exactly 5 s after its last heartbeat, NotReady after
    for (let t = 2000; t <= 6000; t += 1000) {
      air.at(t).beat('node-a', [1, 2]);
      air.assign('node-a', [1, 2]);
    }
    expect(
      air
        .at(6000)
        .now()
        .nodes.find((n) => n.name === 'node-b')!.ready,
    ).toBe(true);
    v = air.at(6001).now();
    const b = v.nodes.find((n) => n.name === 'node-b')!;
    expect(b).toMatchObject({ ready: false, ageMs: 5001, converged: false });
    expect(v.readyNodes).toBe(1);
    expect(v.running).toBe(2); // a NotReady node's report no longer counts
    expect(isConverged(v, 4)).toBe(false);

    // failover: the plane moves 3 and 4 to node-a as new ids 5 and 6
    air.at(8000);
    air.assign('node-a', [1, 2, 5, 6]);
    air.spec(5, 'Ticker');
    air.spec(6, 'Ticker');
    expect(air.now().nodes.find((n) => n.name === 'node-a')!.converged).toBe(false);
    air.at(8500).beat('node-a', [1, 2, 5, 6]);
    v = air.now();
    expect(isConverged(v, 4)).toBe(true);

    // rollout to Ticker2: new ids 7..10 replace 1, 2, 5, 6 with at most one surge pod
    air.at(9000);
    air.assign('node-a', [1, 2, 5, 6, 7]);
    air.spec(7, 'Ticker2');
    air.at(9500).beat('node-a', [1, 2, 5, 6, 7]);
    expect(air.now().running).toBe(5);
    air.at(10_000);
    air.assign('node-a', [7, 8, 9, 10]);
    for (const id of [8, 9, 10]) air.spec(id, 'Ticker2');
    air.at(10_500).beat('node-a', [7, 8, 9, 10]);
    v = air.now();
    expect(isConverged(v, 4)).toBe(true);
    const runningImages = v.pods.filter((p) => p.runningOn.length).map((p) => p.image);
    expect(runningImages).toEqual(['Ticker2', 'Ticker2', 'Ticker2', 'Ticker2']);
    expect(v.counts).toMatchObject({ forged: 0, stale: 0, otherCluster: 0, malformed: 0 });

    // what changed on the way: node-a's list changed 3 times (failover, surge, rollout); no flaps yet
    expect(v.nodes.find((n) => n.name === 'node-a')).toMatchObject({
      assignmentChanges: 3,
      lastAssignmentChangeMs: 10_000,
      flaps: 0,
    });
    expect(v.nodes.find((n) => n.name === 'node-b')).toMatchObject({ assignmentChanges: 0, flaps: 0 });

    // node-b returns and reports what it still ran: the same ids on two Ready nodes are flagged
    air.at(11_000).beat('node-b', [3, 7]);
    v = air.now();
    expect(v.duplicates).toEqual([7]);
    expect(v.nodes.find((n) => n.name === 'node-b')!.flaps).toBe(1); // silent 10 s, then heard again
    expect(v.converged).toBe(false);
    expect(formatView(v)).toMatch(/running twice: 7/);
  });

  it('flags the DR forgeries: another cluster, zero key, wrong key, replay; obeys a signed one', () => {
    const air = new Air();
    air.beat('node-a', [1, 2]);
    const old = air.assign('node-a', [1, 2]);
    air.at(1000).beat('node-a', [3, 4]);
    const heard = air.assign('node-a', [3, 4]);
    const ctx = { tag: TAG, key: KEY, ids: [], ahead: 2, recorded: [old] };
    const forged = forge(['other-cluster', 'zero-key', 'wrong-key', 'replay', 'signed'], heard, ctx);
    const verdicts = forged.map((f) => air.feed(f.datagram)!.verdict);
    expect(verdicts).toEqual(['other-cluster', 'forged', 'forged', 'stale', 'ok']);
    expect(forged.find((f) => f.kind === 'replay')!.datagram).toEqual(old);
    const v = air.now();
    expect(v.counts).toMatchObject({ otherCluster: 1, forged: 2, stale: 1 });
    expect(v.rejects.map((r) => r.verdict)).toEqual(['other-cluster', 'forged', 'forged', 'stale']);
    // the signed forgery (counter heard + 2) is indistinguishable from the plane: "run nothing"
    expect(v.nodes[0].assigned).toEqual([]);
    expect(v.plane.counter).toBe((air.planeCtr + 1) % 65536);
    // the plane's next assignment (counter heard + 1) is now stale: the forgery ran ahead of it
    expect(air.assign('node-a', [3, 4]).length).toBe(33);
    expect(air.view.view(air.t).counts.stale).toBe(2);
  });

  it('a replay is refused while the plane speaks and across 180 s of plane silence, as our kubelets judge (#28.4)', () => {
    const air = new Air();
    const old = air.assign('node-a', [1]);
    air.at(1000).assign('node-a', [2]);
    expect(air.at(2000).feed(old)!.verdict).toBe('stale');
    expect(air.at(7500).feed(old)!.verdict).toBe('stale');
    expect(air.at(181_000).feed(old)!.verdict).toBe('stale');
    const rec = air.at(181_001).feed(old)!;
    expect(rec).toMatchObject({ verdict: 'ok', fresh: 'relearned' });
  });

  it('judged as the reference (planeTtlMs 5000), a replay is relearned after more than 5 s of plane silence', () => {
    const air = new Air();
    air.view = new AirView({ cluster: 'kube', key: KEY, planeTtlMs: 5000 });
    const old = air.assign('node-a', [1]);
    air.at(1000).assign('node-a', [2]);
    expect(air.at(6000).feed(old)!.verdict).toBe('stale');
    expect(air.at(6001).feed(old)!).toMatchObject({ verdict: 'ok', fresh: 'relearned' });
  });

  it('prints frames as the reference listener does, with the verdict when not ok', () => {
    const view = new AirView({ cluster: 20, key: keyFromHex('00c0ffee00c0ffee') });
    const rec = view.ingest(
      1500,
      fromHex('0501ff2a6010000000146e6f646531000203073412e41167d70000000000000000'),
    )!;
    expect(rec).toMatchObject({ kind: 'heartbeat', cluster: 20, node: 'node1', ids: [3, 7], auth: true });
    expect(formatRecord(rec, 0)).toBe('    1.50  heartbeat  [ 20] node1     [3, 7]');
    const bad = new AirView({ cluster: 20 }).ingest(0, fromHex(rec.raw))!;
    expect(formatRecord(bad, 0)).toMatch(/FORGED \(MAC does not match/);
    const other = new Uint8Array(32);
    other[0] = 1;
    other[1] = 0xff;
    other[2] = 3;
    other[3] = 0x10;
    other[4] = 5;
    expect(formatRecord(view.ingest(2000, encodeDatagram(5, other))!, 0)).toBe(
      '    2.00  typ 0x10  len 5  3 -> 255',
    );
    expect(JSON.parse(JSON.stringify(rec))).toEqual(rec);
  });

  it('random datagrams never crash the view, and never change it without the key', () => {
    const view = new AirView({ cluster: 'kube', key: KEY });
    const kubeish = fc
      .record({
        typ: fc.constantFrom(0x60, 0x61, 0x62, 0x10),
        len: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.nat()),
        body: fc.uint8Array({ minLength: 24, maxLength: 24 }),
        tag: fc.constantFrom(TAG, TAG + 1, 0),
      })
      .map(({ typ, len, body, tag }) => {
        const p = new Uint8Array(32);
        p[0] = 1;
        p[1] = 0xff;
        p[3] = typ;
        new DataView(p.buffer).setUint32(4, len >>> 0, true);
        p.set(body, 8);
        p[8] = tag;
        return encodeDatagram(5, p);
      });
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.uint8Array({ maxLength: 70 }), kubeish), { maxLength: 50 }), (ds) => {
        for (const d of ds) view.ingest(0, d);
        const v = view.view(0);
        expect(v.nodes).toEqual([]);
        expect(v.pods).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});
