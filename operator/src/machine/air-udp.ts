// The radio's UDP backend to the air (the relay): each transmitted frame is one 33-byte
// datagram (RF channel byte + 32-byte payload); a 1-byte 0xFF hello announces the station at
// start and every 5 s so the relay learns it before it transmits. Datagrams of any other size
// are ignored. After a failed send the relay's host name is resolved again (at most once a
// second), so a relay behind a Kubernetes Service whose pod was replaced is found again; the
// socket keeps reading after errors (an ICMP "port unreachable" never deafens the machine).
// A name that does not resolve at start is not fatal either: the machine runs without an air,
// tries again with every hello, and says since when the name is unresolvable (unresolvedSince).
// Only the relay is heard (#28.9): datagrams from any other address or port are ignored (counted
// in stats.foreign), so nobody bypasses the relay's cut, off and rate limits by writing to the
// radio's port; and a radio whose relay is on loopback binds loopback.

import dgram from 'node:dgram';
import dns from 'node:dns/promises';
import net from 'node:net';
import { logger } from '../util/log.ts';
import type { AirPort } from './nrf24.ts';

const log = logger('machine-air');

export const LIMITS = {
  datagramBytes: 33, // channel byte + 32-byte nRF24 payload
  helloMs: 5000, // hello period (the reference QEMU model's)
  reresolveMs: 1000, // at most one name resolution per second after failures
  helloByte: 0xff, // the one-byte hello datagram
} as const;

export interface UdpAirOptions {
  /** The relay: host name or address, and port. */
  host: string;
  port: number;
  /** Local port to bind (0 = any). */
  localPort?: number;
  /** Local address to bind (default: loopback when the relay is on loopback, else all addresses of its family). */
  localAddress?: string;
  /** Called with each 33-byte frame heard. */
  onFrame: (channel: number, payload: Uint8Array) => void;
  /** Name resolution (default: the system resolver, dns.lookup). */
  lookup?: (host: string) => Promise<{ address: string; family: number }>;
}

export class UdpAir implements AirPort {
  private readonly opts: UdpAirOptions;
  private sock: dgram.Socket | null = null;
  private address: string | null = null;
  private family: 4 | 6 = 4;
  private helloTimer: NodeJS.Timeout | null = null;
  private lastResolve = 0;
  private resolving = false;
  stats = { sent: 0, received: 0, sendErrors: 0, ignored: 0, foreign: 0, resolves: 0 };
  /** Since when (ms since the epoch) the relay's name has not resolved, and why; null once it does. */
  unresolvedSince: number | null = null;
  resolveError: string | null = null;

  constructor(opts: UdpAirOptions) {
    this.opts = opts;
  }

  async start(): Promise<void> {
    await this.resolve().catch((err: Error) => this.unresolved(err));
    const sock = dgram.createSocket(this.family === 6 ? 'udp6' : 'udp4');
    this.sock = sock;
    sock.on('error', (err) => {
      // Keep the socket: a failed read or write must not deafen the machine.
      log.debug({ err: err.message }, 'air socket error');
    });
    sock.on('message', (msg, rinfo) => {
      if (rinfo.address !== this.address || rinfo.port !== this.opts.port) {
        this.stats.foreign++;
        return;
      }
      if (msg.length !== LIMITS.datagramBytes) {
        this.stats.ignored++;
        return;
      }
      this.stats.received++;
      this.opts.onFrame(msg[0], new Uint8Array(msg.subarray(1)));
    });
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind(
        { port: this.opts.localPort ?? 0, address: this.opts.localAddress ?? this.loopback() },
        () => {
          sock.off('error', reject);
          resolve();
        },
      );
    });
    this.hello();
    this.helloTimer = setInterval(() => this.hello(), LIMITS.helloMs);
    this.helloTimer.unref();
  }

  /** Loopback when the relay is given as a loopback address (a name may move elsewhere: then all addresses). */
  private loopback(): string | undefined {
    const h = this.opts.host;
    if (net.isIPv4(h) && h.startsWith('127.')) return '127.0.0.1';
    if (h === '::1') return '::1';
    return undefined;
  }

  /** The local UDP port (after start). */
  get localPort(): number {
    return this.sock?.address().port ?? 0;
  }

  private async resolve(): Promise<void> {
    this.lastResolve = Date.now();
    this.stats.resolves++;
    const host = this.opts.host;
    if (net.isIP(host) !== 0) {
      this.address = host;
      this.family = net.isIP(host) === 6 ? 6 : 4;
      return;
    }
    const r = this.opts.lookup
      ? await this.opts.lookup(host)
      : await dns.lookup(host, { family: this.sock === null ? 0 : this.family });
    this.address = r.address;
    if (this.sock === null) this.family = r.family === 6 ? 6 : 4;
    this.unresolvedSince = null;
    this.resolveError = null;
  }

  private unresolved(err: Error): void {
    if (this.unresolvedSince === null)
      log.warn({ host: this.opts.host, err: err.message }, 'cannot resolve the air relay');
    this.unresolvedSince ??= Date.now();
    this.resolveError = err.message;
  }

  private failed(): void {
    this.stats.sendErrors++;
    if (this.resolving || Date.now() - this.lastResolve < LIMITS.reresolveMs) return;
    this.resolving = true;
    this.resolve()
      .catch((err: Error) => this.unresolved(err))
      .finally(() => {
        this.resolving = false;
      });
  }

  private transmit(buf: Uint8Array): void {
    const sock = this.sock;
    if (sock === null) return;
    if (this.address === null) {
      this.failed(); // the name never resolved: try again (at most once a second)
      return;
    }
    try {
      sock.send(buf, this.opts.port, this.address, (err) => {
        if (err) this.failed();
      });
    } catch {
      this.failed();
    }
  }

  hello(): void {
    this.transmit(Uint8Array.of(LIMITS.helloByte));
  }

  send(channel: number, payload: Uint8Array): void {
    const buf = new Uint8Array(LIMITS.datagramBytes);
    buf[0] = channel & 0xff;
    buf.set(payload.subarray(0, 32), 1);
    this.stats.sent++;
    this.transmit(buf);
  }

  close(): void {
    if (this.helloTimer !== null) clearInterval(this.helloTimer);
    this.helloTimer = null;
    this.sock?.close();
    this.sock = null;
  }
}
