// Images in cells on every backend: chunk sizes fit the backend's cell limit, round trips are
// byte-identical, layers are deduplicated, and any corruption is refused.

import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupCluster } from '../store/setup.ts';
import { backendFactories, closeEmulators } from '../store/testing.ts';
import type { Store } from '../store/types.ts';
import {
  chunkCharsFor,
  chunkLayer,
  digestOf,
  FILE_MEDIA_TYPE,
  importImage,
  listImages,
  pullImage,
  removeImage,
  WASM_MEDIA_TYPE,
  wasmConfig,
} from './sicf.ts';
import { helloWasm } from './wasm-hello.ts';

let tmp: string;
beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-sicf-'));
});
afterAll(async () => {
  await closeEmulators();
  await fsp.rm(tmp, { recursive: true, force: true });
});

const rowsOf = (s: Store) => ({ images: s.rows('Images'), layers: s.rows('Layers') });

describe('SICF chunking', () => {
  it('picks chunk sizes that fit each cell limit: 30,000 for xlsx (32,767), 49,000 for Google (50,000)', () => {
    expect(chunkCharsFor(32_767)).toBe(30_000);
    expect(chunkCharsFor(50_000)).toBe(49_000);
    expect(chunkCharsFor(1_001)).toBe(1_000);
  });

  it('cuts on 3-byte boundaries: chunks decode alone and also join into the base64 of the whole', () => {
    const bytes = randomBytes(10_001);
    const chunks = chunkLayer(bytes, 400);
    expect(chunks.every((c) => c.length <= 400)).toBe(true);
    expect(chunks.join('')).toBe(bytes.toString('base64'));
    expect(Buffer.concat(chunks.map((c) => Buffer.from(c, 'base64'))).equals(bytes)).toBe(true);
  });
});

describe.each(backendFactories(() => tmp))('SICF on the $name backend', (f) => {
  it('round-trips a multi-chunk file byte-for-byte, deduplicates layers, and lists images', async () => {
    const { store, reopen } = await f.create();
    await setupCluster(store, { samples: false });
    const chunk = chunkCharsFor(store.limits.maxCellChars);
    const big = randomBytes(Math.floor((chunk / 4) * 3 * 2.5)); // 3 chunks
    const r1 = await importImage(store, 'blob:v1', [{ bytes: big, mediaType: FILE_MEDIA_TYPE }], {
      architecture: 'none',
      os: 'none',
      config: {},
      rootfs: { type: 'layers', diff_ids: [digestOf(big)] },
    });
    expect(r1.layers[0]).toMatchObject({ chunks: 3, reused: false });
    const r2 = await importImage(store, 'blob:v2', [{ bytes: big, mediaType: FILE_MEDIA_TYPE }], {
      architecture: 'none',
      os: 'none',
      config: {},
      rootfs: { type: 'layers', diff_ids: [digestOf(big)] },
    });
    expect(r2.layers[0]).toMatchObject({ chunks: 0, reused: true });
    const again = await reopen();
    expect(again.rows('Layers')).toHaveLength(3);
    expect(again.rows('Layers').every((r) => String(r.data).length <= again.limits.maxCellChars)).toBe(true);
    const pulled = pullImage(rowsOf(again), 'sicf:blob:v1');
    expect(pulled.layers[0].bytes.equals(big)).toBe(true);
    expect(listImages(again.rows('Images')).map((i) => [i.name, i.layers, i.size])).toEqual([
      ['blob:v1', 1, big.length],
      ['blob:v2', 1, big.length],
    ]);
    // Removing one image keeps the shared layer; removing the other collects it.
    expect(await removeImage(again, 'blob:v1')).toEqual({ removed: true, layersRemoved: 0 });
    expect(await removeImage(again, 'blob:v2')).toEqual({ removed: true, layersRemoved: 3 });
    await again.close();
    if (again !== store) await store.close();
  });
});

describe('SICF verification', () => {
  async function storeWithHello(): Promise<Store> {
    const [mem] = backendFactories(() => tmp);
    const { store } = await mem.create();
    await setupCluster(store, { samples: false });
    const mod = helloWasm();
    await importImage(
      store,
      'hello:v1',
      [{ bytes: mod, mediaType: WASM_MEDIA_TYPE }],
      wasmConfig(digestOf(mod)),
    );
    return store;
  }

  it('refuses a layer whose bytes do not match its digest', async () => {
    const s = await storeWithHello();
    const row = s.rows('Layers')[0];
    const data = String(row.data);
    await s.transact((tx) =>
      tx.update('Layers', [String(row.digest), 0], {
        data: `${data.slice(0, 8)}${data[8] === 'Q' ? 'R' : 'Q'}${data.slice(9)}`,
      }),
    );
    expect(() => pullImage(rowsOf(s), 'hello:v1')).toThrow(/digest mismatch for layer/);
  });

  it('refuses an image whose config does not match the Images digest (the reference never checks it)', async () => {
    const s = await storeWithHello();
    const cfg = JSON.parse(Buffer.from(String(s.get('Images', 'hello:v1')!.config), 'base64').toString());
    cfg.config.Cmd = ['--evil'];
    await s.transact((tx) =>
      tx.update('Images', 'hello:v1', { config: Buffer.from(JSON.stringify(cfg)).toString('base64') }),
    );
    expect(() => pullImage(rowsOf(s), 'hello:v1')).toThrow(/config digest mismatch/);
  });

  it('refuses a layer whose base64 is broken, and names a missing image', async () => {
    const s = await storeWithHello();
    await s.transact((tx) => {
      const r = tx.rows('Layers')[0];
      tx.update('Layers', [String(r.digest), 0], { data: '***' });
    });
    expect(() => pullImage(rowsOf(s), 'hello:v1')).toThrow(/not valid base64/);
    expect(() => pullImage(rowsOf(s), 'nope:v1')).toThrow(/not in the Images tab/);
  });
});

describe("layers as the reference's tools write them (sicf.py sorts by ordinal, joins, decodes)", () => {
  const bytes = randomBytes(3000);
  const b64 = bytes.toString('base64'); // 4,000 chars
  const d = digestOf(bytes);
  const config = Buffer.from(JSON.stringify(wasmConfig(d)));
  const image = { name: 'ref:v1', digest: digestOf(config), config: config.toString('base64'), layers: d };
  const rows = (chunks: { ordinal: string | number; data: string }[]) => ({
    images: [image],
    layers: chunks.map((c) => ({ digest: d, media_type: 'application/wasm', ...c })),
  });
  const split = (n: number): string[] =>
    Array.from({ length: Math.ceil(b64.length / n) }, (_, i) => b64.slice(i * n, (i + 1) * n));

  it('ordinals from 1, chunks of 1,001 characters, rows in any order', () => {
    const chunks = split(1001).map((data, i) => ({ ordinal: i + 1, data }));
    expect(chunks[0]?.data).toHaveLength(1001);
    const pulled = pullImage(rows(chunks.reverse()), 'sicf:ref:v1');
    expect(Buffer.compare(pulled.layers[0]?.bytes as Buffer, bytes)).toBe(0);
    // ordinals as the sheet returns them: text
    expect(
      pullImage(rows(split(1001).map((data, i) => ({ ordinal: String(i), data }))), 'ref:v1').layers,
    ).toHaveLength(1);
  });

  it('a missing chunk is named; two chunks with one ordinal and a bad ordinal are refused', () => {
    const chunks = split(1000).map((data, i) => ({ ordinal: i + 1, data }));
    expect(() => pullImage(rows(chunks.filter((c) => c.ordinal !== 2)), 'ref:v1')).toThrow(
      /chunk 2 is missing \(ordinals 1,3,4\)/,
    );
    expect(() => pullImage(rows([...chunks, { ordinal: 4, data: 'AAAA' }]), 'ref:v1')).toThrow(
      /two chunks with ordinal 4/,
    );
    expect(() => pullImage(rows([{ ordinal: 'x', data: b64 }]), 'ref:v1')).toThrow(
      /ordinal "x" is not a whole number/,
    );
  });
});
