// The plane's refusal frames (ours, 0x63): the codec, the view's assembly of the parts, and the
// limits shared with the Oberon side (Kube.SayLen, KubeNet.SayPart) read from the sources.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SOURCES_DIR } from '../machine/kube-disk.ts';
import {
  clusterTag,
  decodeKubeData,
  encodeRefusalData,
  failedDatagram,
  heartbeatDatagram,
  keyFromHex,
  refusalDatagrams,
} from './kubenet.ts';
import { AirView } from './view.ts';
import { LIMITS, TYP } from './wire.ts';

const KEY = keyFromHex('00c0ffee00c0ffee');
const TAG = clusterTag('kube');
const FULL = 'the store is full (256 objects), nothing is created';

describe('refusal frames', () => {
  it('round-trip: 5 parts of 14 characters at most, each signed, with its index, count and the sum', () => {
    const parts = encodeRefusalData({ cluster: TAG, text: FULL, counter: 7 }, KEY);
    expect(parts).toHaveLength(Math.ceil(FULL.length / 14));
    for (const [i, data] of parts.entries()) {
      expect(data.length).toBeLessThanOrEqual(LIMITS.DATA_BYTES);
      const d = decodeKubeData(TYP.REFUSAL, data);
      if (!d.ok) throw new Error(d.reason);
      expect(d.msg).toMatchObject({
        index: i,
        parts: parts.length,
        counter: 7 + i,
        text: FULL.slice(i * 14, i * 14 + 14),
      });
    }
    expect(() => encodeRefusalData({ cluster: TAG, text: 'x'.repeat(71), counter: 0 }, KEY)).toThrow(
      /1\.\.70/,
    );
    const bad = parts[0].slice();
    bad[1] = 0x33; // part 3 of 3 does not exist
    expect(decodeKubeData(TYP.REFUSAL, bad)).toMatchObject({ ok: false, reason: 'part 3 of 3' });
  });

  it('the view says the words once every part of one text is in, and forgets them a TTL after the last', () => {
    const view = new AirView({ cluster: 'kube', key: KEY });
    const dg = refusalDatagrams({ cluster: TAG, text: FULL, counter: 10 }, KEY);
    for (const d of dg.slice(0, -1)) expect(view.ingest(1000, d)?.verdict).toBe('ok');
    expect(view.view(1000).plane.refusal).toBeNull(); // a part missing
    view.ingest(1001, dg[dg.length - 1]);
    expect(view.view(1001).plane.refusal).toBe(FULL);
    // A part of another text does not mix in: the sum and count differ.
    const other = refusalDatagrams(
      { cluster: TAG, text: 'replicas must be 0..250: web 999', counter: 20 },
      KEY,
    );
    view.ingest(1500, other[0]);
    expect(view.view(1500).plane.refusal).toBe(FULL);
    for (const d of other.slice(1)) view.ingest(1600, d);
    expect(view.view(1600).plane.refusal).toBe('replicas must be 0..250: web 999');
    expect(view.view(1600 + LIMITS.TTL_MS).plane.refusal).toBe('replicas must be 0..250: web 999');
    expect(view.view(1601 + LIMITS.TTL_MS).plane.refusal).toBeNull();
    // A forged part (wrong key) is refused like any forged frame.
    const forged = refusalDatagrams({ cluster: TAG, text: 'nothing', counter: 99 }, keyFromHex('1'));
    expect(view.ingest(9000, forged[0])?.verdict).toBe('forged');
    expect(view.view(9000).plane.refusal).toBeNull();
  });

  it("a kubelet's failed frame (0x64, the heartbeat's layout): the view keeps its ids a TTL, as the node's own", () => {
    const view = new AirView({ cluster: 'kube', key: KEY });
    view.ingest(0, heartbeatDatagram({ cluster: TAG, node: 'node-a', ids: [1], counter: 1 }, KEY));
    const rec = view.ingest(
      1,
      failedDatagram({ cluster: TAG, node: 'node-a', ids: [2, 3], counter: 2 }, KEY),
    );
    expect(rec).toMatchObject({ verdict: 'ok', kind: 'failed', node: 'node-a', ids: [2, 3] });
    expect(view.view(1).nodes[0]).toMatchObject({ name: 'node-a', running: [1], failed: [2, 3] });
    // Its counter is the node's: a replay of it is stale, not a plane frame.
    const replay = failedDatagram({ cluster: TAG, node: 'node-a', ids: [2, 3], counter: 2 }, KEY);
    expect(view.ingest(2, replay)?.verdict).toBe('stale');
    expect(view.view(1 + LIMITS.TTL_MS).nodes[0].failed).toEqual([2, 3]);
    expect(view.view(2 + LIMITS.TTL_MS).nodes[0].failed).toEqual([]);
    expect(view.view(2).plane.heard).toBe(false);
  });

  it("the limits are the Oberon sources' (Kube.SayLen, KubeNet.SayPart, Refusal = 63H)", () => {
    const kube = readFileSync(join(SOURCES_DIR, 'Kube.Mod'), 'latin1');
    const net = readFileSync(join(SOURCES_DIR, 'KubeNet.Mod'), 'latin1');
    expect(Number(/SayLen\* = (\d+);/.exec(kube)?.[1])).toBe(LIMITS.REFUSAL_CHARS + 1);
    expect(Number(/SayPart = (\d+);/.exec(net)?.[1])).toBe(LIMITS.REFUSAL_PART_CHARS);
    expect(/Refusal = ([0-9A-F]+)H;/.exec(net)?.[1]).toBe(TYP.REFUSAL.toString(16).toUpperCase());
    expect(/Failed = ([0-9A-F]+)H;/.exec(net)?.[1]).toBe(TYP.FAILED.toString(16).toUpperCase());
    // Every refusal the plane keeps fits: the longest fixed words plus what they name.
    const full = /FullWords = "([^"]+)"/.exec(kube)?.[1];
    expect(full).toBe(FULL);
    expect(`${FULL}: ${'x'.repeat(15)}`.length).toBeLessThanOrEqual(LIMITS.REFUSAL_CHARS);
  });
});
