// A station on the air: a UDP socket that says hello to the relay every 5 s and hands every
// datagram it hears to a callback. The listener, the injector, the tests and the benchmark use it.
import dgram from 'node:dgram';
import { type AddressInfo, isIPv6 } from 'node:net';
import { cachedLookup } from './relay-lookup.ts';
import { AIR_PORT, helloDatagram, LIMITS } from './wire.ts';

/** A listener hears up to ~100 frames/s on a busy air; 1 MiB rides out long pauses of its event loop. */
const STATION_RECV_BUFFER_BYTES = 1 << 20;

export interface StationOptions {
  /** Relay host name or IP. */
  host: string;
  port?: number;
  /** Local address to bind; default 0.0.0.0 so a relay elsewhere can answer. */
  bind?: string;
  /** 0 disables the periodic hello (one is still sent at start unless `hello` is false). */
  helloIntervalMs?: number;
  hello?: boolean;
  onDatagram?: (msg: Buffer, at: number) => void;
  /**
   * Called once if nothing at all is heard within `silenceMs` of opening (a wrong address or port,
   * no relay there, or an air nobody talks on), so a listener never waits in silence unawares.
   */
  onSilence?: (silenceMs: number) => void;
  silenceMs?: number;
}

export const STATION_LIMITS = {
  /** A relay forwards the nodes' 1-s heartbeats: several seconds of nothing means something is off. */
  SILENCE_MS: 5000,
} as const;

export interface Station {
  readonly local: AddressInfo;
  send(datagram: Uint8Array): Promise<void>;
  hello(): Promise<void>;
  close(): Promise<void>;
}

/** Parses RELAY as host[:port] (default port 7524); [v6]:port is accepted too. */
export function parseRelayAddress(text: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(text) ?? /^([^:]+)(?::(\d+))?$/.exec(text);
  if (!m?.[1]) throw new Error(`relay "${text}" is not HOST or HOST:PORT (for example 127.0.0.1:7524)`);
  const port = m[2] === undefined ? AIR_PORT : Number(m[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`relay port in "${text}" must be 1..65535`);
  }
  return { host: m[1], port };
}

export async function openStation(opts: StationOptions): Promise<Station> {
  const port = opts.port ?? AIR_PORT;
  const v6 = isIPv6(opts.host) || (opts.bind !== undefined && isIPv6(opts.bind));
  const socket = dgram.createSocket({
    type: v6 ? 'udp6' : 'udp4',
    recvBufferSize: STATION_RECV_BUFFER_BYTES,
    lookup: cachedLookup(v6 ? 6 : 4), // not one getaddrinfo per datagram (relay-lookup.ts)
  });
  let heard = false;
  socket.on('message', (msg) => {
    heard = true;
    opts.onDatagram?.(msg, Date.now());
  });
  const silenceMs = opts.silenceMs ?? STATION_LIMITS.SILENCE_MS;
  const silence = opts.onSilence
    ? setTimeout(() => {
        if (!heard) opts.onSilence?.(silenceMs);
      }, silenceMs)
    : undefined;
  silence?.unref();
  // ICMP "port unreachable" while the relay is away must not end the station: keep listening.
  socket.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, opts.bind ?? (v6 ? '::' : '0.0.0.0'), () => {
      socket.off('error', reject);
      resolve();
    });
  });
  let closed = false;
  const send = (d: Uint8Array): Promise<void> =>
    new Promise((resolve) => {
      if (closed) return resolve();
      // A failed send (relay gone, name not resolvable yet) is like a frame lost on the air.
      socket.send(d, port, opts.host, () => resolve());
    });
  const hello = (): Promise<void> => send(helloDatagram());
  const every = opts.helloIntervalMs ?? LIMITS.HELLO_INTERVAL_MS;
  const timer = every > 0 ? setInterval(() => void hello(), every) : undefined;
  timer?.unref();
  if (opts.hello !== false) await hello();
  return {
    local: socket.address(),
    send,
    hello,
    close: async () => {
      if (closed) return;
      closed = true;
      if (timer) clearInterval(timer);
      if (silence) clearTimeout(silence);
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
}
