import { describe, expect, it } from 'vitest';
import { LIMITS, ReplayBook } from './replay.ts';

const frame = (n: number) => Uint8Array.of(n);

describe('replay material', () => {
  it('picks the newest assignment whose ids differ from what the node runs now', () => {
    const b = new ReplayBook();
    b.add('node-a', [1, 2], frame(1));
    for (let i = 0; i < 200; i++) b.add('node-a', [3, 4], frame(2)); // minutes of the same ids
    b.add('node-a', [4, 3], frame(3)); // the same set in another order
    expect(b.pick('node-a', [3, 4])).toEqual({ datagram: frame(1), ids: [1, 2] });
    expect(b.pick('node-a', [1, 2])?.datagram).toEqual(frame(3));
    expect(b.pick('node-b', [])).toBeNull();
  });
  it('has nothing to replay while the node was only ever given one set', () => {
    const b = new ReplayBook();
    b.add('node-a', [5], frame(1));
    expect(b.pick('node-a', [5])).toBeNull();
  });
  it('keeps a bounded number of sets and nodes', () => {
    const b = new ReplayBook();
    for (let i = 0; i < LIMITS.setsPerNode + 5; i++) b.add('n', [i], frame(i));
    expect(b.pick('n', [-1])?.ids).toEqual([LIMITS.setsPerNode + 4]);
    for (let i = 0; i < LIMITS.nodes + 5; i++) b.add(`node${i}`, [1], frame(i));
    expect(b.pick(`node${LIMITS.nodes + 4}`, [])).toBeNull();
  });
});
