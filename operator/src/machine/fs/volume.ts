// An Oberon disk image (.dsk) opened on the host: list, read, write, delete files and grow the
// image, keeping the directory and file headers exactly as Oberon's FileDir/Files would.
// Oberon keeps no allocation map on disk (Kernel/FileDir rebuild it at every boot by walking the
// directory), so a sector is free here when nothing in the directory reaches it.
import { open, readFile } from 'node:fs/promises';
import * as dir from './directory.ts';
import {
  type DirPage,
  decodeDirPage,
  decodeHeader,
  encodeDirPage,
  encodeHeader,
  type FileHeader,
  FORMAT,
  fileLength,
  fileNameProblem,
  indexSectorCount,
  isDirPage,
  isHeader,
  lengthFields,
  MAX_FILE_BYTES,
} from './format.ts';

/** Limits of the host-side tool. */
export const LIMITS = {
  maxSectors: FORMAT.mapSize, // Kernel's sector map covers 64 MiB; sectors past it are never used
  cardBase: FORMAT.cardFsBlock * 512, // byte offset of sector 0 in a whole-card image (disk.c rule)
} as const;

export interface FileInfo {
  name: string;
  size: number;
  date: number;
  adr: number; // DiskAdr of the header
}

export interface DirectoryShape {
  names: string[];
  children: DirectoryShape[];
}

export class DiskFormatError extends Error {
  override name = 'DiskFormatError';
}

export type ImageKind = 'filesystem' | 'card';

const SS = FORMAT.sectorSize;

export class OberonVolume {
  readonly kind: ImageKind;
  private bytes: Buffer; // the image bytes from `regionStart` on
  private readonly regionStart: number; // file offset of bytes[0]
  private readonly base: number; // file offset of sector 0 (may be negative: sector 0 is not stored)
  private readonly dirty = new Set<number>();
  private used: Uint8Array | undefined; // allocation map, rebuilt lazily
  private minLength: number; // the image is at least this long in bytes (file offsets)

  private constructor(kind: ImageKind, bytes: Buffer, regionStart: number) {
    this.kind = kind;
    this.bytes = bytes;
    this.regionStart = regionStart;
    this.base = kind === 'filesystem' ? -SS : LIMITS.cardBase;
    this.minLength = regionStart + bytes.length;
  }

  /** Opens an image held in memory (the buffer is copied). */
  static fromBuffer(image: Buffer): OberonVolume {
    if (image.length >= 4 && image.readUInt32LE(0) === FORMAT.dirMark) {
      return new OberonVolume('filesystem', Buffer.from(image), 0);
    }
    const root = LIMITS.cardBase + SS;
    if (image.length >= root + 4 && image.readUInt32LE(root) === FORMAT.dirMark) {
      return new OberonVolume('card', Buffer.from(image.subarray(LIMITS.cardBase)), LIMITS.cardBase);
    }
    throw new DiskFormatError(
      'not an Oberon disk image: no directory mark 0x9B1EA38D at offset 0 (file-system image) or at 256 MiB + 1 KiB (whole-card image)',
    );
  }

  static async open(path: string): Promise<OberonVolume> {
    const fh = await open(path, 'r');
    try {
      const { size } = await fh.stat();
      const head = Buffer.alloc(4);
      await fh.read(head, 0, 4, 0);
      if (size >= 4 && head.readUInt32LE(0) === FORMAT.dirMark) {
        return new OberonVolume('filesystem', await readFile(path), 0);
      }
      if (size > LIMITS.cardBase + SS) {
        const region = Buffer.alloc(Math.min(size - LIMITS.cardBase, LIMITS.maxSectors * SS));
        await fh.read(region, 0, region.length, LIMITS.cardBase);
        if (region.readUInt32LE(SS) === FORMAT.dirMark)
          return new OberonVolume('card', region, LIMITS.cardBase);
      }
    } finally {
      await fh.close();
    }
    throw new DiskFormatError(
      `${path} is not an Oberon disk image: no directory mark 0x9B1EA38D at offset 0 (file-system image) or at 256 MiB + 1 KiB (whole-card image)`,
    );
  }

  /** Writes the changed sectors back into the file (in place) and grows it to the grown size. */
  async save(path: string): Promise<void> {
    const fh = await open(path, 'r+');
    try {
      for (const k of [...this.dirty].sort((x, y) => x - y)) {
        const off = this.sectorOffset(k);
        await fh.write(this.bytes, off, SS, this.regionStart + off);
      }
      const { size } = await fh.stat();
      if (size < this.minLength) await fh.truncate(this.minLength);
      this.dirty.clear();
    } finally {
      await fh.close();
    }
  }

  /** The whole image region as bytes (for a file-system image: the complete .dsk). */
  toBuffer(): Buffer {
    const out = Buffer.alloc(this.minLength - this.regionStart);
    this.bytes.copy(out, 0, 0, Math.min(this.bytes.length, out.length));
    return out;
  }

  /** Image length in bytes (file offsets). */
  get length(): number {
    return this.minLength;
  }

  /** Grows the image to `bytes` (a multiple of 1 KiB); never shrinks it. */
  grow(bytes: number): void {
    if (!Number.isInteger(bytes) || bytes % SS !== 0) {
      throw new RangeError(`disk size ${bytes} is not a whole number of 1 KiB sectors`);
    }
    const max = this.base + LIMITS.maxSectors * SS;
    if (bytes > max) {
      throw new RangeError(`disk size ${bytes} exceeds ${max} bytes, the 64 MiB Oberon's sector map covers`);
    }
    if (bytes <= this.minLength) return;
    this.ensureRegion(bytes - this.regionStart);
    this.minLength = bytes;
  }

  // ---- sectors -------------------------------------------------------------------------

  private sectorOffset(k: number): number {
    return this.base + k * SS - this.regionStart;
  }

  private ensureRegion(len: number): void {
    if (len <= this.bytes.length) return;
    const grown = Buffer.alloc(Math.max(len, Math.min(this.bytes.length * 2, LIMITS.maxSectors * SS)));
    this.bytes.copy(grown);
    this.bytes = grown;
  }

  private sectorOf(adr: number): number {
    if (adr <= 0 || adr % FORMAT.adrFactor !== 0) {
      throw new DiskFormatError(`corrupt disk address ${adr}: not a positive multiple of 29`);
    }
    const k = adr / FORMAT.adrFactor;
    if (k >= LIMITS.maxSectors)
      throw new DiskFormatError(`corrupt disk address ${adr}: sector ${k} is past 64 MiB`);
    return k;
  }

  /** A copy of the sector at DiskAdr `adr` (zeros past the end of the image, as the SD card reads). */
  getSector(adr: number): Buffer {
    const k = this.sectorOf(adr);
    const off = this.sectorOffset(k);
    const out = Buffer.alloc(SS);
    if (off >= 0 && off < this.bytes.length)
      this.bytes.copy(out, 0, off, Math.min(off + SS, this.bytes.length));
    return out;
  }

  putSector(adr: number, data: Buffer): void {
    const k = this.sectorOf(adr);
    const off = this.sectorOffset(k);
    if (off < 0) throw new DiskFormatError(`sector ${k} is not stored in this image`);
    this.ensureRegion(off + SS);
    data.copy(this.bytes, off, 0, SS);
    if (off + SS + this.regionStart > this.minLength) this.minLength = off + SS + this.regionStart;
    this.dirty.add(k);
  }

  // ---- allocation ----------------------------------------------------------------------

  private map(): Uint8Array {
    if (!this.used) this.used = this.scanUsed().used;
    return this.used;
  }

  /** Marks what Oberon's boot marks: the boot area, directory pages, headers, data and index sectors. */
  private scanUsed(): { used: Uint8Array; problems: string[] } {
    const used = new Uint8Array(LIMITS.maxSectors);
    const problems: string[] = [];
    for (let k = 0; k < FORMAT.reservedSectors; k++) used[k] = 1;
    /** Marks a sector as used; false when the address itself is corrupt. */
    const claim = (adr: number, what: string): boolean => {
      let k: number;
      try {
        k = this.sectorOf(adr);
      } catch (err) {
        problems.push(`${what}: ${(err as Error).message}`);
        return false;
      }
      if (k < FORMAT.reservedSectors) {
        if (adr !== FORMAT.dirRootAdr) problems.push(`${what}: sector ${k} is in the boot area`);
        return true; // the root page sits in the reserved area, already marked
      }
      if (used[k]) problems.push(`${what}: sector ${k} is used twice`);
      used[k] = 1;
      return true;
    };
    const pages = [FORMAT.dirRootAdr as number];
    const seenPages = new Set<number>();
    const headers: { name: string; adr: number }[] = [];
    while (pages.length > 0) {
      const adr = pages.pop() as number;
      if (seenPages.has(adr)) {
        problems.push(
          `directory page at sector ${adr / FORMAT.adrFactor} is reached twice (the directory is not a tree)`,
        );
        continue;
      }
      seenPages.add(adr);
      if (!claim(adr, `directory page ${adr / FORMAT.adrFactor}`)) continue;
      const sector = this.getSector(adr);
      if (!isDirPage(sector)) {
        problems.push(`directory page at sector ${adr / FORMAT.adrFactor} has no directory mark`);
        continue;
      }
      const page = decodeDirPage(sector);
      for (let i = 0; i < page.m; i++) headers.push(page.e[i]);
      if (page.p0 !== 0) {
        pages.push(page.p0);
        for (let i = 0; i < page.m; i++) pages.push(page.e[i].p);
      }
    }
    for (const { name, adr } of headers) {
      if (!claim(adr, `header of ${name}`)) continue;
      try {
        const h = this.header(adr, name);
        for (let i = 0; i < indexSectorCount(h.aleng); i++) claim(h.ext[i], `index sector ${i} of ${name}`);
        for (const s of this.dataSectors(h).slice(1)) claim(s, `data of ${name}`); // sec[0] is the header
      } catch (err) {
        problems.push(`${name}: ${(err as Error).message}`);
      }
    }
    return { used, problems };
  }

  /** Kernel.AllocSector: the first free sector after the hint, wrapping to the start of the map. */
  private allocSector(hint: number): number {
    const used = this.map();
    let s = Math.floor(hint / FORMAT.adrFactor);
    for (let n = 0; n < LIMITS.maxSectors; n++) {
      s++;
      if (s === LIMITS.maxSectors) s = 1;
      if (!used[s]) {
        used[s] = 1;
        return s * FORMAT.adrFactor;
      }
    }
    throw new RangeError('the disk is full: all 65,536 sectors that Oberon can address are in use');
  }

  private pages(): dir.PageStore {
    return {
      getPage: (adr: number): DirPage => {
        const sector = this.getSector(adr);
        if (!isDirPage(sector)) {
          throw new DiskFormatError(
            `directory page at sector ${adr / FORMAT.adrFactor} has no directory mark`,
          );
        }
        return decodeDirPage(sector);
      },
      putPage: (adr: number, page: DirPage): void => {
        const sector = this.getSector(adr);
        encodeDirPage(page, sector);
        this.putSector(adr, sector);
      },
      allocSector: (hint: number) => this.allocSector(hint),
    };
  }

  // ---- files ---------------------------------------------------------------------------

  private header(adr: number, name: string): FileHeader {
    const sector = this.getSector(adr);
    if (!isHeader(sector))
      throw new DiskFormatError(`header of ${name} (sector ${adr / FORMAT.adrFactor}) has no header mark`);
    const h = decodeHeader(sector);
    const maxAleng = FORMAT.secTabSize + FORMAT.exTabSize * FORMAT.indexSize - 1;
    if (h.aleng < 0 || h.aleng > maxAleng || h.bleng < 0 || h.bleng > SS || fileLength(h) < 0) {
      throw new DiskFormatError(
        `header of ${name} has an impossible length (aleng ${h.aleng}, bleng ${h.bleng})`,
      );
    }
    return h;
  }

  /** DiskAdrs of file sectors 0..aleng, header first. */
  private dataSectors(h: FileHeader): number[] {
    const out: number[] = [];
    for (let i = 0; i <= h.aleng; i++) {
      if (i < FORMAT.secTabSize) {
        out.push(h.sec[i]);
      } else {
        const j = i - FORMAT.secTabSize;
        const index = this.getSector(h.ext[Math.floor(j / FORMAT.indexSize)]);
        out.push(index.readInt32LE((j % FORMAT.indexSize) * 4));
      }
    }
    return out;
  }

  list(): FileInfo[] {
    return dir.enumerate(this.pages()).map(({ name, adr }) => {
      const h = this.header(adr, name);
      return { name, size: fileLength(h), date: h.date, adr };
    });
  }

  /** DiskAdr of the header of `name`, or 0. */
  lookup(name: string): number {
    return dir.search(this.pages(), name);
  }

  exists(name: string): boolean {
    return this.lookup(name) !== 0;
  }

  read(name: string): Buffer {
    const adr = this.lookup(name);
    if (adr === 0) throw new Error(`no file ${name} on the disk`);
    const h = this.header(adr, name);
    const len = fileLength(h);
    const out = Buffer.alloc(len);
    let pos = 0;
    const sectors = this.dataSectors(h);
    for (let i = 0; i < sectors.length; i++) {
      const data = this.getSector(sectors[i]);
      const from = i === 0 ? FORMAT.headerSize : 0;
      const to = i === h.aleng ? h.bleng : SS;
      data.copy(out, pos, from, to);
      pos += to - from;
    }
    return out;
  }

  /** Writes (or replaces) a file. `date` is Oberon's packed clock value; 0 as on a machine without clock. */
  write(name: string, data: Uint8Array, date = 0): void {
    const problem = fileNameProblem(name);
    if (problem) throw new Error(`bad Oberon file name: ${problem}`);
    if (data.length > MAX_FILE_BYTES) {
      throw new RangeError(`${name} is ${data.length} bytes; an Oberon file holds at most ${MAX_FILE_BYTES}`);
    }
    const existed = this.lookup(name) !== 0;
    const { aleng, bleng } = lengthFields(data.length);
    const headerAdr = this.allocSector(0);
    const sectors = [headerAdr];
    for (let i = 1; i <= aleng; i++) sectors.push(this.allocSector(sectors[i - 1]));
    const ext: number[] = new Array(FORMAT.exTabSize).fill(0);
    const nIndex = indexSectorCount(aleng);
    for (let i = 0; i < nIndex; i++) ext[i] = this.allocSector(sectors[sectors.length - 1]);
    const header: FileHeader = {
      name,
      aleng,
      bleng,
      date,
      ext,
      sec: sectors
        .slice(0, FORMAT.secTabSize)
        .concat(new Array(Math.max(0, FORMAT.secTabSize - sectors.length)).fill(0)),
    };
    const src = Buffer.from(data.buffer, data.byteOffset, data.length);
    let pos = 0;
    for (let i = 0; i <= aleng; i++) {
      const sector = Buffer.alloc(SS);
      const from = i === 0 ? FORMAT.headerSize : 0;
      const to = i === aleng ? bleng : SS;
      src.copy(sector, from, pos, pos + (to - from));
      pos += to - from;
      if (i === 0) encodeHeader(header, sector);
      this.putSector(sectors[i], sector);
    }
    for (let i = 0; i < nIndex; i++) {
      const index = Buffer.alloc(SS);
      const first = FORMAT.secTabSize + i * FORMAT.indexSize;
      for (let j = 0; j < FORMAT.indexSize && first + j <= aleng; j++)
        index.writeInt32LE(sectors[first + j], j * 4);
      this.putSector(ext[i], index);
    }
    dir.insert(this.pages(), name, headerAdr);
    if (existed) this.used = undefined; // the replaced file's sectors are free again
  }

  /** Deletes a file; returns false when there was none. Its sectors become free (as at Oberon's next boot). */
  remove(name: string): boolean {
    const adr = dir.remove(this.pages(), name);
    if (adr === 0) return false;
    this.used = undefined;
    return true;
  }

  /**
   * Everything Oberon relies on: marks, page fill (12..24 except the root), names sorted within and
   * across pages, every leaf at the same depth, valid names and lengths, no sector used twice.
   */
  check(): string[] {
    const { problems } = this.scanUsed();
    const store = this.pages();
    let leafDepth = -1;
    let previous: string | undefined;
    const walk = (adr: number, depth: number): void => {
      if (depth > dir.LIMITS.maxDepth) return; // reported by scanUsed as a page reached twice
      let page: DirPage;
      try {
        page = store.getPage(adr);
      } catch {
        return; // reported by scanUsed
      }
      const where = `directory page at sector ${adr / FORMAT.adrFactor}`;
      const isRoot = adr === FORMAT.dirRootAdr;
      if (page.m < (isRoot ? 0 : FORMAT.dirHalf) || page.m > FORMAT.dirPageSize) {
        problems.push(`${where} holds ${page.m} entries`);
        return;
      }
      if (page.p0 === 0) {
        if (leafDepth < 0) leafDepth = depth;
        else if (leafDepth !== depth)
          problems.push(`${where} is a leaf at depth ${depth}, others at ${leafDepth}`);
      }
      const visit = (name: string): void => {
        if (previous !== undefined && !(previous < name))
          problems.push(`${where}: "${name}" is not after "${previous}"`);
        const bad = fileNameProblem(name);
        if (bad) problems.push(`${where}: ${bad}`);
        previous = name;
      };
      if (page.p0 !== 0) walk(page.p0, depth + 1);
      for (let i = 0; i < page.m; i++) {
        visit(page.e[i].name);
        if ((page.p0 === 0) !== (page.e[i].p === 0))
          problems.push(`${where}: entry ${i} breaks the leaf/inner shape`);
        if (page.e[i].p !== 0) walk(page.e[i].p, depth + 1);
      }
    };
    walk(FORMAT.dirRootAdr, 0);
    return problems;
  }

  /** The directory tree: the names on each page and its child pages, in order (for comparisons). */
  directoryShape(): DirectoryShape {
    const store = this.pages();
    const walk = (adr: number, depth = 0): DirectoryShape => {
      if (depth > dir.LIMITS.maxDepth)
        throw new dir.DirectoryCycleError('corrupt directory: pages nest too deep');
      const page = store.getPage(adr);
      const names = page.e.slice(0, page.m).map((e) => e.name);
      const children =
        page.p0 === 0
          ? []
          : [page.p0, ...page.e.slice(0, page.m).map((e) => e.p)].map((p) => walk(p, depth + 1));
      return { names, children };
    };
    return walk(FORMAT.dirRootAdr);
  }

  /** Sectors in use (as Oberon's boot would count them, including the 64 reserved ones). */
  usedSectors(): number {
    return this.map().reduce((n, v) => n + v, 0);
  }
}
