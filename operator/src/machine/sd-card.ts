// The SD card on SPI device 1, as Oberon's Kernel and boot loader drive it: 6-byte commands
// (0x40|cmd, 32-bit big-endian argument, CRC), CMD17 read block (reply 0, token 254, 128 words),
// CMD24 write block (reply 0, token 254 from the host, 128 words, 2 CRC words, data response 5),
// every other command replies 0 (which makes Oberon treat the card as SDHC: block addressing).
//
// The .dsk offset rule: a file that begins with the directory mark 0x9B1EA38D holds only the
// file system, starting at Oberon sector 1, so SD block b lives at byte (b − 0x80002)·512.
// Any other file is a whole-card image (offset 0). Reads past the end give zeros; writes past
// the end grow the image.

export const LIMITS = {
  blockBytes: 512, // SD block size (SDHC)
  dirMark: 0x9b1ea38d, // first word of a file-system-only image (the root directory page)
  fsOnlyOffset: 0x80002, // SD block of .dsk byte 0 in a file-system-only image
  maxImageBytes: 1 << 30, // refuse to grow an image beyond 1 GiB (a runaway write, not a disk)
} as const;

/** Backing store of the card: the image bytes plus an optional write-through hook. */
export class DiskImage {
  bytes: Buffer;
  /** Block number that maps to byte 0 of the image. */
  readonly blockOffset: number;
  /** Called after every block write with the byte offset and the 512 written bytes. */
  onWrite: ((offset: number, data: Buffer) => void) | null = null;
  writes = 0;
  /** While not null, every block read is appended (a boot image records what its boot read). */
  readLog: number[] | null = null;

  /** The backing store; `bytes` is its used part (the image as a file would hold it). */
  private capacity: Buffer;

  constructor(bytes: Buffer) {
    this.bytes = bytes;
    this.capacity = bytes;
    this.blockOffset =
      bytes.length >= 4 && bytes.readUInt32LE(0) === LIMITS.dirMark ? LIMITS.fsOnlyOffset : 0;
  }

  /** Copy SD block `block` into dst (128 little-endian words) at word index at. */
  readBlock(block: number, dst: Int32Array, at: number): void {
    this.readLog?.push(block);
    const off = (block - this.blockOffset) * LIMITS.blockBytes;
    const b = this.bytes;
    if (off >= 0 && off + LIMITS.blockBytes <= b.length) {
      // A byte copy: RAM words are little-endian like the disk (every host Node runs on is).
      new Uint8Array(dst.buffer, dst.byteOffset + at * 4, LIMITS.blockBytes).set(
        b.subarray(off, off + LIMITS.blockBytes),
      );
      return;
    }
    for (let i = 0; i < 128; i++) {
      const p = off + i * 4;
      dst[at + i] = p >= 0 && p + 4 <= b.length ? b.readInt32LE(p) : 0;
    }
  }

  /**
   * True when SD block `block` holds exactly `data` (512 bytes). One native comparison where the
   * block lies in the image: a boot image checks every block its boot read (about 600) before it
   * is used, and a JavaScript loop over those words, still cold in a fresh process, cost ~5 ms.
   */
  blockEquals(block: number, data: Uint8Array): boolean {
    const off = (block - this.blockOffset) * LIMITS.blockBytes;
    const b = this.bytes;
    if (off >= 0 && off + LIMITS.blockBytes <= b.length)
      return b.subarray(off, off + LIMITS.blockBytes).equals(data);
    const words = new Int32Array(128); // past the image's end: what readBlock gives (zeros)
    const log = this.readLog;
    this.readLog = null; // a comparison, not a read by the machine
    this.readBlock(block, words, 0);
    this.readLog = log;
    return Buffer.from(words.buffer).equals(data);
  }

  writeBlock(block: number, src: Int32Array): void {
    const off = (block - this.blockOffset) * LIMITS.blockBytes;
    if (off < 0) return; // below the image (e.g. the boot sector of a file-system-only image)
    if (off + LIMITS.blockBytes > this.bytes.length) {
      const need = off + LIMITS.blockBytes;
      if (need > LIMITS.maxImageBytes) return;
      if (need > this.capacity.length) {
        // Grow the backing store geometrically: a compile appends many blocks in a row.
        const grown = Buffer.alloc(Math.min(Math.max(need, this.capacity.length * 2), LIMITS.maxImageBytes));
        this.bytes.copy(grown);
        this.capacity = grown;
      }
      this.bytes = this.capacity.subarray(0, need);
    }
    this.bytes.set(new Uint8Array(src.buffer, src.byteOffset, LIMITS.blockBytes), off); // little-endian, as readBlock
    this.writes++;
    this.onWrite?.(off, this.bytes.subarray(off, off + LIMITS.blockBytes));
  }
}

const IDLE = 0;
const READING = 1;
const WAIT_TOKEN = 2;
const WRITING = 3;

export interface SdCardState {
  state: number;
  cmd: Uint8Array;
  cmdLen: number;
  tx: Int32Array;
  txCount: number;
  txIdx: number;
  rx: Int32Array;
  rxIdx: number;
  writeBlockNo: number;
}

export class SdCard {
  readonly disk: DiskImage;
  private state = IDLE;
  private readonly cmd = new Uint8Array(6);
  private cmdLen = 0;
  /** Reply words; index −1 means "before the first reply". */
  private readonly tx = new Int32Array(130);
  private txCount = 0;
  private txIdx = 0;
  private readonly rx = new Int32Array(128);
  private rxIdx = 0;
  private writeBlockNo = 0;

  constructor(disk: DiskImage) {
    this.disk = disk;
  }

  /** The card's protocol state (not the disk), for boot images. */
  saveState(): SdCardState {
    return {
      state: this.state,
      cmd: this.cmd.slice(),
      cmdLen: this.cmdLen,
      tx: this.tx.slice(),
      txCount: this.txCount,
      txIdx: this.txIdx,
      rx: this.rx.slice(),
      rxIdx: this.rxIdx,
      writeBlockNo: this.writeBlockNo,
    };
  }

  loadState(s: SdCardState): void {
    this.state = s.state;
    this.cmd.set(s.cmd);
    this.cmdLen = s.cmdLen;
    this.tx.set(s.tx);
    this.txCount = s.txCount;
    this.txIdx = s.txIdx;
    this.rx.set(s.rx);
    this.rxIdx = s.rxIdx;
    this.writeBlockNo = s.writeBlockNo;
  }

  read(): number {
    return this.txIdx >= 0 && this.txIdx < this.txCount ? this.tx[this.txIdx] : 255;
  }

  write(value: number): void {
    this.txIdx++;
    switch (this.state) {
      case IDLE: {
        const byte = value & 0xff;
        if (byte !== 0xff || this.cmdLen !== 0) {
          this.cmd[this.cmdLen++] = byte;
          if (this.cmdLen === 6) {
            this.command();
            this.cmdLen = 0;
          }
        }
        break;
      }
      case READING:
        if (this.txIdx === this.txCount) {
          this.state = IDLE;
          this.txCount = 0;
          this.txIdx = 0;
        }
        break;
      case WAIT_TOKEN:
        if ((value & 0xff) === 254) this.state = WRITING;
        break;
      case WRITING:
        if (this.rxIdx < 128) this.rx[this.rxIdx] = value;
        this.rxIdx++;
        if (this.rxIdx === 128) this.disk.writeBlock(this.writeBlockNo, this.rx);
        if (this.rxIdx === 130) {
          this.tx[0] = 5; // data accepted
          this.txCount = 1;
          this.txIdx = -1;
          this.rxIdx = 0;
          this.state = IDLE;
        }
        break;
    }
  }

  private command(): void {
    const c = this.cmd;
    const op = c[0] & 0x3f;
    const arg = ((c[1] << 24) | (c[2] << 16) | (c[3] << 8) | c[4]) >>> 0;
    this.tx[0] = 0;
    if (op === 17) {
      this.state = READING;
      this.tx[1] = 254;
      this.disk.readBlock(arg, this.tx, 2);
      this.txCount = 130;
    } else if (op === 24) {
      this.state = WAIT_TOKEN;
      this.writeBlockNo = arg;
      this.rxIdx = 0;
      this.txCount = 1;
    } else {
      this.txCount = 1;
    }
    this.txIdx = -1;
  }
}
