// A local Google Sheets v4 emulator: the endpoints the googleapis client calls, with Google's
// request/response shapes, error wording, quotas and limits. For tests and offline development
// (Google cannot be reached from CI). Listens on 127.0.0.1 only.
//
// Endpoints (paths under /v4/spreadsheets):
//   POST   ''                                 spreadsheets.create
//   GET    /{id}                              spreadsheets.get (properties, sheets[].properties)
//   POST   /{id}:batchUpdate                  addSheet, deleteSheet, updateSheetProperties, appendDimension
//   GET    /{id}/values/{range}               values.get
//   GET    /{id}/values:batchGet              values.batchGet (ranges=…&ranges=…)
//   PUT    /{id}/values/{range}               values.update
//   POST   /{id}/values:batchUpdate           values.batchUpdate
//   POST   /{id}/values/{range}:append        values.append (OVERWRITE / INSERT_ROWS)
//   POST   /{id}/values/{range}:clear         values.clear
//   POST   /{id}/values:batchClear            values.batchClear
// Semantics kept from Google:
//   - valueInputOption RAW stores strings as strings ("=1+1" stays text); USER_ENTERED parses
//     numbers, TRUE/FALSE, a leading ' (text), and "=" formulas (evaluated here only for arithmetic).
//   - valueRenderOption FORMATTED_VALUE (default: everything as strings), UNFORMATTED_VALUE, FORMULA.
//   - Responses trim trailing empty cells/rows and omit `values` when there are none.
//   - A write outside the sheet's grid fails ("exceeds grid limits"); append grows the grid.
//   - Quotas: per user (bearer token or API key) and per project, reads and writes separately,
//     counted over a sliding 60 s window → 429 RESOURCE_EXHAUSTED with Google's error JSON.
//   - Limits: 50,000 characters per cell; 10,000,000 cells (rows × columns of all grids).
// Beside it: how a cell is written, evaluated and rendered (cells.ts), the quotas (quota.ts), Google's
// error shape and the JSON edge (http-api.ts).

import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { colName, formatA1, parseA1, quoteSheet } from './a1.ts';
import { inputOption, parseInput, renderCell, type StoredCell, type Value } from './cells.ts';
import { ApiError, invalid, obj, readBody, send } from './http-api.ts';
import { type EmulatorStats, Quota, type QuotaName } from './quota.ts';

export type { EmulatorStats } from './quota.ts';

/** What a spreadsheet id may be: the characters of Google's ids (and SheetCluster's schema). */
const SPREADSHEET_ID = /^[A-Za-z0-9_-]{10,128}$/;

export const LIMITS = {
  maxCellChars: 50_000, // Google: "more than the maximum of 50000 characters in a single cell"
  maxCells: 10_000_000, // Google: workbook cell limit
  readsPerMinutePerUser: 60, // Google's default Sheets quota
  writesPerMinutePerUser: 60, // Google's default Sheets quota
  readsPerMinutePerProject: 300, // Google's default Sheets quota
  writesPerMinutePerProject: 300, // Google's default Sheets quota
  maxBodyBytes: 10 * 1024 * 1024, // larger request bodies are refused (Google recommends <= 2 MB)
  defaultRows: 1000, // a new sheet's grid, as Google makes it
  defaultCols: 26, // a new sheet's grid, as Google makes it
} as const;

interface Sheet {
  sheetId: number;
  title: string;
  index: number;
  rowCount: number;
  columnCount: number;
  cells: (StoredCell | undefined)[][];
}
interface Spreadsheet {
  id: string;
  title: string;
  sheets: Sheet[];
  nextSheetId: number;
}

export interface EmulatorOptions {
  quotas?: Partial<Record<QuotaName, number>>;
  maxCells?: number;
  now?: () => number;
  projectNumber?: string;
}

export class SheetsEmulator {
  private readonly books = new Map<string, Spreadsheet>();
  private readonly quota: Quota;
  private readonly maxCells: number;
  private server: http.Server | undefined;
  readonly stats: EmulatorStats = { reads: 0, writes: 0, rejected429: 0, writeTimes: [] };
  url = '';

  constructor(opts: EmulatorOptions = {}) {
    const quotas = {
      readsPerMinutePerUser: LIMITS.readsPerMinutePerUser,
      writesPerMinutePerUser: LIMITS.writesPerMinutePerUser,
      readsPerMinutePerProject: LIMITS.readsPerMinutePerProject,
      writesPerMinutePerProject: LIMITS.writesPerMinutePerProject,
      ...opts.quotas,
    };
    this.maxCells = opts.maxCells ?? LIMITS.maxCells;
    this.quota = new Quota(quotas, opts.now ?? Date.now, opts.projectNumber ?? '123456789012', this.stats);
  }

  /**
   * Listens on `host` (loopback by default). The emulator believes any bearer token, so another
   * address is for a test cluster's Service only, chosen by name by whoever starts it.
   */
  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    const addr = this.server.address() as AddressInfo;
    const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    this.url = `http://${shown}:${addr.port}/`;
    return this.url;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  // Test helper: make a spreadsheet without a request (and without spending quota).
  // `id` fixes the spreadsheet's id (a test cluster names it in its SheetCluster before it starts).
  createSpreadsheet(title = 'Untitled spreadsheet', sheetTitles = ['Sheet1'], id?: string): string {
    if (id !== undefined && !SPREADSHEET_ID.test(id))
      throw new Error(
        `spreadsheet id ${JSON.stringify(id)}: use 10 to 128 of A-Z a-z 0-9 _ - (as Google's ids)`,
      );
    if (id !== undefined && this.books.has(id)) throw new Error(`spreadsheet ${id} already exists`);
    id ??= randomBytes(22).toString('base64url');
    const book: Spreadsheet = { id, title, sheets: [], nextSheetId: 0 };
    for (const t of sheetTitles) this.addSheet(book, { title: t });
    this.books.set(id, book);
    return id;
  }

  // ---- HTTP ----

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const user = this.userOf(req, url);
      const body = await readBody(req, LIMITS.maxBodyBytes);
      const out = this.route(req.method ?? 'GET', url, body, user);
      send(res, 200, out);
    } catch (e) {
      if (e instanceof ApiError) {
        const err: Record<string, unknown> = { code: e.code, message: e.message, status: e.status };
        if (e.details) err.details = e.details;
        send(res, e.code, { error: err });
      } else {
        send(res, 500, { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } });
      }
    }
  }

  private userOf(req: http.IncomingMessage, url: URL): string {
    const auth = req.headers.authorization;
    if (auth?.startsWith('Bearer ') && auth.length > 7) return `token:${auth.slice(7)}`;
    const key = url.searchParams.get('key');
    if (key) return `key:${key}`;
    throw new ApiError(
      401,
      'UNAUTHENTICATED',
      'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    );
  }

  private route(method: string, url: URL, body: unknown, user: string): unknown {
    const p = decodeURIComponent(url.pathname).replace(/^\/+/, '');
    const q = url.searchParams;
    if (!p.startsWith('v4/spreadsheets'))
      throw new ApiError(404, 'NOT_FOUND', 'Requested entity was not found.');
    const rest = p.slice('v4/spreadsheets'.length);
    if (rest === '' && method === 'POST') {
      this.quota.charge(user, 'write');
      return this.create(body);
    }
    const m = /^\/([^/:]+)(.*)$/.exec(rest);
    if (!m) throw new ApiError(404, 'NOT_FOUND', 'Requested entity was not found.');
    const [, id, tail] = m;
    const isRead = method === 'GET';
    this.quota.charge(user, isRead ? 'read' : 'write');
    const book = this.books.get(id);
    if (!book) throw new ApiError(404, 'NOT_FOUND', 'Requested entity was not found.');
    if (tail === '' && method === 'GET') return this.describe(book);
    if (tail === ':batchUpdate' && method === 'POST') return this.batchUpdate(book, body);
    if (tail === '/values:batchGet' && method === 'GET') {
      return {
        spreadsheetId: book.id,
        valueRanges: q.getAll('ranges').map((r) => this.getValues(book, r, q)),
      };
    }
    if (tail === '/values:batchUpdate' && method === 'POST') return this.batchUpdateValues(book, body);
    if (tail === '/values:batchClear' && method === 'POST') {
      const ranges = (obj(body).ranges as unknown[]) ?? [];
      return { spreadsheetId: book.id, clearedRanges: ranges.map((r) => this.clear(book, String(r))) };
    }
    const v = /^\/values\/(.+?)(:append|:clear)?$/.exec(tail);
    if (v) {
      const [, range, verb] = v;
      if (!verb && method === 'GET') return this.getValues(book, range, q);
      if (!verb && method === 'PUT') {
        return this.update(book, range, obj(body), inputOption(q.get('valueInputOption')));
      }
      if (verb === ':append' && method === 'POST') {
        return this.append(
          book,
          range,
          obj(body),
          inputOption(q.get('valueInputOption')),
          q.get('insertDataOption'),
        );
      }
      if (verb === ':clear' && method === 'POST')
        return { spreadsheetId: book.id, clearedRange: this.clear(book, range) };
    }
    throw new ApiError(404, 'NOT_FOUND', 'Requested entity was not found.');
  }

  // ---- spreadsheets ----

  private create(body: unknown): unknown {
    const b = obj(body);
    const title = String((obj(b.properties).title as string | undefined) ?? 'Untitled spreadsheet');
    const sheets = Array.isArray(b.sheets) ? (b.sheets as unknown[]) : [];
    const titles = sheets.map((s) => String(obj(obj(s).properties).title ?? '')).filter((t) => t !== '');
    const id = this.createSpreadsheet(title, titles.length > 0 ? titles : ['Sheet1']);
    return this.describe(this.books.get(id)!);
  }

  private describe(book: Spreadsheet): unknown {
    return {
      spreadsheetId: book.id,
      properties: { title: book.title, locale: 'en_US', autoRecalc: 'ON_CHANGE', timeZone: 'Etc/GMT' },
      sheets: book.sheets.map((s) => ({ properties: sheetProps(s) })),
      spreadsheetUrl: `${this.url}spreadsheets/d/${book.id}/edit`,
    };
  }

  private cellTotal(book: Spreadsheet): number {
    return book.sheets.reduce((n, s) => n + s.rowCount * s.columnCount, 0);
  }

  private checkCells(book: Spreadsheet, prefix = ''): void {
    if (this.cellTotal(book) > this.maxCells) {
      throw invalid(
        `${prefix}This action would increase the number of cells in the workbook above the limit of ${this.maxCells} cells.`,
      );
    }
  }

  private addSheet(book: Spreadsheet, props: Record<string, unknown>, prefix = ''): Sheet {
    const title = String(props.title ?? `Sheet${book.sheets.length + 1}`);
    if (book.sheets.some((s) => s.title.toLowerCase() === title.toLowerCase())) {
      throw invalid(`${prefix}A sheet with the name "${title}" already exists. Please enter another name.`);
    }
    const grid = obj(props.gridProperties);
    const sheetId = props.sheetId !== undefined ? Number(props.sheetId) : book.nextSheetId++;
    if (book.sheets.some((s) => s.sheetId === sheetId)) {
      throw invalid(`${prefix}Sheet with id ${sheetId} already exists.`);
    }
    const sheet: Sheet = {
      sheetId,
      title,
      index: book.sheets.length,
      rowCount: Number(grid.rowCount ?? LIMITS.defaultRows),
      columnCount: Number(grid.columnCount ?? LIMITS.defaultCols),
      cells: [],
    };
    book.sheets.push(sheet);
    this.checkCells(book, prefix);
    return sheet;
  }

  // All requests apply or none: they run on a copy that replaces the book only on success.
  private batchUpdate(book: Spreadsheet, body: unknown): unknown {
    const requests = obj(body).requests;
    if (!Array.isArray(requests) || requests.length === 0)
      throw invalid('Must specify at least one request.');
    const copy: Spreadsheet = {
      ...book,
      sheets: book.sheets.map((s) => ({ ...s, cells: s.cells.map((r) => (r ? [...r] : r)) })),
    };
    const replies: unknown[] = [];
    requests.forEach((r, i) => {
      const req = obj(r);
      const kinds = Object.keys(req);
      if (kinds.length !== 1)
        throw invalid(`Invalid requests[${i}]: exactly one kind of request must be set.`);
      const kind = kinds[0];
      const arg = obj(req[kind]);
      const prefix = `Invalid requests[${i}].${kind}: `;
      if (kind === 'addSheet') {
        const s = this.addSheet(copy, obj(arg.properties), prefix);
        replies.push({ addSheet: { properties: sheetProps(s) } });
      } else if (kind === 'deleteSheet') {
        const idx = copy.sheets.findIndex((s) => s.sheetId === Number(arg.sheetId));
        if (idx < 0) throw invalid(`${prefix}No grid with id: ${arg.sheetId}`);
        if (copy.sheets.length === 1)
          throw invalid(`${prefix}You can't remove all the sheets in a document.`);
        copy.sheets.splice(idx, 1);
        copy.sheets.forEach((s, j) => {
          s.index = j;
        });
        replies.push({});
      } else if (kind === 'appendDimension') {
        const s = copy.sheets.find((x) => x.sheetId === Number(arg.sheetId));
        if (!s) throw invalid(`${prefix}No grid with id: ${arg.sheetId}`);
        const n = Number(arg.length);
        if (!Number.isInteger(n) || n < 1) throw invalid(`${prefix}length must be at least 1`);
        if (arg.dimension === 'ROWS') s.rowCount += n;
        else if (arg.dimension === 'COLUMNS') s.columnCount += n;
        else throw invalid(`${prefix}dimension must be ROWS or COLUMNS`);
        this.checkCells(copy, prefix);
        replies.push({});
      } else if (kind === 'updateSheetProperties') {
        const props = obj(arg.properties);
        const s = copy.sheets.find((x) => x.sheetId === Number(props.sheetId ?? 0));
        if (!s) throw invalid(`${prefix}No grid with id: ${props.sheetId}`);
        const fields = String(arg.fields ?? '*');
        const want = (f: string) =>
          fields === '*' || fields.split(',').some((x) => x.trim() === f || f.startsWith(`${x.trim()}.`));
        if (props.title !== undefined && want('title')) {
          const t = String(props.title);
          if (copy.sheets.some((x) => x !== s && x.title.toLowerCase() === t.toLowerCase())) {
            throw invalid(`${prefix}A sheet with the name "${t}" already exists. Please enter another name.`);
          }
          s.title = t;
        }
        const g = obj(props.gridProperties);
        if (g.rowCount !== undefined && want('gridProperties.rowCount')) s.rowCount = Number(g.rowCount);
        if (g.columnCount !== undefined && want('gridProperties.columnCount'))
          s.columnCount = Number(g.columnCount);
        s.cells = s.cells.slice(0, s.rowCount).map((row) => row?.slice(0, s.columnCount));
        this.checkCells(copy, prefix);
        replies.push({});
      } else {
        throw invalid(
          `Invalid JSON payload received. Unknown name "${kind}" at 'requests[${i}]': Cannot find field.`,
        );
      }
    });
    book.sheets = copy.sheets;
    book.nextSheetId = copy.nextSheetId;
    return { spreadsheetId: book.id, replies };
  }

  // ---- values ----

  private resolve(
    book: Spreadsheet,
    range: string,
  ): { sheet: Sheet; r0: number; c0: number; r1: number; c1: number; explicitEnd: boolean } {
    let a: ReturnType<typeof parseA1>;
    try {
      a = parseA1(range);
    } catch (e) {
      throw invalid((e as Error).message);
    }
    const sheet = a.sheet === undefined ? book.sheets[0] : book.sheets.find((s) => s.title === a.sheet);
    if (!sheet) throw invalid(`Unable to parse range: ${range}`);
    return {
      sheet,
      r0: a.startRow,
      c0: a.startCol,
      r1: a.endRow ?? sheet.rowCount,
      c1: a.endCol ?? sheet.columnCount,
      // A single cell ("Sheet1!A2") is only an anchor: Google writes the whole block from there.
      explicitEnd:
        a.endRow !== undefined &&
        a.endCol !== undefined &&
        range.slice(range.lastIndexOf('!') + 1).includes(':'),
    };
  }

  private getValues(book: Spreadsheet, range: string, q: URLSearchParams): unknown {
    const { sheet, r0, c0, r1: er1, c1: ec1 } = this.resolve(book, range);
    const r1 = Math.min(er1, sheet.rowCount);
    const c1 = Math.min(ec1, sheet.columnCount);
    const render = q.get('valueRenderOption') ?? 'FORMATTED_VALUE';
    const major = q.get('majorDimension') ?? 'ROWS';
    let rows: Value[][] = [];
    for (let r = r0; r < r1; r++) {
      const row: Value[] = [];
      for (let c = c0; c < c1; c++) {
        const cell = sheet.cells[r]?.[c];
        row.push(cell === undefined ? '' : renderCell(cell, render));
      }
      rows.push(row);
    }
    if (major === 'COLUMNS') {
      const cols: Value[][] = [];
      for (let c = 0; c < c1 - c0; c++) cols.push(rows.map((r) => r[c]));
      rows = cols;
    }
    rows = rows.map((r) => {
      let n = r.length;
      while (n > 0 && r[n - 1] === '') n--;
      return r.slice(0, n);
    });
    while (rows.length > 0 && rows[rows.length - 1].length === 0) rows.pop();
    const out: Record<string, unknown> = {
      range: formatA1(sheet.title, r0, c0, Math.max(r1, r0 + 1), Math.max(c1, c0 + 1)),
      majorDimension: major,
    };
    if (rows.length > 0) out.values = rows;
    return out;
  }

  private toCells(
    values: unknown,
    input: 'RAW' | 'USER_ENTERED',
    major: string,
  ): (StoredCell | undefined | null)[][] {
    if (!Array.isArray(values)) return [];
    let rows = values.map((row) => {
      if (!Array.isArray(row)) throw invalid('Invalid values: each row must be a list.');
      return row.map((v) => parseInput(v, input, LIMITS.maxCellChars));
    });
    if (major === 'COLUMNS') {
      const width = Math.max(0, ...rows.map((r) => r.length));
      const t: (StoredCell | undefined | null)[][] = [];
      for (let i = 0; i < width; i++) t.push(rows.map((r) => r[i] ?? null));
      rows = t;
    }
    return rows;
  }

  private writeCells(
    sheet: Sheet,
    r0: number,
    c0: number,
    rows: (StoredCell | undefined | null)[][],
    rangeText: string,
  ): { updatedRange: string; updatedRows: number; updatedColumns: number; updatedCells: number } {
    const height = rows.length;
    const width = Math.max(0, ...rows.map((r) => r.length));
    if (height > 0 && width > 0 && (r0 + height > sheet.rowCount || c0 + width > sheet.columnCount)) {
      const badRow = r0 + height > sheet.rowCount ? sheet.rowCount : r0;
      const badCol = c0 + width > sheet.columnCount ? sheet.columnCount : c0;
      throw invalid(
        `Range (${quoteSheet(sheet.title)}!${colName(badCol)}${badRow + 1}) exceeds grid limits. Max rows: ${sheet.rowCount}, max columns: ${sheet.columnCount}`,
      );
    }
    let cells = 0;
    rows.forEach((row, i) => {
      const r = r0 + i;
      if (!sheet.cells[r]) sheet.cells[r] = [];
      row.forEach((cell, j) => {
        if (cell === null) return; // JSON null = leave the cell as it is
        sheet.cells[r][c0 + j] = cell;
        cells++;
      });
    });
    void rangeText;
    return {
      updatedRange:
        height && width ? formatA1(sheet.title, r0, c0, r0 + height, c0 + width) : quoteSheet(sheet.title),
      updatedRows: height,
      updatedColumns: width,
      updatedCells: cells,
    };
  }

  private update(
    book: Spreadsheet,
    range: string,
    body: Record<string, unknown>,
    input: 'RAW' | 'USER_ENTERED',
  ): unknown {
    const { sheet, r0, c0, r1, c1, explicitEnd } = this.resolve(book, range);
    const rows = this.toCells(body.values, input, String(body.majorDimension ?? 'ROWS'));
    if (explicitEnd && (rows.length > r1 - r0 || rows.some((r) => r.length > c1 - c0))) {
      throw invalid(
        `Requested writing within range [${range}], but tried writing to ${rows.length > r1 - r0 ? `row [${r0 + rows.length}]` : `column [${colName(c0 + Math.max(...rows.map((r) => r.length)) - 1)}]`}`,
      );
    }
    const res = this.writeCells(sheet, r0, c0, rows, range);
    return { spreadsheetId: book.id, ...res };
  }

  private batchUpdateValues(book: Spreadsheet, body: unknown): unknown {
    const b = obj(body);
    const input = inputOption(b.valueInputOption as string | null);
    const data = Array.isArray(b.data) ? (b.data as unknown[]) : [];
    // Validate everything first so a failing range writes nothing.
    const snapshot = book.sheets.map((s) => ({ s, cells: s.cells.map((r) => (r ? [...r] : r)) }));
    try {
      const responses = data.map((d) => {
        const vr = obj(d);
        return this.update(book, String(vr.range ?? ''), vr, input);
      }) as { updatedRows: number; updatedColumns: number; updatedCells: number; updatedRange: string }[];
      const sheetsTouched = new Set(responses.map((r) => r.updatedRange.split('!')[0]));
      return {
        spreadsheetId: book.id,
        totalUpdatedRows: responses.reduce((n, r) => n + r.updatedRows, 0),
        totalUpdatedColumns: Math.max(0, ...responses.map((r) => r.updatedColumns)),
        totalUpdatedCells: responses.reduce((n, r) => n + r.updatedCells, 0),
        totalUpdatedSheets: sheetsTouched.size,
        responses,
      };
    } catch (e) {
      for (const { s, cells } of snapshot) s.cells = cells;
      throw e;
    }
  }

  private append(
    book: Spreadsheet,
    range: string,
    body: Record<string, unknown>,
    input: 'RAW' | 'USER_ENTERED',
    insertOption: string | null,
  ): unknown {
    const { sheet, r0, c0, c1 } = this.resolve(book, range);
    const rows = this.toCells(body.values, input, String(body.majorDimension ?? 'ROWS'));
    // The "table" is the block of rows with data starting at the range; new rows go after its end.
    let last = -1;
    for (let r = r0; r < sheet.rowCount; r++) {
      const row = sheet.cells[r];
      if (row?.slice(c0, c1).some((c) => c !== undefined && c.v !== '')) last = r;
    }
    const at = last < 0 ? r0 : last + 1;
    const need = at + rows.length - sheet.rowCount;
    const before = { rowCount: sheet.rowCount, cells: sheet.cells };
    if (insertOption === 'INSERT_ROWS') {
      sheet.cells = [...sheet.cells.slice(0, at), ...rows.map(() => []), ...sheet.cells.slice(at)];
      sheet.rowCount += rows.length;
    } else if (need > 0) {
      sheet.rowCount += need;
    }
    try {
      this.checkCells(book);
      const width = Math.max(0, ...rows.map((r) => r.length));
      if (c0 + width > sheet.columnCount) {
        throw invalid(
          `Range (${quoteSheet(sheet.title)}!${colName(sheet.columnCount)}${at + 1}) exceeds grid limits. Max rows: ${sheet.rowCount}, max columns: ${sheet.columnCount}`,
        );
      }
      const updates = this.writeCells(sheet, at, c0, rows, range);
      const out: Record<string, unknown> = {
        spreadsheetId: book.id,
        updates: { spreadsheetId: book.id, ...updates },
      };
      if (last >= 0)
        out.tableRange = formatA1(sheet.title, r0, c0, last + 1, Math.min(c1, sheet.columnCount));
      return out;
    } catch (e) {
      sheet.rowCount = before.rowCount;
      sheet.cells = before.cells;
      throw e;
    }
  }

  private clear(book: Spreadsheet, range: string): string {
    const { sheet, r0, c0, r1, c1 } = this.resolve(book, range);
    const rEnd = Math.min(r1, sheet.rowCount);
    const cEnd = Math.min(c1, sheet.columnCount);
    for (let r = r0; r < rEnd; r++) {
      const row = sheet.cells[r];
      if (!row) continue;
      for (let c = c0; c < cEnd && c < row.length; c++) row[c] = undefined;
    }
    return formatA1(sheet.title, r0, c0, rEnd, cEnd);
  }

  // Test helper: read a sheet's raw formula-or-value grid.
  peek(spreadsheetId: string, sheet: string): { value: Value; formula?: string }[][] {
    const s = this.books.get(spreadsheetId)?.sheets.find((x) => x.title === sheet);
    if (!s) return [];
    return s.cells.map((r) =>
      (r ?? []).map((c) => (c ? { value: c.v, ...(c.f ? { formula: c.f } : {}) } : { value: '' })),
    );
  }
}

function sheetProps(s: Sheet): unknown {
  return {
    sheetId: s.sheetId,
    title: s.title,
    index: s.index,
    sheetType: 'GRID',
    gridProperties: { rowCount: s.rowCount, columnCount: s.columnCount },
  };
}
