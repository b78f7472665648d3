// What the air benchmarks share: a station's socket on loopback, a numbered frame, a percentile, the
// reference relay run by python3, and silent receivers.
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
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

/**
 * python3 -c STAMPED_RECEIVER PORT EVERY STEADY: one receiver that hellos the relay on PORT twice
 * (proven), prints "ready", then for every frame whose seq is a multiple of EVERY or at least
 * STEADY prints "SEQ NS": the kernel's arrival time of the datagram in its receive queue
 * (SO_TIMESTAMPNS), on CLOCK_MONOTONIC as process.hrtime. So a frame's delay ends when the relay
 * has handed it to the receiver's socket, not when a process that shares the cores reads it.
 */
export const STAMPED_RECEIVER = `
import select, socket, struct, sys, time
SO_TIMESTAMPNS = 35  # Linux: the kernel's arrival time of each datagram (CLOCK_REALTIME)
port, every, steady = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
r.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
r.bind(("127.0.0.1", 0))
for _ in range(2):
    r.sendto(b"\\xff", ("127.0.0.1", port))
    time.sleep(1.1)
r.setblocking(False)
out = sys.stdout
out.write("ready\\n")
out.flush()
while True:
    # realtime minus monotonic now: turns the kernel's stamps into the bench's clock
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.monotonic_ns()
    while True:
        try:
            data, anc, _, _ = r.recvmsg(64, 64)
        except BlockingIOError:
            break
        if len(data) != 33:
            continue
        seq = int.from_bytes(data[9:13], "little")
        if seq % every and seq < steady:
            continue
        for level, kind, v in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                s, ns = struct.unpack("qq", v[:16])
                out.write(f"{seq} {s * 1_000_000_000 + ns - off}\\n")
    out.flush()
    select.select([r], [], [], 0.5)
`;

/** A relay under a benchmark: its port, its deliveries and CPU µs so far, and its end. */
export interface RelayUnderTest {
  port: number;
  sample(): Promise<{ delivered: number; cpuUs: number }>;
  close(): Promise<void>;
}

/** The reference relay (bench/air/reference-relay.py) in a python3 process of its own. */
export async function reference(): Promise<RelayUnderTest> {
  const py = spawn(
    'python3',
    [new URL('./reference-relay.py', import.meta.url).pathname, '--port', '0', '--bind', '127.0.0.1'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const next = lineReader(py.stdout);
  const port = Number((await next(/^air relay on udp\/(\d+)/))[1]);
  const cpuUs = (): number => {
    const stat = readFileSync(`/proc/${py.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10_000; // utime + stime, 100 ticks/s
  };
  return {
    port,
    sample: async () => {
      py.kill('SIGUSR1');
      const delivered = Number((await next(/^delivered (\d+)/))[1]);
      return { delivered, cpuUs: cpuUs() };
    },
    close: async () => {
      py.kill('SIGTERM');
      await new Promise((r) => py.once('exit', r));
    },
  };
}

/** Reads `stream` by lines: each call waits for the next line matching `re` (skipping the others). */
export function lineReader(stream: NodeJS.ReadableStream): (re: RegExp) => Promise<RegExpMatchArray> {
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  let buf = '';
  stream.on('data', (d: Buffer) => {
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
      wake?.();
    }
  });
  return async (re) => {
    for (;;) {
      const i = lines.findIndex((l) => re.test(l));
      if (i >= 0) return lines.splice(0, i + 1)[i]?.match(re) as RegExpMatchArray;
      await new Promise<void>((r) => (wake = r));
    }
  };
}
