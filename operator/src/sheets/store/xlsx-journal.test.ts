// The journal's records replay to exactly the state they were taken from, and a row inserted or
// removed mid-tab is recorded as a move of the rows below it, not as each shifted row.
import { describe, expect, it } from 'vitest';
import { Book, Grid, type StoredCell } from './model.ts';
import { deltaOf, LIMITS, replay } from './xlsx-journal.ts';

const row = (name: string, v: number): StoredCell[] => [name, v];
const grid = (rows: StoredCell[][]) => new Grid('Pods', ['name', 'n'], rows);
const book = (g: Grid) => new Book(new Map([['Pods', g]]));
/** A copy with fresh row arrays: what replay starts from (the journal's JSON round trip). */
const reread = (g: Grid) => grid(JSON.parse(JSON.stringify(g.rows)));

describe('journal deltas', () => {
  it('a pod inserted or removed near the top is a move of the rest, and replays exactly', () => {
    const before = grid(Array.from({ length: 1000 }, (_, i) => row(`p${i}`, i)));
    const rows = [...before.rows];
    rows.splice(10, 0, row('new', -1)); // inserted
    rows.splice(300, 0, row('new2', -2)); // inserted
    rows.splice(500, 1); // removed
    rows[700] = row('p700', 7000); // updated in place, inside a moved run
    const after = grid(rows);
    const [d] = deltaOf(book(after), new Map([['Pods', before]]), ['Pods']);
    expect(d.moved?.length).toBeGreaterThan(0);
    expect(d.rows.length).toBeLessThan(LIMITS.minMovedRows * 3); // not the ~990 shifted rows
    const replayed = book(reread(before));
    replay(replayed, [JSON.parse(JSON.stringify([d]))]);
    expect(replayed.grid('Pods').rows).toEqual(after.rows);
  });

  it('random inserts, removals, updates and appends over many records replay to the same rows', () => {
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let cur = grid(Array.from({ length: 300 }, (_, i) => row(`p${i}`, i)));
    const start = reread(cur);
    const records = [];
    for (let r = 0; r < 40; r++) {
      const rows = [...cur.rows];
      for (let k = rand(4); k >= 0; k--) {
        const op = rand(4);
        if (op === 0) rows.splice(rand(rows.length + 1), 0, row(`n${r}-${k}`, r));
        else if (op === 1 && rows.length > 0) rows.splice(rand(rows.length), 1);
        else if (op === 2 && rows.length > 0) rows[rand(rows.length)] = row(`u${r}-${k}`, -r);
        else rows.push(row(`a${r}-${k}`, r));
      }
      const next = grid(rows);
      records.push(JSON.parse(JSON.stringify(deltaOf(book(next), new Map([['Pods', cur]]), ['Pods']))));
      cur = next;
    }
    expect(records.filter((r) => r[0]?.moved).length).toBeGreaterThan(5); // the moves were exercised
    const replayed = book(start);
    replay(replayed, records);
    expect(replayed.grid('Pods').rows).toEqual(cur.rows);
  });
});
