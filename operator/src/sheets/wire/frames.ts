// The Wire tab contract (spec §8): header `conn | kind | dir | service | payload`, one frame per
// row, append-only; the row order is the sequence. Pure encoding and decoding, no I/O.

export const WIRE_TAB = 'Wire';
export const WIRE_HEADERS = ['conn', 'kind', 'dir', 'service', 'payload'] as const;

export const LIMITS = {
  maxPayloadChars: 30_000, // base64 per frame: below Excel's 32,767 and Google's 50,000 chars per cell
  maxPayloadBytes: 22_500, // 30,000 base64 chars carry exactly this many bytes (no padding mid-stream)
} as const;

export type Kind = 'open' | 'data' | 'close';
export type Dir = 'a2b' | 'b2a';

export interface Frame {
  conn: string; // 12 hex chars minted by the expose side per TCP connection
  kind: Kind;
  dir: Dir;
  service: string; // set on open frames only
  payload: string; // standard base64; empty for open and close
}

export const peerDir = (d: Dir): Dir => (d === 'a2b' ? 'b2a' : 'a2b');

/** A new connection id: 12 hex chars from a random UUID, as the reference mints them. */
export function newConnId(): string {
  return crypto.randomUUID().replace(/-/g, '').slice(0, 12);
}

/** Bytes → data frames, each payload at most LIMITS.maxPayloadChars of base64. */
export function dataFrames(conn: string, dir: Dir, bytes: Uint8Array): Frame[] {
  const out: Frame[] = [];
  for (let at = 0; at < bytes.length; at += LIMITS.maxPayloadBytes) {
    const chunk = bytes.subarray(at, Math.min(bytes.length, at + LIMITS.maxPayloadBytes));
    out.push({ conn, kind: 'data', dir, service: '', payload: Buffer.from(chunk).toString('base64') });
  }
  return out;
}

export function toRow(f: Frame): [string, string, string, string, string] {
  return [f.conn, f.kind, f.dir, f.service, f.payload];
}

/** A sheet row (short rows padded) → a frame, or undefined for rows that are not frames. */
export function fromRow(cells: readonly unknown[]): Frame | undefined {
  const [conn, kind, dir, service, payload] = [0, 1, 2, 3, 4].map((i) => {
    const v = cells[i];
    return v === null || v === undefined ? '' : String(v);
  });
  if (!/^[0-9a-f]{1,32}$/i.test(conn)) return undefined;
  if (kind !== 'open' && kind !== 'data' && kind !== 'close') return undefined;
  if (dir !== 'a2b' && dir !== 'b2a') return undefined;
  return { conn, kind, dir, service, payload };
}

export function payloadBytes(f: Frame): Buffer {
  return Buffer.from(f.payload, 'base64');
}
