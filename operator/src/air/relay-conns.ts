// Sockets of a relay (IPv4), one connected to each proven station (up to
// RELAY_LIMITS.MAX_CONNECTED), all bound to the relay's own address and port (SO_REUSEPORT). Why: a
// send on one names no address: no per-send lookup or route, which is most of what a delivery costs
// the relay besides the system call (more deliveries per CPU-second in one thread,
// bench/air/profile.ts). And with a send thread: the kernel spreads the datagrams of stations
// without one over the relay's socket and the send thread's by the sender's address, and a flood
// that landed on the send thread's went through a handover to the relay's thread and back for every
// frame (30 % fewer deliveries per CPU-second, bench/air/profile.ts). A connected socket takes its
// station's datagrams before that spread (Linux gives a datagram to the socket matching most of its
// addresses, and never picks a connected one by hash), so every proven station is heard on the
// relay's own thread.
import dgram from 'node:dgram';
import { RELAY_LIMITS } from './relay-limits.ts';
import { literalLookup } from './relay-lookup.ts';

export interface StationSockets {
  /**
   * Opens the socket of the station `key` at `host`:`port` (nothing when it has one or the cap is
   * reached); `station(socket)` is called once it is connected, and its datagrams go to `onMessage`.
   */
  open(key: string, host: string, port: number, station: (s: dgram.Socket) => void): void;
  /** Closes the station's socket, if it has one. */
  close(key: string): void;
  /** Sockets open (connected or still connecting). */
  readonly size: number;
  /** Sets every socket's kernel queue to `frames` datagrams. */
  sizeQueue(frames: number): void;
  closeAll(): Promise<void>;
}

export function stationSockets(
  port: number,
  bind: string,
  onMessage: (msg: Buffer, rinfo: dgram.RemoteInfo) => void,
  onError: (err: Error) => void,
): StationSockets {
  const open = new Map<string, dgram.Socket>();
  let queueBytes = 0;
  const closeOne = (s: dgram.Socket): Promise<void> =>
    new Promise((resolve) => {
      try {
        s.close(() => resolve());
      } catch {
        resolve(); // already closed (a bind that failed)
      }
    });
  return {
    open: (key, host, stationPort, station) => {
      if (open.has(key) || open.size >= RELAY_LIMITS.MAX_CONNECTED) return;
      const s = dgram.createSocket({ type: 'udp4', reusePort: true, lookup: literalLookup });
      open.set(key, s);
      // Until it is connected it is one more socket the kernel spreads datagrams over: it hands
      // them to the relay as the relay's own socket does.
      s.on('message', onMessage);
      s.on('error', onError);
      s.bind(port, bind, () => {
        if (open.get(key) !== s) return;
        if (queueBytes > 0) s.setRecvBufferSize(queueBytes);
        s.connect(stationPort, host, () => {
          if (open.get(key) === s) station(s);
        });
      });
    },
    close: (key) => {
      const s = open.get(key);
      if (!s) return;
      open.delete(key);
      void closeOne(s);
    },
    get size() {
      return open.size;
    },
    sizeQueue: (frames) => {
      // Linux doubles what it is given (the other half is its bookkeeping)
      queueBytes = Math.ceil((frames * RELAY_LIMITS.DATAGRAM_TRUESIZE) / 2);
      for (const s of open.values()) {
        try {
          s.setRecvBufferSize(queueBytes);
        } catch {
          // not bound yet: it takes the size once it is
        }
      }
    },
    closeAll: async () => {
      const all = [...open.values()];
      open.clear();
      await Promise.all(all.map(closeOne));
    },
  };
}
