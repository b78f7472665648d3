import { describe, expect, it } from 'vitest';
import { assignDatagram, clusterTag, heartbeatDatagram, keyFromHex, kubeDatagram } from '../air/kubenet.ts';
import { helloDatagram } from '../air/wire.ts';
import { AirCensus, CENSUS_LIMITS, steadyRate } from './air-census.ts';

const KEY = keyFromHex('0011223344556677');
const LAB = clusterTag('lab');
const FARM = clusterTag('farm');

describe('the air census (keyless)', () => {
  it('counts senders, lists clusters with their node names and plane, and the frame rate', () => {
    const c = new AirCensus();
    for (let t = 0; t < 10_000; t += 1000) {
      c.ingest(t, heartbeatDatagram({ cluster: LAB, node: 'node-a', ids: [], counter: t }, KEY));
      c.ingest(t, heartbeatDatagram({ cluster: LAB, node: 'node-b', ids: [], counter: t }, KEY));
      c.ingest(t, assignDatagram({ cluster: LAB, node: 'node-a', ids: [1], counter: t }, KEY));
      c.ingest(t, heartbeatDatagram({ cluster: FARM, node: 'n1', ids: [], counter: t }, KEY));
      c.ingest(t, helloDatagram()); // hellos are not frames
    }
    c.ingest(9_500, kubeDatagram(0x33, new Uint8Array(4), { sadr: 42 })); // a station speaking another protocol
    const s = c.summary(9_999);
    expect(s.stations).toBe(5); // node-a, node-b, lab's plane, farm's n1, SCC station 42
    expect(s.framesPerSecond).toBe(4.1); // 41 frames in the 10-s window
    expect(s.clusters).toEqual(
      [
        { tag: LAB, name: '', verified: false, nodes: ['node-a', 'node-b'], plane: true, forgedFrames: 0 },
        { tag: FARM, name: '', verified: false, nodes: ['n1'], plane: false, forgedFrames: 0 },
      ].sort((a, b) => a.tag - b.tag),
    );
  });

  it('forgets senders and clusters silent for the relay TTL, and the rate falls to zero', () => {
    const c = new AirCensus();
    c.ingest(0, heartbeatDatagram({ cluster: LAB, node: 'node-a', ids: [], counter: 1 }, KEY));
    expect(c.summary(1_000).stations).toBe(1);
    const later = c.summary(CENSUS_LIMITS.stationTtlMs + 1);
    expect(later).toEqual({ stations: 0, framesPerSecond: 0, clusters: [] });
  });

  it('a cluster whose key the operator holds is named, verified, and listed even while silent', () => {
    const c = new AirCensus();
    const s = c.summary(0, new Map([[LAB, { name: 'lab', forgedFrames: 3 }]]));
    expect(s.clusters).toEqual([
      { tag: LAB, name: 'lab', verified: true, nodes: [], plane: false, forgedFrames: 3 },
    ]);
  });

  it('forged node names cannot grow memory without bound', () => {
    const c = new AirCensus();
    for (let i = 0; i < 5_000; i++)
      c.ingest(i, heartbeatDatagram({ cluster: LAB, node: `n${i}`.slice(0, 6), ids: [], counter: i }, KEY));
    const s = c.summary(5_000);
    expect(s.stations).toBeLessThanOrEqual(CENSUS_LIMITS.maxSenders);
    expect(s.clusters[0]?.nodes.length).toBe(CENSUS_LIMITS.maxNodesPerCluster);
  });
});

describe('the reported frame rate', () => {
  it('stays while the air only jitters, follows real changes, and reports silence', () => {
    expect(steadyRate(undefined, 6.6)).toBe(6.6);
    expect(steadyRate(6.6, 6.9)).toBe(6.6);
    expect(steadyRate(6.6, 5.4)).toBe(6.6);
    expect(steadyRate(6.6, 9)).toBe(9);
    expect(steadyRate(0.4, 0.8)).toBe(0.4); // slow airs: within 0.5 frames/s
    expect(steadyRate(6.6, 0)).toBe(0);
    expect(steadyRate(0, 0.2)).toBe(0.2);
  });
});
