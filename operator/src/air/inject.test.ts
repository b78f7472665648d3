import { afterEach, describe, expect, it } from 'vitest';
import { runInjector } from './inject.ts';
import { assignDatagram, clusterTag, decodeKubeFrame, keyFromHex } from './kubenet.ts';
import { startListener } from './listen.ts';
import { startRelay } from './relay.ts';
import { openStation } from './station.ts';
import { until } from './until.test-helper.ts';
import type { FrameRecord } from './view.ts';

const KEY = keyFromHex('0123456789abcdef');
const TAG = clusterTag('kube');
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

describe('the injector on a real air', () => {
  it("sends each DR forgery right after the plane's assignment to the node, and the listener judges them", async () => {
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    open.push(relay);
    const port = relay.address.port;
    const records: FrameRecord[] = [];
    const listener = await startListener({
      host: '127.0.0.1',
      port,
      cluster: 'kube',
      key: KEY,
      output: 'none',
      onRecord: (r) => records.push(r),
    });
    open.push(listener);
    const injected = runInjector({
      host: '127.0.0.1',
      port,
      node: 'node-a',
      cluster: 'kube',
      key: KEY,
      forgeries: ['other-cluster', 'zero-key', 'wrong-key', 'replay', 'signed'],
      skip: 3,
      rounds: 2,
      timeoutMs: 10_000,
    });
    await until(() => relay.peers().length === 2, 5000, 'listener and injector on the air');

    // A plane: one assignment to node-a every 100 ms, [1,2] three times, then [3,4].
    const plane = await openStation({ host: '127.0.0.1', port, bind: '127.0.0.1', helloIntervalMs: 0 });
    open.push(plane);
    let counter = 65534; // crosses 0xFFFF → 0 on the way
    let sent = 0;
    const timer = setInterval(() => {
      const ids = sent < 3 ? [1, 2] : [3, 4];
      void plane.send(assignDatagram({ cluster: TAG, node: 'node-a', ids, counter }, KEY, { sadr: 7 }));
      counter = (counter + 1) % 65536;
      sent++;
    }, 100);
    open.push({ close: async () => clearInterval(timer) });

    const res = await injected;
    expect(res.timedOut).toBe(false);
    expect(res.rounds).toBe(2);
    expect(res.assignmentsHeard).toBe(5);
    expect(res.injected.map((i) => i.kind)).toEqual([
      'other-cluster',
      'zero-key',
      'wrong-key',
      'replay',
      'signed',
      'other-cluster',
      'zero-key',
      'wrong-key',
      'replay',
      'signed',
    ]);
    expect(res.injected.every((i) => i.note === undefined)).toBe(true);

    const raws = new Set(res.injected.map((i) => i.raw));
    await until(
      () => res.injected.every((i) => records.some((r) => r.raw === i.raw)),
      5000,
      'listener heard all',
    );
    for (const round of [1, 2]) {
      const mine = res.injected.filter((i) => i.round === round);
      // the round's frames arrive together, in order, with nothing in between ...
      const first = records.findIndex((r) => r.raw === mine[0].raw);
      const got = records.slice(first, first + mine.length);
      expect(got.map((r) => r.raw)).toEqual(mine.map((i) => i.raw));
      // ... right after the plane's genuine assignment that triggered them
      const trigger = records[first - 1];
      expect(trigger).toMatchObject({ kind: 'assign', node: 'node-a', auth: true, ids: [3, 4] });
      // round 1's signed forgery ran two ahead of the plane, so every station (the listener too)
      // refuses the plane's next assignment as stale: that is round 2's trigger
      expect(trigger.verdict).toBe(round === 1 ? 'ok' : 'stale');
      expect(raws.has(trigger.raw)).toBe(false);
      expect(got.map((r) => r.verdict)).toEqual(['other-cluster', 'forged', 'forged', 'stale', 'ok']);
      // the signed forgery runs two ahead of the plane and says "run nothing"
      const signed = decodeKubeFrame(Buffer.from(mine[4].raw, 'hex'))!;
      expect(signed.kube.ok && signed.kube.msg).toMatchObject({
        ids: [],
        counter: (trigger.counter! + 2) % 65536,
      });
      // the replay is an earlier genuine assignment with other ids
      expect(got[3].ids).toEqual([1, 2]);
    }
  });

  it('gives up after its timeout when the node is never assigned', async () => {
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    open.push(relay);
    const res = await runInjector({
      host: '127.0.0.1',
      port: relay.address.port,
      node: 'ghost',
      forgeries: ['signed'],
      timeoutMs: 300,
    });
    expect(res).toMatchObject({ timedOut: true, assignmentsHeard: 0, injected: [] });
  });

  it('refuses to run without a forgery', async () => {
    await expect(runInjector({ host: '127.0.0.1', node: 'a', forgeries: [] })).rejects.toThrow(
      /at least one/,
    );
  });
});
