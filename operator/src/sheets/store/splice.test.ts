// Tx.spliceRows: rows replaced at a known position, everything else untouched, every key still
// found at its row afterwards, and nothing changes when the rows are not where the caller said.
import { describe, expect, it } from 'vitest';
import { MemoryStore } from './memory.ts';
import { setupCluster } from './setup.ts';
import { DuplicateKeyError, SchemaError } from './types.ts';

async function podsStore(n: number) {
  const store = new MemoryStore();
  await setupCluster(store, { samples: false });
  await store.transact((tx) => {
    for (let i = 1; i <= n; i++) tx.insert('Pods', { name: `p-${i}`, deployment: 'p', node: 'a' });
  });
  return store;
}
const names = (store: MemoryStore) => store.rows('Pods').map((r) => r.name);

describe('spliceRows', () => {
  it('removes and inserts at a position; every key is found at its row afterwards', async () => {
    const store = await podsStore(6);
    const before = store.rows('Pods');
    await store.transact((tx) => {
      tx.spliceRows('Pods', 2, ['p-3', 'p-4'], [{ name: 'q-1', deployment: 'q', node: 'b' }], 'p-2');
      tx.spliceRows('Pods', 5, [], [{ name: 'p-7', deployment: 'p', node: 'a' }], 'p-6');
    });
    expect(names(store)).toEqual(['p-1', 'p-2', 'q-1', 'p-5', 'p-6', 'p-7']);
    for (const name of names(store)) expect(store.get('Pods', String(name))?.name).toBe(name);
    expect(store.get('Pods', 'p-3')).toBeUndefined();
    // Rows outside the edit are the same cells.
    expect(store.rows('Pods')[4]).toEqual(before[5]);
    await store.transact((tx) => {
      expect(tx.update('Pods', 'p-6', { phase: 'Running' })).toBe(true);
    });
    expect(store.rows('Pods')[4].phase).toBe('Running');
    await store.close();
  });

  it('refuses rows that are not where the caller said, or a key the tab already has, and changes nothing', async () => {
    const store = await podsStore(4);
    const v = store.version();
    const splice = (f: Parameters<typeof store.transact>[0]) => store.transact(f);
    await expect(splice((tx) => tx.spliceRows('Pods', 1, ['p-3'], [], 'p-1'))).rejects.toThrow(SchemaError);
    await expect(splice((tx) => tx.spliceRows('Pods', 2, [], [], 'p-1'))).rejects.toThrow(SchemaError);
    await expect(splice((tx) => tx.spliceRows('Pods', 1, [], []))).rejects.toThrow(SchemaError);
    await expect(
      splice((tx) => tx.spliceRows('Pods', 4, [], [{ name: 'p-2', deployment: 'p' }], 'p-4')),
    ).rejects.toThrow(DuplicateKeyError);
    expect(store.version()).toBe(v);
    expect(names(store)).toEqual(['p-1', 'p-2', 'p-3', 'p-4']);
    await store.close();
  });
});
