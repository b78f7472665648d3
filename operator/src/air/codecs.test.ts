import { describe, expect, it } from 'vitest';
import { counterDistance, counterNewer, FreshnessTable, nextCounter, PLANE_SENDER } from './freshness.ts';
import { halfSipHash, halfSipHashBytes } from './halfsiphash.ts';
import {
  assignDatagram,
  clusterTag,
  decodeKubeData,
  decodeKubeFrame,
  encodeNodeMessageData,
  encodeSpecData,
  heartbeatDatagram,
  keyFromHex,
  macValid,
  otherClusterTag,
  specDatagram,
  ZERO_KEY,
} from './kubenet.ts';
import { decodeDatagram, decodeSccHeader, fromHex, LIMITS, TYP, toHex } from './wire.ts';

const KEY = keyFromHex('00c0ffee00c0ffee');
const seq = (n: number) => Uint8Array.from({ length: n }, (_, i) => i);

describe('HalfSipHash-2-4/32 matches the reference vectors (spec §12)', () => {
  it('key 00..07, empty message gives a9 35 9f 5b', () => {
    expect(toHex(halfSipHashBytes(seq(8), new Uint8Array(0)))).toBe('a9359f5b');
  });
  it('key 00..07, message 00..0e gives 74 fe 2b 97', () => {
    expect(toHex(halfSipHashBytes(seq(8), seq(15)))).toBe('74fe2b97');
  });
  it('every message length 0..24 hashes to a 32-bit unsigned number, and one bit changes it', () => {
    for (let n = 0; n <= 24; n++) {
      const m = seq(n);
      const h = halfSipHash(seq(8), m);
      expect(h).toBeGreaterThanOrEqual(0);
      expect(h).toBeLessThan(2 ** 32);
      if (n > 0) {
        m[n - 1] ^= 1;
        expect(halfSipHash(seq(8), m)).not.toBe(h);
      }
    }
  });
  it('refuses a key that is not 8 bytes', () => {
    expect(() => halfSipHash(seq(7), seq(1))).toThrow(/8-byte key/);
  });
});

describe('cluster tags and keys', () => {
  it('tags kube 20, lab 87, farm 55, kube2 15', () => {
    expect([clusterTag('kube'), clusterTag('lab'), clusterTag('farm'), clusterTag('kube2')]).toEqual([
      20, 87, 55, 15,
    ]);
  });
  it('"another cluster" of kube is 21, and of tag 255 wraps to 1', () => {
    expect(otherClusterTag(20)).toBe(21);
    expect(otherClusterTag(255)).toBe(1);
  });
  it('tags stay within 1..255 for any name', () => {
    for (const name of ['', 'a', '~~~~~~~~', 'ÿÿÿÿÿÿÿÿ', 'x'.repeat(100)]) {
      const t = clusterTag(name);
      expect(t).toBeGreaterThanOrEqual(1);
      expect(t).toBeLessThanOrEqual(255);
    }
  });
  it('reads 00c0ffee00c0ffee as bytes 00 c0 ff ee 00 c0 ff ee (k0 = k1 = 0xEEFFC000)', () => {
    expect(toHex(KEY)).toBe('00c0ffee00c0ffee');
    const dv = new DataView(KEY.buffer);
    expect(dv.getUint32(0, true)).toBe(0xeeffc000);
    expect(dv.getUint32(4, true)).toBe(0xeeffc000);
  });
  it('pads a short key on the right: abc → ab c0 00 00 00 00 00 00; empty is all zero', () => {
    expect(toHex(keyFromHex('abc'))).toBe('abc0000000000000');
    expect(toHex(keyFromHex('ABC'))).toBe('abc0000000000000');
    expect(toHex(keyFromHex(''))).toBe('0000000000000000');
    expect(keyFromHex('')).toEqual(ZERO_KEY);
  });
  it('refuses more than 16 digits or a non-hex character, without echoing the key', () => {
    expect(() => keyFromHex('0123456789abcdef0')).toThrow(/17 hex digits/);
    try {
      keyFromHex('secretg');
      expect.unreachable();
    } catch (e) {
      expect(String(e)).toMatch(/not a hex digit/);
      expect(String(e)).not.toContain('secret');
    }
  });
});

describe('KubeNet frames reproduce the spec examples byte for byte', () => {
  it('heartbeat of node1, ids [3,7], counter 0x1234, key 00c0ffee00c0ffee, tag 20', () => {
    const data = encodeNodeMessageData(
      TYP.HEARTBEAT,
      { cluster: 20, node: 'node1', ids: [3, 7], counter: 0x1234 },
      KEY,
    );
    expect(toHex(data)).toBe('146e6f646531000203073412e41167d7');
    const dg = heartbeatDatagram({ cluster: 20, node: 'node1', ids: [3, 7], counter: 0x1234 }, KEY, {
      sadr: 0x2a,
    });
    expect(toHex(dg)).toBe('0501ff2a6010000000146e6f646531000203073412e41167d70000000000000000');
  });
  it('spec of pod 5, image Ticker, counter 0x0100', () => {
    const data = encodeSpecData({ cluster: 20, podId: 5, image: 'Ticker', counter: 0x0100 }, KEY);
    expect(toHex(data)).toBe('1405065469636b65720001323aabd9');
  });
  it('decodes the example heartbeat datagram and verifies its MAC', () => {
    const f = decodeKubeFrame(fromHex('0501ff2a6010000000146e6f646531000203073412e41167d70000000000000000'));
    expect(f).not.toBeNull();
    expect(f!.channel).toBe(5);
    expect(f!.header).toEqual({ valid: 1, dadr: 0xff, sadr: 0x2a, typ: 0x60, len: 16 });
    expect(f!.kube.ok).toBe(true);
    if (!f!.kube.ok) return;
    expect(f!.kube.msg).toEqual({
      typ: 0x60,
      cluster: 20,
      node: 'node1',
      ids: [3, 7],
      counter: 0x1234,
      mac: 0xd76711e4,
    });
    expect(macValid(KEY, f!.kube)).toBe(true);
    expect(macValid(ZERO_KEY, f!.kube)).toBe(false);
  });
  it('round-trips assignments and specs at the limits (6-char name, 10 ids, 15-char image)', () => {
    const a = { cluster: 87, node: 'node-a', ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 255], counter: 0xffff };
    const f = decodeKubeFrame(assignDatagram(a, KEY));
    expect(f!.header.len).toBe(24);
    expect(f!.kube.ok && f!.kube.msg).toMatchObject({ typ: TYP.ASSIGN, ...a });
    const s = { cluster: 87, podId: 255, image: 'ABCDEFGHIJKLMNO', counter: 0 };
    const g = decodeKubeFrame(specDatagram(s, KEY));
    expect(g!.header.len).toBe(24);
    expect(g!.kube.ok && g!.kube.msg).toMatchObject({ typ: TYP.SPEC, ...s });
    expect(g!.kube.ok && macValid(KEY, g!.kube)).toBe(true);
  });
  it('an empty assignment ("run nothing") is 14 bytes', () => {
    const f = decodeKubeFrame(assignDatagram({ cluster: 20, node: 'n', ids: [], counter: 9 }, KEY));
    expect(f!.header.len).toBe(14);
    expect(f!.kube.ok && f!.kube.msg).toMatchObject({ node: 'n', ids: [] });
  });
  it('refuses to encode what does not fit the protocol limits', () => {
    const base = { cluster: 20, node: 'node1', ids: [1], counter: 1 };
    expect(() => encodeNodeMessageData(TYP.ASSIGN, { ...base, node: 'node-ab' }, KEY)).toThrow(/1..6/);
    expect(() => encodeNodeMessageData(TYP.ASSIGN, { ...base, node: '' }, KEY)).toThrow(/1..6/);
    expect(() =>
      encodeNodeMessageData(TYP.ASSIGN, { ...base, ids: Array.from(seq(11), (x) => x + 1) }, KEY),
    ).toThrow(/exceed the 10/);
    expect(() => encodeNodeMessageData(TYP.ASSIGN, { ...base, ids: [0] }, KEY)).toThrow(/pod id 0/);
    expect(() => encodeNodeMessageData(TYP.ASSIGN, { ...base, counter: 65536 }, KEY)).toThrow(/counter/);
    expect(() => encodeSpecData({ cluster: 20, podId: 1, image: 'x'.repeat(16), counter: 0 }, KEY)).toThrow(
      /at most 15/,
    );
  });
  it('rejects data whose id count disagrees with its length, or lengths outside 14..24 / 9..24', () => {
    const good = encodeNodeMessageData(
      TYP.HEARTBEAT,
      { cluster: 20, node: 'a', ids: [1, 2], counter: 1 },
      KEY,
    );
    const bad = good.slice();
    bad[7] = 3;
    expect(decodeKubeData(TYP.HEARTBEAT, bad)).toMatchObject({ ok: false });
    expect(decodeKubeData(TYP.HEARTBEAT, good.subarray(0, 13))).toMatchObject({ ok: false });
    expect(decodeKubeData(TYP.SPEC, new Uint8Array(8))).toMatchObject({ ok: false });
    expect(decodeKubeData(0x42, good)).toMatchObject({ ok: false });
  });
  it('reads the SCC length as a little-endian 32-bit number', () => {
    expect(decodeSccHeader(fromHex('01ff0a6278563412')).len).toBe(0x12345678);
  });
  it('classifies datagrams: hello, 33-byte frame, anything else malformed', () => {
    expect(decodeDatagram(Uint8Array.of(0xff))).toEqual({ kind: 'hello' });
    expect(decodeDatagram(Uint8Array.of(0xfe))).toEqual({ kind: 'malformed', size: 1 });
    expect(decodeDatagram(new Uint8Array(32))).toEqual({ kind: 'malformed', size: 32 });
    expect(decodeDatagram(new Uint8Array(LIMITS.DATAGRAM_BYTES)).kind).toBe('frame');
    expect(decodeKubeFrame(new Uint8Array(34))).toBeNull();
  });
});

describe('counter freshness (serial-number arithmetic, 5 s silence rule, 32 peers)', () => {
  it('0xFFFF → 0 is newer (the counter wraps)', () => {
    expect(nextCounter(0xffff)).toBe(0);
    expect(counterNewer(0, 0xffff)).toBe(true);
    expect(counterDistance(0, 0xffff)).toBe(1);
  });
  it('d = 32767 is accepted, d = 32768 is refused, d = 0 is refused', () => {
    const t = new FreshnessTable();
    t.accept('a', 100, 0);
    expect(t.accept('a', 100 + 32768, 10)).toBe('stale');
    expect(t.accept('a', 100, 10)).toBe('stale');
    expect(t.accept('a', 100 + 32767, 10)).toBe('newer');
  });
  it('a refusal updates nothing (neither counter nor time)', () => {
    const t = new FreshnessTable();
    t.accept('a', 5, 0);
    expect(t.accept('a', 4, 4000)).toBe('stale');
    expect(t.last('a')).toBe(5);
    // silence is measured from the last acceptance at t = 0, so at 5001 the sender is relearned
    expect(t.accept('a', 4, 5001)).toBe('relearned');
    expect(t.last('a')).toBe(4);
  });
  it('a replay is refused while the sender speaks, and accepted after more than 5 s of silence', () => {
    const t = new FreshnessTable();
    expect(t.accept('node-a', 1000, 0)).toBe('new');
    expect(t.accept('node-a', 1001, 1000)).toBe('newer');
    expect(t.accept('node-a', 1000, 2000)).toBe('stale');
    expect(t.accept('node-a', 1000, 6000)).toBe('stale'); // exactly 5000 ms: not yet
    expect(t.accept('node-a', 1000, 6001)).toBe('relearned');
    expect(t.accept('node-a', 1001, 6002)).toBe('newer');
  });
  it('the plane, whose counter never goes back, is learned again only after 180 s of silence (#28.4)', () => {
    const t = new FreshnessTable();
    expect(t.accept(PLANE_SENDER, 1000, 0)).toBe('new');
    expect(t.accept(PLANE_SENDER, 1001, 1000)).toBe('newer');
    expect(t.accept(PLANE_SENDER, 1000, 7500)).toBe('stale'); // the probe: replayed 6.5 s after silence
    expect(t.accept(PLANE_SENDER, 1000, 181_000)).toBe('stale'); // exactly 180 s: not yet
    expect(t.accept(PLANE_SENDER, 1005, 181_000)).toBe('newer'); // a restarted plane goes on ahead
    expect(t.accept(PLANE_SENDER, 1000, 361_001)).toBe('relearned');
  });
  it('the reference learns the plane again after 5 s, as any sender', () => {
    const t = new FreshnessTable({ planeTtlMs: LIMITS.TTL_MS });
    expect(t.accept(PLANE_SENDER, 1000, 0)).toBe('new');
    expect(t.accept(PLANE_SENDER, 1001, 1000)).toBe('newer');
    expect(t.accept(PLANE_SENDER, 1000, 2000)).toBe('stale');
    expect(t.accept(PLANE_SENDER, 1000, 6000)).toBe('stale'); // exactly 5000 ms: not yet
    expect(t.accept(PLANE_SENDER, 1000, 6001)).toBe('relearned');
    expect(t.accept(PLANE_SENDER, 1001, 6002)).toBe('newer');
  });
  it('keeps 32 senders; a 33rd takes the stalest entry (our machines)', () => {
    const t = new FreshnessTable();
    for (let i = 0; i < 32; i++) t.accept(`n${i}`, 10, 100 - i); // n31 was accepted longest ago
    t.accept(PLANE_SENDER, 11, 200); // a new sender: the stalest entry (n31) makes room
    expect(t.size).toBe(32);
    expect(t.last('n31')).toBeUndefined();
    expect(t.last('n0')).toBe(10);
    // an intruder spraying fresh names never pushes out a sender that spoke more recently
    for (let i = 0; i < 31; i++) t.accept(`x${i}`, 1, 150);
    expect(t.last(PLANE_SENDER)).toBe(11);
  });
  it('keeps 32 senders and overwrites entry 0 when a 33rd appears (the reference)', () => {
    const t = new FreshnessTable({ eviction: 'first' });
    for (let i = 0; i < 32; i++) t.accept(`n${i}`, 10, 0);
    expect(t.size).toBe(32);
    t.accept('n32', 10, 0);
    expect(t.size).toBe(32);
    expect(t.last('n0')).toBeUndefined();
    expect(t.last('n1')).toBe(10);
    expect(t.judge('n0', 10, 1)).toBe('new');
  });
});
