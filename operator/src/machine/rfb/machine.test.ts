// The RFB server in front of a real machine booted from the base image: what a VNC client sees
// is the machine's framebuffer, and what it types and clicks runs an Oberon command.

import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findBaseImage } from '../base-image.ts';
import { OberonVolume } from '../fs/volume.ts';
import { Machine } from '../machine.ts';
import { OBERON_PALETTE } from '../png.ts';
import { type RfbServer, startRfbServer } from './server.ts';

/** Just enough of a VNC client: handshake, 32-bit frames kept in a local framebuffer, events. */
class Viewer {
  private buf = Buffer.alloc(0);
  private wake: (() => void) | undefined;
  width = 0;
  height = 0;
  pixels = new Uint32Array(0); // RGB, top line first
  readonly socket;
  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
  }
  private async read(n: number): Promise<Buffer> {
    const deadline = Date.now() + 10_000;
    while (this.buf.length < n) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${n} bytes`);
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, 50);
      });
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
  async handshake(): Promise<void> {
    await this.read(12);
    this.socket.write('RFB 003.008\n');
    await this.read(2);
    this.socket.write(Buffer.from([1]));
    await this.read(4);
    this.socket.write(Buffer.from([1]));
    const init = await this.read(24);
    await this.read(init.readUInt32BE(20));
    this.width = init.readUInt16BE(0);
    this.height = init.readUInt16BE(2);
    this.pixels = new Uint32Array(this.width * this.height);
  }
  /** Requests an update and applies it to the local framebuffer. */
  async update(incremental: boolean): Promise<number> {
    const req = Buffer.alloc(10);
    req[0] = 3;
    req[1] = incremental ? 1 : 0;
    req.writeUInt16BE(this.width, 6);
    req.writeUInt16BE(this.height, 8);
    this.socket.write(req);
    const head = await this.read(4);
    const n = head.readUInt16BE(2);
    for (let i = 0; i < n; i++) {
      const rh = await this.read(12);
      const [x, y, w, h] = [rh.readUInt16BE(0), rh.readUInt16BE(2), rh.readUInt16BE(4), rh.readUInt16BE(6)];
      const data = await this.read(w * h * 4);
      for (let row = 0; row < h; row++) {
        for (let col = 0; col < w; col++) {
          this.pixels[(y + row) * this.width + x + col] = data.readUInt32LE((row * w + col) * 4) & 0xffffff;
        }
      }
    }
    return n;
  }
  key(keysym: number, down: boolean): void {
    const b = Buffer.alloc(8);
    b[0] = 4;
    b[1] = down ? 1 : 0;
    b.writeUInt32BE(keysym, 4);
    this.socket.write(b);
  }
  type(text: string): void {
    for (const ch of text) {
      const shifted = /[A-Z~!@#$%^&*()_+{}|:"<>?]/.test(ch);
      if (shifted) this.key(0xffe1, true);
      this.key(ch.charCodeAt(0), true);
      this.key(ch.charCodeAt(0), false);
      if (shifted) this.key(0xffe1, false);
    }
  }
  click(mask: number, x: number, y: number): void {
    for (const m of [0, mask, 0]) {
      const b = Buffer.alloc(6);
      b[0] = 5;
      b[1] = m;
      b.writeUInt16BE(x, 2);
      b.writeUInt16BE(y, 4);
      this.socket.write(b);
    }
  }
}

describe('RFB server on a booted Oberon machine', () => {
  let m: Machine;
  let server: RfbServer;
  let viewer: Viewer;
  beforeAll(async () => {
    const base = await readFile((await findBaseImage({ download: false })).path);
    m = new Machine({ disk: Buffer.from(base), clock: 'deterministic' });
    expect(m.runUntil(() => m.booted, { maxInstructions: 60e6 })).toBe(true);
    m.runUntilIdle(5e8);
    server = await startRfbServer({ screen: m, input: m, pollMs: 5 });
    viewer = new Viewer(server.port);
    await viewer.handshake();
  });
  afterAll(async () => {
    viewer.socket.destroy();
    await server.close();
  });

  /** Lets the events arrive over TCP, then runs the machine until it has consumed them. */
  async function settle(): Promise<void> {
    await new Promise((r) => setTimeout(r, 150));
    expect(m.runUntilIdle(5e8)).toBe(true);
  }

  it('shows the machine framebuffer, pixel for pixel', async () => {
    await viewer.update(false);
    expect([viewer.width, viewer.height]).toEqual([1024, 768]);
    const snap = m.snapshot();
    let differ = 0;
    for (let row = 0; row < 768; row++) {
      for (let x = 0; x < 1024; x++) {
        const bit = (snap.words[(767 - row) * 32 + (x >>> 5)] >>> (x & 31)) & 1;
        if (viewer.pixels[row * 1024 + x] !== (bit ? OBERON_PALETTE.foreground : OBERON_PALETTE.background))
          differ++;
      }
    }
    expect(differ).toBe(0);
  });

  it('typing a command and middle-clicking it through VNC runs it in Oberon', async () => {
    viewer.click(1, 1010, 760); // left click below and right of System.Tool's text: caret at its end
    await settle();
    viewer.key(0xff0d, true);
    viewer.key(0xff0d, false);
    viewer.type('System.CopyFiles System.Tool => Vnc.Tool ~');
    viewer.click(0, 8, 384); // pointer out of the text
    await settle();
    expect(await viewer.update(true)).toBeGreaterThan(0); // only what changed comes over
    // the new line is the lowest text in the system track; middle-click its first word
    let lowest = -1;
    for (let row = 767; row > 300 && lowest < 0; row--) {
      for (let x = 660; x < 1015; x++)
        if (viewer.pixels[row * 1024 + x] === OBERON_PALETTE.foreground) lowest = row;
    }
    expect(lowest).toBeGreaterThan(300);
    viewer.click(2, 664, lowest - 5);
    await settle();
    const vol = OberonVolume.fromBuffer(m.disk.bytes);
    expect(vol.read('Vnc.Tool')).toEqual(vol.read('System.Tool'));
  });
});
