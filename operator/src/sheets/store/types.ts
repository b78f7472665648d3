// The Sheeternetes store: one interface, three backends (memory, xlsx, google).
//
// SEMANTICS (every backend obeys these; the shared suite store.test.ts proves them)
//
// Model. A store is a set of named tabs. A tab is a header row plus data rows. Callers see a row as
//   an object keyed by HEADER NAME ({name:'web', replicas:2}); they never see column positions.
//   Writes go by header name too, so a person may reorder columns or add their own: unknown
//   columns are kept untouched, and a write never lands in the wrong column (the reference writes
//   by position — spec §2.1). A row whose key columns are all empty (for keyless tabs: a row with
//   every cell empty) is invisible to reads, but is kept in the sheet.
//
// Cells. A cell is string | number | boolean | null (null = empty; writing "" stores an empty cell,
//   which reads back as null — the reference also returns empty cells as null). A string is ALWAYS stored as
//   text: "=1+1", "+x", "-y", "@z" stay literal strings in every backend; no backend ever turns a
//   value into a formula (xlsx: shared string cell; Google: valueInputOption RAW). A formula a
//   PERSON typed is read as its cached result and preserved as a formula until we overwrite that
//   very cell. A string longer than the backend's `limits.maxCellChars` makes the whole
//   transaction fail with CellLimitError — never silent truncation (Excel truncates at 32,767).
//
// Keys. Each tab has key columns (schema.ts): `name` for most, (digest, ordinal) for Layers, none
//   for Events/Metrics (append-only). Key values compare as strings, so 3 and "3" are one key.
//
// Transactions. `transact(fn)` runs fn synchronously against a private view (reads inside fn see
//   fn's own earlier writes). If fn throws, nothing is applied. If it returns, all its changes are
//   applied at once: no reader ever sees half of a transaction, and the store's `version` goes up
//   by exactly one. Because fn is synchronous and JavaScript is single-threaded, a
//   read-modify-write inside ONE fn can never lose an update to a concurrent caller.
//   Callers that read earlier (say, an HTTP client that GOT a version) pass `ifVersion`; the
//   transaction then fails with ConflictError if the store moved on (optimistic concurrency).
//
// Durability (the acknowledgement rule). The returned promise resolves:
//   - durability 'durable' (the default): only after the change is on durable storage (xlsx: the
//     workbook was fsync'd and renamed into place; google: Sheets answered 200). Use it for every
//     change a person or client asked for (apply, scale, delete, cordon, image import, ...): once
//     acknowledged it survives kill -9.
//   - durability 'buffered': as soon as it is applied in memory. It is persisted by write-behind
//     within `flushDelayMs` (bounded), together with other changes, in one save. Use it ONLY for
//     state that the next heartbeat re-creates anyway (last_heartbeat, pod phases, cpu_used,
//     metrics samples): losing the last second of it on a crash is harmless, and it keeps 200
//     heartbeats/s from rewriting the workbook 200 times a second.
//   Many durable transactions arriving together share one save (group commit).
//
// Notifications. `onChange` listeners hear every committed change: source 'local' for our own
//   transactions, 'external' when the backend noticed that someone else changed the storage
//   (a person saved the xlsx in Excel/LibreOffice; someone edited the Google Sheet) and reloaded it.
//   Each backend documents its conflict rule for external edits.
//
// Schema. `tx.ensureTab(schema)` creates a missing tab with its headers, or appends missing
//   columns at the RIGHT-HAND end (never moving data), backfilling existing rows (schema.backfill,
//   else ""). It is idempotent; setup.ts builds on it.

import type { TabSchema } from './schema.ts';

export type Cell = string | number | boolean | null;
export type Row = Record<string, Cell>;
// A key value: one cell for single-key tabs, or the values of all key columns in order.
export type Key = string | number | readonly (string | number)[];

export type Durability = 'durable' | 'buffered';

export interface TransactOptions {
  durability?: Durability;
  // Fail with ConflictError unless the store's version still equals this.
  ifVersion?: number;
}

export interface TxResult<T> {
  value: T; // what fn returned
  version: number; // store version after this transaction (unchanged if fn wrote nothing)
}

/** In Tx.rewrite: the current row of this key, kept as it is (a class: no Row can be mistaken for it). */
export class KeepRow {
  readonly key: Key;
  constructor(key: Key) {
    this.key = key;
  }
}

// The view a transaction works on. All methods are synchronous.
export interface Tx {
  tabs(): string[];
  hasTab(tab: string): boolean;
  headers(tab: string): string[];
  // Visible rows in sheet order (see "Model").
  rows(tab: string): Row[];
  get(tab: string, key: Key): Row | undefined;
  // Whether a row of that key exists (get without building the row: a check of thousands of keys).
  has(tab: string, key: Key): boolean;
  // Append a row (keyless tabs, or a keyed row known to be new; a duplicate key → DuplicateKeyError).
  insert(tab: string, row: Row): void;
  // Create or merge by key: only the columns present in `row` are written.
  upsert(tab: string, row: Row): 'created' | 'updated';
  // Merge `patch` into the row with this key. false when there is no such row.
  update(tab: string, key: Key, patch: Row): boolean;
  // Remove the row with this key. false when there is none.
  delete(tab: string, key: Key): boolean;
  // Remove every visible row for which pred is true; returns how many.
  deleteWhere(tab: string, pred: (row: Row) => boolean): number;
  // Replace all data rows of the tab (the Pods tab is recomputed on each reconcile).
  replaceAll(tab: string, rows: Row[]): void;
  // replaceAll for a keyed tab where most rows stay as they are: an entry `new KeepRow(key)` is the
  // tab's current row of that key, cells untouched (not rebuilt, so a backend sees it unchanged).
  // A reconcile that adds or removes one pod rewrites the Pods tab; rebuilding 10,000 unchanged
  // rows cost more than the schedule itself.
  rewrite(tab: string, rows: (Row | KeepRow)[]): void;
  // For a keyed tab whose row positions the caller knows (the Pods tab a reconcile wrote): the rows
  // at `at` with the keys `remove` are replaced by `insert`; the row above `at` must have the key
  // `anchor` (none when at is 0). Rows elsewhere are not touched or rebuilt, unlike rewrite, which
  // looks up every kept row. Misplaced rows → SchemaError and nothing changes.
  spliceRows(tab: string, at: number, remove: readonly Key[], insert: Row[], anchor?: Key): void;
  // Create the tab / append missing columns (see "Schema"). Returns what it did.
  ensureTab(schema: TabSchema): { created: boolean; addedColumns: string[] };
}

export interface StoreLimits {
  maxCellChars: number; // longest string a cell may hold
  maxCells: number; // cells per workbook / spreadsheet
}

export interface ChangeEvent {
  source: 'local' | 'external';
  tabs: string[]; // tabs that changed (external: all tabs that differ)
  version: number;
}

export interface Store {
  readonly backend: 'memory' | 'xlsx' | 'google';
  readonly limits: StoreLimits;
  // Incremented once per committed transaction and once per external reload.
  version(): number;
  // Snapshot reads (no transaction needed; never block).
  tabs(): string[];
  headers(tab: string): string[];
  rows(tab: string): Row[];
  get(tab: string, key: Key): Row | undefined;
  transact<T>(fn: (tx: Tx) => T, opts?: TransactOptions): Promise<TxResult<T>>;
  // Persist everything applied so far (buffered included); resolves when durable.
  flush(): Promise<void>;
  onChange(listener: (ev: ChangeEvent) => void): () => void;
  // Flush, stop timers and watchers. The store is unusable afterwards.
  close(): Promise<void>;
}

export class StoreError extends Error {
  override name = 'StoreError';
}
// Caller bugs and bad input: unknown tab/column, wrong key arity, duplicate key.
export class SchemaError extends StoreError {
  override name = 'SchemaError';
}
export class DuplicateKeyError extends StoreError {
  override name = 'DuplicateKeyError';
}
export class CellLimitError extends StoreError {
  override name = 'CellLimitError';
}
export class ConflictError extends StoreError {
  override name = 'ConflictError';
}
export class ClosedError extends StoreError {
  override name = 'ClosedError';
}
