// The address a node reports: the one it really uses to reach its apiserver. A UDP socket
// "connected" to the server sends nothing but makes the kernel pick the route and source address,
// so a node talking to 127.0.0.1 reports 127.0.0.1 and one talking over a LAN reports its LAN
// address — not just the first non-loopback interface, which may be one nobody reaches it on.
import { createSocket } from 'node:dgram';
import { isIP } from 'node:net';
import os from 'node:os';

/** The source address this host uses towards the apiserver `url`; undefined when it cannot tell. */
export function sourceAddressFor(url: string): Promise<string | undefined> {
  let host: string;
  let port: number;
  try {
    const u = new URL(url);
    host = u.hostname.replace(/^\[(.*)\]$/, '$1');
    port = Number(u.port) || (u.protocol === 'https:' ? 443 : 80);
  } catch {
    return Promise.resolve(undefined);
  }
  const family = isIP(host) === 6 ? 'udp6' : 'udp4';
  return new Promise((resolve) => {
    const sock = createSocket(family);
    const done = (a: string | undefined) => {
      sock.close();
      resolve(a);
    };
    sock.once('error', () => done(undefined));
    sock.connect(port, host, () => {
      try {
        done(sock.address().address);
      } catch {
        done(undefined);
      }
    });
  });
}

/** The first non-internal IPv4 address: the fallback when the route cannot be asked. */
export function primaryIp(): string {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
