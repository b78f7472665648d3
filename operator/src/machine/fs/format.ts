// On-disk layout of the Project Oberon file system (FileDir/Files/Kernel of the 2013 system):
// 1 KiB sectors addressed as sector number × 29, a B-tree directory rooted at sector 1, and one
// header sector per file that lists its data sectors (plus index sectors for long files).

/** Format constants, fixed by the Oberon sources; each is part of the on-disk contract. */
export const FORMAT = {
  sectorSize: 1024, // Kernel.SectorLength: one Oberon sector
  adrFactor: 29, // DiskAdr = sector × 29; Kernel checks the remainder to catch corrupt addresses
  dirRootAdr: 29, // FileDir.DirRootAdr: the root page lives in sector 1
  dirMark: 0x9b1ea38d, // FileDir.DirMark: first word of every directory page
  headerMark: 0x9ba71d86, // FileDir.HeaderMark: first word of every file header
  dirPageSize: 24, // FileDir.DirPgSize: entries per directory page
  dirHalf: 12, // FileDir.N: minimum entries of a non-root page
  entriesOffset: 64, // mark, m, p0 and 52 filler bytes precede the entries
  entrySize: 40, // name[32], adr, p
  nameLength: 32, // FileDir.FnLength, including the terminating 0X
  headerSize: 352, // FileDir.HeaderSize: file data starts here in the header sector
  secTabSize: 64, // FileDir.SecTabSize: sectors listed directly in the header
  exTabSize: 12, // FileDir.ExTabSize: index sectors listed in the header
  indexSize: 256, // FileDir.IndexSize: sector addresses per index sector
  reservedSectors: 64, // Kernel.InitSecMap marks sectors 0..63 (boot area) as used
  mapSize: 0x10000, // Kernel.mapsize: sectors the allocation map covers (64 MiB)
  cardFsBlock: 0x80000, // SD block of sector 0 in a whole-card image (Kernel.FSoffset)
} as const;

/** The largest number of sectors a file can have (header + direct + indexed). */
export const MAX_FILE_SECTORS = FORMAT.secTabSize + FORMAT.exTabSize * FORMAT.indexSize;
/** The largest file length in bytes. */
export const MAX_FILE_BYTES = MAX_FILE_SECTORS * FORMAT.sectorSize - FORMAT.headerSize;

export interface DirEntry {
  name: string;
  adr: number; // DiskAdr of the file header
  p: number; // DiskAdr of the page holding the names between this entry and the next (0 in leaves)
}

export interface DirPage {
  m: number;
  p0: number;
  /** Always dirPageSize slots; only the first m are meaningful (the rest keep what Oberon leaves). */
  e: DirEntry[];
}

export interface FileHeader {
  name: string;
  aleng: number;
  bleng: number;
  date: number;
  ext: number[]; // exTabSize DiskAdrs
  sec: number[]; // secTabSize DiskAdrs
}

export function emptyEntry(): DirEntry {
  return { name: '', adr: 0, p: 0 };
}

export function copyEntry(e: DirEntry): DirEntry {
  return { name: e.name, adr: e.adr, p: e.p };
}

function readName(buf: Uint8Array, off: number): string {
  let s = '';
  for (let i = 0; i < FORMAT.nameLength; i++) {
    const c = buf[off + i] ?? 0;
    if (c === 0) break;
    s += String.fromCharCode(c);
  }
  return s;
}

function writeName(buf: Buffer, off: number, name: string): void {
  for (let i = 0; i < FORMAT.nameLength; i++) buf[off + i] = i < name.length ? name.charCodeAt(i) & 0xff : 0;
}

export function isDirPage(sector: Buffer): boolean {
  return sector.readUInt32LE(0) === FORMAT.dirMark;
}

export function decodeDirPage(sector: Buffer): DirPage {
  const m = sector.readInt32LE(4);
  const e: DirEntry[] = [];
  for (let i = 0; i < FORMAT.dirPageSize; i++) {
    const off = FORMAT.entriesOffset + i * FORMAT.entrySize;
    e.push({
      name: readName(sector, off),
      adr: sector.readInt32LE(off + FORMAT.nameLength),
      p: sector.readInt32LE(off + FORMAT.nameLength + 4),
    });
  }
  return { m, p0: sector.readInt32LE(8), e };
}

/** Writes a page into `sector` (a 1 KiB buffer whose filler bytes are kept). */
export function encodeDirPage(page: DirPage, sector: Buffer): void {
  sector.writeUInt32LE(FORMAT.dirMark, 0);
  sector.writeInt32LE(page.m, 4);
  sector.writeInt32LE(page.p0, 8);
  for (let i = 0; i < FORMAT.dirPageSize; i++) {
    const off = FORMAT.entriesOffset + i * FORMAT.entrySize;
    const e = page.e[i] ?? emptyEntry();
    writeName(sector, off, e.name);
    sector.writeInt32LE(e.adr, off + FORMAT.nameLength);
    sector.writeInt32LE(e.p, off + FORMAT.nameLength + 4);
  }
}

export function isHeader(sector: Buffer): boolean {
  return sector.readUInt32LE(0) === FORMAT.headerMark;
}

export function decodeHeader(sector: Buffer): FileHeader {
  const ext: number[] = [];
  for (let i = 0; i < FORMAT.exTabSize; i++) ext.push(sector.readInt32LE(48 + 4 * i));
  const sec: number[] = [];
  for (let i = 0; i < FORMAT.secTabSize; i++) sec.push(sector.readInt32LE(96 + 4 * i));
  return {
    name: readName(sector, 4),
    aleng: sector.readInt32LE(36),
    bleng: sector.readInt32LE(40),
    date: sector.readInt32LE(44),
    ext,
    sec,
  };
}

/** Writes the header fields into the first 352 bytes of `sector`; the data part is left alone. */
export function encodeHeader(h: FileHeader, sector: Buffer): void {
  sector.writeUInt32LE(FORMAT.headerMark, 0);
  writeName(sector, 4, h.name);
  sector.writeInt32LE(h.aleng, 36);
  sector.writeInt32LE(h.bleng, 40);
  sector.writeInt32LE(h.date, 44);
  for (let i = 0; i < FORMAT.exTabSize; i++) sector.writeInt32LE(h.ext[i] ?? 0, 48 + 4 * i);
  for (let i = 0; i < FORMAT.secTabSize; i++) sector.writeInt32LE(h.sec[i] ?? 0, 96 + 4 * i);
}

/** File length in bytes from the header's aleng/bleng (Files.Length). */
export function fileLength(h: Pick<FileHeader, 'aleng' | 'bleng'>): number {
  return h.aleng * FORMAT.sectorSize + h.bleng - FORMAT.headerSize;
}

/** aleng/bleng as Files writes them: a file that ends on a sector boundary has bleng = 1024. */
export function lengthFields(length: number): { aleng: number; bleng: number } {
  const total = length + FORMAT.headerSize;
  const aleng = Math.ceil(total / FORMAT.sectorSize) - 1;
  return { aleng, bleng: total - aleng * FORMAT.sectorSize };
}

/** Number of index sectors a file with this aleng has (Files.UpdateHeader's k). */
export function indexSectorCount(aleng: number): number {
  return Math.floor((aleng + (FORMAT.indexSize - FORMAT.secTabSize)) / FORMAT.indexSize);
}

/**
 * Why a name is not a valid Oberon file name (Files.Check), or undefined when it is:
 * a letter first, then letters, digits and '.', at most 31 characters.
 */
export function fileNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'the name is empty';
  if (!/^[A-Za-z]/.test(name)) return `"${name}" must start with a letter`;
  if (name.length >= FORMAT.nameLength) return `"${name}" is longer than ${FORMAT.nameLength - 1} characters`;
  if (!/^[A-Za-z][A-Za-z0-9.]*$/.test(name)) return `"${name}" may contain only letters, digits and '.'`;
  return undefined;
}

/** Oberon's packed date (Kernel.Clock / System.Date): year-2000, month, day, hour, min, sec. */
export function encodeDate(d: Date): number {
  const yr = Math.min(63, Math.max(0, d.getUTCFullYear() - 2000));
  return (
    (((((yr * 16 + d.getUTCMonth() + 1) * 32 + d.getUTCDate()) * 32 + d.getUTCHours()) * 64 +
      d.getUTCMinutes()) *
      64 +
      d.getUTCSeconds()) |
    0
  );
}

export function formatDate(dt: number): string {
  if (dt === 0) return '-';
  const sec = dt & 63;
  const min = (dt >>> 6) & 63;
  const hr = (dt >>> 12) & 31;
  const day = (dt >>> 17) & 31;
  const mo = (dt >>> 22) & 15;
  const yr = (dt >>> 26) & 63;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${2000 + yr}-${p(mo)}-${p(day)} ${p(hr)}:${p(min)}:${p(sec)}`;
}
