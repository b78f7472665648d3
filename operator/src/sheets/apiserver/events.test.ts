// The Events tab is trimmed to the newest rows once it grows past max + trimSlack.
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory.ts';
import { setupCluster } from '../store/setup.ts';
import { EventLog } from './events.ts';

describe('EventLog', () => {
  it('keeps the newest `max` rows once the tab is trimSlack over, in order, and counts on from there', async () => {
    const store = new MemoryStore();
    await setupCluster(store, { samples: false });
    const log = new EventLog(3, 2);
    const write = (i: number) =>
      store.transact((tx) => log.write(tx, [{ kind: 'Pod', object: `p${i}`, message: `m${i}` }], 100 + i));
    for (let i = 1; i <= 5; i++) await write(i);
    expect(store.rows('Events').map((r) => r.object)).toEqual(['p1', 'p2', 'p3', 'p4', 'p5']);
    await write(6); // 6 > 3 + 2: trimmed to the newest 3
    expect(store.rows('Events').map((r) => r.object)).toEqual(['p4', 'p5', 'p6']);
    for (let i = 7; i <= 8; i++) await write(i);
    expect(store.rows('Events')).toHaveLength(5);
    await write(9);
    expect(store.rows('Events').map((r) => [r.object, r.message])).toEqual([
      ['p7', 'm7'],
      ['p8', 'm8'],
      ['p9', 'm9'],
    ]);
  });
});
