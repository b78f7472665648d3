// An RFB (VNC) server for one machine's screen and input: RFB 3.8 with 3.7/3.3 fallback,
// security None or, with a password, VNC Authentication, Raw encoding of only the changed rectangles, any 8/16/32-bit pixel format
// (true colour or a two-entry colour map), X11 keysyms to PS/2 set 2, pointer to Oberon's mouse.
// Any VNC client, and noVNC through a websocket proxy, can watch and drive a machine with it.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { Counter, Gauge, Registry } from 'prom-client';
import { logger } from '../../util/log.ts';
import { OBERON_PALETTE, type Palette } from '../png.ts';
import type { FrameSnapshot, MachineInput, MachineScreen } from '../screen-input.ts';
import { vncAuthResponse } from './des.ts';
import { KeyTranslator } from './keysyms.ts';
import {
  DEFAULT_FORMAT,
  decodePixelFormat,
  dirtyRects,
  encodePixelFormat,
  type PixelFormat,
  pixelBytes,
  type Rect,
  rawRect,
} from './pixels.ts';

const log = logger('rfb');

export const LIMITS = {
  maxClients: 16, // viewers of one machine; more is a leak or an attack, not a classroom
  pollMs: 25, // how often a waiting incremental request looks for screen changes (40 per second)
  maxCutText: 1 << 20, // ClientCutText bytes accepted; Oberon's clipboard is small
  maxEncodings: 1024, // SetEncodings entries; real clients send a few dozen
  handshakeTimeoutMs: 10_000, // a client that has not finished the handshake this long after connecting is dropped (absolute: bytes do not extend it)
  maxHandshaking: 4, // connections still in the handshake; a newer one evicts the oldest (a real client takes milliseconds)
  // Wrong VNC passwords: after freeGuesses failures, each further attempt waits guessDelayMs, doubling per failure up to
  // maxGuessDelayMs; a success resets it. Attempts while blocked are refused unchecked. Per server (every local user shares 127.0.0.1).
  freeGuesses: 3,
  guessDelayMs: 1_000,
  maxGuessDelayMs: 5 * 60_000,
  // Backpressure: a full 1024x768 frame at 32 bits is 3 MiB. Updates wait while more than this is
  // queued for the socket, so one client holds at most this plus one frame, however it behaves.
  maxQueuedBytes: 4 << 20,
  behindMs: 30_000, // a client whose queue stays over maxQueuedBytes this long is dropped
  idleMs: 10 * 60_000, // no byte either way this long (after the handshake): the slot is freed
} as const;

const MSG = {
  setPixelFormat: 0,
  setEncodings: 2,
  updateRequest: 3,
  keyEvent: 4,
  pointerEvent: 5,
  cutText: 6,
} as const;

export interface RfbServerOptions {
  screen: MachineScreen;
  input: MachineInput;
  port?: number; // 0 or omitted: any free port
  host?: string; // default 127.0.0.1
  name?: string; // desktop name shown by clients
  palette?: Palette;
  pollMs?: number;
  /**
   * With a password, the only security type offered is VNC Authentication (2): a DES
   * challenge-response on the password's first 8 characters. Without, None (1).
   */
  password?: string;
  /** Overrides of the limits (tests use short ones). */
  handshakeTimeoutMs?: number;
  maxQueuedBytes?: number;
  behindMs?: number;
  idleMs?: number;
}

export interface RfbServer {
  readonly port: number;
  readonly metrics: Registry;
  clients(): number;
  close(): Promise<void>;
}

type Phase = 'version' | 'security' | 'auth' | 'init' | 'normal' | 'closed';

class Client {
  phase: Phase = 'version';
  minor = 8;
  buf: Buffer = Buffer.alloc(0);
  format: PixelFormat = DEFAULT_FORMAT;
  pixels: [Buffer, Buffer];
  known: Uint32Array | undefined; // what the client's screen shows, word for word
  knownVersion = -1;
  pending: { incremental: boolean; rect: Rect } | undefined;
  keys = new KeyTranslator();
  mouse = { x: -1, y: -1, mask: -1 };
  behindSince = 0; // when the socket's queue went over the bound (0 = it is not)
  handshake: NodeJS.Timeout | undefined; // the absolute handshake deadline
  challenge: Buffer | undefined; // VNC Authentication: what this client must encrypt
  readonly socket: Socket;
  readonly palette: Palette;

  constructor(socket: Socket, palette: Palette) {
    this.socket = socket;
    this.palette = palette;
    this.pixels = pixelBytes(DEFAULT_FORMAT, palette);
  }

  take(n: number): Buffer | undefined {
    if (this.buf.length < n) return undefined;
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
}

export async function startRfbServer(opts: RfbServerOptions): Promise<RfbServer> {
  const palette = opts.palette ?? OBERON_PALETTE;
  const name = Buffer.from(opts.name ?? 'Oberon', 'utf8');
  const pollMs = opts.pollMs ?? LIMITS.pollMs;
  const maxQueued = opts.maxQueuedBytes ?? LIMITS.maxQueuedBytes;
  const behindMs = opts.behindMs ?? LIMITS.behindMs;
  const idleMs = opts.idleMs ?? LIMITS.idleMs;
  const clients = new Set<Client>();
  const metrics = new Registry();
  const connections = new Gauge({
    name: 'retrokube_rfb_clients',
    help: 'connected RFB clients',
    registers: [metrics],
  });
  const sentBytes = new Counter({
    name: 'retrokube_rfb_sent_bytes_total',
    help: 'framebuffer bytes sent',
    registers: [metrics],
  });
  const updates = new Counter({
    name: 'retrokube_rfb_updates_total',
    help: 'FramebufferUpdate messages sent',
    registers: [metrics],
  });
  const authFailures = new Counter({
    name: 'retrokube_rfb_auth_failures_total',
    help: 'VNC Authentication attempts with a wrong password',
    registers: [metrics],
  });
  const password = opts.password;
  const securityType = password === undefined ? 1 : 2;
  const handshakeMs = opts.handshakeTimeoutMs ?? LIMITS.handshakeTimeoutMs;
  let failures = 0; // wrong passwords since the last right one
  let blockedUntil = 0; // no password is checked before this time
  const guessBlocked = (): number => Math.max(0, blockedUntil - Date.now());
  /** VNC Authentication: send a fresh 16-byte challenge and wait for its response. */
  const challenge = (c: Client): void => {
    c.challenge = randomBytes(16);
    send(c, c.challenge);
    c.phase = 'auth';
  };
  let timer: NodeJS.Timeout | undefined;

  const drop = (c: Client, reason: string): void => {
    if (c.phase === 'closed') return;
    c.phase = 'closed';
    log.info({ reason }, 'rfb client dropped');
    c.socket.destroy();
  };

  const send = (c: Client, data: Buffer): void => {
    if (c.phase !== 'closed') c.socket.write(data);
  };

  const sendUpdate = (c: Client, snap: FrameSnapshot, rects: Rect[]): void => {
    const parts: Buffer[] = [];
    const head = Buffer.alloc(4);
    head[0] = 0;
    head.writeUInt16BE(rects.length, 2);
    parts.push(head);
    for (const r of rects) {
      const rh = Buffer.alloc(12);
      rh.writeUInt16BE(r.x, 0);
      rh.writeUInt16BE(r.y, 2);
      rh.writeUInt16BE(r.w, 4);
      rh.writeUInt16BE(r.h, 6);
      rh.writeInt32BE(0, 8); // Raw
      parts.push(rh, rawRect(snap, r, c.pixels));
    }
    const msg = Buffer.concat(parts);
    send(c, msg);
    sentBytes.inc(msg.length);
    updates.inc();
    // remember what the client now shows: the words wholly inside the rectangles sent
    const span = snap.width >>> 5;
    if (!c.known || c.known.length !== snap.words.length)
      c.known = new Uint32Array(snap.words.length).fill(0x5a5a5a5a);
    for (const r of rects) {
      const w0 = Math.ceil(r.x / 32);
      const w1 = Math.floor((r.x + r.w) / 32);
      for (let row = r.y; row < r.y + r.h; row++) {
        const base = (snap.height - 1 - row) * span;
        for (let w = w0; w < w1; w++) c.known[base + w] = snap.words[base + w];
      }
    }
    c.knownVersion = snap.version;
  };

  /**
   * True while the client's socket queue is over the bound: nothing more is sent to it until it
   * reads. One that stays behind for behindMs is dropped (a client that never reads).
   */
  const behind = (c: Client): boolean => {
    if (c.socket.writableLength <= maxQueued) {
      c.behindSince = 0;
      return false;
    }
    const now = Date.now();
    if (c.behindSince === 0) c.behindSince = now;
    else if (now - c.behindSince >= behindMs)
      drop(c, `not reading: ${c.socket.writableLength} bytes queued for ${behindMs} ms`);
    return true;
  };

  /** Answers the client's pending request if there is something to send; returns true if answered. */
  const serve = (c: Client): boolean => {
    const req = c.pending;
    if (!req || c.phase !== 'normal') return false;
    if (behind(c)) return false; // the request stays pending; the poll timer retries
    const snap = opts.screen.snapshot();
    const screenRect = { x: 0, y: 0, w: snap.width, h: snap.height };
    const r = clip(req.rect, screenRect);
    if (!req.incremental || !c.known) {
      c.pending = undefined;
      sendUpdate(c, snap, r ? [r] : []);
      return true;
    }
    if (snap.version === c.knownVersion || !r) return false;
    const rects = dirtyRects(c.known, snap, r);
    c.knownVersion = snap.version;
    if (rects.length === 0) return false;
    c.pending = undefined;
    sendUpdate(c, snap, rects);
    return true;
  };

  const schedule = (): void => {
    const waiting = [...clients].some((c) => c.pending);
    if (waiting && !timer) {
      timer = setInterval(() => {
        for (const c of clients) serve(c);
        if (![...clients].some((c) => c.pending) && timer) {
          clearInterval(timer);
          timer = undefined;
        }
      }, pollMs);
      timer.unref();
    }
  };

  const handle = (c: Client): void => {
    for (;;) {
      if (c.phase === 'version') {
        const v = c.take(12);
        if (!v) return;
        const m = /^RFB (\d{3})\.(\d{3})\n$/.exec(v.toString('latin1'));
        if (!m || Number(m[1]) !== 3) {
          drop(c, `bad protocol version ${JSON.stringify(v.toString('latin1'))}`);
          return;
        }
        const minor = Number(m[2]);
        c.minor = minor >= 8 ? 8 : minor === 7 ? 7 : 3;
        if (c.minor === 3) {
          send(c, u32(securityType)); // RFB 3.3: the server chooses
          if (password === undefined) c.phase = 'init';
          else challenge(c);
        } else {
          send(c, Buffer.from([1, securityType])); // one type offered
          c.phase = 'security';
        }
      } else if (c.phase === 'security') {
        const t = c.take(1);
        if (!t) return;
        if (t[0] !== securityType) {
          if (c.minor === 8) {
            const reason = Buffer.from(`only security type ${securityType} is offered`);
            send(c, Buffer.concat([u32(1), u32(reason.length), reason]));
          }
          drop(c, `client chose security type ${t[0]}`);
          return;
        }
        if (password !== undefined) challenge(c);
        else {
          if (c.minor === 8) send(c, u32(0)); // SecurityResult OK
          c.phase = 'init';
        }
      } else if (c.phase === 'auth') {
        const r = c.take(16);
        if (!r) return;
        const wait = guessBlocked();
        if (wait > 0) {
          // too many wrong guesses: this attempt is not even checked
          const reason = Buffer.from(`too many wrong passwords: try again in ${Math.ceil(wait / 1000)} s`);
          send(c, c.minor === 8 ? Buffer.concat([u32(1), u32(reason.length), reason]) : u32(1));
          drop(c, 'VNC password guess while blocked');
          return;
        }
        const expected = vncAuthResponse(password ?? '', c.challenge ?? Buffer.alloc(16));
        if (!timingSafeEqual(r, expected)) {
          const reason = Buffer.from('authentication failed');
          send(c, c.minor === 8 ? Buffer.concat([u32(1), u32(reason.length), reason]) : u32(1));
          authFailures.inc();
          failures++;
          if (failures >= LIMITS.freeGuesses) {
            const delay = Math.min(
              LIMITS.maxGuessDelayMs,
              LIMITS.guessDelayMs * 2 ** (failures - LIMITS.freeGuesses),
            );
            blockedUntil = Date.now() + delay;
            log.warn({ failures, blockedMs: delay }, 'wrong VNC passwords: further attempts wait');
          }
          drop(c, 'wrong VNC password');
          return;
        }
        failures = 0;
        send(c, u32(0)); // SecurityResult OK (3.3, 3.7 and 3.8 all send it after VNC auth)
        c.phase = 'init';
      } else if (c.phase === 'init') {
        if (!c.take(1)) return; // shared flag: every client shares the one screen anyway
        const snap = opts.screen.snapshot();
        const head = Buffer.alloc(4);
        head.writeUInt16BE(snap.width, 0);
        head.writeUInt16BE(snap.height, 2);
        send(c, Buffer.concat([head, encodePixelFormat(DEFAULT_FORMAT), u32(name.length), name]));
        clearTimeout(c.handshake);
        c.handshake = undefined;
        c.socket.setTimeout(idleMs, () => drop(c, `idle for ${idleMs} ms`));
        c.phase = 'normal';
      } else if (c.phase === 'normal') {
        if (c.buf.length < 1) return;
        if (!message(c)) return;
      } else {
        return;
      }
    }
  };

  /** Handles one client message if complete; returns false when more bytes are needed. */
  const message = (c: Client): boolean => {
    const type = c.buf[0];
    switch (type) {
      case MSG.setPixelFormat: {
        const b = c.take(20);
        if (!b) return false;
        try {
          c.format = decodePixelFormat(b.subarray(4));
        } catch (err) {
          drop(c, (err as Error).message);
          return false;
        }
        c.pixels = pixelBytes(c.format, c.palette);
        c.known = undefined; // everything must be sent again in the new format
        if (!c.format.trueColour) {
          const map = Buffer.alloc(6 + 12);
          map[0] = 1; // SetColourMapEntries: first colour 0, two colours
          map.writeUInt16BE(0, 2);
          map.writeUInt16BE(2, 4);
          [c.palette.background, c.palette.foreground].forEach((rgb, i) => {
            map.writeUInt16BE(((rgb >>> 16) & 255) * 257, 6 + i * 6);
            map.writeUInt16BE(((rgb >>> 8) & 255) * 257, 8 + i * 6);
            map.writeUInt16BE((rgb & 255) * 257, 10 + i * 6);
          });
          send(c, map);
        }
        return true;
      }
      case MSG.setEncodings: {
        if (c.buf.length < 4) return false;
        const n = c.buf.readUInt16BE(2);
        if (n > LIMITS.maxEncodings) {
          drop(c, `SetEncodings with ${n} entries`);
          return false;
        }
        return c.take(4 + 4 * n) !== undefined; // we always answer with Raw, which every client accepts
      }
      case MSG.updateRequest: {
        const b = c.take(10);
        if (!b) return false;
        // One pending request per client, however many arrive while it is behind: a full request
        // stays full, and the areas merge (memory per client stays bounded).
        const rect = {
          x: b.readUInt16BE(2),
          y: b.readUInt16BE(4),
          w: b.readUInt16BE(6),
          h: b.readUInt16BE(8),
        };
        c.pending = {
          incremental: (c.pending?.incremental ?? true) && b[1] !== 0,
          rect: c.pending ? union(c.pending.rect, rect) : rect,
        };
        if (!serve(c)) schedule();
        return true;
      }
      case MSG.keyEvent: {
        const b = c.take(8);
        if (!b) return false;
        const bytes = c.keys.translate(b.readUInt32BE(4), b[1] !== 0);
        if (bytes) opts.input.ps2(bytes);
        return true;
      }
      case MSG.pointerEvent: {
        const b = c.take(6);
        if (!b) return false;
        const snap = opts.screen.snapshot();
        const mask = b[1] & 7;
        const x = Math.min(b.readUInt16BE(2), snap.width - 1);
        const y = snap.height - 1 - Math.min(b.readUInt16BE(4), snap.height - 1);
        if (x !== c.mouse.x || y !== c.mouse.y || mask !== c.mouse.mask) {
          c.mouse = { x, y, mask };
          opts.input.mouse(x, y, {
            left: (mask & 1) !== 0,
            middle: (mask & 2) !== 0,
            right: (mask & 4) !== 0,
          });
        }
        return true;
      }
      case MSG.cutText: {
        if (c.buf.length < 8) return false;
        const len = c.buf.readUInt32BE(4);
        if (len > LIMITS.maxCutText) {
          drop(c, `ClientCutText of ${len} bytes`);
          return false;
        }
        return c.take(8 + len) !== undefined; // clipboard text is not passed on (yet)
      }
      default:
        drop(c, `unknown message type ${type}`);
        return false;
    }
  };

  const server: Server = createServer((socket) => {
    // Connections still in the handshake hold no slot for long: the oldest gives way to a new one.
    const handshaking = [...clients].filter((x) => x.phase !== 'normal' && x.phase !== 'closed');
    if (handshaking.length >= LIMITS.maxHandshaking) drop(handshaking[0], 'evicted by a newer handshake');
    if ([...clients].filter((x) => x.phase !== 'closed').length >= LIMITS.maxClients) {
      socket.end(Buffer.from('RFB 003.008\n'));
      socket.destroy();
      log.warn({ max: LIMITS.maxClients }, 'rfb client refused: too many clients');
      return;
    }
    const c = new Client(socket, palette);
    clients.add(c);
    connections.set(clients.size);
    socket.setNoDelay(true);
    c.handshake = setTimeout(() => drop(c, 'handshake not finished in time'), handshakeMs);
    socket.on('data', (chunk: Buffer) => {
      c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk]);
      try {
        handle(c);
      } catch (err) {
        // e.g. the machine refused the input: this client goes, the server and the machine stay
        drop(c, `error handling a message: ${(err as Error).message}`);
      }
    });
    socket.on('error', (err) => log.debug({ err: err.message }, 'rfb socket error'));
    socket.on('close', () => {
      clearTimeout(c.handshake);
      c.phase = 'closed';
      clients.delete(c);
      connections.set(clients.size);
    });
    send(c, Buffer.from('RFB 003.008\n'));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  log.info({ port }, 'rfb server listening');

  return {
    port,
    metrics,
    clients: () => clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        if (timer) clearInterval(timer);
        for (const c of clients) c.socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function u32(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}

function union(a: Rect, b: Rect): Rect {
  const x = Math.min(a.x, b.x);
  const y = Math.min(a.y, b.y);
  return { x, y, w: Math.max(a.x + a.w, b.x + b.w) - x, h: Math.max(a.y + a.h, b.y + b.h) - y };
}

function clip(r: Rect, bounds: Rect): Rect | undefined {
  const x0 = Math.max(r.x, bounds.x);
  const y0 = Math.max(r.y, bounds.y);
  const x1 = Math.min(r.x + r.w, bounds.x + bounds.w);
  const y1 = Math.min(r.y + r.h, bounds.y + bounds.h);
  return x1 > x0 && y1 > y0 ? { x: x0, y: y0, w: x1 - x0, h: y1 - y0 } : undefined;
}
