// The xlsx backend (the default): one .xlsx file through exceljs.
//
// In memory: the shared model (model.ts) plus the loaded exceljs workbook, so a person's formatting,
// column widths, extra sheets and formulas survive our saves (we only rewrite cells whose value
// changed).
//
// Saving (write-behind): a commit marks its tabs dirty. A save writes the whole workbook to a temp
// file `.~sk-<name>.<pid>.<n>` in the same directory, fsyncs it, renames it over the workbook and
// fsyncs the directory — so the file on disk is always either the old or the new complete workbook,
// even under kill -9 or power loss. Saves never overlap; all commits that arrive while one runs
// share the next one (group commit).
//   - durable transactions resolve after the save that contains them;
//   - buffered ones resolve at once and are saved at most LIMITS.flushDelayMs later.
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
import { constants, promises as fsp } from 'node:fs';
import path from 'node:path';
import ExcelJS from 'exceljs';
import { logger } from '../../util/log.ts';
import { StoreBase } from './base.ts';
import { diffTabs, mergeBooks, sameCell } from './merge.ts';
import { Book, cellValue, type Formula, Grid, isFormula, type StoredCell } from './model.ts';
import type { Cell, Durability } from './types.ts';

const log = logger('sheets-store-xlsx');

export const LIMITS = {
  maxCellChars: 32_767, // Excel's per-cell maximum; longer strings would be truncated by Excel
  maxCells: 10_000_000, // bounds memory and save time; same as Google so clusters can move between backends
  flushDelayMs: 1_000, // buffered (heartbeat) changes reach the disk within this delay
  watchMs: 500, // how often the file is checked for a person's edits
} as const;

export const TEMP_PREFIX = '.~sk-';

export interface XlsxOptions {
  flushDelayMs?: number;
  watchMs?: number; // 0 disables the watcher
}

type ExcelValue = ExcelJS.CellValue;

function fromExcel(v: ExcelValue): StoredCell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') {
    const o = v as unknown as Record<string, unknown>;
    if (typeof o.formula === 'string') return { formula: o.formula, result: plainResult(o.result) };
    if ('sharedFormula' in o) return plainResult(o.result);
    if (Array.isArray(o.richText)) return (o.richText as { text: string }[]).map((t) => t.text).join('');
    if (typeof o.text === 'string') return o.text;
    if (typeof o.error === 'string') return o.error;
  }
  return String(v);
}

function plainResult(r: unknown): Cell {
  if (r === undefined || r === null) return null;
  if (typeof r === 'string' || typeof r === 'number' || typeof r === 'boolean') return r;
  if (r instanceof Date) return r.toISOString();
  if (typeof r === 'object' && r && 'error' in r) return String((r as { error: unknown }).error);
  return String(r);
}

function toExcel(c: StoredCell): ExcelValue {
  if (isFormula(c)) return { formula: c.formula, result: c.result ?? undefined } as ExcelValue;
  // Strings go in as strings: exceljs writes them as shared strings, never as formulas, whatever
  // their first character.
  return c;
}

// Read every worksheet of an exceljs workbook into a Book.
function bookFromWorkbook(wb: ExcelJS.Workbook): Book {
  const grids = new Map<string, Grid>();
  wb.eachSheet((ws) => {
    const width = ws.columnCount;
    const height = ws.rowCount;
    const headerRow = ws.getRow(1);
    const headers: string[] = [];
    for (let c = 1; c <= width; c++) {
      const v = cellValue(fromExcel(headerRow.getCell(c).value));
      headers.push(v === null ? '' : String(v).trim());
    }
    while (headers.length > 0 && headers[headers.length - 1] === '') headers.pop();
    const rows: StoredCell[][] = [];
    for (let r = 2; r <= height; r++) {
      const row = ws.getRow(r);
      const cells: StoredCell[] = [];
      for (let c = 1; c <= width; c++) cells.push(fromExcel(row.getCell(c).value));
      rows.push(cells);
    }
    // Trailing empty rows carry nothing; dropping them keeps row counts honest.
    while (
      rows.length > 0 &&
      rows[rows.length - 1].every((c) => cellValue(c) === null || cellValue(c) === '')
    ) {
      rows.pop();
    }
    grids.set(ws.name, new Grid(ws.name, headers, rows));
  });
  return new Book(grids);
}

interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
  hash: string;
}

export class XlsxStore extends StoreBase {
  readonly backend = 'xlsx' as const;
  readonly file: string;
  private wb: ExcelJS.Workbook;
  private base: Book; // what the file held at our last load or save (merge base)
  private written = new Map<string, StoredCell[][]>(); // per tab, the rows as written into `wb`
  private writtenHeaders = new Map<string, string[]>();
  private dirty = new Set<string>();
  private stamp: FileStamp | undefined;
  private saving: Promise<void> | undefined;
  private waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private watcher: NodeJS.Timeout | undefined;
  private checking = false;
  private tempSeq = 0;
  private readonly flushDelayMs: number;
  saves = 0; // number of completed saves (tests and benchmarks read it)
  externalReloads = 0;

  private constructor(file: string, opts: XlsxOptions) {
    super({ maxCellChars: LIMITS.maxCellChars, maxCells: LIMITS.maxCells });
    this.file = path.resolve(file);
    this.wb = new ExcelJS.Workbook();
    this.base = new Book();
    this.flushDelayMs = opts.flushDelayMs ?? LIMITS.flushDelayMs;
    const watchMs = opts.watchMs ?? LIMITS.watchMs;
    if (watchMs > 0) {
      this.watcher = setInterval(() => void this.checkExternal(), watchMs);
      this.watcher.unref();
    }
  }

  static async open(file: string, opts: XlsxOptions = {}): Promise<XlsxStore> {
    const s = new XlsxStore(file, opts);
    await s.loadInitial();
    return s;
  }

  private async loadInitial(): Promise<void> {
    await this.removeStaleTemps();
    let bytes: Buffer;
    try {
      bytes = await fsp.readFile(this.file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // created at the first save
      throw e;
    }
    const { wb, book } = await parse(bytes, this.file);
    this.wb = wb;
    this.book = book;
    this.base = book.snapshot();
    this.rememberWritten(book);
    this.stamp = await this.stampOf(bytes);
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

  private async stampOf(bytes: Buffer): Promise<FileStamp> {
    const st = await fsp.stat(this.file);
    return { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, hash: sha256(bytes) };
  }

  protected persist(changed: string[], durability: Durability): Promise<void> {
    for (const t of changed) this.dirty.add(t);
    if (durability === 'buffered') {
      if (!this.timer && !this.saving) {
        this.timer = setTimeout(() => void this.saveSoon().catch(() => {}), this.flushDelayMs);
      }
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      // A microtask turn lets every commit of this burst join the same save.
      setImmediate(() => void this.saveSoon().catch(() => {}));
    });
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
      this.timer = setTimeout(() => void this.saveSoon().catch(() => {}), this.flushDelayMs);
    }
  }

  private async saveOnce(): Promise<void> {
    // A person's save that we have not seen yet must be merged before we overwrite the file.
    await this.checkExternal(true);
    for (let attempt = 0; ; attempt++) {
      const tabs = [...this.dirty];
      this.dirty.clear();
      const snapshot = this.book.snapshot();
      try {
        this.syncWorkbook(snapshot, tabs);
      } catch (e) {
        for (const t of tabs) this.dirty.add(t);
        throw e;
      }
      const bytes = Buffer.from(await this.wb.xlsx.writeBuffer());
      const dir = path.dirname(this.file);
      const tmp = path.join(
        dir,
        `${TEMP_PREFIX}${path.basename(this.file)}.${process.pid}.${++this.tempSeq}`,
      );
      try {
        const fh = await fsp.open(tmp, 'w', 0o644);
        try {
          await fh.writeFile(bytes);
          await fh.sync();
        } finally {
          await fh.close();
        }
        // Someone saved the file while we serialised: merge their edit and try again.
        if (attempt < 3 && (await this.changedOnDisk())) {
          await fsp.rm(tmp, { force: true });
          for (const t of tabs) this.dirty.add(t);
          await this.checkExternal(true);
          continue;
        }
        await fsp.rename(tmp, this.file);
      } catch (e) {
        await fsp.rm(tmp, { force: true }).catch(() => {});
        for (const t of tabs) this.dirty.add(t);
        throw e;
      }
      await fsyncDir(dir);
      this.stamp = await this.stampOf(bytes);
      this.base = snapshot;
      this.saves++;
      return;
    }
  }

  // Write the model's dirty tabs into the exceljs workbook, touching only cells that changed.
  private syncWorkbook(book: Book, tabs: string[]): void {
    for (const name of tabs) {
      const g = book.grids.get(name);
      if (!g) continue;
      let ws = this.wb.getWorksheet(name);
      if (!ws) {
        ws = this.wb.addWorksheet(name);
        this.written.set(name, []);
        this.writtenHeaders.set(name, []);
      }
      const oldHeaders = this.writtenHeaders.get(name) ?? [];
      const oldRows = this.written.get(name) ?? [];
      const width = Math.max(g.headers.length, oldHeaders.length);
      if (g.headers !== oldHeaders) {
        const hr = ws.getRow(1);
        for (let c = 0; c < width; c++) {
          const h = g.headers[c] ?? '';
          if ((oldHeaders[c] ?? '') !== h) hr.getCell(c + 1).value = h === '' ? null : h;
        }
      }
      const n = Math.max(g.rows.length, oldRows.length);
      for (let i = 0; i < n; i++) {
        const now = g.rows[i];
        const was = oldRows[i];
        if (now === was) continue; // same immutable row: nothing to write
        const xr = ws.getRow(i + 2);
        const w = Math.max(width, now?.length ?? 0, was?.length ?? 0);
        for (let c = 0; c < w; c++) {
          const a = now?.[c] ?? null;
          if (was && sameCell(a, was[c])) continue;
          xr.getCell(c + 1).value = toExcel(a);
        }
      }
      this.written.set(name, g.rows);
      this.writtenHeaders.set(name, g.headers);
    }
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
  private async checkExternal(insideSave = false): Promise<void> {
    if (this.closed || this.checking || (!insideSave && this.saving)) return;
    this.checking = true;
    try {
      if (!(await this.changedOnDisk())) return;
      let bytes: Buffer;
      try {
        bytes = await fsp.readFile(this.file);
      } catch {
        return;
      }
      const hash = sha256(bytes);
      if (this.stamp && hash === this.stamp.hash) {
        this.stamp = await this.stampOf(bytes); // touched, not changed
        return;
      }
      let parsed: { wb: ExcelJS.Workbook; book: Book };
      try {
        parsed = await parse(bytes, this.file);
      } catch (e) {
        // A half-written file from an editor that saves in place: try again at the next poll.
        log.warn({ err: String(e), file: this.file }, 'workbook changed on disk but cannot be read yet');
        return;
      }
      const theirs = parsed.book;
      const ours = this.book;
      const merged = mergeBooks(this.base, ours, theirs);
      const changedTabs = diffTabs(ours, merged.book);
      this.wb = parsed.wb;
      this.rememberWritten(theirs);
      this.base = theirs.snapshot();
      this.book = merged.book;
      for (const t of merged.oursStillPending) this.dirty.add(t);
      this.stamp = { ...(await this.stampOf(bytes)), hash };
      this.externalReloads++;
      this.ver++;
      log.info({ file: this.file, tabs: changedTabs }, 'reloaded the workbook after an external edit');
      this.emit({ source: 'external', tabs: changedTabs, version: this.ver });
      if (!insideSave && this.dirty.size > 0 && !this.timer) {
        this.timer = setTimeout(() => void this.saveSoon().catch(() => {}), this.flushDelayMs);
      }
    } finally {
      this.checking = false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.watcher) clearInterval(this.watcher);
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    while (this.saving) await this.saving.catch(() => {});
  }
}

async function parse(bytes: Buffer, file: string): Promise<{ wb: ExcelJS.Workbook; book: Book }> {
  const wb = new ExcelJS.Workbook();
  try {
    // exceljs's types ask for its own Buffer type; a Node Buffer is what it reads.
    await wb.xlsx.load(bytes as unknown as ExcelJS.Buffer);
  } catch (e) {
    throw new Error(
      `${file} is not a readable .xlsx workbook (${String(e)}); save it as .xlsx (Excel 2007+)`,
    );
  }
  return { wb, book: bookFromWorkbook(wb) };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

async function fsyncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, constants.O_RDONLY);
    await fh.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename itself is still atomic there.
  } finally {
    await fh?.close();
  }
}

export type { Formula };

export async function openXlsxStore(file: string, opts: XlsxOptions = {}): Promise<XlsxStore> {
  return XlsxStore.open(file, opts);
}
