import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { OBERON_PALETTE } from '../png.ts';
import type { FrameSnapshot, MachineInput, MachineScreen, MouseButtons } from '../screen-input.ts';
import { desEncryptBlock, vncAuthResponse } from './des.ts';
import { type RfbServer, startRfbServer } from './server.ts';

/** A framebuffer we can draw on, standing in for a running machine. */
class FakeMachine implements MachineScreen, MachineInput {
  readonly width = 128;
  readonly height = 64;
  words = new Uint32Array((128 / 32) * 64);
  version = 1;
  keys: number[][] = [];
  mice: { x: number; y: number; buttons: MouseButtons }[] = [];
  snapshot(): FrameSnapshot {
    return { width: this.width, height: this.height, words: this.words.slice(), version: this.version };
  }
  set(x: number, y: number): void {
    this.words[y * 4 + (x >>> 5)] |= 1 << (x & 31);
    this.version++;
  }
  lit(x: number, y: number): boolean {
    return ((this.words[y * 4 + (x >>> 5)] >>> (x & 31)) & 1) === 1;
  }
  ps2(bytes: readonly number[]): void {
    this.keys.push([...bytes]);
  }
  mouse(x: number, y: number, buttons: MouseButtons): void {
    this.mice.push({ x, y, buttons });
  }
}

/** A minimal RFB client speaking the protocol over a raw socket. */
class RawClient {
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  readonly socket: Socket;
  constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(port: number): Promise<RawClient> {
    const s = connect(port, '127.0.0.1');
    await new Promise<void>((r) => s.once('connect', () => r()));
    return new RawClient(s);
  }
  async read(n: number, timeoutMs = 2000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    while (this.buf.length < n) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${n} bytes (have ${this.buf.length})`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
  pending(): number {
    return this.buf.length;
  }
  write(b: Buffer | number[]): void {
    this.socket.write(Buffer.from(b));
  }
  async handshake(
    version = 'RFB 003.008\n',
  ): Promise<{ width: number; height: number; name: string; format: Buffer }> {
    expect((await this.read(12)).toString()).toBe('RFB 003.008\n');
    this.write(Buffer.from(version));
    if (version === 'RFB 003.003\n') {
      expect((await this.read(4)).readUInt32BE(0)).toBe(1);
    } else {
      expect([...(await this.read(2))]).toEqual([1, 1]);
      this.write([1]);
      if (version === 'RFB 003.008\n') expect((await this.read(4)).readUInt32BE(0)).toBe(0);
    }
    this.write([1]); // shared
    const init = await this.read(24);
    const name = (await this.read(init.readUInt32BE(20))).toString();
    return { width: init.readUInt16BE(0), height: init.readUInt16BE(2), name, format: init.subarray(4, 20) };
  }
  requestUpdate(incremental: boolean, x: number, y: number, w: number, h: number): void {
    const b = Buffer.alloc(10);
    b[0] = 3;
    b[1] = incremental ? 1 : 0;
    b.writeUInt16BE(x, 2);
    b.writeUInt16BE(y, 4);
    b.writeUInt16BE(w, 6);
    b.writeUInt16BE(h, 8);
    this.write(b);
  }
  async readUpdate(
    bytesPerPixel: number,
    timeoutMs = 2000,
  ): Promise<{ x: number; y: number; w: number; h: number; pixels: Buffer }[]> {
    const head = await this.read(4, timeoutMs);
    expect(head[0]).toBe(0);
    const rects = [];
    for (let i = 0; i < head.readUInt16BE(2); i++) {
      const rh = await this.read(12);
      expect(rh.readInt32BE(8)).toBe(0); // Raw
      const w = rh.readUInt16BE(4);
      const h = rh.readUInt16BE(6);
      rects.push({
        x: rh.readUInt16BE(0),
        y: rh.readUInt16BE(2),
        w,
        h,
        pixels: await this.read(w * h * bytesPerPixel),
      });
    }
    return rects;
  }
  key(keysym: number, down: boolean): void {
    const b = Buffer.alloc(8);
    b[0] = 4;
    b[1] = down ? 1 : 0;
    b.writeUInt32BE(keysym, 4);
    this.write(b);
  }
  pointer(mask: number, x: number, y: number): void {
    const b = Buffer.alloc(6);
    b[0] = 5;
    b[1] = mask;
    b.writeUInt16BE(x, 2);
    b.writeUInt16BE(y, 4);
    this.write(b);
  }
}

const servers: RfbServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function setup() {
  const m = new FakeMachine();
  const server = await startRfbServer({ screen: m, input: m, name: 'test-oberon', pollMs: 5 });
  servers.push(server);
  const client = await RawClient.open(server.port);
  return { m, server, client };
}

const FG = OBERON_PALETTE.foreground;
const BG = OBERON_PALETTE.background;

describe('RFB server', () => {
  it('completes the 3.8 handshake and sends a full frame in 32-bit true colour that matches the framebuffer', async () => {
    const { m, client } = await setup();
    m.set(0, 0); // bottom-left
    m.set(100, 63); // top row
    m.set(37, 20);
    const init = await client.handshake();
    expect(init).toMatchObject({ width: 128, height: 64, name: 'test-oberon' });
    expect([init.format[0], init.format[3]]).toEqual([32, 1]); // 32 bpp true colour
    client.requestUpdate(false, 0, 0, 128, 64);
    const [r] = await client.readUpdate(4);
    expect(r).toMatchObject({ x: 0, y: 0, w: 128, h: 64 });
    for (let row = 0; row < 64; row++) {
      for (let x = 0; x < 128; x++) {
        const px = r.pixels.readUInt32LE((row * 128 + x) * 4) & 0xffffff;
        expect(px).toBe(m.lit(x, 63 - row) ? FG : BG);
      }
    }
  });

  it('falls back to RFB 3.3 (server-chosen security None)', async () => {
    const { client } = await setup();
    const init = await client.handshake('RFB 003.003\n');
    expect(init.width).toBe(128);
    client.requestUpdate(false, 0, 0, 32, 1);
    expect((await client.readUpdate(4))[0].w).toBe(32);
  });

  it('answers incremental requests only when the screen changes, with just the changed rectangle', async () => {
    const { m, client } = await setup();
    await client.handshake('RFB 003.007\n');
    client.requestUpdate(false, 0, 0, 128, 64);
    await client.readUpdate(4);
    client.requestUpdate(true, 0, 0, 128, 64);
    await new Promise((r) => setTimeout(r, 60));
    expect(client.pending()).toBe(0); // nothing changed, nothing sent
    m.set(70, 10); // word column 2, RFB row 53
    const rects = await client.readUpdate(4);
    expect(rects).toHaveLength(1);
    expect(rects[0]).toMatchObject({ x: 64, y: 53, w: 32, h: 1 });
    expect(rects[0].pixels.readUInt32LE(6 * 4) & 0xffffff).toBe(FG);
    expect(rects[0].pixels.readUInt32LE(5 * 4) & 0xffffff).toBe(BG);
  });

  it('honours SetPixelFormat: 8-bit colour map (with SetColourMapEntries) and 8-bit true colour', async () => {
    const { m, client } = await setup();
    m.set(1, 63);
    await client.handshake();
    const fmt = Buffer.alloc(20);
    fmt[0] = 0;
    fmt[4] = 8; // bpp
    fmt[5] = 8; // depth
    fmt[7] = 0; // colour map
    client.write(fmt);
    const map = await client.read(18);
    expect([map[0], map.readUInt16BE(4)]).toEqual([1, 2]);
    expect(map.readUInt16BE(12) >> 8).toBe(FG >>> 16); // entry 1 red = foreground red
    client.requestUpdate(false, 0, 0, 4, 1);
    expect([...(await client.readUpdate(1))[0].pixels]).toEqual([0, 1, 0, 0]);

    const bgr233 = Buffer.alloc(20);
    bgr233[0] = 0;
    bgr233[4] = 8;
    bgr233[5] = 8;
    bgr233[7] = 1; // true colour
    bgr233.writeUInt16BE(7, 8); // red max
    bgr233.writeUInt16BE(7, 10); // green max
    bgr233.writeUInt16BE(3, 12); // blue max
    bgr233[14] = 0;
    bgr233[15] = 3;
    bgr233[16] = 6;
    client.write(bgr233);
    client.requestUpdate(false, 0, 0, 2, 1);
    const px = (await client.readUpdate(1))[0].pixels;
    const expect233 = (rgb: number) =>
      Math.round((((rgb >>> 16) & 255) * 7) / 255) |
      (Math.round((((rgb >>> 8) & 255) * 7) / 255) << 3) |
      (Math.round(((rgb & 255) * 3) / 255) << 6);
    expect([...px]).toEqual([expect233(BG), expect233(FG)]);
  });

  it('honours 16-bit RGB565 in both byte orders', async () => {
    const { m, client } = await setup();
    m.set(1, 63);
    await client.handshake();
    const rgb565 = (rgb: number) =>
      (Math.round((((rgb >>> 16) & 255) * 31) / 255) << 11) |
      (Math.round((((rgb >>> 8) & 255) * 63) / 255) << 5) |
      Math.round(((rgb & 255) * 31) / 255);
    for (const bigEndian of [false, true]) {
      const f = Buffer.alloc(20);
      f[4] = 16;
      f[5] = 16;
      f[6] = bigEndian ? 1 : 0;
      f[7] = 1;
      f.writeUInt16BE(31, 8);
      f.writeUInt16BE(63, 10);
      f.writeUInt16BE(31, 12);
      f[14] = 11;
      f[15] = 5;
      f[16] = 0;
      client.write(f);
      client.requestUpdate(false, 0, 0, 2, 1);
      const px = (await client.readUpdate(2))[0].pixels;
      const read = (i: number) => (bigEndian ? px.readUInt16BE(i * 2) : px.readUInt16LE(i * 2));
      expect([read(0), read(1)]).toEqual([rgb565(BG), rgb565(FG)]);
    }
  });

  it('turns X11 key events into PS/2 set-2 sequences (Shift, Enter, Backspace, Esc, arrows, F1)', async () => {
    const { m, client } = await setup();
    await client.handshake();
    const press = (k: number) => {
      client.key(k, true);
      client.key(k, false);
    };
    press(0x61); // a
    client.key(0xffe1, true); // Shift_L down
    press(0x41); // A with shift held
    client.key(0xffe1, false);
    press(0x7e); // '~' sent without a Shift event
    press(0xff0d); // Return
    press(0xff08); // BackSpace
    press(0xff1b); // Escape
    press(0xff52); // Up
    press(0xffbe); // F1
    await new Promise((r) => setTimeout(r, 100));
    expect(m.keys).toEqual([
      [0x1c],
      [0xf0, 0x1c],
      [0x12],
      [0x1c],
      [0xf0, 0x1c],
      [0xf0, 0x12],
      [0x12, 0x0e, 0xf0, 0x12],
      [0xf0, 0x0e],
      [0x5a],
      [0xf0, 0x5a],
      [0x66],
      [0xf0, 0x66],
      [0x76],
      [0xf0, 0x76],
      [0xe0, 0x75],
      [0xe0, 0xf0, 0x75],
      [0x05],
      [0xf0, 0x05],
    ]);
  });

  it('turns pointer events into Oberon mouse states with y measured from the bottom', async () => {
    const { m, client } = await setup();
    await client.handshake();
    client.pointer(0, 10, 0); // top-left
    client.pointer(2, 10, 0); // middle down
    client.pointer(0, 10, 0);
    client.pointer(1 | 4, 127, 63); // left + right at bottom-right
    client.pointer(0, 500, 500); // clamped
    await new Promise((r) => setTimeout(r, 100));
    const none = { left: false, middle: false, right: false };
    expect(m.mice).toEqual([
      { x: 10, y: 63, buttons: none },
      { x: 10, y: 63, buttons: { ...none, middle: true } },
      { x: 10, y: 63, buttons: none },
      { x: 127, y: 0, buttons: { left: true, middle: false, right: true } },
      { x: 127, y: 0, buttons: none }, // clamped to the screen's bottom-right corner
    ]);
  });

  it('drops a client that speaks nonsense and keeps serving others', async () => {
    const { server, client } = await setup();
    await client.handshake();
    client.write([99]);
    await new Promise((r) => client.socket.once('close', r));
    const other = await RawClient.open(server.port);
    expect((await other.handshake()).width).toBe(128);
    other.socket.destroy();
  });
});

async function until(ok: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('#17.3 backpressure and idle clients', () => {
  const sentBytes = async (s: RfbServer): Promise<number> =>
    (await s.metrics.getSingleMetric('retrokube_rfb_sent_bytes_total')?.get())?.values[0]?.value ?? 0;

  it('a client that never reads gets at most a bounded queue, then is dropped; others keep being served', async () => {
    const m = new FakeMachine();
    const server = await startRfbServer({
      screen: m,
      input: m,
      pollMs: 5,
      maxQueuedBytes: 64 * 1024,
      behindMs: 1500,
    });
    servers.push(server);
    const greedy = await RawClient.open(server.port);
    await greedy.handshake();
    greedy.socket.pause(); // never reads again
    // 3000 full-frame requests at 32 KiB each: ~96 MiB if every answer were queued.
    for (let i = 0; i < 3000; i++) greedy.requestUpdate(false, 0, 0, 128, 64);
    // An honest viewer is served meanwhile.
    const honest = await RawClient.open(server.port);
    await honest.handshake();
    honest.requestUpdate(false, 0, 0, 128, 64);
    expect((await honest.readUpdate(4, 10_000))[0].w).toBe(128);
    // The greedy one is dropped once it stayed behind 1.5 s (its paused socket does not see the close).
    await until(() => server.clients() === 1, 20_000, 'the greedy client to be dropped');
    // What was handed to the socket: the kernel's loopback buffers plus the bound, not 96 MiB.
    expect(await sentBytes(server)).toBeLessThan(24 << 20);
    honest.socket.destroy();
    greedy.socket.destroy();
  }, 60_000);

  it('frees the slot of a client that stays idle', async () => {
    const m = new FakeMachine();
    const server = await startRfbServer({ screen: m, input: m, pollMs: 5, idleMs: 300 });
    servers.push(server);
    const idle = await RawClient.open(server.port);
    await idle.handshake();
    await until(() => server.clients() === 0, 10_000, 'the idle client to be dropped');
    idle.socket.destroy();
  });
});

describe('#17.4 VNC Authentication (a password from a Secret)', () => {
  it('DES matches the FIPS test vectors', () => {
    expect(
      desEncryptBlock(
        Buffer.from('133457799BBCDFF1', 'hex'),
        Buffer.from('0123456789ABCDEF', 'hex'),
      ).toString('hex'),
    ).toBe('85e813540f0ab405');
    expect(
      desEncryptBlock(
        Buffer.from('0E329232EA6D0D73', 'hex'),
        Buffer.from('8787878787878787', 'hex'),
      ).toString('hex'),
    ).toBe('0000000000000000');
  });

  async function withPassword(password: string) {
    const m = new FakeMachine();
    const server = await startRfbServer({ screen: m, input: m, pollMs: 5, password });
    servers.push(server);
    const client = await RawClient.open(server.port);
    expect((await client.read(12)).toString()).toBe('RFB 003.008\n');
    client.write(Buffer.from('RFB 003.008\n'));
    expect([...(await client.read(2))]).toEqual([1, 2]); // only VNC Authentication is offered
    client.write([2]);
    const challenge = await client.read(16);
    return { server, client, challenge };
  }

  it('lets in a viewer with the right password and turns away a wrong one with a reason', async () => {
    const ok = await withPassword('s3cret');
    ok.client.write(vncAuthResponse('s3cret', ok.challenge));
    expect((await ok.client.read(4)).readUInt32BE(0)).toBe(0);
    ok.client.write([1]); // shared
    const init = await ok.client.read(24);
    expect(init.readUInt16BE(0)).toBe(128);
    ok.client.socket.destroy();

    const bad = await withPassword('s3cret');
    bad.client.write(vncAuthResponse('guess', bad.challenge));
    expect((await bad.client.read(4)).readUInt32BE(0)).toBe(1);
    const len = (await bad.client.read(4)).readUInt32BE(0);
    expect((await bad.client.read(len)).toString()).toBe('authentication failed');
    await new Promise((r) => bad.client.socket.once('close', r));
    const failures = await bad.server.metrics.getSingleMetric('retrokube_rfb_auth_failures_total')?.get();
    expect(failures?.values[0]?.value).toBe(1);
  });

  it('refuses a client that asks for security None when a password is set', async () => {
    const m = new FakeMachine();
    const server = await startRfbServer({ screen: m, input: m, password: 'pw' });
    servers.push(server);
    const c = await RawClient.open(server.port);
    await c.read(12);
    c.write(Buffer.from('RFB 003.008\n'));
    await c.read(2);
    c.write([1]);
    expect((await c.read(4)).readUInt32BE(0)).toBe(1); // failed, with a reason, never the screen
    await new Promise((r) => c.socket.once('close', r));
  });
});

describe('#28.2 guessing and trickling', () => {
  it('rate-limits wrong passwords: 40 fast guesses get at most a few checked, then a wait with a reason', async () => {
    const m = new FakeMachine();
    const server = await startRfbServer({ screen: m, input: m, pollMs: 5, password: 'right' });
    servers.push(server);
    const replies: string[] = [];
    for (let i = 0; i < 40; i++) {
      const c = await RawClient.open(server.port);
      await c.read(12);
      c.write(Buffer.from('RFB 003.008\n'));
      await c.read(2);
      c.write([2]);
      const challenge = await c.read(16);
      c.write(vncAuthResponse(`guess${i}`, challenge));
      expect((await c.read(4)).readUInt32BE(0)).toBe(1);
      replies.push((await c.read((await c.read(4)).readUInt32BE(0))).toString());
      c.socket.destroy();
    }
    const checked = await server.metrics.getSingleMetric('retrokube_rfb_auth_failures_total')?.get();
    expect(checked?.values[0]?.value).toBeLessThanOrEqual(5); // 1,012 guesses/s were possible before
    expect(replies.at(-1)).toMatch(/too many wrong passwords: try again in \d+ s/);
  });

  it('16 clients trickling one byte at a time neither hold the slots nor outlast the absolute handshake deadline', async () => {
    const m = new FakeMachine();
    const server = await startRfbServer({ screen: m, input: m, pollMs: 5, handshakeTimeoutMs: 1_500 });
    servers.push(server);
    const tricklers: Socket[] = [];
    const timers: NodeJS.Timeout[] = [];
    for (let i = 0; i < 16; i++) {
      const s = connect(server.port, '127.0.0.1');
      s.on('error', () => {});
      await new Promise((r) => s.once('connect', r));
      const version = Buffer.from('RFB 003.008\n');
      let k = 0;
      // one byte every 300 ms: before, each byte reset a per-byte timeout and the slot was held for good
      timers.push(
        setInterval(() => {
          if (k < version.length - 1 && !s.destroyed) s.write(version.subarray(k, ++k));
        }, 300),
      );
      tricklers.push(s);
    }
    try {
      // a real viewer gets in at once (a trickler gives way), ...
      const viewer = await RawClient.open(server.port);
      expect((await viewer.handshake()).width).toBe(128);
      // ... and every trickler is gone once the absolute deadline passed, although it kept sending
      await expect
        .poll(() => tricklers.filter((s) => !s.destroyed && s.readyState === 'open').length, {
          timeout: 10_000,
        })
        .toBe(0);
      viewer.socket.destroy();
    } finally {
      for (const t of timers) clearInterval(t);
      for (const s of tricklers) s.destroy();
    }
  });
});
