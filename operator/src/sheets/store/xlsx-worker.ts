// The xlsx backend's I/O thread: owns the exceljs workbook, parses files and serialises saves, so
// the CPU-heavy zip/XML work never stalls the apiserver's event loop.
// Protocol (one request at a time from XlsxStore):
//   load {file}                      → {exists, sheets: SheetData[], hash}
//   apply {tabs}                     → {}   (a piece of a save's rows, sent ahead of prepare)
//   prepare {file, tabs}             → {tmp, hash}
//   commit {file, tmp, hash, expect} → {stamp} | {conflict: true}
//   discard {tmp}                    → {}
// A save is two steps, so the journal can learn the new file's hash before the file exists under
// the workbook's name (xlsx-journal.ts): prepare applies the changed rows to the workbook, writes a
// temp file and fsyncs it; commit checks that the workbook on disk is still the one we last saw
// (else: conflict, the temp file is removed, nothing renamed), renames the temp file into place and
// fsyncs the directory.

import { createHash } from 'node:crypto';
import { constants, promises as fsp, readlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import ExcelJS from 'exceljs';
import {
  looksLikeFormula,
  markQuotePrefix,
  readWorkbook,
  type SheetCell,
  TEXT_FORMAT,
  toExcel,
} from './xlsx-cells.ts';

export interface Stamp {
  size: number;
  mtimeMs: number;
  ino: number;
  hash: string;
}
export interface TabChange {
  name: string;
  headers: string[] | undefined; // new header row, when it changed
  oldHeaderWidth: number;
  rows: [number, SheetCell[]][]; // [0-based data row index, full row] — empty array clears the row
}

const TEMP_PREFIX = '.~sk-';
// Serialising a big workbook keeps this thread busy for seconds. On a host with few cores it then
// competes with the apiserver's event loop for a core, and a heartbeat waits in the run queue behind
// exceljs; a lower priority for this thread (Linux: setpriority on its thread id; xlsx.ts
// LIMITS.workerNice) lets the event loop go first and the save take the idle time.
try {
  const nice = Number((workerData as { nice?: number } | null)?.nice ?? 0);
  const tid = Number(/task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'))?.[1]);
  if (nice > 0 && tid > 0) os.setPriority(tid, Math.min(19, os.getPriority(tid) + nice));
} catch {
  // Not Linux, or not allowed: the save then shares the core with the event loop as before.
}
let wb = new ExcelJS.Workbook();
let seq = 0;
// Whether a formula-looking value was ever written as Text here or read back: then every save adds
// the quote-prefix flag again (exceljs reads the Text format but drops the flag).
let quoted = false;

async function stampOf(file: string, bytes: Buffer): Promise<Stamp> {
  const st = await fsp.stat(file);
  return {
    size: st.size,
    mtimeMs: st.mtimeMs,
    ino: st.ino,
    hash: createHash('sha256').update(bytes).digest('hex'),
  };
}

async function load(file: string) {
  let bytes: Buffer;
  try {
    bytes = await fsp.readFile(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      wb = new ExcelJS.Workbook();
      return { exists: false, sheets: [] };
    }
    throw e;
  }
  const next = new ExcelJS.Workbook();
  try {
    // exceljs's types ask for its own Buffer type; a Node Buffer is what it reads.
    await next.xlsx.load(bytes as unknown as ExcelJS.Buffer);
  } catch (e) {
    throw new Error(
      `${file} is not a readable .xlsx workbook (${String(e)}); save it as .xlsx (Excel 2007+)`,
    );
  }
  wb = next;
  const sheets = readWorkbook(wb);
  quoted ||= sheets.some((t) => t.rows.some((r) => r.some((c) => looksLikeFormula(c))));
  return { exists: true, sheets, stamp: await stampOf(file, bytes) };
}

function apply(tabs: TabChange[]): void {
  for (const t of tabs) {
    const ws = wb.getWorksheet(t.name) ?? wb.addWorksheet(t.name);
    if (t.headers) {
      const hr = ws.getRow(1);
      const w = Math.max(t.headers.length, t.oldHeaderWidth);
      for (let c = 0; c < w; c++) {
        const h = t.headers[c] ?? '';
        hr.getCell(c + 1).value = h === '' ? null : h;
      }
    }
    for (const [i, row] of t.rows) {
      const xr = ws.getRow(i + 2);
      const w = Math.max(row.length, xr.cellCount);
      for (let c = 0; c < w; c++) {
        const v = row[c] ?? null;
        const cell = xr.getCell(c + 1);
        if (cell.value === v) continue;
        cell.value = toExcel(v);
        if (looksLikeFormula(v)) {
          cell.numFmt = TEXT_FORMAT;
          quoted = true;
        }
      }
    }
  }
}

async function changedOnDisk(file: string, expect: Stamp | undefined): Promise<boolean> {
  try {
    const st = await fsp.stat(file);
    return !expect || st.size !== expect.size || st.mtimeMs !== expect.mtimeMs || st.ino !== expect.ino;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

async function prepare(file: string, tabs: TabChange[]) {
  apply(tabs);
  const written = Buffer.from(await wb.xlsx.writeBuffer());
  const bytes = quoted ? await markQuotePrefix(written) : written;
  const tmp = path.join(path.dirname(file), `${TEMP_PREFIX}${path.basename(file)}.${process.pid}.${++seq}`);
  try {
    const fh = await fsp.open(tmp, 'w', 0o644);
    try {
      await fh.writeFile(bytes);
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch (e) {
    await fsp.rm(tmp, { force: true }).catch(() => {});
    throw e;
  }
  return { tmp, hash: createHash('sha256').update(bytes).digest('hex') };
}

async function commit(file: string, tmp: string, hash: string, expect: Stamp | undefined) {
  const dir = path.dirname(file);
  try {
    if (await changedOnDisk(file, expect)) {
      await fsp.rm(tmp, { force: true });
      return { conflict: true };
    }
    await fsp.rename(tmp, file);
  } catch (e) {
    await fsp.rm(tmp, { force: true }).catch(() => {});
    throw e;
  }
  let dh: fsp.FileHandle | undefined;
  try {
    dh = await fsp.open(dir, constants.O_RDONLY);
    await dh.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename itself is still atomic there.
  } finally {
    await dh?.close();
  }
  const st = await fsp.stat(file);
  const stamp: Stamp = { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino, hash };
  return { stamp };
}

interface Request {
  id: number;
  op: 'load' | 'apply' | 'prepare' | 'commit' | 'discard';
  file: string;
  tabs?: TabChange[];
  tmp?: string;
  hash?: string;
  expect?: Stamp;
}

function run(m: Request): Promise<unknown> {
  switch (m.op) {
    case 'load':
      return load(m.file);
    case 'apply':
      apply(m.tabs ?? []);
      return Promise.resolve({});
    case 'prepare':
      return prepare(m.file, m.tabs ?? []);
    case 'commit':
      return commit(m.file, m.tmp ?? '', m.hash ?? '', m.expect);
    case 'discard':
      return fsp.rm(m.tmp ?? '', { force: true }).then(() => ({}));
  }
}

parentPort?.on('message', async (m: Request) => {
  try {
    parentPort?.postMessage({ id: m.id, ok: true, result: await run(m) });
  } catch (e) {
    parentPort?.postMessage({ id: m.id, ok: false, error: e instanceof Error ? e.message : String(e) });
  }
});
