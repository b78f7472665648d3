// Row updates in place (model.ts Grid): a grid something holds (a snapshot) is copied before it is
// written, one nothing holds is updated in place, and a failed transaction undoes its updates.
import { describe, expect, it } from 'vitest';
import { Book, commitTx, Grid, TxImpl } from './model.ts';
import { CellLimitError } from './types.ts';

const limits = { maxCellChars: 100, maxCells: 1000 };
const book = () =>
  new Book(
    new Map([
      [
        'Nodes',
        new Grid(
          'Nodes',
          ['name', 'x'],
          [
            ['a', 1],
            ['b', 2],
          ],
        ),
      ],
    ]),
  );
const update = (b: Book, key: string, x: number, lim = limits) => {
  const tx = new TxImpl(b, lim);
  tx.update('Nodes', key, { x });
  return commitTx(b, tx, lim);
};

describe('row updates in place', () => {
  it('copy a grid a snapshot holds; update one nothing holds in place', () => {
    const b = book();
    const snap = b.snapshot();
    expect(update(b, 'a', 5)).toEqual(['Nodes']);
    expect(snap.grid('Nodes').rows[0]).toEqual(['a', 1]); // the snapshot kept what it saw
    expect(b.grid('Nodes')).not.toBe(snap.grid('Nodes'));
    const g = b.grid('Nodes');
    expect(update(b, 'b', 7)).toEqual(['Nodes']);
    expect(b.grid('Nodes')).toBe(g); // nothing held it: no copy
    expect(b.grid('Nodes').rows).toEqual([
      ['a', 5],
      ['b', 7],
    ]);
  });

  it('are undone when the transaction fails, before or at its commit', () => {
    const b = book();
    const tx = new TxImpl(b, limits);
    tx.update('Nodes', 'b', { x: 9 });
    expect(tx.get('Nodes', 'b')?.x).toBe(9); // the transaction reads its own write
    tx.rollback();
    expect(b.grid('Nodes').rows[1]).toEqual(['b', 2]);
    expect(() => update(b, 'a', 3, { ...limits, maxCells: 2 })).toThrow(CellLimitError);
    expect(b.grid('Nodes').rows[0]).toEqual(['a', 1]);
  });
});
