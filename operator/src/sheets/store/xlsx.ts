// The xlsx backend (the default): one .xlsx file through exceljs.
//
// In memory: the shared model (model.ts). The exceljs workbook itself lives in a worker thread
// (xlsx-worker.ts) that parses and serialises, so a multi-second save of a big workbook never stalls
// the event loop. The worker keeps the loaded workbook, so a person's formatting, column widths,
// extra sheets and formulas survive our saves: only rows whose content changed are sent and written.
//
// Durable transactions resolve once their changes are appended to the journal beside the workbook
// and fsynced (xlsx-journal.ts; the commits of one event-loop turn share one append: group commit);
// buffered ones resolve at once. Either kind reaches the workbook file at the next save.
// Saving (write-behind, paced): a save writes the whole workbook to a temp file
// `.~sk-<name>.<pid>.<n>` in the same directory, fsyncs it, records the temp file's hash in the
// journal, renames it over the workbook and fsyncs the directory — so the file on disk is always
// either the old or the new complete workbook, even under kill -9 or power loss, and the journal
// always knows which of its generations starts from it. Saves never overlap; all commits that arrive
// while one runs share the next one. A save is due LIMITS.flushDelayMs after a change, or 3× the
// last save's duration if that is longer (LIMITS.savePacing).
//
// External edits: the file's (size, mtime, inode) is polled every LIMITS.watchMs; when it differs from
// what we last wrote and the bytes' sha256 differs too, the file is reloaded and MERGED, cell by cell,
// rows matched by key, against the version we last loaded/saved (the base):
//   - a cell only the person changed takes the person's value; a cell only we changed keeps ours;
//   - a cell BOTH changed: THE PERSON WINS (a human edit is deliberate; anything the control plane
//     derives is recomputed on the next reconcile anyway);
//   - rows the person deleted stay deleted; rows the person added are kept; rows we added since the
//     base are kept; rows we deleted stay deleted unless the person edited them meanwhile;
//   - append-only tabs (Events, Metrics): the person's rows plus the rows we appended since the base.
// Before renaming a save into place we check the file again; if a person saved in between, we merge
// first and save again. (A person saving in the few microseconds between that check and the rename
// is the one race left: their save is then the older version on disk and is noticed at the next poll
// only if their editor saves again. Excel and LibreOffice keep their own copy open, so nothing is lost
// on their side.)

import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { logger } from '../../util/log.ts';
import { processAlive } from '../../util/process.ts';
import { StoreBase } from './base.ts';
import { diffTabs, mergeBooks, sameRow } from './merge.ts';
import { Book, type Formula, Grid, type StoredCell } from './model.ts';
import type { Durability } from './types.ts';
import type { SheetData } from './xlsx-cells.ts';
import { ABSENT, deltaOf, Journal, replay } from './xlsx-journal.ts';
import type { Stamp, TabChange } from './xlsx-worker.ts';

const log = logger('sheets-store-xlsx');

export const LIMITS = {
  maxCellChars: 32_767, // Excel's per-cell maximum; longer strings would be truncated by Excel
  maxCells: 10_000_000, // bounds memory and save time; same as Google so clusters can move between backends
  flushDelayMs: 1_000, // changes reach the workbook file within this delay (durable ones are in the journal at once)
  savePacing: 3, // a save of T ms is followed by at least 3T without one: the worker's serialising
  // of a big workbook (seconds at 10,000 rows) takes at most a quarter of a core, never the whole machine
  watchMs: 500, // how often the file is checked for a person's edits
  // Rows per message to the I/O worker during a save: ~11 cells a row, a 2,000-row piece is copied
  // in a few ms, so a save of a 10,000-node workbook never holds the event loop for long.
  rowsPerMessage: 2_000,
  // Added to the I/O worker thread's nice value: its seconds of serialising compete with the event
  // loop for a core on a small host, and a heartbeat should not wait in the run queue behind exceljs
  // (10 is what `nice` adds by default). Applied with setpriority on the thread's id (Linux).
  workerNice: 10,
} as const;

export const TEMP_PREFIX = '.~sk-';

export interface XlsxOptions {
  flushDelayMs?: number;
  watchMs?: number; // 0 disables the watcher
}

const WORKER = new URL('./xlsx-worker.ts', import.meta.url);

function bookFromData(sheets: SheetData[]): Book {
  return new Book(
    new Map(sheets.map((d) => [d.name, new Grid(d.name, d.headers, d.rows as StoredCell[][])])),
  );
}

// The I/O worker, one request at a time; referenced only while a request is outstanding so an idle
// store never keeps a process alive.
class IoThread {
  private readonly worker: Worker;
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  constructor() {
    this.worker = new Worker(WORKER, { workerData: { nice: LIMITS.workerNice } });
    this.worker.unref();
    this.worker.on('message', (m: { id: number; ok: boolean; result?: unknown; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(m.error));
    });
    this.worker.on('error', (e) => {
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    });
  }
  call<T>(msg: Record<string, unknown>): Promise<T> {
    const id = ++this.seq;
    this.worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ id, ...msg });
    });
  }
  async close(): Promise<void> {
    this.worker.ref(); // an unref'd worker's exit would not keep the process alive until it is done
    await this.worker.terminate();
    for (const p of this.pending.values()) p.reject(new Error('the store was closed'));
    this.pending.clear();
  }
}

/** The changes split into pieces of at most `max` rows; a tab's header change goes with its first piece. */
export function piecesOf(changes: TabChange[], max: number): TabChange[][] {
  const out: TabChange[][] = [];
  let cur: TabChange[] = [];
  let n = 0;
  for (const c of changes) {
    let first = true;
    for (let i = 0; first || i < c.rows.length; ) {
      const take = Math.min(c.rows.length - i, max - n);
      cur.push({ ...c, headers: first ? c.headers : undefined, rows: c.rows.slice(i, i + take) });
      first = false;
      i += take;
      n += take;
      if (n >= max) {
        out.push(cur);
        cur = [];
        n = 0;
      }
    }
  }
  if (cur.length > 0 || out.length === 0) out.push(cur);
  return out;
}

export class XlsxStore extends StoreBase {
  readonly backend = 'xlsx' as const;
  readonly file: string;
  private readonly io = new IoThread();
  private base: Book; // what the file held at our last load or save (merge base)
  private written = new Map<string, StoredCell[][]>(); // per tab, the rows as the worker's workbook holds them
  private writtenHeaders = new Map<string, string[]>();
  private dirty = new Set<string>();
  private stamp: Stamp | undefined;
  private saving: Promise<void> | undefined;
  private waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private watcher: NodeJS.Timeout | undefined;
  private checking = false;
  private readonly flushDelayMs: number;
  private readonly watchMs: number;
  private checkingNow: Promise<void> | undefined;
  private readonly journal: Journal;
  private journaled = new Map<string, Grid>(); // per tab, the grid as the journal's records end
  private journalDirty = new Set<string>(); // tabs changed since the last journal record
  private journalWaiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private journalBusy = false;
  /** The last cut's append of its sweep: durable commits it swept in are acknowledged only after it. */
  private lastCut: Promise<number> | undefined;
  private lastSaveMs = 0;
  saves = 0; // number of completed saves (tests and benchmarks read it)
  externalReloads = 0;

  private constructor(file: string, opts: XlsxOptions) {
    super({ maxCellChars: LIMITS.maxCellChars, maxCells: LIMITS.maxCells });
    this.file = path.resolve(file);
    this.base = new Book();
    this.flushDelayMs = opts.flushDelayMs ?? LIMITS.flushDelayMs;
    this.watchMs = opts.watchMs ?? LIMITS.watchMs;
    this.journal = new Journal(this.file);
  }

  // The delay before the next save: the configured one, stretched after a slow save (LIMITS.savePacing).
  private saveDelay(): number {
    return Math.max(this.flushDelayMs, LIMITS.savePacing * this.lastSaveMs);
  }

  // Started only once the initial load is done, so the first poll compares against a real stamp.
  private startWatching(): void {
    if (this.watchMs > 0) {
      this.watcher = setInterval(() => {
        this.checkingNow = this.checkExternal().catch(() => {});
      }, this.watchMs);
      this.watcher.unref();
    }
  }

  static async open(file: string, opts: XlsxOptions = {}): Promise<XlsxStore> {
    const s = new XlsxStore(file, opts);
    try {
      await s.removeStaleTemps();
      const r = await s.io.call<{ exists: boolean; sheets: SheetData[]; stamp?: Stamp }>({
        op: 'load',
        file: s.file,
      });
      const disk = bookFromData(r.sheets);
      // Durable writes acknowledged after the last save live in the journal: replay them.
      const { records } = await s.journal.recover(r.stamp?.hash ?? ABSENT);
      const book = disk.snapshot();
      const touched = replay(book, records);
      s.book = book;
      s.base = disk;
      s.rememberWritten(disk);
      s.stamp = r.stamp;
      s.journaled = new Map(book.grids);
      await s.journal.start(records.length > 0 ? undefined : (r.stamp?.hash ?? ABSENT));
      if (touched.size > 0) {
        log.info({ file: s.file, records: records.length, tabs: [...touched] }, 'replayed the journal');
        for (const t of touched) s.dirty.add(t);
        s.timer = setTimeout(() => void s.saveSoon().catch(() => {}), 0);
      }
    } catch (e) {
      await s.journal.close();
      await s.io.close();
      throw e;
    }
    s.startWatching();
    return s;
  }

  // Temp files of a save that was killed mid-way (kill -9, power loss) hold nothing acknowledged:
  // remove those whose writer process is gone.
  private async removeStaleTemps(): Promise<void> {
    const dir = path.dirname(this.file);
    const prefix = `${TEMP_PREFIX}${path.basename(this.file)}.`;
    let names: string[] = [];
    try {
      names = await fsp.readdir(dir);
    } catch {
      return;
    }
    for (const n of names) {
      if (!n.startsWith(prefix)) continue;
      const pid = Number(n.slice(prefix.length).split('.')[0]);
      if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
      await fsp.rm(path.join(dir, n), { force: true }).catch(() => {});
    }
  }

  private rememberWritten(book: Book): void {
    this.written.clear();
    this.writtenHeaders.clear();
    for (const [name, g] of book.grids) {
      this.written.set(name, g.rows);
      this.writtenHeaders.set(name, g.headers);
    }
  }

  // Every commit marks its tabs for the next save (write-behind, paced). A durable one also waits for
  // the journal: the commits of one turn of the event loop share one append and one fsync.
  protected persist(changed: string[], durability: Durability): Promise<void> {
    for (const t of changed) {
      this.dirty.add(t);
      this.journalDirty.add(t);
    }
    if (!this.timer && !this.saving) {
      this.timer = setTimeout(() => void this.saveSoon().catch(() => {}), this.saveDelay());
    }
    if (durability === 'buffered') return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.journalWaiters.push({ resolve, reject });
      if (this.journalWaiters.length === 1 && !this.journalBusy) setImmediate(() => void this.journalFlush());
    });
  }

  private async journalFlush(): Promise<void> {
    if (this.journalBusy) return;
    this.journalBusy = true;
    try {
      while (this.journalWaiters.length > 0) {
        const waiters = this.journalWaiters.splice(0);
        const delta = deltaOf(this.book, this.journaled, this.journalDirty);
        this.journaled = new Map(this.book.grids);
        this.journalDirty.clear();
        try {
          // An empty delta means a save's cut swept these commits into its own record (the save's
          // timer can run between a commit and this flush): they are durable when that cut is, not
          // now. Acknowledging them at once lost a whole acknowledged batch to a kill -9 in CI.
          if (delta.length > 0) await this.journal.append(delta);
          else if (this.lastCut) await this.lastCut;
          for (const w of waiters) w.resolve();
        } catch (e) {
          log.error({ err: String(e), file: this.file }, 'writing the journal failed');
          for (const w of waiters) w.reject(e);
        }
      }
    } finally {
      this.journalBusy = false;
    }
  }

  // The journal's stream is cut where a save's snapshot is taken: everything before is in that save.
  private cutJournal(snapshot: Book, next: { base?: string; first?: Book } = {}): Promise<number> {
    const sweep = deltaOf(snapshot, this.journaled, this.journalDirty);
    this.journalDirty.clear();
    const first = next.first ? deltaOf(this.book, next.first.grids, this.book.grids.keys()) : undefined;
    this.journaled = new Map(this.book.grids);
    const cut = this.journal.cut(next.base ? [] : sweep, { base: next.base, first });
    this.lastCut = cut;
    // Once durable it holds nobody back; a failed one stays, so what it swept is never acknowledged.
    cut.then(
      () => {
        if (this.lastCut === cut) this.lastCut = undefined;
      },
      () => {},
    );
    return cut;
  }

  async flush(): Promise<void> {
    if (this.dirty.size === 0 && !this.saving) return;
    await new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      void this.saveSoon().catch(() => {});
    });
  }

  // Single-flight: start a save unless one runs; when it ends, run again if more is pending.
  private async saveSoon(): Promise<void> {
    if (this.saving) return;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.dirty.size === 0) {
      const w = this.waiters.splice(0);
      for (const x of w) x.resolve();
      return;
    }
    const waiters = this.waiters.splice(0);
    this.saving = this.saveOnce();
    try {
      await this.saving;
      for (const x of waiters) x.resolve();
    } catch (e) {
      log.error({ err: String(e), file: this.file }, 'saving the workbook failed');
      for (const x of waiters) x.reject(e);
    } finally {
      this.saving = undefined;
    }
    if (this.waiters.length > 0) void this.saveSoon().catch(() => {});
    else if (this.dirty.size > 0 && !this.timer && !this.closed) {
      this.timer = setTimeout(() => void this.saveSoon().catch(() => {}), this.saveDelay());
    }
  }

  private async saveOnce(): Promise<void> {
    // A person's save that we have not seen yet must be merged before we overwrite the file.
    await this.checkExternal(true);
    for (let attempt = 0; ; attempt++) {
      const tabs = [...this.dirty];
      this.dirty.clear();
      const snapshot = this.book.snapshot();
      const t0 = performance.now();
      const gen = this.cutJournal(snapshot);
      const changes = this.diff(snapshot, tabs);
      let r: { stamp?: Stamp; conflict?: boolean };
      try {
        // The journal holds everything in this snapshot before the file can replace its base, and the
        // new generation names the file it will start from before that file takes the workbook's name.
        const next = await gen;
        // The changed rows go to the worker in pieces, one message per turn of the event loop:
        // postMessage copies (structured clone) on this thread, and one message of every Nodes row
        // (each node heartbeats between two saves) plus a shifted Pods tab held it tens of ms.
        const pieces = piecesOf(changes, LIMITS.rowsPerMessage);
        const last = pieces.pop() ?? [];
        for (const piece of pieces) await this.io.call({ op: 'apply', tabs: piece });
        const p = await this.io.call<{ tmp: string; hash: string }>({
          op: 'prepare',
          file: this.file,
          tabs: last,
        });
        try {
          await this.journal.intend(next, p.hash);
        } catch (e) {
          await this.io.call({ op: 'discard', tmp: p.tmp }).catch(() => {});
          throw e;
        }
        r = await this.io.call({
          op: 'commit',
          file: this.file,
          tmp: p.tmp,
          hash: p.hash,
          expect: this.stamp,
        });
      } catch (e) {
        for (const t of tabs) this.dirty.add(t);
        // The worker's workbook may hold part of this save: reload it so the next diff is exact.
        await this.resync().catch(() => {});
        throw e;
      }
      if (r.conflict && attempt < 3) {
        // Someone saved the file while we serialised: merge their edit and try again.
        for (const t of tabs) this.dirty.add(t);
        this.stamp = undefined;
        await this.checkExternal(true, true);
        continue;
      }
      if (r.conflict) {
        for (const t of tabs) this.dirty.add(t);
        throw new Error(`${this.file} keeps changing on disk while we save; will retry`);
      }
      for (const c of changes) {
        const g = snapshot.grids.get(c.name)!;
        this.written.set(c.name, g.rows);
        this.writtenHeaders.set(c.name, g.headers);
      }
      this.stamp = r.stamp;
      this.base = snapshot;
      this.saves++;
      this.lastSaveMs = performance.now() - t0;
      if (r.stamp) await this.journal.saved(await gen, r.stamp.hash);
      return;
    }
  }

  // Rows whose CONTENT changed since the worker's copy (a rewritten Pods tab with the same pods
  // sends nothing).
  private diff(book: Book, tabs: string[]): TabChange[] {
    const out: TabChange[] = [];
    for (const name of tabs) {
      const g = book.grids.get(name);
      if (!g) continue;
      const oldHeaders = this.writtenHeaders.get(name);
      const oldRows = this.written.get(name) ?? [];
      const headersChanged =
        !oldHeaders ||
        oldHeaders.length !== g.headers.length ||
        oldHeaders.some((h, i) => h !== g.headers[i]);
      const rows: [number, StoredCell[]][] = [];
      const n = Math.max(g.rows.length, oldRows.length);
      for (let i = 0; i < n; i++) {
        const now = g.rows[i];
        const was = oldRows[i];
        if (now === was) continue;
        if (now && was && sameRow(now, was)) continue;
        rows.push([i, now ?? []]);
      }
      if (!headersChanged && rows.length === 0 && oldHeaders) continue;
      out.push({
        name,
        headers: headersChanged ? g.headers : undefined,
        oldHeaderWidth: oldHeaders?.length ?? 0,
        rows,
      });
    }
    return out;
  }

  private async resync(): Promise<void> {
    const r = await this.io.call<{ exists: boolean; sheets: SheetData[]; stamp?: Stamp }>({
      op: 'load',
      file: this.file,
    });
    const disk = bookFromData(r.sheets);
    this.rememberWritten(disk);
    for (const t of this.book.grids.keys()) this.dirty.add(t);
    this.stamp = r.stamp;
  }

  private async changedOnDisk(): Promise<boolean> {
    try {
      const st = await fsp.stat(this.file);
      const s = this.stamp;
      return !s || st.size !== s.size || st.mtimeMs !== s.mtimeMs || st.ino !== s.ino;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
  }

  // Poll: reload and merge the file when someone else changed it.
  private async checkExternal(insideSave = false, force = false): Promise<void> {
    if (this.closed || this.checking || (!insideSave && this.saving)) return;
    this.checking = true;
    try {
      if (!force && !(await this.changedOnDisk())) return;
      let bytes: Buffer;
      try {
        bytes = await fsp.readFile(this.file);
      } catch {
        return;
      }
      const hash = createHash('sha256').update(bytes).digest('hex');
      if (this.stamp && hash === this.stamp.hash) {
        const st = await fsp.stat(this.file);
        this.stamp = { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, hash }; // touched, not changed
        return;
      }
      let r: { exists: boolean; sheets: SheetData[]; stamp?: Stamp };
      try {
        r = await this.io.call({ op: 'load', file: this.file });
      } catch (e) {
        // A half-written file from an editor that saves in place: try again at the next poll.
        log.warn({ err: String(e), file: this.file }, 'workbook changed on disk but cannot be read yet');
        return;
      }
      if (!r.exists) return;
      const theirs = bookFromData(r.sheets);
      if (diffTabs(this.base, theirs).length === 0 && diffTabs(theirs, this.base).length === 0) {
        this.stamp = r.stamp; // rewritten with the same content
        return;
      }
      const ours = this.book;
      const merged = mergeBooks(this.base, ours, theirs);
      const changedTabs = diffTabs(ours, merged.book);
      this.rememberWritten(theirs);
      this.base = theirs.snapshot();
      this.book = merged.book;
      // The journal now starts from their file: its first record is what we still hold on top of it.
      if (r.stamp) await this.cutJournal(this.book, { base: r.stamp.hash, first: theirs });
      for (const t of merged.oursStillPending) this.dirty.add(t);
      this.stamp = r.stamp;
      this.externalReloads++;
      this.ver++;
      log.info({ file: this.file, tabs: changedTabs }, 'reloaded the workbook after an external edit');
      this.emit({ source: 'external', tabs: changedTabs, version: this.ver });
      if (!insideSave && this.dirty.size > 0 && !this.timer) {
        this.timer = setTimeout(() => void this.saveSoon().catch(() => {}), this.saveDelay());
      }
    } finally {
      this.checking = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.watcher) clearInterval(this.watcher);
    await this.checkingNow;
    let clean = false;
    try {
      await this.flush();
      clean = this.dirty.size === 0;
    } finally {
      this.closed = true;
      if (this.timer) clearTimeout(this.timer);
      while (this.saving) await this.saving.catch(() => {});
      while (this.journalBusy) await new Promise((r) => setImmediate(r));
      // Saved whole: the workbook alone is the truth. Otherwise the journal stays for the next open.
      if (clean) await this.journal.removeAll();
      else await this.journal.close();
      await this.io.close();
    }
  }
}

export type { Formula };

export async function openXlsxStore(file: string, opts: XlsxOptions = {}): Promise<XlsxStore> {
  return XlsxStore.open(file, opts);
}
