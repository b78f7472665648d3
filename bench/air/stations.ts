// What bench/air/run.ts and compare.ts share: a station's socket on loopback, a numbered frame, a percentile.
import dgram from 'node:dgram';
import { encodeDatagram } from '../../operator/src/air/wire.ts';

/** A station's UDP socket on loopback (a large receive buffer: the bench must not be what drops). */
export function sock(): Promise<dgram.Socket> {
  const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
  return new Promise((r) => s.bind(0, '127.0.0.1', () => r(s)));
}

/** A 33-byte frame on channel 5 carrying `seq` at payload offset 8 (datagram offset 9). */
export function frame(seq: number): Buffer {
  const p = new Uint8Array(32);
  p[0] = 1;
  p[1] = 0xff;
  p[3] = 0x60;
  new DataView(p.buffer).setUint32(8, seq, true);
  return Buffer.from(encodeDatagram(5, p));
}

/** The p-th percentile of sorted `xs`. */
export const pct = (xs: number[], p: number): number =>
  xs[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? Number.NaN;

/**
 * python3 -c SILENT_RECEIVERS PORT N: N receivers that hello the relay on PORT twice (ours proves a
 * station heard again after 1 s) and never read, so the kernel drops what overflows them and no
 * receiver's work competes with the relay for the CPU; prints "ready" once proven.
 */
export const SILENT_RECEIVERS = `
import socket, sys, time
port = int(sys.argv[1])
rs = []
for _ in range(int(sys.argv[2])):
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    r.bind(("127.0.0.1", 0))
    rs.append(r)
for _ in range(2):
    for r in rs:
        r.sendto(b"\\xff", ("127.0.0.1", port))
    time.sleep(1.1)
print("ready", flush=True)
sys.stdin.read()
`;
