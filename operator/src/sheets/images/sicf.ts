// SICF: images in cells (spec §9). An image is one Images row (name, digest = sha256 of its config,
// config = base64 of the config JSON, layers = comma-joined layer digests, created, size) and, per
// layer, ordered Layers rows (digest, ordinal, media_type, data = base64 of one chunk).
//
// Chunks are cut on 3-byte boundaries so that every chunk is standalone base64 AND the chunks'
// concatenation is the base64 of the whole layer: a reader that decodes chunk by chunk and one
// that joins then decodes (the reference tools) get the same bytes. A chunk's length fits the
// store's cell limit (xlsx 32,767 → 30,000 like the reference `sheetbuild`; Google 50,000 → 49,000
// as the SICF spec recommends).
//
// Pulling verifies everything the reference leaves out: each layer's sha256 (a mismatch aborts),
// contiguous ordinals, clean base64, and the config digest of the Images row.

import { createHash } from 'node:crypto';
import type { Row, Store, Tx } from '../store/types.ts';

export const LIMITS = {
  chunkCharsCap: 49_000, // SICF: "SHOULD be capped near 49,000" base64 chars
  xlsxChunkChars: 30_000, // the reference sheetbuild's SICF_MAX_CELL, safe under Excel's 32,767
  maxImageBytes: 50 * 1024 * 1024, // SheetHub's push limit; larger images belong in OCI mode
  maxChunks: 5_000, // rows one image may add to the Layers tab (~180 MB at 36 KB/chunk caps it anyway)
} as const;

export const WASM_MEDIA_TYPE = 'application/wasm';
export const FILE_MEDIA_TYPE = 'application/octet-stream';
export const TAR_MEDIA_TYPE = 'application/vnd.oci.image.layer.v1.tar';

export class ImageError extends Error {
  override name = 'ImageError';
}

export function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

// Largest base64 chunk for a store: a multiple of 4 within both the cell limit and the SICF cap.
export function chunkCharsFor(maxCellChars: number): number {
  const cap = maxCellChars <= 32_767 ? LIMITS.xlsxChunkChars : LIMITS.chunkCharsCap;
  const n = Math.min(cap, maxCellChars);
  return n - (n % 4);
}

export function chunkLayer(bytes: Uint8Array, chunkChars: number): string[] {
  if (chunkChars < 4 || chunkChars % 4 !== 0)
    throw new ImageError(`chunk size ${chunkChars} must be a multiple of 4 (base64 quanta)`);
  const step = (chunkChars / 4) * 3;
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += step)
    out.push(Buffer.from(bytes.subarray(i, i + step)).toString('base64'));
  if (out.length === 0) out.push('');
  return out;
}

export interface ImageConfig {
  architecture: string;
  os: string;
  config: { Entrypoint?: string[]; Cmd?: string[]; Env?: string[] };
  rootfs: { type: 'layers'; diff_ids: string[] };
}

export interface LayerInput {
  bytes: Uint8Array;
  mediaType: string;
}

export interface ImportResult {
  name: string;
  digest: string;
  layers: { digest: string; chunks: number; reused: boolean; bytes: number }[];
  size: number;
}

export function wasmConfig(layerDigest: string, args: string[] = []): ImageConfig {
  return {
    architecture: 'wasm',
    os: 'wasip1',
    config: { Entrypoint: ['module.wasm'], Cmd: args, Env: [] },
    rootfs: { type: 'layers', diff_ids: [layerDigest] },
  };
}

export function isWasm(bytes: Uint8Array): boolean {
  return bytes.length >= 8 && bytes[0] === 0 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d;
}

// Write an image into a store in ONE durable transaction: either all its rows land or none.
// A layer whose digest is already stored is not written again (content-addressed dedup).
export async function importImage(
  store: Store,
  name: string,
  layers: LayerInput[],
  config: ImageConfig,
  now: Date = new Date(),
): Promise<ImportResult> {
  const { value } = await store.transact((tx) =>
    importImageTx(tx, store.limits.maxCellChars, name, layers, config, now),
  );
  return value;
}

// The same, inside a caller's transaction (setup writes the sample image with the samples).
export function importImageTx(
  tx: Tx,
  maxCellChars: number,
  name: string,
  layers: LayerInput[],
  config: ImageConfig,
  now: Date = new Date(),
): ImportResult {
  if (!/^[A-Za-z0-9][A-Za-z0-9._/-]*(:[A-Za-z0-9._-]+)?$/.test(name)) {
    throw new ImageError(
      `image name ${JSON.stringify(name)} is not valid; use repo[:tag], e.g. hello-wasm:v1`,
    );
  }
  const total = layers.reduce((n, l) => n + l.bytes.length, 0);
  if (total > LIMITS.maxImageBytes) {
    throw new ImageError(
      `image ${name} is ${total} bytes; images in cells are limited to ${LIMITS.maxImageBytes} (use an OCI registry image)`,
    );
  }
  const chunkChars = chunkCharsFor(maxCellChars);
  const prepared = layers.map((l) => ({ ...l, digest: digestOf(l.bytes) }));
  const configBytes = Buffer.from(JSON.stringify(config), 'utf8');
  const configB64 = configBytes.toString('base64');
  if (configB64.length > maxCellChars)
    throw new ImageError(`image ${name}: its config does not fit one cell`);
  const digest = digestOf(configBytes);
  const existing = new Set(tx.rows('Layers').map((r) => String(r.digest)));
  const report: ImportResult['layers'] = [];
  let chunksAdded = 0;
  for (const l of prepared) {
    if (existing.has(l.digest)) {
      report.push({ digest: l.digest, chunks: 0, reused: true, bytes: l.bytes.length });
      continue;
    }
    const chunks = chunkLayer(l.bytes, chunkChars);
    chunksAdded += chunks.length;
    if (chunksAdded > LIMITS.maxChunks)
      throw new ImageError(`image ${name} needs more than ${LIMITS.maxChunks} chunks`);
    for (const [ordinal, data] of chunks.entries()) {
      tx.insert('Layers', { digest: l.digest, ordinal, media_type: l.mediaType, data });
    }
    existing.add(l.digest);
    report.push({ digest: l.digest, chunks: chunks.length, reused: false, bytes: l.bytes.length });
  }
  tx.upsert('Images', {
    name,
    digest,
    config: configB64,
    layers: prepared.map((l) => l.digest).join(','),
    created: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    size: total,
  });
  return { name, digest, layers: report, size: total };
}

export interface PulledImage {
  name: string;
  digest: string;
  config: ImageConfig;
  layers: { digest: string; mediaType: string; bytes: Buffer }[];
}

export interface ImageRows {
  images: Row[];
  layers: Row[];
}

// Reassemble and verify an image from Images/Layers rows (from a store or an apiserver GET).
export function pullImage(rows: ImageRows, ref: string): PulledImage {
  const name = ref.startsWith('sicf:') ? ref.slice(5) : ref;
  const img = rows.images.find((r) => r.name === name);
  if (!img)
    throw new ImageError(`image ${name} is not in the Images tab (import it: retrokube sheets image import)`);
  const configB64 = String(img.config ?? '');
  const configBytes = decodeB64(configB64, `config of ${name}`);
  const digest = String(img.digest ?? '');
  if (digestOf(configBytes) !== digest) {
    throw new ImageError(
      `image ${name}: config digest mismatch (row says ${digest}, content is ${digestOf(configBytes)}); the store is corrupt`,
    );
  }
  let config: ImageConfig;
  try {
    config = JSON.parse(configBytes.toString('utf8')) as ImageConfig;
  } catch {
    throw new ImageError(`image ${name}: its config is not JSON`);
  }
  const byDigest = new Map<string, Row[]>();
  for (const r of rows.layers) {
    const d = String(r.digest ?? '');
    let list = byDigest.get(d);
    if (!list) {
      list = [];
      byDigest.set(d, list);
    }
    list.push(r);
  }
  const layerDigests = String(img.layers ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const layers = layerDigests.map((d) => {
    // As the reference's sicf.py reads a layer: its chunks sorted by ordinal, their base64 joined,
    // then decoded once. So ordinals may start at 1 and a chunk may have any length (1,001 chars);
    // a missing chunk shows as a digest mismatch, named below.
    const chunks = (byDigest.get(d) ?? []).slice().sort((a, b) => Number(a.ordinal) - Number(b.ordinal));
    if (chunks.length === 0) throw new ImageError(`image ${name}: layer ${d} has no rows in the Layers tab`);
    const ordinals = chunks.map((c) => Number(c.ordinal));
    const bad = chunks.find(
      (c, i) => !Number.isInteger(ordinals[i]) || String(c.ordinal ?? '').trim() === '',
    );
    if (bad)
      throw new ImageError(
        `image ${name}: layer ${d} has a chunk whose ordinal "${bad.ordinal}" is not a whole number`,
      );
    const twice = ordinals.find((o, i) => i > 0 && o === ordinals[i - 1]);
    if (twice !== undefined)
      throw new ImageError(`image ${name}: layer ${d} has two chunks with ordinal ${twice}`);
    const gap = ordinals.findIndex((o, i) => i > 0 && o !== (ordinals[i - 1] as number) + 1);
    const joined = chunks.map((c) => String(c.data ?? '').trim()).join('');
    const bytes = decodeB64(joined, `layer ${d} (its ${chunks.length} chunk(s) joined in ordinal order)`);
    const got = digestOf(bytes);
    if (got !== d)
      throw new ImageError(
        `image ${name}: digest mismatch for layer ${d} (content is ${got})${gap > 0 ? `; chunk ${(ordinals[gap - 1] as number) + 1} is missing (ordinals ${ordinals.join(',')})` : ''}; refusing to run it`,
      );
    return { digest: d, mediaType: String(chunks[0].media_type ?? ''), bytes };
  });
  return { name, digest, config, layers };
}

function decodeB64(s: string, what: string): Buffer {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s))
    throw new ImageError(`${what} is not valid base64`);
  return Buffer.from(s, 'base64');
}

export interface ImageSummary {
  name: string;
  digest: string;
  layers: number;
  size: number;
  created: string;
}

export function listImages(images: Row[]): ImageSummary[] {
  return images.map((r) => ({
    name: String(r.name ?? ''),
    digest: String(r.digest ?? ''),
    layers: String(r.layers ?? '')
      .split(',')
      .filter((s) => s.trim()).length,
    size: Number(r.size ?? 0),
    created: String(r.created ?? ''),
  }));
}

// Delete an image and every layer no remaining image references (garbage collection).
export async function removeImage(
  store: Store,
  name: string,
): Promise<{ removed: boolean; layersRemoved: number }> {
  const { value } = await store.transact((tx) => {
    if (!tx.delete('Images', name)) return { removed: false, layersRemoved: 0 };
    const used = new Set<string>();
    for (const r of tx.rows('Images')) for (const d of String(r.layers ?? '').split(',')) used.add(d.trim());
    const layersRemoved = tx.deleteWhere('Layers', (r) => !used.has(String(r.digest)));
    return { removed: true, layersRemoved };
  });
  return value;
}
