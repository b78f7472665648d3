import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FORMAT, MAX_FILE_BYTES } from './format.ts';
import { BASE_IMAGE_FILES, baseImageCopy } from './test-support.ts';
import { OberonVolume } from './volume.ts';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

function bytes(n: number, seed: number): Buffer {
  const b = Buffer.alloc(n);
  let x = seed * 2654435761 + 1;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

describe('Oberon file system on the base image', () => {
  it('lists exactly the 136 files of the spec with their sizes (797,974 bytes) and reads every one', async () => {
    const vol = await OberonVolume.open(await baseImageCopy());
    expect(vol.kind).toBe('filesystem');
    const files = vol.list();
    expect(files.map((f) => f.name)).toEqual([...BASE_IMAGE_FILES.keys()].sort());
    expect(new Map(files.map((f) => [f.name, f.size]))).toEqual(BASE_IMAGE_FILES);
    expect(files.reduce((n, f) => n + f.size, 0)).toBe(797_974);
    let total = 0;
    for (const f of files) {
      const data = vol.read(f.name);
      expect(data.length).toBe(f.size);
      total += data.length;
    }
    expect(total).toBe(797_974);
    // texts are plain ASCII with CR line ends; object files start with their module name
    const tool = vol.read('System.Tool').toString('latin1');
    expect(tool).toContain('ORP.Compile @');
    expect(tool).toContain('\r');
    expect(vol.read('Blink.Mod').toString('latin1')).toMatch(/^MODULE Blink;/);
    expect(vol.check()).toEqual([]);
  });

  it('round-trips put, get and rm, and saving leaves untouched files byte-identical', async () => {
    const path = await baseImageCopy();
    const before = await OberonVolume.open(path);
    const vol = await OberonVolume.open(path);
    const small = Buffer.from('MODULE Hello;\rEND Hello.\r', 'latin1');
    const exact = bytes(FORMAT.sectorSize - FORMAT.headerSize, 1); // ends exactly at a sector boundary
    const big = bytes(200_000, 2); // needs an index (extension) sector
    vol.write('Hello.Mod', small);
    vol.write('Exact.Bin', exact);
    vol.write('Big.Bin', big);
    vol.write('Empty.Txt', Buffer.alloc(0));
    await vol.save(path);

    const again = await OberonVolume.open(path);
    expect(again.read('Hello.Mod')).toEqual(small);
    expect(sha(again.read('Exact.Bin'))).toBe(sha(exact));
    expect(sha(again.read('Big.Bin'))).toBe(sha(big));
    expect(again.read('Empty.Txt').length).toBe(0);
    for (const f of before.list()) expect(sha(again.read(f.name))).toBe(sha(before.read(f.name)));
    expect(again.check()).toEqual([]);
    expect(again.list()).toHaveLength(140);

    // replacing keeps one entry and frees the old sectors
    const used = again.usedSectors();
    again.write('Big.Bin', Buffer.from('short', 'latin1'));
    expect(again.read('Big.Bin').toString()).toBe('short');
    expect(again.usedSectors()).toBeLessThan(used - 190);

    expect(again.remove('Hello.Mod')).toBe(true);
    expect(again.remove('Hello.Mod')).toBe(false);
    expect(again.exists('Hello.Mod')).toBe(false);
    expect(() => again.read('Hello.Mod')).toThrow(/no file Hello.Mod/);
    expect(again.check()).toEqual([]);
  });

  it('keeps the file header fields as Files writes them (bleng 1024 at a sector boundary, ext for long files)', async () => {
    const vol = await OberonVolume.open(await baseImageCopy());
    vol.write('Exact.Bin', bytes(672, 3));
    const h1 = vol.getSector(vol.lookup('Exact.Bin'));
    expect(h1.readUInt32LE(0)).toBe(FORMAT.headerMark);
    expect([h1.readInt32LE(36), h1.readInt32LE(40)]).toEqual([0, 1024]);
    vol.write('Long.Bin', bytes(64 * 1024, 4));
    const h2 = vol.getSector(vol.lookup('Long.Bin'));
    const aleng = h2.readInt32LE(36);
    expect(aleng).toBe(64);
    expect(h2.readInt32LE(48)).not.toBe(0); // ext[0] holds the index of sectors 64..
    expect(h2.readInt32LE(52)).toBe(0);
    expect(h2.subarray(4, 12).toString('latin1')).toBe('Long.Bin');
  });

  it('rejects names Oberon would reject and files larger than the header can describe', async () => {
    const vol = await OberonVolume.open(await baseImageCopy());
    expect(() => vol.write('1abc', Buffer.alloc(1))).toThrow(/start with a letter/);
    expect(() => vol.write('a-b', Buffer.alloc(1))).toThrow(/letters, digits and '.'/);
    expect(() => vol.write('A'.repeat(32), Buffer.alloc(1))).toThrow(/longer than 31/);
    vol.write('A'.repeat(31), Buffer.alloc(1));
    expect(() => vol.write('Huge', Buffer.alloc(MAX_FILE_BYTES + 1))).toThrow(/at most/);
  });

  it('splits directory pages as inserts pile up, and every file stays findable; deleting them all merges back', async () => {
    const path = await baseImageCopy();
    const vol = await OberonVolume.open(path);
    const names: string[] = [];
    for (let i = 0; i < 700; i++) names.push(`F${String((i * 7919) % 1000).padStart(4, '0')}.Txt`);
    for (const [i, n] of names.entries()) vol.write(n, Buffer.from(`file ${i}`));
    expect(vol.check()).toEqual([]);
    const root = vol.getSector(FORMAT.dirRootAdr);
    expect(root.readInt32LE(8)).not.toBe(0); // the root is an inner page
    await vol.save(path);
    const again = await OberonVolume.open(path);
    for (const [i, n] of names.entries()) expect(again.read(n).toString()).toBe(`file ${i}`);
    expect(again.list()).toHaveLength(136 + 700);
    // a three-level tree: the root's first child is itself an inner page
    const firstChild = again.getSector(root.readInt32LE(8));
    expect(firstChild.readInt32LE(8)).not.toBe(0);
    for (const n of names) expect(again.remove(n)).toBe(true);
    expect(again.check()).toEqual([]);
    expect(again.list().map((f) => f.name)).toEqual([...BASE_IMAGE_FILES.keys()].sort());
  });

  it('grows the image with zeros and leaves files readable; refuses to go past 64 MiB', async () => {
    const path = await baseImageCopy();
    const vol = await OberonVolume.open(path);
    vol.grow(8 * 1024 * 1024);
    await vol.save(path);
    expect((await stat(path)).size).toBe(8 * 1024 * 1024);
    const again = await OberonVolume.open(path);
    expect(again.list()).toHaveLength(136);
    expect(() => again.grow(100 * 1024 * 1024)).toThrow(/64 MiB/);
    expect(() => again.grow(1000)).toThrow(/1 KiB/);
  });

  it('works on a whole-card image, where the file system starts at SD block 0x80000 (256 MiB)', async () => {
    const fsImage = await readFile(await baseImageCopy());
    const path = join(await mkdtemp(join(tmpdir(), 'rk-card-')), 'card.img');
    const fh = await open(path, 'w');
    await fh.write(fsImage, 0, fsImage.length, 0x10000000 + 1024); // sector 1 (the root) and on; sparse before
    await fh.close();
    const vol = await OberonVolume.open(path);
    expect(vol.kind).toBe('card');
    expect(vol.list()).toHaveLength(136);
    vol.write('Card.Txt', Buffer.from('on a card'));
    await vol.save(path);
    const again = await OberonVolume.open(path);
    expect(again.read('Card.Txt').toString()).toBe('on a card');
    expect(again.read('System.Tool')).toEqual(OberonVolume.fromBuffer(fsImage).read('System.Tool'));
    expect(again.check()).toEqual([]);
  });

  it('reports a directory whose pages point back into the tree instead of hanging', async () => {
    const image = await readFile(await baseImageCopy());
    const leaf = image.readInt32LE(8); // the root's first child page
    image.writeInt32LE(FORMAT.dirRootAdr, (leaf / 29 - 1) * 1024 + 8); // that leaf's p0 → the root
    const vol = OberonVolume.fromBuffer(image);
    expect(() => vol.list()).toThrow(/corrupt directory/);
    expect(() => vol.exists('Zzz')).not.toThrow(); // search of names right of the loop still works
    expect(() => vol.write('Aaa', Buffer.from('x'))).toThrow(/corrupt directory/);
    expect(vol.check().join('\n')).toMatch(/reached twice/);
  });

  it('refuses a file that is not an Oberon disk', () => {
    expect(() => OberonVolume.fromBuffer(Buffer.alloc(4096))).toThrow(/not an Oberon disk image/);
  });

  it('random put/rm sequences keep the directory sorted, balanced and consistent', async () => {
    const image = await readFile(await baseImageCopy());
    const nameArb = fc.stringMatching(/^[A-D][a-c0-2.]{0,2}$/);
    const opArb = fc.oneof(
      fc.record({
        kind: fc.constant('put' as const),
        name: nameArb,
        size: fc.integer({ min: 0, max: 3000 }),
      }),
      fc.record({ kind: fc.constant('rm' as const), name: nameArb, size: fc.constant(0) }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 300 }), (ops) => {
        const vol = OberonVolume.fromBuffer(image);
        const model = new Map(vol.list().map((f) => [f.name, f.size]));
        for (const [i, op] of ops.entries()) {
          if (op.kind === 'put') {
            vol.write(op.name, bytes(op.size, i));
            model.set(op.name, op.size);
          } else {
            expect(vol.remove(op.name)).toBe(model.delete(op.name));
          }
        }
        expect(vol.check()).toEqual([]);
        const listed = vol.list();
        expect(listed.map((f) => f.name)).toEqual([...model.keys()].sort());
        for (const f of listed) expect(f.size).toBe(model.get(f.name));
      }),
      { numRuns: 40 },
    );
  });
});
