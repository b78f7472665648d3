// The durable journal beside an xlsx workbook: what makes a durable write cost one small append and
// one fsync instead of a whole-workbook save.
//
// Files: `.sk-journal.<workbook name>.<gen>` in the workbook's directory, JSON lines:
//   {"journal":1,"gen":g,"base":"<sha256>"?}   header; `base` when the generation starts from a known file
//   {"tabs":[{name, headers?, n, moved?, rows:[[i,row],…]}]}   a record: the tabs' rows that changed
//                                                   since the previous record (absolute row index, whole
//                                                   row; `n` the tab's row count), so records replay in
//                                                   order; `moved: [[to, from, count],…]` says rows
//                                                   from..from+count-1 of the previous state now start
//                                                   at `to` (applied before `rows`)
//                                                   (a row inserted or removed mid-tab shifts the rest,
//                                                   and writing each shifted row made one reconcile's
//                                                   record ~1 MB at 10,000 pods). Code from before
//                                                   `moved` would replay such a record wrongly: a journal
//                                                   left by a crash is to be opened by this code or later.
//   {"next":"<sha256>"}                           appended before a save's temp file (holding everything
//                                                   before this generation) is renamed over the workbook:
//                                                   the file this generation starts from, if the rename
//                                                   happens (a kill -9 may fall between rename and base)
//   {"base":"<sha256>"}                           appended once that save is on disk
// Generations: a workbook save starts a new generation at its snapshot (the last record of the old one
// sweeps in every buffered change, so old generation's end state == the snapshot being saved); when
// the save is on disk the new generation learns the file's hash and the older generations are deleted.
// Recovery: the newest generation whose base (or next) is the workbook's hash, then every later one,
// in order.
// A torn last line (kill -9 mid-append) was never acknowledged and is ignored.
// If no generation matches (the file was replaced while the apiserver was down), the journals are
// renamed `….unapplied` and a warning says so: nothing is applied to a workbook it was not written for.

import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { logger } from '../../util/log.ts';
import { type Book, Grid, type StoredCell } from './model.ts';

const log = logger('sheets-store-journal');

export const JOURNAL_PREFIX = '.sk-journal.';
export const ABSENT = 'absent'; // the base of a journal started before the workbook file existed

export interface TabDelta {
  name: string;
  headers?: string[];
  n: number;
  /** [to, from, count]: a run of the previous state's rows, unchanged, at a new position. */
  moved?: [number, number, number][];
  rows: [number, StoredCell[]][];
}

export const LIMITS = {
  // A shift is written as a move only when it saves at least this many rows: a short run is as
  // cheap to write out, and a record without `moved` is what older code reads.
  minMovedRows: 64,
} as const;

interface GenFile {
  gen: number;
  file: string;
  base: string | undefined;
  /** Hashes of files a save was about to rename into place when this generation began. */
  next: Set<string>;
  records: TabDelta[][];
}

// Cells are strings, finite numbers, booleans, null or formulas: === decides all but two formula
// objects, which compare by their JSON. (JSON of every cell was most of a journal record's cost: at
// 10,000 nodes every heartbeat changes a Nodes row, and each record compares them all.)
const sameCell = (c: StoredCell, d: StoredCell): boolean =>
  c === d || (typeof c === 'object' && typeof d === 'object' && JSON.stringify(c) === JSON.stringify(d));
const sameCells = (a: StoredCell[], b: StoredCell[]): boolean =>
  a.length === b.length && a.every((c, i) => sameCell(c, b[i]));

/** What changed in `tabs` of `book` since `journaled` (row identity first: unchanged rows are shared). */
export function deltaOf(book: Book, journaled: Map<string, Grid>, tabs: Iterable<string>): TabDelta[] {
  const out: TabDelta[] = [];
  for (const name of tabs) {
    const g = book.grids.get(name);
    if (!g) continue;
    const was = journaled.get(name);
    if (was === g) continue;
    const headersChanged =
      !was || was.headers.length !== g.headers.length || was.headers.some((h, i) => h !== g.headers[i]);
    const rows: [number, StoredCell[]][] = [];
    const old = was?.rows ?? [];
    const moved = movesOf(old, g.rows);
    const isMoved = new Uint8Array(g.rows.length);
    for (const [to, , count] of moved) isMoved.fill(1, to, to + count);
    for (let i = 0; i < g.rows.length; i++) {
      if (isMoved[i]) continue;
      const now = g.rows[i];
      const before = old[i];
      if (now === before || (before && sameCells(now, before))) continue;
      rows.push([i, now]);
    }
    if (!headersChanged && moved.length === 0 && rows.length === 0 && old.length === g.rows.length) continue;
    out.push({
      name,
      headers: headersChanged ? g.headers : undefined,
      n: g.rows.length,
      ...(moved.length > 0 ? { moved } : {}),
      rows,
    });
  }
  return out;
}

/**
 * Runs of `old`'s rows (the same row objects) found at other positions in `now`: what a row inserted
 * or removed above them does. Looked for only when the row count changed (a heartbeat's update keeps
 * positions, and then no index of the old rows is built); runs shorter than LIMITS.minMovedRows are
 * left to be written out.
 */
function movesOf(old: StoredCell[][], now: StoredCell[][]): [number, number, number][] {
  if (old.length === now.length || old.length === 0) return [];
  let p = 0; // rows above the first change stay where they are (an append moves nothing)
  while (p < old.length && p < now.length && now[p] === old[p]) p++;
  if (p === old.length || p === now.length) return [];
  const at = new Map<StoredCell[], number>();
  for (let j = p; j < old.length; j++) at.set(old[j], j);
  const runs: [number, number, number][] = [];
  for (let i = p; i < now.length; ) {
    const j = at.get(now[i]);
    if (j === undefined || j === i) {
      i++;
      continue;
    }
    let k = 1;
    while (i + k < now.length && j + k < old.length && now[i + k] === old[j + k]) k++;
    if (k >= LIMITS.minMovedRows) runs.push([i, j, k]);
    i += k;
  }
  return runs;
}

/** Apply records, in order, to a book (the workbook as loaded); returns the tabs they touched. */
export function replay(book: Book, records: TabDelta[][]): Set<string> {
  const touched = new Set<string>();
  for (const rec of records) {
    for (const d of rec) {
      const cur = book.grids.get(d.name);
      const headers = d.headers ?? cur?.headers ?? [];
      const rows = cur ? [...cur.rows] : [];
      const prev = cur?.rows ?? [];
      for (const [to, from, count] of d.moved ?? [])
        for (let k = 0; k < count; k++) rows[to + k] = prev[from + k] ?? [];
      rows.length = d.n;
      for (let i = 0; i < d.n; i++) rows[i] ??= [];
      for (const [i, r] of d.rows) if (i < d.n) rows[i] = r;
      book.grids.set(d.name, new Grid(d.name, [...headers], rows, cur?.keyCols));
      touched.add(d.name);
    }
  }
  return touched;
}

export class Journal {
  readonly dir: string;
  readonly prefix: string;
  gen = 0;
  private fh: fsp.FileHandle | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(workbook: string) {
    this.dir = path.dirname(workbook);
    this.prefix = `${JOURNAL_PREFIX}${path.basename(workbook)}.`;
  }

  private fileOf(gen: number): string {
    return path.join(this.dir, `${this.prefix}${gen}`);
  }

  private async list(): Promise<GenFile[]> {
    let names: string[] = [];
    try {
      names = await fsp.readdir(this.dir);
    } catch {
      return [];
    }
    const out: GenFile[] = [];
    for (const n of names) {
      if (!n.startsWith(this.prefix)) continue;
      const gen = Number(n.slice(this.prefix.length));
      if (!Number.isInteger(gen) || gen <= 0) continue;
      const file = path.join(this.dir, n);
      const text = await fsp.readFile(file, 'utf8').catch(() => '');
      let base: string | undefined;
      const next = new Set<string>();
      const records: TabDelta[][] = [];
      for (const line of text.split('\n')) {
        if (!line) continue;
        let v: { base?: string; next?: string; tabs?: TabDelta[]; journal?: number };
        try {
          v = JSON.parse(line);
        } catch {
          break; // a torn last append: never acknowledged
        }
        if (typeof v.base === 'string') base = v.base;
        if (typeof v.next === 'string') next.add(v.next);
        if (Array.isArray(v.tabs)) records.push(v.tabs);
      }
      out.push({ gen, file, base, next, records });
    }
    return out.sort((a, b) => a.gen - b.gen);
  }

  /**
   * The records to replay over a workbook whose bytes hash to `hash` (ABSENT when there is no file),
   * and the generation numbers seen. Call once, at open, before start().
   */
  async recover(hash: string): Promise<{ records: TabDelta[][]; files: number }> {
    const gens = await this.list();
    this.gen = gens.length > 0 ? gens[gens.length - 1].gen : 0;
    if (gens.length === 0) return { records: [], files: 0 };
    let from = -1;
    for (let i = gens.length - 1; i >= 0; i--)
      if (gens[i].base === hash || gens[i].next.has(hash)) {
        from = i;
        break;
      }
    if (from < 0) {
      const records = gens.reduce((n, g) => n + g.records.length, 0);
      if (records > 0) {
        log.warn(
          { dir: this.dir, journals: gens.map((g) => path.basename(g.file)) },
          'the workbook on disk is not the one these journals were written for (replaced while the apiserver was down?): not applying them; they are kept as *.unapplied',
        );
      }
      for (const g of gens)
        await (records > 0
          ? fsp.rename(g.file, `${g.file}.unapplied`)
          : fsp.rm(g.file, { force: true })
        ).catch(() => {});
      return { records: [], files: gens.length };
    }
    return { records: gens.slice(from).flatMap((g) => g.records), files: gens.length };
  }

  /** Open the first generation of this process; `base` when it starts from the file as loaded. */
  start(base?: string): Promise<void> {
    return this.enqueue(() => this.openGen(base));
  }

  /**
   * Cut the stream at a snapshot: `sweep` (every change since the last record) ends the current
   * generation, and a new one begins — relative to the snapshot, or to the file of hash `base` with
   * `first` as its first record (after a person's edit was merged). Queued behind earlier appends and
   * before later ones; resolves with the new generation once durable.
   */
  cut(sweep: TabDelta[], next: { base?: string; first?: TabDelta[] } = {}): Promise<number> {
    return this.enqueue(async () => {
      if (sweep.length > 0) await this.writeSync({ tabs: sweep });
      await this.openGen(next.base);
      if (next.first && next.first.length > 0) await this.writeSync({ tabs: next.first });
      return this.gen;
    });
  }

  private async openGen(base: string | undefined): Promise<void> {
    const prev = this.fh;
    this.gen++;
    const fh = await fsp.open(this.fileOf(this.gen), 'a');
    await fh.write(`${JSON.stringify({ journal: 1, gen: this.gen, ...(base ? { base } : {}) })}\n`);
    await fh.datasync();
    await fsyncDir(this.dir);
    this.fh = fh;
    await prev?.close().catch(() => {});
  }

  private async writeSync(line: object): Promise<void> {
    if (!this.fh) throw new Error('the journal is not open');
    await this.fh.write(`${JSON.stringify(line)}\n`);
    await this.fh.datasync();
  }

  private enqueue<T>(f: () => Promise<T>): Promise<T> {
    const p = this.writing.then(f);
    this.writing = p.then(
      () => {},
      () => {},
    );
    return p;
  }

  /** Append one record and make it durable (group commit: the caller batches). */
  append(tabs: TabDelta[]): Promise<void> {
    return this.enqueue(() => this.writeSync({ tabs }));
  }

  /**
   * Before the save of the snapshot that began generation `gen` renames its temp file (bytes hashing
   * to `hash`) over the workbook: from then on, either the old file (an older generation's base) or
   * this one is on disk, and recovery finds a generation starting from either.
   */
  intend(gen: number, hash: string): Promise<void> {
    return this.enqueue(() => this.writeTo(gen, { next: hash }));
  }

  /** After a save of the snapshot that began generation `gen`: its base is that file; older ones go. */
  async saved(gen: number, hash: string): Promise<void> {
    await this.enqueue(() => this.writeTo(gen, { base: hash }));
    for (const g of await this.gens())
      if (g < gen) await fsp.rm(this.fileOf(g), { force: true }).catch(() => {});
  }

  private async writeTo(gen: number, line: object): Promise<void> {
    if (gen === this.gen) return this.writeSync(line);
    const fh = await fsp.open(this.fileOf(gen), 'a');
    try {
      await fh.write(`${JSON.stringify(line)}\n`);
      await fh.datasync();
    } finally {
      await fh.close();
    }
  }

  private async gens(): Promise<number[]> {
    const names = await fsp.readdir(this.dir).catch(() => [] as string[]);
    return names
      .filter((n) => n.startsWith(this.prefix))
      .map((n) => Number(n.slice(this.prefix.length)))
      .filter((g) => Number.isInteger(g) && g > 0);
  }

  /** A clean shutdown after a final save: the workbook alone is the truth, the journals go. */
  async removeAll(): Promise<void> {
    await this.writing;
    await this.fh?.close().catch(() => {});
    this.fh = undefined;
    for (const g of await this.gens()) await fsp.rm(this.fileOf(g), { force: true }).catch(() => {});
  }

  async close(): Promise<void> {
    await this.writing;
    await this.fh?.close().catch(() => {});
    this.fh = undefined;
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const d = await fsp.open(dir, 'r').catch(() => undefined);
  if (!d) return;
  try {
    await d.sync();
  } catch {
    // some filesystems refuse fsync on a directory; the rename/creation is then as durable as they allow
  } finally {
    await d.close();
  }
}
