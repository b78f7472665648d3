import { describe, expect, it } from 'vitest';
import { Machine } from './machine.ts';
import { charToPs2, textToPs2 } from './ps2.ts';

const IO = (off: number) => (0xffffffc0 + off) >>> 0;
const machine = () => new Machine({ disk: Buffer.alloc(1024), clock: 'deterministic' });

describe('machine devices', () => {
  it('encodes the mouse as Oberon reads it: x bits 0-11, y 12-23, right/middle/left 24/25/26', () => {
    const m = machine();
    m.mouse(700, 300, { left: false, middle: true, right: false });
    expect(m.ioRead(IO(24)) >>> 0).toBe(700 | (300 << 12) | (1 << 25));
    const m2 = machine();
    m2.mouse(5000, -3, { left: true, middle: false, right: true }); // clamped to the screen
    expect(m2.ioRead(IO(24)) >>> 0).toBe(1023 | (0 << 12) | (1 << 26) | (1 << 24));
  });

  it('holds each queued mouse state until Oberon has read it, so a quick click is never lost', () => {
    const m = machine();
    m.click(100, 200, 'middle', 0);
    const seen = new Set<number>();
    for (let i = 0; i < 20; i++) seen.add((m.ioRead(IO(24)) >>> 24) & 7);
    expect([...seen]).toEqual([0, 2, 0].filter((v, i, a) => a.indexOf(v) === i)); // up, middle down, up
    expect(seen.has(2)).toBe(true);
    expect(m.inputPending).toBe(false);
  });

  it('feeds key strokes one at a time into the PS/2 FIFO as Oberon drains it (bit 28 = byte available)', () => {
    const m = machine();
    m.typeText('A~');
    const bytes: number[] = [];
    for (let i = 0; i < 40; i++) {
      if ((m.ioRead(IO(24)) & 0x10000000) !== 0) bytes.push(m.ioRead(IO(28)));
    }
    expect(bytes).toEqual([...textToPs2('A')[0], ...textToPs2('~')[0]]);
    expect(charToPs2('A')).toEqual([0x12, 0x1c, 0xf0, 0x1c, 0xf0, 0x12]);
    expect(charToPs2('\n')).toEqual([0x5a, 0xf0, 0x5a]);
    expect(m.ioRead(IO(28))).toBe(0); // empty FIFO reads 0
  });

  it('exchanges text with the host clipboard (CRLF counts as one, LF ↔ CR)', () => {
    const m = machine();
    let out = '';
    m.onClipboard = (t) => {
      out = t;
    };
    m.clipboardIn = 'ab\r\nc';
    expect(m.ioRead(IO(40))).toBe(4);
    expect([0, 1, 2, 3].map(() => m.ioRead(IO(44)))).toEqual([97, 98, 13, 99]);
    m.ioWrite(IO(40), 3);
    for (const ch of [120, 13, 121]) m.ioWrite(IO(44), ch);
    expect(out).toBe('x\ny');
  });

  it('shows switches, records LEDs and answers SPI reads with 255 when no device is selected', () => {
    const m = new Machine({ disk: Buffer.alloc(1024), clock: 'deterministic', switches: 1 });
    expect(m.ioRead(IO(4))).toBe(1);
    m.ioWrite(IO(4), 0x1a5);
    expect(m.leds).toBe(0xa5);
    m.ioWrite(IO(20), 0);
    expect(m.ioRead(IO(16))).toBe(255);
    expect(m.ioRead(IO(20))).toBe(1);
  });

  it('runs the deterministic clock from the instruction count: 25,000 instructions per ms', () => {
    const m = machine();
    m.cpu.mem.set([0xe7ffffff]); // B to itself
    m.cpu.pc = 0;
    m.cpu.run(250_000);
    expect(m.timerMs()).toBe(10);
  });
});
