// The in-memory workbook every backend keeps, and the transaction machinery over it.
// Pure data + synchronous logic; persistence lives in the backends.

import { type TabSchema, tabSchema } from './schema.ts';
import {
  type Cell,
  CellLimitError,
  DuplicateKeyError,
  KeepRow,
  type Key,
  type Row,
  SchemaError,
  type StoreLimits,
  type Tx,
} from './types.ts';

// A formula a person typed: we show its cached result and keep the formula until we overwrite it.
export interface Formula {
  formula: string;
  result: Cell;
}
export type StoredCell = Cell | Formula;

export function isFormula(c: StoredCell): c is Formula {
  return typeof c === 'object' && c !== null;
}
export function cellValue(c: StoredCell | undefined): Cell {
  if (c === undefined) return null;
  return isFormula(c) ? c.result : c;
}

// One tab. Committed grids are treated as immutable (transactions copy before writing), so a
// snapshot of the book is a cheap copy of the Map.
export class Grid {
  readonly name: string;
  headers: string[];
  rows: StoredCell[][];
  keyCols: string[];
  private colIndex: Map<string, number> | undefined;
  // key → row index, SHARED by a grid and its clones and only ever added to (noteInsert), so an
  // insert into a 10,000-row tab costs one Map.set, not a copy of the index. An entry may therefore
  // come from another clone: findKey checks the row at that index and rebuilds a private index on a
  // mismatch. Every key of every sharing grid is in the Map, so a missing key is truly absent.
  private keyIndex: Map<string, number> | undefined;
  /** keyIndex is this grid's alone (built or copied here), so entries may be moved or removed. */
  private ownsIndex = false;

  constructor(name: string, headers: string[], rows: StoredCell[][], keyCols?: string[]) {
    this.name = name;
    this.headers = headers;
    this.rows = rows;
    this.keyCols = keyCols ?? [...(tabSchema(name)?.key ?? defaultKey(headers))];
  }

  // The clone shares this grid's indexes, so a transaction that updates one row of a 10,000-row tab
  // costs an array copy, not an index rebuild.
  clone(): Grid {
    const g = new Grid(this.name, [...this.headers], [...this.rows], this.keyCols);
    g.colIndex = this.colIndex;
    g.keyIndex = this.keyIndex;
    g.ownsIndex = false;
    return g;
  }

  col(header: string): number {
    if (!this.colIndex) {
      this.colIndex = new Map();
      this.headers.forEach((h, i) => {
        if (h !== '' && !this.colIndex!.has(h)) this.colIndex!.set(h, i);
      });
    }
    return this.colIndex.get(header) ?? -1;
  }

  invalidate(): void {
    this.colIndex = undefined;
    this.keyIndex = undefined;
    this.ownsIndex = false;
  }

  // Key string of a stored row, or undefined when the row is invisible.
  rowKey(r: StoredCell[]): string | undefined {
    if (this.keyCols.length === 0)
      return r.some((c) => cellValue(c) !== null && cellValue(c) !== '') ? '' : undefined;
    if (this.keyCols.length === 1) {
      // One key column (every keyed tab but Layers): no parts array per row.
      const i = this.col(this.keyCols[0]);
      const v = i < 0 ? null : cellValue(r[i]);
      return v === null || v === '' ? undefined : String(v);
    }
    const parts: string[] = [];
    for (const k of this.keyCols) {
      const i = this.col(k);
      const v = i < 0 ? null : cellValue(r[i]);
      if (v === null || v === '') return undefined;
      parts.push(String(v));
    }
    return parts.join('\u0000');
  }

  findKey(key: string): number {
    if (!this.keyIndex) this.buildKeyIndex();
    const i = this.keyIndex!.get(key);
    if (i === undefined) return -1;
    if (i < this.rows.length && this.rowKey(this.rows[i]) === key) return i;
    this.buildKeyIndex(); // the shared entry was another clone's: index this grid on its own
    return this.keyIndex!.get(key) ?? -1;
  }

  private buildKeyIndex(): void {
    this.keyIndex = new Map();
    this.ownsIndex = true;
    for (let i = 0; i < this.rows.length; i++) {
      const k = this.rowKey(this.rows[i]);
      if (k !== undefined && k !== '' && !this.keyIndex.has(k)) this.keyIndex.set(k, i);
    }
  }

  /**
   * Rows replaced wholesale with `index` the key → row index of the new rows (every key of them):
   * the next lookup need not rebuild it. A reconcile rewrites the 10,000-row Pods tab, and the first
   * heartbeat after it paid a scan of the whole tab to index it again.
   */
  replaceRows(rows: StoredCell[][], index: Map<string, number> | undefined): void {
    this.rows = rows;
    this.invalidate();
    this.keyIndex = index;
    this.ownsIndex = index !== undefined;
  }

  /**
   * Rows [at, at + remove) replaced by `insert` (checked by the caller), the key index kept exact:
   * removed keys dropped, inserted ones added, rows below moved by the difference. A copy of a shared
   * index is made first (one Map copy, not a scan of every row's cells).
   */
  spliceRows(at: number, remove: number, insert: StoredCell[][]): void {
    if (!this.keyIndex) this.buildKeyIndex();
    if (!this.ownsIndex) {
      this.keyIndex = new Map(this.keyIndex);
      this.ownsIndex = true;
    }
    const index = this.keyIndex as Map<string, number>;
    let dropped = false;
    for (let i = at; i < at + remove; i++) {
      const k = this.rowKey(this.rows[i]);
      if (k && index.get(k) === i) dropped = index.delete(k);
    }
    this.rows.splice(at, remove, ...insert);
    const shift = insert.length - remove;
    for (let i = at; i < at + insert.length; i++) {
      const k = this.rowKey(this.rows[i]);
      if (k && !index.has(k)) index.set(k, i);
    }
    if (shift === 0 && !dropped) return;
    // A row below keeps its entry if the entry was its own, and takes a dropped key it repeats (a
    // repeated key's first row wins, as in buildKeyIndex).
    for (let i = at + insert.length; i < this.rows.length; i++) {
      const k = this.rowKey(this.rows[i]);
      if (!k) continue;
      const e = index.get(k);
      if (e === i - shift || e === undefined) index.set(k, i);
    }
  }

  noteInsert(key: string | undefined, index: number): void {
    if (!this.keyIndex || !key) return;
    this.keyIndex.set(key, index);
  }

  toRow(r: StoredCell[]): Row {
    const out: Row = {};
    for (const [h, i] of this.columns()) out[h] = cellValue(r[i]);
    return out;
  }

  // [header, index] of each named column, first occurrence only: what toRow reads, worked out once
  // per header row rather than once per row (reads of 10,000-row tabs are most of a reconcile).
  private cols: [string, number][] | undefined;
  private columns(): [string, number][] {
    if (!this.cols || this.colsOf !== this.headers) {
      const seen = new Set<string>();
      this.cols = [];
      this.headers.forEach((h, i) => {
        if (h !== '' && !seen.has(h)) {
          seen.add(h);
          this.cols?.push([h, i]);
        }
      });
      this.colsOf = this.headers;
    }
    return this.cols;
  }
  private colsOf: string[] | undefined;

  visibleRows(): Row[] {
    const out: Row[] = [];
    for (const r of this.rows) if (this.rowKey(r) !== undefined) out.push(this.toRow(r));
    return out;
  }

  cellCount(): number {
    return (this.rows.length + 1) * Math.max(1, this.headers.length);
  }
}

function defaultKey(headers: string[]): string[] {
  return headers.includes('name') ? ['name'] : [];
}

export function keyString(grid: Grid, key: Key): string {
  const parts = Array.isArray(key) ? key : [key as string | number];
  if (parts.length !== grid.keyCols.length) {
    throw new SchemaError(
      `tab ${grid.name} is keyed by (${grid.keyCols.join(', ') || 'nothing: append-only'}); got ${parts.length} key value(s)`,
    );
  }
  return parts.map(String).join('\u0000');
}

export function checkCell(tab: string, col: string, v: unknown, limits: StoreLimits): Cell {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') {
    if (v === '') return null; // an empty string IS an empty cell (xlsx and Google store no "" either)
    if (v.length > limits.maxCellChars) {
      throw new CellLimitError(
        `cell ${tab}.${col} would hold ${v.length} characters; this store allows at most ${limits.maxCellChars} per cell`,
      );
    }
    return v;
  }
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new SchemaError(`cell ${tab}.${col}: ${v} is not a finite number`);
    return v;
  }
  if (typeof v === 'boolean') return v;
  throw new SchemaError(
    `cell ${tab}.${col}: a cell holds a string, number, boolean or null, not ${typeof v}`,
  );
}

// The ordered set of tabs. Committed state; a Tx works on copies of the tabs it touches.
export class Book {
  grids: Map<string, Grid>;
  constructor(grids?: Map<string, Grid>) {
    this.grids = grids ?? new Map();
  }
  snapshot(): Book {
    return new Book(new Map(this.grids));
  }
  cellCount(): number {
    let n = 0;
    for (const g of this.grids.values()) n += g.cellCount();
    return n;
  }
  grid(tab: string): Grid {
    const g = this.grids.get(tab);
    if (!g)
      throw new SchemaError(
        `no tab named ${JSON.stringify(tab)} (tabs: ${[...this.grids.keys()].join(', ')})`,
      );
    return g;
  }
}

// A transaction: copy-on-write over a Book. `commit()` yields the new grids and changed tab names.
export class TxImpl implements Tx {
  private readonly base: Book;
  private readonly limits: StoreLimits;
  readonly changed = new Map<string, Grid>();
  readonly created: string[] = [];

  constructor(base: Book, limits: StoreLimits) {
    this.base = base;
    this.limits = limits;
  }

  private read(tab: string): Grid {
    return this.changed.get(tab) ?? this.base.grid(tab);
  }
  private write(tab: string): Grid {
    let g = this.changed.get(tab);
    if (!g) {
      g = this.base.grid(tab).clone();
      this.changed.set(tab, g);
    }
    return g;
  }

  tabs(): string[] {
    const names = [...this.base.grids.keys()];
    for (const n of this.created) if (!names.includes(n)) names.push(n);
    return names;
  }
  hasTab(tab: string): boolean {
    return this.changed.has(tab) || this.base.grids.has(tab);
  }
  headers(tab: string): string[] {
    return [...this.read(tab).headers];
  }
  rows(tab: string): Row[] {
    return this.read(tab).visibleRows();
  }
  get(tab: string, key: Key): Row | undefined {
    const g = this.read(tab);
    const i = g.findKey(keyString(g, key));
    return i < 0 ? undefined : g.toRow(g.rows[i]);
  }
  has(tab: string, key: Key): boolean {
    const g = this.read(tab);
    return g.findKey(keyString(g, key)) >= 0;
  }

  private buildRow(g: Grid, row: Row, into?: StoredCell[]): StoredCell[] {
    const out = into ? [...into] : new Array<StoredCell>(g.headers.length).fill(null);
    while (out.length < g.headers.length) out.push(null);
    for (const [col, v] of Object.entries(row)) {
      const i = g.col(col);
      if (i < 0)
        throw new SchemaError(
          `tab ${g.name} has no column ${JSON.stringify(col)} (columns: ${g.headers.join(', ')})`,
        );
      out[i] = checkCell(g.name, col, v, this.limits);
    }
    return out;
  }

  insert(tab: string, row: Row): void {
    const g = this.write(tab);
    const r = this.buildRow(g, row);
    const k = g.rowKey(r);
    if (g.keyCols.length > 0) {
      if (k === undefined) throw new SchemaError(`tab ${tab}: a row needs ${g.keyCols.join(', ')}`);
      if (g.findKey(k) >= 0)
        throw new DuplicateKeyError(`tab ${tab} already has a row ${k.replace('\u0000', '/')}`);
    }
    g.rows.push(r);
    g.noteInsert(k, g.rows.length - 1);
  }

  upsert(tab: string, row: Row): 'created' | 'updated' {
    const g = this.read(tab);
    const probe = this.buildRow(g, row);
    const k = g.rowKey(probe);
    if (g.keyCols.length === 0) throw new SchemaError(`tab ${tab} is append-only; use insert`);
    if (k === undefined) throw new SchemaError(`tab ${tab}: a row needs ${g.keyCols.join(', ')}`);
    const i = g.findKey(k);
    if (i < 0) {
      this.insert(tab, row);
      return 'created';
    }
    const w = this.write(tab);
    w.rows[i] = this.buildRow(w, row, w.rows[i]);
    return 'updated';
  }

  update(tab: string, key: Key, patch: Row): boolean {
    const g = this.read(tab);
    const i = g.findKey(keyString(g, key));
    if (i < 0) return false;
    const w = this.write(tab);
    const next = this.buildRow(w, patch, w.rows[i]);
    if (w.keyCols.some((c) => c in patch)) {
      const nk = w.rowKey(next);
      if (nk === undefined) throw new SchemaError(`tab ${tab}: an update may not blank the key`);
      if (nk === w.rowKey(w.rows[i])) {
        // The patch repeats the row's own key: the index stays valid (rebuilding it here made every
        // pod-status update of a heartbeat cost a scan of the whole Pods tab).
        w.rows[i] = next;
        return true;
      }
      const j = w.findKey(nk);
      if (j >= 0 && j !== i) throw new DuplicateKeyError(`tab ${tab} already has a row ${nk}`);
      w.rows[i] = next;
      w.invalidate();
    } else {
      w.rows[i] = next;
    }
    return true;
  }

  delete(tab: string, key: Key): boolean {
    const g = this.read(tab);
    const i = g.findKey(keyString(g, key));
    if (i < 0) return false;
    const w = this.write(tab);
    w.rows.splice(i, 1);
    w.invalidate();
    return true;
  }

  deleteWhere(tab: string, pred: (row: Row) => boolean): number {
    const g = this.read(tab);
    const keep: StoredCell[][] = [];
    let n = 0;
    for (const r of g.rows) {
      if (g.rowKey(r) !== undefined && pred(g.toRow(r))) n++;
      else keep.push(r);
    }
    if (n > 0) {
      const w = this.write(tab);
      w.rows = keep;
      w.invalidate();
    }
    return n;
  }

  spliceRows(tab: string, at: number, remove: readonly Key[], insert: Row[], anchor?: Key): void {
    const g = this.read(tab);
    if (g.keyCols.length === 0) throw new SchemaError(`tab ${tab} is append-only; use insert`);
    const want = (i: number, key: Key) =>
      i >= 0 && i < g.rows.length && g.rowKey(g.rows[i]) === keyString(g, key);
    const misplaced =
      at < 0 ||
      at + remove.length > g.rows.length ||
      (at > 0 ? anchor === undefined || !want(at - 1, anchor) : anchor !== undefined) ||
      remove.some((k, j) => !want(at + j, k));
    if (misplaced) throw new SchemaError(`tab ${tab}: the rows to splice at ${at} are not where expected`);
    const w = this.write(tab);
    const gone = new Set(remove.map((k) => keyString(w, k)));
    const rows = insert.map((r) => this.buildRow(w, r));
    const fresh = new Set<string>();
    for (const r of rows) {
      const k = w.rowKey(r);
      if (k === undefined) throw new SchemaError(`tab ${tab}: a row needs ${w.keyCols.join(', ')}`);
      if (fresh.has(k) || (!gone.has(k) && w.findKey(k) >= 0))
        throw new DuplicateKeyError(`tab ${tab} already has a row ${k.replace('\u0000', '/')}`);
      fresh.add(k);
    }
    w.spliceRows(at, remove.length, rows);
  }

  replaceAll(tab: string, rows: Row[]): void {
    this.rewriteRows(tab, rows, 'replaceAll');
  }

  rewrite(tab: string, rows: (Row | KeepRow)[]): void {
    if (this.read(tab).keyCols.length === 0)
      throw new SchemaError(`tab ${tab} is append-only; use replaceAll`);
    this.rewriteRows(tab, rows, 'rewrite');
  }

  private rewriteRows(tab: string, rows: (Row | KeepRow)[], verb: string): void {
    const g = this.read(tab);
    const w = this.write(tab);
    const next: StoredCell[][] = [];
    const seen = new Map<string, number>(); // key → its index in next: the new rows' key index
    for (const row of rows) {
      let r: StoredCell[];
      let k: string | undefined;
      if (row instanceof KeepRow) {
        k = keyString(g, row.key);
        const i = g.findKey(k);
        if (i < 0) throw new SchemaError(`tab ${tab}: no row ${String(row.key)} to keep`);
        r = g.rows[i];
      } else {
        r = this.buildRow(w, row);
        k = w.rowKey(r);
      }
      if (w.keyCols.length > 0) {
        if (k === undefined) throw new SchemaError(`tab ${tab}: a row needs ${w.keyCols.join(', ')}`);
        if (seen.has(k)) throw new DuplicateKeyError(`tab ${tab}: duplicate key ${k} in ${verb}`);
        seen.set(k, next.length);
      }
      next.push(r);
    }
    w.replaceRows(next, w.keyCols.length > 0 ? seen : undefined);
  }

  ensureTab(schema: TabSchema): { created: boolean; addedColumns: string[] } {
    if (!this.hasTab(schema.name)) {
      const g = new Grid(schema.name, [...schema.headers], [], [...schema.key]);
      this.changed.set(schema.name, g);
      this.created.push(schema.name);
      return { created: true, addedColumns: [...schema.headers] };
    }
    const g = this.read(schema.name);
    const missing = schema.headers.filter((h) => g.col(h) < 0);
    if (missing.length === 0) return { created: false, addedColumns: [] };
    const w = this.write(schema.name);
    // Append at the right-hand end: after the last non-empty header (a person's blank columns stay).
    let end = w.headers.length;
    while (end > 0 && w.headers[end - 1] === '') end--;
    const rowsWidth = Math.max(w.headers.length, ...w.rows.map((r) => r.length));
    end = Math.max(end, 0);
    const newHeaders = [...w.headers];
    for (let j = 0; j < missing.length; j++) newHeaders[end + j] = missing[j];
    const width = Math.max(newHeaders.length, rowsWidth);
    while (newHeaders.length < width) newHeaders.push('');
    // Columns now beyond the header but holding data would be shadowed; refuse rather than hide data.
    w.headers = newHeaders;
    w.keyCols = [...schema.key];
    w.invalidate();
    w.rows = w.rows.map((r) => {
      const visible = w.rowKey(r) !== undefined;
      const out = [...r];
      while (out.length < width) out.push(null);
      for (let j = 0; j < missing.length; j++) {
        const i = end + j;
        if (out[i] !== null && out[i] !== '') {
          throw new SchemaError(
            `tab ${schema.name}: cannot add column ${missing[j]} at position ${i + 1}, that column holds data without a header`,
          );
        }
        const fill = schema.backfill?.[missing[j]];
        out[i] = visible ? (fill ?? null) : null;
      }
      return out;
    });
    w.invalidate();
    return { created: false, addedColumns: missing };
  }
}

// Apply a finished transaction to the book; returns the names of the tabs that changed.
export function commitTx(book: Book, tx: TxImpl, limits: StoreLimits): string[] {
  if (tx.changed.size === 0) return [];
  const next = new Map(book.grids);
  // Indexes stay valid: every Tx operation keeps them exact or drops them.
  for (const [name, g] of tx.changed) next.set(name, g);
  let cells = 0;
  for (const g of next.values()) cells += g.cellCount();
  if (cells > limits.maxCells) {
    throw new CellLimitError(
      `the workbook would hold ${cells} cells; this store allows at most ${limits.maxCells}`,
    );
  }
  book.grids = next;
  return [...tx.changed.keys()];
}
