// Stations for the relay's tests on loopback: sockets connect()ed to the relay as QEMU's chardev
// is (they hear only the relay's address and port, so a delivery from any other source is lost),
// and what the kernel says of the relay's sockets.
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import type { Relay } from './relay-types.ts';
import { encodeDatagram } from './wire.ts';

export interface Connected {
  sock: dgram.Socket;
  got: Buffer[];
  port: number;
}

/** A station as QEMU's: its socket connected to the relay; `open` gets its close. */
export async function connected(r: Relay, open: { close(): Promise<void> }[]): Promise<Connected> {
  const sock = dgram.createSocket('udp4');
  const got: Buffer[] = [];
  sock.on('message', (m) => got.push(m));
  await new Promise<void>((res) => sock.bind(0, '127.0.0.1', () => res()));
  await new Promise<void>((res) => sock.connect(r.address.port, '127.0.0.1', () => res()));
  open.push({ close: () => new Promise<void>((res) => sock.close(() => res())) });
  return { sock, got, port: sock.address().port };
}

/** UDP sockets of this process bound to `port` on loopback, and of them connected (/proc/self/net/udp). */
export function boundTo(port: number): { bound: number; connected: number } {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const mine = readFileSync('/proc/self/net/udp', 'utf8')
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1] === local);
  return { bound: mine.length, connected: mine.filter((f) => f[2] !== '00000000:0000').length };
}

export const send = (s: Connected, d: Uint8Array): Promise<void> =>
  new Promise((res, rej) => s.sock.send(d, (e) => (e ? rej(e) : res())));

/** Resolves once a plain socket binds `port` (nothing else holds it); rejects with its error. */
export async function bindsPlain(port: number): Promise<void> {
  const plain = dgram.createSocket('udp4');
  await new Promise<void>((res, rej) => {
    plain.once('error', rej);
    plain.bind(port, '127.0.0.1', () => res());
  });
  plain.close();
}

/** A frame that says who sent it (payload byte 2, datagram byte 3) and its number (payload bytes 8-9, little-endian). */
export function frame(from: number, n = 0): Uint8Array {
  const p = new Uint8Array(32);
  p[0] = 1;
  p[1] = 0xff;
  p[2] = from;
  p[3] = 0x42;
  p[8] = n & 0xff;
  p[9] = n >> 8;
  return encodeDatagram(5, p);
}
