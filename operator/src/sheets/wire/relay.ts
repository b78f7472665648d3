// A Sheetwire endpoint (spec §8). `expose` (side A) accepts TCP connections and writes a2b;
// `serve` (side B) dials the service's target and writes b2a. Each tick: poll the peer's frames →
// deliver them to sockets → flush everything queued in ONE append → wait for the next tick.
//
// Semantics: `open` starts a connection (serve dials its target); `data` carries bytes in row
// order; `close` says "this direction is finished" (a TCP FIN): the receiving side half-closes its
// socket, and a connection is forgotten once both directions are closed or a socket fails.
// Better than the reference: a restarted side skips the tab's history (no replayed opens), a 429
// keeps the frames queued and backs off, every socket's queued bytes are bounded (the socket is
// paused past the bound), and a listener binds loopback unless told otherwise.
import net from 'node:net';
import { logger } from '../../util/log.ts';
import { type Dir, dataFrames, type Frame, newConnId, payloadBytes } from './frames.ts';
import { RetryLater, type WireTransport } from './transport.ts';

export const LIMITS = {
  defaultTickMs: 1_100, // reference SHEETWIRE_TICK: one write per tick ≈ 54/min, under Google's 60/min/user
  maxQueuedBytesPerConn: 4 * 1024 * 1024, // a socket is paused while this much of its data awaits a flush
  maxFramesPerFlush: 60, // ≈ 1.8 MB of base64 per append, under Google's recommended 2 MB payload
  listenBacklog: 64, // as the reference
  maxConnections: 256, // open connections per endpoint; more are refused (bounded memory)
  // Inbound (tab → local socket): bytes written to a local client that does not read them wait in
  // memory. Past this bound the tab is not read (backpressure: the rows wait in the sheet) ...
  maxInboundBytesPerConn: 4 * 1024 * 1024,
  // ... for at most this long; a client still that far behind is dropped (with a log line), so one
  // client that never reads cannot stall the other connections for good.
  inboundStallMs: 30_000,
  // One poll may bring what the peer flushed since the last: a connection this far behind is dropped at once.
  hardInboundBytesPerConn: 16 * 1024 * 1024,
} as const;

export interface WireStats {
  framesOut: number;
  framesIn: number;
  bytesOut: number;
  bytesIn: number;
  flushes: number;
  retries: number;
  /** Connections dropped because their local client did not read what the peer sent. */
  dropped: number;
  /** The most bytes ever waiting for one local client (bounded by hardInboundBytesPerConn). */
  maxInboundWaiting: number;
}

interface Conn {
  id: string;
  socket: net.Socket;
  queued: number; // bytes of this connection waiting in the outbound queue
  sentClose: boolean;
  gotClose: boolean;
  fullSince?: number; // when its inbound bytes first passed the bound (unset while under it)
}

export interface EndpointOptions {
  transport: WireTransport;
  service: string;
  tickMs?: number;
  /** Default LIMITS.inboundStallMs (tests shorten it). */
  inboundStallMs?: number;
}

abstract class Endpoint {
  protected readonly t: WireTransport;
  protected readonly service: string;
  protected readonly tickMs: number;
  private readonly stallMs: number;
  protected abstract readonly outbound: Dir;
  protected readonly conns = new Map<string, Conn>();
  protected readonly log = logger('sheetwire');
  private queue: Frame[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private holdUntil = 0;
  private loop: Promise<void> | undefined;
  readonly stats: WireStats = {
    framesOut: 0,
    framesIn: 0,
    bytesOut: 0,
    bytesIn: 0,
    flushes: 0,
    retries: 0,
    dropped: 0,
    maxInboundWaiting: 0,
  };

  constructor(o: EndpointOptions) {
    this.t = o.transport;
    this.service = o.service;
    this.tickMs = o.tickMs ?? LIMITS.defaultTickMs;
    this.stallMs = o.inboundStallMs ?? LIMITS.inboundStallMs;
  }

  protected enqueue(frames: Frame[], conn?: Conn): void {
    for (const f of frames) {
      this.queue.push(f);
      if (f.kind === 'data' && conn) {
        const n = (f.payload.length * 3) / 4;
        conn.queued += n;
        this.stats.bytesOut += n;
      }
    }
    if (conn && conn.queued > LIMITS.maxQueuedBytesPerConn) conn.socket.pause();
  }

  /** Wires a socket's events to frames. */
  protected attach(c: Conn): void {
    c.socket.on('data', (b: Buffer) => this.enqueue(dataFrames(c.id, this.outbound, b), c));
    c.socket.on('end', () => this.sendClose(c));
    c.socket.on('error', (e) => {
      this.log.debug({ conn: c.id, err: e.message }, 'socket error');
      this.sendClose(c);
      this.forget(c);
    });
    c.socket.on('close', () => {
      this.sendClose(c);
      if (c.gotClose) this.forget(c);
    });
  }

  protected sendClose(c: Conn): void {
    if (c.sentClose) return;
    c.sentClose = true;
    this.enqueue([{ conn: c.id, kind: 'close', dir: this.outbound, service: '', payload: '' }]);
  }

  protected forget(c: Conn): void {
    c.socket.destroy();
    this.conns.delete(c.id);
  }

  protected deliver(f: Frame): void {
    const c = this.conns.get(f.conn);
    if (!c) return; // frames of connections we never knew (or already forgot) are ignored
    if (f.kind === 'data') {
      const bytes = payloadBytes(f);
      this.stats.bytesIn += bytes.length;
      c.socket.write(bytes);
      const waiting = c.socket.writableLength;
      this.stats.maxInboundWaiting = Math.max(this.stats.maxInboundWaiting, waiting);
      if (waiting > LIMITS.hardInboundBytesPerConn) this.drop(c, waiting);
    } else if (f.kind === 'close') {
      c.gotClose = true;
      c.socket.end(); // half-close: the peer finished writing
      if (c.sentClose) this.forget(c);
    }
  }

  /** A local client that reads nothing: its connection ends here and at the peer. */
  private drop(c: Conn, waiting: number): void {
    this.stats.dropped++;
    this.log.warn(
      { conn: c.id, service: this.service, waitingBytes: waiting },
      `a local client of ${this.service} does not read: ${waiting} bytes wait for it; dropping its connection`,
    );
    this.sendClose(c);
    this.forget(c);
  }

  /**
   * Whether the tab may be read this tick: not while a local client has more than the bound waiting
   * (the rows stay in the sheet), except that one behind for longer than the stall bound is dropped.
   */
  private mayRead(now: number): boolean {
    let ok = true;
    for (const c of [...this.conns.values()]) {
      const waiting = c.socket.writableLength;
      if (waiting <= LIMITS.maxInboundBytesPerConn) {
        c.fullSince = undefined;
        continue;
      }
      c.fullSince ??= now;
      if (now - c.fullSince >= this.stallMs) this.drop(c, waiting);
      else ok = false;
    }
    return ok;
  }

  protected abstract handleOpen(f: Frame): void;

  async start(): Promise<void> {
    await this.t.ensure();
    await this.t.skipHistory();
    this.running = true;
    const tick = async () => {
      if (!this.running) return;
      await this.tick().catch((e) => this.log.warn({ err: String(e) }, 'tick failed'));
      if (this.running)
        this.timer = setTimeout(() => {
          this.loop = tick();
        }, this.tickMs);
    };
    this.loop = tick();
  }

  /** poll → handle → flush. Public so tests and benchmarks can drive ticks. */
  async tick(): Promise<void> {
    if (Date.now() < this.holdUntil) return;
    try {
      if (!this.mayRead(Date.now())) return await this.flush();
      const frames = await this.t.poll();
      for (const f of frames) {
        this.stats.framesIn++;
        if (f.kind === 'open') this.handleOpen(f);
        else this.deliver(f);
      }
      await this.flush();
    } catch (e) {
      if (!(e instanceof RetryLater)) throw e;
      this.stats.retries++;
      this.holdUntil = Date.now() + e.afterMs;
      this.log.warn({ afterMs: Math.round(e.afterMs) }, `${e.message}; backing off`);
    }
  }

  private async flush(): Promise<void> {
    if (this.queue.length === 0) return;
    const batch = this.queue.slice(0, LIMITS.maxFramesPerFlush);
    await this.t.append(batch); // on RetryLater the batch stays queued
    this.queue = this.queue.slice(batch.length);
    this.stats.flushes++;
    this.stats.framesOut += batch.length;
    for (const f of batch) {
      const c = this.conns.get(f.conn);
      if (c && f.kind === 'data') {
        c.queued -= (f.payload.length * 3) / 4;
        if (c.queued <= LIMITS.maxQueuedBytesPerConn / 2 && c.socket.isPaused()) c.socket.resume();
      }
    }
  }

  queuedFrames(): number {
    return this.queue.length;
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    await this.loop;
    for (const c of [...this.conns.values()]) this.forget(c);
    await this.t.close();
  }
}

/** Side B: hosts the service, dials `target` for every `open` frame naming its service. */
export class WireServe extends Endpoint {
  protected readonly outbound = 'b2a' as const;
  private readonly target: { host: string; port: number };
  constructor(o: EndpointOptions & { target: { host: string; port: number } }) {
    super(o);
    this.target = o.target;
  }

  protected handleOpen(f: Frame): void {
    if (f.service !== this.service || this.conns.has(f.conn)) return;
    if (this.conns.size >= LIMITS.maxConnections) {
      this.enqueue([{ conn: f.conn, kind: 'close', dir: this.outbound, service: '', payload: '' }]);
      return;
    }
    const socket = net.connect({ ...this.target, allowHalfOpen: true });
    const c: Conn = { id: f.conn, socket, queued: 0, sentClose: false, gotClose: false };
    this.conns.set(c.id, c);
    this.attach(c);
    this.log.debug({ conn: c.id, target: this.target }, 'open');
  }
}

/** Side A: listens; every accepted connection becomes an `open` frame plus its data. */
export class WireExpose extends Endpoint {
  protected readonly outbound = 'a2b' as const;
  private server: net.Server | undefined;
  private readonly listen: { host: string; port: number };
  constructor(o: EndpointOptions & { listen: { host: string; port: number } }) {
    super(o);
    this.listen = o.listen;
  }

  protected handleOpen(): void {} // opens travel a2b only

  /** Starts the tick loop and the listener; resolves with the bound address. */
  async listenAndStart(): Promise<net.AddressInfo> {
    await this.start();
    const server = net.createServer({ allowHalfOpen: true }, (socket) => {
      if (this.conns.size >= LIMITS.maxConnections) {
        socket.destroy();
        return;
      }
      const c: Conn = { id: newConnId(), socket, queued: 0, sentClose: false, gotClose: false };
      this.conns.set(c.id, c);
      this.enqueue([{ conn: c.id, kind: 'open', dir: this.outbound, service: this.service, payload: '' }]);
      this.attach(c);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ ...this.listen, backlog: LIMITS.listenBacklog }, () => resolve());
    });
    return server.address() as net.AddressInfo;
  }

  override async stop(): Promise<void> {
    const s = this.server;
    const closed = s ? new Promise((r) => s.close(r)) : undefined;
    await super.stop(); // destroys the accepted sockets, so the listener can finish closing
    await closed;
  }
}

/** "host:port" → parts; a bare port means loopback. */
export function parseHostPort(flag: string, v: string): { host: string; port: number } {
  const m = /^(?:\[?([^\]]*)\]?:)?(\d{1,5})$/.exec(v.trim());
  const port = m ? Number(m[2]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65535))
    throw new Error(`${flag} ${JSON.stringify(v)} must be host:port (e.g. 127.0.0.1:8080) or a port`);
  return { host: m[1] || '127.0.0.1', port };
}
