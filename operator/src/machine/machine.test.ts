import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { assemble } from './asm.ts';
import { Machine } from './machine.ts';
import type { FrameSnapshot } from './screen-input.ts';
import { inkAt, regionChanged, rowInk, titleBars } from './screen-scan.ts';
import { DiskImage } from './sd-card.ts';
import { copyBaseImage, removeCopies } from './test-disk.ts';

afterAll(removeCopies);

function hashRegion(s: FrameSnapshot, x0: number, y0: number, x1: number, y1: number): string {
  let h = 2166136261;
  for (let y = y0; y < y1; y++)
    for (let x = x0; x < x1; x++) {
      h ^= inkAt(s, x, y);
      h = Math.imul(h, 16777619);
    }
  return (h >>> 0).toString(16);
}

function bootBase(): { m: Machine; file: string } {
  const file = copyBaseImage();
  const disk = new DiskImage(fs.readFileSync(file));
  const fd = fs.openSync(file, 'r+');
  disk.onWrite = (off, data) => fs.writeSync(fd, data, 0, data.length, off);
  const m = new Machine({ disk, clock: 'deterministic' });
  const ok = m.runUntil(() => m.booted, { maxInstructions: 20_000_000 });
  expect(ok, 'Oberon.Loop reached within 20 M instructions').toBe(true);
  return { m, file };
}

describe('the Oberon base image on our machine', () => {
  it('boots to the Oberon screen (System.Log with "Oberon V5", System.Tool) within 20 M instructions', () => {
    const { m } = bootBase();
    expect(m.cpu.instructions).toBeLessThan(20_000_000);
    expect(m.ledHistory.slice(0, 3)).toEqual([0x80, 0x82, 0x84]); // the boot loader's LED trail
    const s = m.snapshot();
    expect([s.width, s.height]).toEqual([1024, 768]);
    // Two viewers in the system track (x ≥ 640): System.Log at the top, System.Tool from y 255.
    expect(titleBars(s, 660, 1016)).toEqual([0, 255]);
    // The log's first line "Oberon V5  NW 14.4.2013", pixel for pixel as we saw it rendered.
    expect(hashRegion(s, 656, 14, 1016, 34)).toBe('5e3623d3');
    expect(hashRegion(s, 640, 255, 1024, 270)).toBe('dc39bb20'); // the System.Tool title bar
    // System.Tool's text lines carry ink; the user track (left 5/8) is empty.
    expect(rowInk(s, 281, 660, 1000)).toBeGreaterThan(20);
    let userInk = 0;
    for (let y = 0; y < 740; y += 2) userInk += rowInk(s, y, 0, 630);
    expect(userInk).toBe(0);
  });

  it('boots the same with our assembled boot ROM running on the CPU (SPI, CMD17, fast mode)', () => {
    const a = bootBase().m;
    const b = new Machine({
      disk: fs.readFileSync(copyBaseImage()),
      clock: 'deterministic',
      boot: 'assembled',
    });
    expect(b.cpu.rom).not.toBeNull();
    expect(b.runUntil(() => b.booted, { maxInstructions: 20_000_000 })).toBe(true);
    expect(b.ledHistory.slice(0, 3)).toEqual([0x80, 0x82, 0x84]);
    expect(b.cpu.instructions).toBeGreaterThan(a.cpu.instructions); // the ROM's own instructions
    expect(Buffer.from(a.snapshot().words.buffer).equals(Buffer.from(b.snapshot().words.buffer))).toBe(true);
  });

  it('is deterministic: two boots take the same instructions and draw the same screen', () => {
    const a = bootBase().m;
    const b = bootBase().m;
    expect(a.cpu.instructions).toBe(b.cpu.instructions);
    expect(Buffer.from(a.snapshot().words.buffer).equals(Buffer.from(b.snapshot().words.buffer))).toBe(true);
  });

  it('boots identically with the block translator: same instruction count, same screen', () => {
    const a = bootBase().m;
    // A low translation threshold, so much of the boot runs translated.
    const b = new Machine({
      disk: fs.readFileSync(copyBaseImage()),
      clock: 'deterministic',
      jit: true,
      hotBlock: 1000,
    });
    expect(b.runUntil(() => b.booted, { maxInstructions: 20_000_000, slice: 10_000_000 })).toBe(true);
    expect(b.cpu.instructions).toBe(a.cpu.instructions);
    b.runCommand('System.Directory *.Tool');
    a.runCommand('System.Directory *.Tool');
    expect(a.runUntilIdle(50_000_000) && b.runUntilIdle(50_000_000)).toBe(true);
    expect(b.cpu.translations).toBeGreaterThan(10);
    expect(Buffer.from(a.snapshot().words.buffer).equals(Buffer.from(b.snapshot().words.buffer))).toBe(true);
  });

  it('runs a typed, middle-clicked command: System.Directory opens a viewer listing the tools', () => {
    const { m } = bootBase();
    const before = m.snapshot();
    m.runCommand('System.Directory *.Tool');
    expect(m.runUntilIdle(50_000_000)).toBe(true);
    const after = m.snapshot();
    const bars = titleBars(after, 660, 1016);
    expect(bars.length).toBe(3); // a third viewer opened in the system track
    const top = bars[2];
    // Its body lists two files (Draw.Tool, System.Tool): two text lines, then nothing.
    const lineInk = (y0: number) =>
      Math.max(...Array.from({ length: 12 }, (_, i) => rowInk(after, y0 + i, 660, 800)));
    expect(lineInk(top + 18)).toBeGreaterThan(5); // Draw.Tool
    expect(lineInk(top + 30)).toBeGreaterThan(5); // System.Tool
    expect(lineInk(top + 45)).toBe(0); // and no third file
    expect(hashRegion(after, 656, top + 14, 800, top + 40)).not.toBe(
      hashRegion(before, 656, top + 14, 800, top + 40),
    );
    expect(regionChanged(before, after, 640, 0, 1024, 250)).toBe(false); // System.Log untouched
  });

  it('writes through to the disk: System.CopyFiles creates a file that is on the .dsk afterwards', () => {
    const { m, file } = bootBase();
    m.runCommand('System.CopyFiles System.Tool => Copied.Tool ~');
    expect(m.runUntilIdle(50_000_000)).toBe(true);
    expect(m.disk.writes).toBeGreaterThan(0);
    const onDisk = fs.readFileSync(file);
    expect(onDisk.includes(Buffer.from('Copied.Tool\0'))).toBe(true);
    expect(fs.readFileSync(copyBaseImage()).includes(Buffer.from('Copied.Tool\0'))).toBe(false);
  });

  it('runs several commands in a row, each on its own new line (caret at the end of the text)', () => {
    const { m, file } = bootBase();
    m.runCommand('System.CopyFiles System.Tool => One.Tool ~');
    m.runCommand('System.CopyFiles System.Tool => Two.Tool ~');
    m.runCommand('System.CopyFiles System.Tool => Three.Tool ~');
    expect(m.runUntilIdle(100_000_000)).toBe(true);
    const onDisk = fs.readFileSync(file);
    for (const name of ['One.Tool', 'Two.Tool', 'Three.Tool'])
      expect(onDisk.includes(Buffer.from(`${name}\0`))).toBe(true);
  });

  it('feeds the boot command string to RS232 receive and captures what is transmitted', () => {
    // A program that echoes the serial input back, upper-cased, while bytes are available.
    const prog = assemble(`
      MOV R1, -64
    loop: LDW R2, R1, 12   ; status
      AND R2, R2, 1
      BEQ halt
      LDB R3, R1, 8        ; data
      SUB R0, R3, 'a'
      BLT out
      SUB R3, R3, 32
    out: STB R3, R1, 8
      B loop
    halt: B halt`);
    const m = new Machine({
      disk: Buffer.alloc(1024),
      clock: 'deterministic',
      commands: 'kube.start;node a',
    });
    m.cpu.mem.set(prog.words);
    m.cpu.pc = 0;
    m.cpu.run(10_000);
    // The last boot line comes ended (endCommands), so a command fed later, before the machine
    // read the boot commands, stays a line of its own instead of joining "node a".
    m.serialFeed('later;');
    m.cpu.pc = 0;
    m.cpu.run(10_000);
    expect(m.serialText()).toBe('KUBE.START;NODE A;LATER;');
  });

  it('recovers from a warm reset like the board: the ROM path skips the disk and Oberon runs on', () => {
    const { m } = bootBase();
    const writesBefore = m.ledHistory.length;
    m.reset();
    m.booted = false;
    expect(m.runUntil(() => m.booted, { maxInstructions: 20_000_000 })).toBe(true);
    expect(m.ledHistory.slice(writesBefore)).toContain(0x84);
    expect(m.ledHistory.slice(writesBefore)).not.toContain(0x82); // no reload from disk
  });

  it('publishes a custom display size to the image (magic 53697A67H at E7F00H) and boots with it', () => {
    const m = new Machine({
      disk: fs.readFileSync(copyBaseImage()),
      clock: 'deterministic',
      memoryMiB: 2,
      width: 800,
      height: 600,
    });
    expect(m.cpu.mem[0xe7f00 >>> 2] >>> 0).toBe(0x53697a67);
    expect(m.runUntil(() => m.booted, { maxInstructions: 20_000_000 })).toBe(true);
    const s = m.snapshot();
    expect([s.width, s.height]).toEqual([800, 600]);
    expect(titleBars(s, 520, 790).length).toBe(2); // Log and Tool in the narrower system track
  });
});
