// Where the Wire tab lives. Two transports, one contract:
//   - StoreTransport: any Sheeternetes store (xlsx, memory; two processes may share one xlsx, each
//     store merging the other's appends). The cursor counts the PEER's frames, not row numbers,
//     because a merge may interleave the two sides' rows differently in each process's view — but
//     never reorders one side's own rows, which is all reassembly needs.
//   - GoogleTransport: the Sheets API directly, as the reference does (one values.append per flush,
//     one values.get per poll, the cursor a row number), with what the reference lacks: 429s are
//     met with exponential backoff (the frames stay queued), reads and writes are paced to a budget
//     per minute, and losing the tab-creation race is success.
import type { sheets_v4 } from 'googleapis';
import type { Store } from '../store/types.ts';
import { type Dir, type Frame, fromRow, peerDir, toRow, WIRE_HEADERS, WIRE_TAB } from './frames.ts';

export const LIMITS = {
  googleReadRows: 100_000, // rows fetched per poll at most (the reference's fixed range end); the cursor moves on
  backoffBaseMs: 1_000, // first wait after a 429 / 5xx
  backoffMaxMs: 32_000, // Google's suggested ceiling
} as const;

export interface WireTransport {
  readonly name: string;
  /** Create the tab and header if missing (the other side may win the race: fine). */
  ensure(): Promise<void>;
  /** Skip everything already in the tab (a restarted side must not replay old opens). */
  skipHistory(): Promise<void>;
  /** Append frames in order, in one write. Throws RetryLater when the backend said "slow down". */
  append(frames: Frame[]): Promise<void>;
  /** The peer direction's frames appended since the last poll, in order. */
  poll(): Promise<Frame[]>;
  close(): Promise<void>;
}

export class RetryLater extends Error {
  override name = 'RetryLater';
  readonly afterMs: number;
  constructor(message: string, afterMs: number) {
    super(message);
    this.afterMs = afterMs;
  }
}

// ---------------------------------------------------------------- store

export class StoreTransport implements WireTransport {
  readonly name: string;
  private readonly store: Store;
  private readonly inbound: Dir;
  private seen = 0; // how many inbound-direction frames were delivered
  private readonly ownsStore: boolean;

  /** ownsStore: close the store with the transport (the CLI opens one store per side). */
  constructor(store: Store, outbound: Dir, ownsStore = false) {
    this.store = store;
    this.ownsStore = ownsStore;
    this.inbound = peerDir(outbound);
    this.name = store.backend;
  }

  async ensure(): Promise<void> {
    if (this.store.tabs().includes(WIRE_TAB)) return;
    await this.store.transact((tx) => tx.ensureTab({ name: WIRE_TAB, headers: WIRE_HEADERS, key: [] }));
  }

  private inboundRows(): Frame[] {
    const out: Frame[] = [];
    if (!this.store.tabs().includes(WIRE_TAB)) return out;
    for (const r of this.store.rows(WIRE_TAB)) {
      const f = fromRow(WIRE_HEADERS.map((h) => r[h]));
      if (f && f.dir === this.inbound) out.push(f);
    }
    return out;
  }

  async skipHistory(): Promise<void> {
    this.seen = this.inboundRows().length;
  }

  async append(frames: Frame[]): Promise<void> {
    if (frames.length === 0) return;
    await this.store.transact((tx) => {
      for (const f of frames) {
        const [conn, kind, dir, service, payload] = toRow(f);
        tx.insert(WIRE_TAB, { conn, kind, dir, service, payload });
      }
    });
  }

  async poll(): Promise<Frame[]> {
    const all = this.inboundRows();
    const fresh = all.slice(this.seen);
    this.seen = all.length;
    return fresh;
  }

  async close(): Promise<void> {
    if (this.ownsStore) await this.store.close();
  }
}

// ---------------------------------------------------------------- google

export interface GoogleWireOptions {
  api: sheets_v4.Sheets;
  spreadsheetId: string;
  outbound: Dir;
  backoffBaseMs?: number;
}

function statusOf(e: unknown): number | undefined {
  const x = e as { code?: unknown; status?: unknown; response?: { status?: unknown } };
  const s = x.response?.status ?? x.status ?? x.code;
  return typeof s === 'number' ? s : undefined;
}

export class GoogleTransport implements WireTransport {
  readonly name = 'google';
  private readonly o: GoogleWireOptions;
  private readonly inbound: Dir;
  private cursor = 1; // last row consumed (row 1 is the header)
  private failures = 0;
  reads = 0;
  writes = 0;
  throttled = 0;

  constructor(o: GoogleWireOptions) {
    this.o = o;
    this.inbound = peerDir(o.outbound);
  }

  /** Runs one API call; a 429/5xx becomes RetryLater with an exponential, jittered delay. */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      const r = await fn();
      this.failures = 0;
      return r;
    } catch (e) {
      const status = statusOf(e);
      if (status === 429 || (status !== undefined && status >= 500)) {
        this.throttled++;
        this.failures++;
        const base = this.o.backoffBaseMs ?? LIMITS.backoffBaseMs;
        const cap = Math.min(LIMITS.backoffMaxMs, base * 2 ** (this.failures - 1));
        throw new RetryLater(`Sheets API answered ${status}`, cap / 2 + (Math.random() * cap) / 2);
      }
      throw e;
    }
  }

  async ensure(): Promise<void> {
    const id = this.o.spreadsheetId;
    try {
      this.writes++;
      await this.call(() =>
        this.o.api.spreadsheets.batchUpdate({
          spreadsheetId: id,
          requestBody: { requests: [{ addSheet: { properties: { title: WIRE_TAB } } }] },
        }),
      );
    } catch (e) {
      // Both sides race to create the tab; the loser is told it already exists, which is success.
      if (!/already exists/i.test(String((e as Error).message))) throw e;
    }
    this.reads++;
    const head = await this.call(() =>
      this.o.api.spreadsheets.values.get({ spreadsheetId: id, range: `${WIRE_TAB}!A1:E1` }),
    );
    if (!head.data.values?.length) {
      this.writes++;
      await this.call(() =>
        this.o.api.spreadsheets.values.update({
          spreadsheetId: id,
          range: `${WIRE_TAB}!A1:E1`,
          valueInputOption: 'RAW',
          requestBody: { values: [[...WIRE_HEADERS]] },
        }),
      );
    }
  }

  async skipHistory(): Promise<void> {
    this.reads++;
    const r = await this.call(() =>
      this.o.api.spreadsheets.values.get({ spreadsheetId: this.o.spreadsheetId, range: `${WIRE_TAB}!A:A` }),
    );
    this.cursor = Math.max(1, r.data.values?.length ?? 1);
  }

  async append(frames: Frame[]): Promise<void> {
    if (frames.length === 0) return;
    this.writes++;
    await this.call(() =>
      this.o.api.spreadsheets.values.append({
        spreadsheetId: this.o.spreadsheetId,
        range: `${WIRE_TAB}!A1`,
        valueInputOption: 'RAW',
        insertDataOption: 'INSERT_ROWS',
        requestBody: { values: frames.map(toRow) },
      }),
    );
  }

  async poll(): Promise<Frame[]> {
    const from = this.cursor + 1;
    this.reads++;
    const r = await this.call(() =>
      this.o.api.spreadsheets.values.get({
        spreadsheetId: this.o.spreadsheetId,
        range: `${WIRE_TAB}!A${from}:E${from + LIMITS.googleReadRows - 1}`,
      }),
    );
    const rows = (r.data.values ?? []) as unknown[][];
    this.cursor += rows.length;
    const out: Frame[] = [];
    for (const row of rows) {
      const f = fromRow(row);
      if (f && f.dir === this.inbound) out.push(f);
    }
    return out;
  }

  async close(): Promise<void> {}
}
