// A small RFB 3.8 client on a canvas, over a WebSocket that carries the raw RFB byte stream (the
// console bridges it to the machine's RFB server). Security None, Raw encoding, 32-bit true
// colour laid out as the canvas wants it (r, g, b, x), incremental updates requested one after
// the other. Enough for any RFB server that speaks Raw, and ours speaks nothing else.
import type { ScreenLink } from './backend.ts';

export const LIMITS = {
  maxRectPixels: 4096 * 4096, // a rectangle bigger than this is not a screen: the stream is broken
  maxText: 1 << 20, // server cut text accepted
} as const;

type Need = { n: number; next: (b: Uint8Array) => void };

export class RfbClient implements ScreenLink {
  private readonly ws: WebSocket;
  private readonly canvas: HTMLCanvasElement;
  private readonly status: (text: string) => void;
  private queue: Uint8Array[] = [];
  private queued = 0;
  private need: Need;
  private ctx: CanvasRenderingContext2D | null = null;
  private width = 0;
  private height = 0;
  private closed = false;

  constructor(url: string, canvas: HTMLCanvasElement, status: (text: string) => void) {
    this.canvas = canvas;
    this.status = status;
    this.need = { n: 12, next: (b) => this.version(b) };
    this.ws = new WebSocket(url);
    this.ws.binaryType = 'arraybuffer';
    this.ws.onmessage = (e) => this.feed(new Uint8Array(e.data as ArrayBuffer));
    this.ws.onclose = () => {
      if (!this.closed) status('screen disconnected');
      this.closed = true;
    };
    this.ws.onerror = () => status('screen not reachable');
    status('connecting');
  }

  private send(bytes: number[] | Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(Uint8Array.from(bytes));
  }

  private feed(chunk: Uint8Array): void {
    this.queue.push(chunk);
    this.queued += chunk.length;
    while (!this.closed && this.queued >= this.need.n) {
      const want = this.need;
      const out = new Uint8Array(want.n);
      let off = 0;
      while (off < want.n) {
        const head = this.queue[0];
        const take = Math.min(head.length, want.n - off);
        out.set(head.subarray(0, take), off);
        off += take;
        if (take === head.length) this.queue.shift();
        else this.queue[0] = head.subarray(take);
      }
      this.queued -= want.n;
      want.next(out);
    }
  }

  private expect(n: number, then: (b: Uint8Array) => void): void {
    this.need = { n, next: then };
  }

  private fail(why: string): void {
    this.status(why);
    this.close();
  }

  private version(b: Uint8Array) {
    const text = new TextDecoder().decode(b);
    if (!/^RFB 003\.00[3-8]\n$/.test(text)) return this.fail(`not an RFB server (${JSON.stringify(text)})`);
    this.send(new TextEncoder().encode('RFB 003.008\n'));
    this.expect(1, (n) => this.expect(n[0], (types) => this.security(types)));
  }

  private security(types: Uint8Array) {
    if (!types.includes(1)) return this.fail('the server wants a password; this console speaks only None');
    this.send([1]);
    this.expect(4, (r) => {
      if (new DataView(r.buffer).getUint32(0) !== 0) return this.fail('the server refused the connection');
      this.send([1]); // ClientInit: shared, other viewers stay
      this.expect(24, (s) => this.serverInit(s));
    });
  }

  private serverInit(b: Uint8Array): void {
    const v = new DataView(b.buffer);
    this.width = v.getUint16(0);
    this.height = v.getUint16(2);
    const nameLen = v.getUint32(20);
    this.expect(nameLen, () => {
      this.canvas.width = this.width;
      this.canvas.height = this.height;
      this.ctx = this.canvas.getContext('2d');
      // SetPixelFormat: 32 bpp, depth 24, little endian, true colour, r at bit 0, g 8, b 16.
      this.send([0, 0, 0, 0, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16, 0, 0, 0]);
      this.send([2, 0, 0, 1, 0, 0, 0, 0]); // SetEncodings: Raw
      this.request(false);
      this.status('live');
      this.message();
    });
  }

  private request(incremental: boolean): void {
    const w = this.width;
    const h = this.height;
    this.send([3, incremental ? 1 : 0, 0, 0, 0, 0, w >> 8, w & 255, h >> 8, h & 255]);
  }

  private message(): void {
    this.expect(1, (t) => {
      switch (t[0]) {
        case 0:
          return this.expect(3, (h) => this.rects((h[1] << 8) | h[2]));
        case 2:
          return this.message(); // bell
        case 3:
          return this.expect(7, (h) => {
            const len = new DataView(h.buffer).getUint32(3);
            if (len > LIMITS.maxText) return this.fail('server cut text too long');
            this.expect(len, () => this.message());
          });
        default:
          return this.fail(`unexpected RFB message ${t[0]}`);
      }
    });
  }

  private rects(left: number) {
    if (left === 0) {
      this.request(true);
      return this.message();
    }
    this.expect(12, (h) => {
      const v = new DataView(h.buffer);
      const x = v.getUint16(0);
      const y = v.getUint16(2);
      const w = v.getUint16(4);
      const hh = v.getUint16(6);
      const enc = v.getInt32(8);
      if (enc !== 0) return this.fail(`unexpected encoding ${enc}`);
      if (w * hh > LIMITS.maxRectPixels) return this.fail('rectangle too large');
      if (w * hh === 0) return this.rects(left - 1);
      this.expect(w * hh * 4, (px) => {
        for (let i = 3; i < px.length; i += 4) px[i] = 255;
        this.ctx?.putImageData(new ImageData(new Uint8ClampedArray(px.buffer as ArrayBuffer), w, hh), x, y);
        this.rects(left - 1);
      });
    });
  }

  key(keysym: number, down: boolean): void {
    this.send([
      4,
      down ? 1 : 0,
      0,
      0,
      (keysym >>> 24) & 255,
      (keysym >>> 16) & 255,
      (keysym >>> 8) & 255,
      keysym & 255,
    ]);
  }

  pointer(x: number, y: number, mask: number): void {
    this.send([5, mask & 7, x >> 8, x & 255, y >> 8, y & 255]);
  }

  close(): void {
    this.closed = true;
    this.ws.close();
  }
}
