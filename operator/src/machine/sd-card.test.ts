import { describe, expect, it } from 'vitest';
import { DiskImage, SdCard } from './sd-card.ts';

// Talk to the card as Oberon's Kernel does: 6-byte commands, then poll for replies.
function command(sd: SdCard, cmd: number, arg: number): number {
  for (const b of [0x40 | cmd, arg >>> 24, (arg >>> 16) & 255, (arg >>> 8) & 255, arg & 255, 0x95])
    sd.write(b);
  for (let i = 0; i < 8; i++) {
    sd.write(0xff);
    const r = sd.read();
    if (r !== 255) return r;
  }
  return 255;
}

function readBlock(sd: SdCard, block: number): number[] {
  expect(command(sd, 17, block)).toBe(0);
  let token = 255;
  for (let i = 0; i < 8 && token !== 254; i++) {
    sd.write(0xff);
    token = sd.read();
  }
  expect(token).toBe(254);
  const words: number[] = [];
  for (let i = 0; i < 128; i++) {
    sd.write(-1);
    words.push(sd.read());
  }
  sd.write(0xff);
  sd.write(0xff);
  return words;
}

describe('SD card', () => {
  it('maps a file-system-only image (directory mark first) to SD block 80002H and reads zeros past its end', () => {
    const img = Buffer.alloc(1024);
    img.writeUInt32LE(0x9b1ea38d, 0);
    img.writeInt32LE(12345, 512);
    const disk = new DiskImage(img);
    expect(disk.blockOffset).toBe(0x80002);
    const sd = new SdCard(disk);
    expect(readBlock(sd, 0x80002)[0] >>> 0).toBe(0x9b1ea38d);
    expect(readBlock(sd, 0x80003)[0]).toBe(12345);
    expect(readBlock(sd, 0x80010).every((w) => w === 0)).toBe(true);
  });

  it('treats any other image as a whole card (offset 0)', () => {
    expect(new DiskImage(Buffer.alloc(4096)).blockOffset).toBe(0);
  });

  it('writes a block (token 254, 128 words, 2 CRC words, data response 5), growing the image, with a write-through hook', () => {
    const img = Buffer.alloc(512);
    img.writeUInt32LE(0x9b1ea38d, 0);
    const disk = new DiskImage(img);
    const seen: number[] = [];
    disk.onWrite = (off) => seen.push(off);
    const sd = new SdCard(disk);
    for (const block of [0x80005, 0x80004]) {
      expect(command(sd, 24, block)).toBe(0);
      sd.write(0xfe);
      for (let i = 0; i < 128; i++) sd.write(block * 1000 + i);
      sd.write(-1);
      sd.write(-1);
      sd.write(0xff);
      expect(sd.read() & 0x1f).toBe(5);
    }
    expect(seen).toEqual([3 * 512, 2 * 512]);
    expect(disk.bytes.length).toBe(4 * 512);
    expect(readBlock(sd, 0x80005)[7]).toBe(0x80005 * 1000 + 7);
    expect(readBlock(sd, 0x80004)[0]).toBe(0x80004 * 1000);
  });
});
