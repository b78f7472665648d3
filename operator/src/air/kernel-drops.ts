// What the kernel dropped in front of the relay. A UDP socket's receive queue drops what arrives
// while it is full and counts it per socket; Node does not say, Linux's /proc/self/net/udp does
// (its "drops" column). Read only when someone asks (stats, a scrape), never per datagram.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * The "drops" of the UDP sockets bound to `at` (a relay with a send thread has two there); 0 where
 * /proc is not there (not Linux).
 */
export function kernelDrops(at: AddressInfo): number {
  const v6 = at.family === 'IPv6';
  let table: string;
  try {
    table = readFileSync(`/proc/self/net/${v6 ? 'udp6' : 'udp'}`, 'utf8');
  } catch {
    return 0;
  }
  const local = `${procAddress(at.address, v6)}:${at.port.toString(16).toUpperCase().padStart(4, '0')}`;
  let drops = 0;
  for (const line of table.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[1] === local) drops += Number(f[12]) || 0;
  }
  return drops;
}

/**
 * kernelDrops(at), read at most once every `everyMs` (the last figure between): reading the table is
 * the costly part of the relay's stats() (a scrape asks stats() once per counter, a bench ten times a
 * second: in a --cpu-prof of bench/air/profile.ts those reads were 15 % of the relay's thread).
 */
export function dropsReader(at: AddressInfo, everyMs: number): () => number {
  let readAt = Number.NEGATIVE_INFINITY;
  let drops = 0;
  return () => {
    const now = performance.now();
    if (now - readAt >= everyMs) {
      drops = kernelDrops(at);
      readAt = now;
    }
    return drops;
  };
}

/** An address as /proc/net/udp prints it: each 32-bit word's bytes in host (little-endian) order. */
export function procAddress(address: string, v6: boolean): string {
  const bytes = v6 ? v6Bytes(address) : address.split('.').map(Number);
  let out = '';
  for (let i = 0; i < bytes.length; i += 4) {
    for (let j = 3; j >= 0; j--) out += (bytes[i + j] ?? 0).toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

function v6Bytes(address: string): number[] {
  const [head = '', tail] = address.split('%')[0]?.split('::') ?? [''];
  const groups = (s: string): string[] => (s ? s.split(':') : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return all.flatMap((g) => {
    const v = Number.parseInt(g, 16);
    return [v >> 8, v & 0xff];
  });
}
