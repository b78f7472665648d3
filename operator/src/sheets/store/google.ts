// The Google Sheets backend, through the real googleapis client (Sheets API v4).
//
// In memory: the shared model, loaded with ONE values.batchGet of every tab. Reads never call Google.
// Writes are batched: a flush sends at most one spreadsheets.batchUpdate (new tabs, grid growth)
// and one values.batchUpdate holding every changed row of every dirty tab, so a flush costs 1–2
// write requests whatever the number of changes. Flushes are spaced so that writes stay within
// LIMITS.writesPerMinute (below Google's 60 writes/min/user); a 429 or 5xx is retried with
// exponential backoff and full jitter. Only changed rows are sent, and inside them unchanged cells
// are sent as null (Google skips nulls), so a formula a person typed in another cell survives.
// Values go with valueInputOption RAW: a string is never parsed into a formula. A string longer
// than 50,000 characters is refused by the model before it ever reaches Google.
//
// Acknowledgement: durable transactions resolve when Google answered 200 for the flush holding
// them; buffered ones resolve at once and are flushed within LIMITS.flushDelayMs.
//
// External edits: every LIMITS.pollMs the store re-reads all tabs (one read request) and merges
// changes made in the Sheet with the rule of merge.ts (person wins a conflicting cell).

import { google, type sheets_v4 } from 'googleapis';
import { logger } from '../../util/log.ts';
import { StoreBase } from './base.ts';
import { diffTabs, mergeBooks, sameCell } from './merge.ts';
import { Book, Grid, isFormula, type StoredCell } from './model.ts';
import { type Cell, type Durability, StoreError } from './types.ts';

const log = logger('sheets-store-google');

export const LIMITS = {
  maxCellChars: 50_000, // Google Sheets' per-cell limit
  maxCells: 10_000_000, // Google Sheets' per-spreadsheet limit
  writesPerMinute: 50, // Google allows 60 writes/min/user; keep headroom for a person's tools
  flushDelayMs: 2_000, // buffered changes reach Google within this delay (plus quota spacing)
  pollMs: 30_000, // external-edit poll: 2 reads/min, far below the 60 reads/min/user quota
  maxAttempts: 8, // retries of one request on 429/5xx before the flush fails
  backoffBaseMs: 1_000, // first backoff; doubles each attempt (full jitter)
  backoffMaxMs: 32_000, // Google's suggested ceiling for exponential backoff
  growRows: 500, // rows added at a time when a tab outgrows its grid
  scopes: ['https://www.googleapis.com/auth/spreadsheets'], // the one scope the store needs
} as const;

type Auth = NonNullable<sheets_v4.Options['auth']>;

export interface GoogleOptions {
  spreadsheetId: string;
  // An auth client (OAuth2Client, JWT, GoogleAuth) or an API key string.
  auth: Auth;
  rootUrl?: string; // e.g. the emulator's URL
  writesPerMinute?: number;
  flushDelayMs?: number;
  pollMs?: number; // 0 disables polling
  backoffBaseMs?: number;
}

// Credentials JSON (service account, OAuth authorized user, or a ready access token) → an auth client.
export function authFromCredentials(json: string | Record<string, unknown>): Auth {
  const creds = typeof json === 'string' ? (JSON.parse(json) as Record<string, unknown>) : json;
  const type = creds.type;
  if (type === 'access_token') {
    // A token issued elsewhere (e.g. `gcloud auth print-access-token`), or any token for the emulator.
    if (typeof creds.access_token !== 'string' || creds.access_token === '') {
      throw new Error('access_token credentials need a non-empty "access_token"');
    }
    const c = new google.auth.OAuth2();
    c.setCredentials({
      access_token: creds.access_token,
      expiry_date: Number(creds.expiry_date ?? Date.now() + 3_600_000),
    });
    return c as unknown as Auth;
  }
  if (type !== 'service_account' && type !== 'authorized_user') {
    throw new Error(
      `credentials have type ${JSON.stringify(type)}; expected a service-account key ("service_account"), OAuth user credentials ("authorized_user") or {"type":"access_token","access_token":"..."}`,
    );
  }
  const client = google.auth.fromJSON(creds as Parameters<typeof google.auth.fromJSON>[0]);
  (client as { scopes?: string[] }).scopes = [...LIMITS.scopes];
  return client as unknown as Auth;
}

interface SheetInfo {
  sheetId: number;
  rowCount: number;
  columnCount: number;
}

export class GoogleStore extends StoreBase {
  readonly backend = 'google' as const;
  private readonly api: sheets_v4.Sheets;
  private readonly id: string;
  private readonly opts: GoogleOptions;
  private info = new Map<string, SheetInfo>();
  private base = new Book();
  private written = new Map<string, StoredCell[][]>(); // per tab, header + rows as Google holds them
  private dirty = new Set<string>();
  private waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private flushing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  private lastWrite = 0;
  writeRequests = 0;
  readRequests = 0;
  retries = 0;

  private constructor(opts: GoogleOptions) {
    super({ maxCellChars: LIMITS.maxCellChars, maxCells: LIMITS.maxCells });
    this.opts = opts;
    this.id = opts.spreadsheetId;
    this.api = google.sheets({
      version: 'v4',
      auth: opts.auth,
      ...(opts.rootUrl ? { rootUrl: opts.rootUrl } : {}),
      retry: false, // our own backoff (below) knows the quota
    });
  }

  static async open(opts: GoogleOptions): Promise<GoogleStore> {
    const s = new GoogleStore(opts);
    const book = await s.readAll();
    s.book = book;
    s.base = book.snapshot();
    s.rememberWritten(book);
    const pollMs = opts.pollMs ?? LIMITS.pollMs;
    if (pollMs > 0) {
      s.poller = setInterval(
        () => void s.poll().catch((e) => log.warn({ err: String(e) }, 'poll failed')),
        pollMs,
      );
      s.poller.unref();
    }
    return s;
  }

  private rememberWritten(book: Book): void {
    this.written.clear();
    for (const [name, g] of book.grids) this.written.set(name, [g.headers, ...g.rows]);
  }

  // One spreadsheets.get + one values.batchGet.
  private async readAll(): Promise<Book> {
    const meta = await this.call('read', () => this.api.spreadsheets.get({ spreadsheetId: this.id }));
    const sheets = meta.data.sheets ?? [];
    this.info.clear();
    const titles: string[] = [];
    for (const s of sheets) {
      const p = s.properties ?? {};
      const title = p.title ?? '';
      titles.push(title);
      this.info.set(title, {
        sheetId: p.sheetId ?? 0,
        rowCount: p.gridProperties?.rowCount ?? 0,
        columnCount: p.gridProperties?.columnCount ?? 0,
      });
    }
    const grids = new Map<string, Grid>();
    if (titles.length > 0) {
      const res = await this.call('read', () =>
        this.api.spreadsheets.values.batchGet({
          spreadsheetId: this.id,
          ranges: titles.map(quote),
          valueRenderOption: 'UNFORMATTED_VALUE',
          majorDimension: 'ROWS',
        }),
      );
      const ranges = res.data.valueRanges ?? [];
      titles.forEach((title, i) => {
        const values = (ranges[i]?.values ?? []) as unknown[][];
        const headers = (values[0] ?? []).map((v) => (v === null || v === undefined ? '' : String(v).trim()));
        const rows = values.slice(1).map((r) => r.map(fromGoogle));
        grids.set(title, new Grid(title, headers, rows));
      });
    }
    return new Book(grids);
  }

  protected persist(changed: string[], durability: Durability): Promise<void> {
    for (const t of changed) this.dirty.add(t);
    if (durability === 'buffered') {
      this.arm(this.opts.flushDelayMs ?? LIMITS.flushDelayMs);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.arm(0);
    });
  }

  private arm(delay: number): void {
    if (this.flushing || this.closed) return;
    if (this.timer && delay > 0) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.flushNow(), delay);
  }

  async flush(): Promise<void> {
    if (this.dirty.size === 0 && !this.flushing && this.waiters.length === 0) return;
    await new Promise<void>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      if (!this.flushing) {
        if (this.timer) clearTimeout(this.timer);
        this.timer = undefined;
        void this.flushNow();
      }
    });
  }

  private async flushNow(): Promise<void> {
    this.timer = undefined;
    if (this.flushing) return;
    const waiters = this.waiters.splice(0);
    this.flushing = this.flushOnce();
    try {
      await this.flushing;
      for (const w of waiters) w.resolve();
    } catch (e) {
      log.error({ err: String(e) }, 'writing to Google Sheets failed');
      for (const w of waiters) w.reject(e);
    } finally {
      this.flushing = undefined;
    }
    if (this.closed) return;
    if (this.waiters.length > 0) this.arm(0);
    else if (this.dirty.size > 0) this.arm(this.opts.flushDelayMs ?? LIMITS.flushDelayMs);
  }

  private async flushOnce(): Promise<void> {
    if (this.dirty.size === 0) return;
    const tabs = [...this.dirty];
    this.dirty.clear();
    const snapshot = this.book.snapshot();
    try {
      // 1. Structure: new tabs and grid growth, in one batchUpdate.
      const requests: sheets_v4.Schema$Request[] = [];
      for (const t of tabs) {
        const g = snapshot.grids.get(t)!;
        const needRows = g.rows.length + 1;
        const needCols = Math.max(g.headers.length, ...g.rows.map((r) => r.length), 1);
        const info = this.info.get(t);
        if (!info) {
          requests.push({
            addSheet: {
              properties: {
                title: t,
                gridProperties: {
                  rowCount: Math.max(needRows + LIMITS.growRows, 100),
                  columnCount: Math.max(needCols, 26),
                },
              },
            },
          });
          continue;
        }
        if (needRows > info.rowCount) {
          requests.push({
            appendDimension: {
              sheetId: info.sheetId,
              dimension: 'ROWS',
              length: needRows - info.rowCount + LIMITS.growRows,
            },
          });
        }
        if (needCols > info.columnCount) {
          requests.push({
            appendDimension: {
              sheetId: info.sheetId,
              dimension: 'COLUMNS',
              length: needCols - info.columnCount,
            },
          });
        }
      }
      if (requests.length > 0) {
        const res = await this.call('write', () =>
          this.api.spreadsheets.batchUpdate({ spreadsheetId: this.id, requestBody: { requests } }),
        );
        // Learn new sheet ids and grid sizes from the replies.
        (res.data.replies ?? []).forEach((rep, i) => {
          const p = rep.addSheet?.properties;
          if (p?.title) {
            this.info.set(p.title, {
              sheetId: p.sheetId ?? 0,
              rowCount: p.gridProperties?.rowCount ?? 0,
              columnCount: p.gridProperties?.columnCount ?? 0,
            });
            this.written.set(p.title, []);
          }
          const ad = requests[i].appendDimension;
          if (ad) {
            const info = [...this.info.values()].find((x) => x.sheetId === ad.sheetId);
            if (info && ad.dimension === 'ROWS') info.rowCount += ad.length ?? 0;
            if (info && ad.dimension === 'COLUMNS') info.columnCount += ad.length ?? 0;
          }
        });
      }
      // 2. Values: every changed row of every dirty tab, in one values.batchUpdate.
      const data: sheets_v4.Schema$ValueRange[] = [];
      const nextWritten = new Map<string, StoredCell[][]>();
      for (const t of tabs) {
        const g = snapshot.grids.get(t)!;
        const now: StoredCell[][] = [g.headers, ...g.rows];
        const was = this.written.get(t) ?? [];
        data.push(...changedRanges(t, now, was));
        nextWritten.set(t, now);
      }
      if (data.length > 0) {
        await this.call('write', () =>
          this.api.spreadsheets.values.batchUpdate({
            spreadsheetId: this.id,
            requestBody: { valueInputOption: 'RAW', data },
          }),
        );
      }
      for (const [t, rows] of nextWritten) this.written.set(t, rows);
      this.base = snapshot;
    } catch (e) {
      for (const t of tabs) this.dirty.add(t);
      throw e;
    }
  }

  // Run one API call within the write pacing, retrying 429/5xx with exponential backoff + jitter.
  private async call<T>(kind: 'read' | 'write', fn: () => Promise<T>): Promise<T> {
    const base = this.opts.backoffBaseMs ?? LIMITS.backoffBaseMs;
    for (let attempt = 1; ; attempt++) {
      if (kind === 'write') {
        const gap = 60_000 / (this.opts.writesPerMinute ?? LIMITS.writesPerMinute);
        const wait = this.lastWrite + gap - Date.now();
        if (wait > 0) await sleep(wait);
        this.lastWrite = Date.now();
        this.writeRequests++;
      } else {
        this.readRequests++;
      }
      try {
        return await fn();
      } catch (e) {
        const status = statusOf(e);
        const retriable = status === 429 || (status !== undefined && status >= 500);
        if (!retriable || attempt >= LIMITS.maxAttempts) throw toStoreError(e);
        this.retries++;
        const delay = Math.random() * Math.min(LIMITS.backoffMaxMs, base * 2 ** (attempt - 1));
        log.warn(
          { status, attempt, delayMs: Math.round(delay) },
          'Google Sheets asked us to slow down; backing off',
        );
        await sleep(delay);
      }
    }
  }

  // Re-read the sheet and merge what someone else changed there.
  async poll(): Promise<void> {
    if (this.closed || this.flushing) return;
    const theirs = await this.readAll();
    if (this.flushing) return; // our own write raced the read; look again next time
    const changed = diffTabs(this.base, theirs);
    if (changed.length === 0) return;
    const merged = mergeBooks(this.base, this.book, theirs);
    const visible = diffTabs(this.book, merged.book);
    this.rememberWritten(theirs);
    this.base = theirs.snapshot();
    this.book = merged.book;
    for (const t of merged.oursStillPending) this.dirty.add(t);
    this.ver++;
    this.emit({ source: 'external', tabs: visible, version: this.ver });
    if (this.dirty.size > 0) this.arm(this.opts.flushDelayMs ?? LIMITS.flushDelayMs);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.poller) clearInterval(this.poller);
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }
}

// Group consecutive changed rows into A1 ranges. Unchanged cells inside a changed row are sent as
// null (left alone by Google), emptied cells as "".
function changedRanges(tab: string, now: StoredCell[][], was: StoredCell[][]): sheets_v4.Schema$ValueRange[] {
  const out: sheets_v4.Schema$ValueRange[] = [];
  const n = Math.max(now.length, was.length);
  let start = -1;
  let block: (Cell | null)[][] = [];
  const emit = () => {
    if (start < 0) return;
    const width = Math.max(1, ...block.map((r) => r.length));
    out.push({
      range: `${quote(tab)}!A${start + 1}:${colLetters(width)}${start + block.length}`,
      majorDimension: 'ROWS',
      values: block,
    });
    start = -1;
    block = [];
  };
  for (let i = 0; i < n; i++) {
    const a = now[i];
    const b = was[i];
    if (a === b) {
      emit();
      continue;
    }
    const width = Math.max(a?.length ?? 0, b?.length ?? 0);
    const row: (Cell | null)[] = [];
    let any = false;
    for (let c = 0; c < width; c++) {
      const x = a?.[c] ?? null;
      const y = b?.[c] ?? null;
      if (sameCell(x, y)) row.push(null);
      else {
        any = true;
        const v = isFormula(x) ? x.result : x;
        row.push(v === null ? '' : v);
      }
    }
    if (!any) {
      emit();
      continue;
    }
    if (start < 0) start = i;
    block.push(row);
  }
  emit();
  return out;
}

function fromGoogle(v: unknown): StoredCell {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return String(v);
}

function quote(title: string): string {
  return `'${title.replaceAll("'", "''")}'`;
}

function colLetters(n: number): string {
  let s = '';
  while (n > 0) {
    const r = (n - 1) % 26;
    s = String.fromCharCode(65 + r) + s;
    n = Math.floor((n - 1) / 26);
  }
  return s;
}

function statusOf(e: unknown): number | undefined {
  const x = e as { status?: number; code?: number | string; response?: { status?: number } };
  const s = x.response?.status ?? x.status ?? (typeof x.code === 'number' ? x.code : Number(x.code));
  return Number.isFinite(s) ? Number(s) : undefined;
}

function toStoreError(e: unknown): Error {
  const status = statusOf(e);
  const msg = (e as { message?: string }).message ?? String(e);
  return new StoreError(`Google Sheets request failed${status ? ` (HTTP ${status})` : ''}: ${msg}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function openGoogleStore(opts: GoogleOptions): Promise<GoogleStore> {
  return GoogleStore.open(opts);
}
