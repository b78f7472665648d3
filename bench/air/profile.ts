// `node [--cpu-prof --cpu-prof-dir DIR] bench/air/profile.ts [--seconds 5] [--reference | --dir CHECKOUT]`:
// one raw relay (`--no-rate-limit`) flooded by a python3 sender to 20 silent receivers, everything
// but the relay in that python3 process, so a CPU profile of this one (--cpu-prof) is the relay's.
// Prints one JSON line: deliveries per second, per CPU-second of the relay's thread, and the share
// of a core it had. `--reference` floods bench/air/reference-relay.py the same way instead;
// `--dir CHECKOUT` another checkout's relay (A/B runs, interleaved by the caller).
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { lineReader, pct, type RelayUnderTest, reference } from './stations.ts';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const SECONDS = Number(arg('--seconds') ?? 5);
const RECEIVERS = 20;

/** python3 -c FLOOD PORT N SECONDS: N silent receivers (proven: two hellos 1.1 s apart), then one sender at full speed. */
const FLOOD = `
import socket, sys, time
port, n, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
addr = ("127.0.0.1", port)
rs = []
for _ in range(n):
    r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    r.bind(("127.0.0.1", 0))
    rs.append(r)
tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
tx.bind(("127.0.0.1", 0))
for _ in range(2):
    for s in rs + [tx]:
        s.sendto(b"\\xff", addr)
    time.sleep(1.1)
frame = bytes([5, 1, 0xff, 0, 0x60]) + bytes(28)
print("flood", flush=True)
end = time.monotonic() + secs
while time.monotonic() < end:
    for _ in range(256):
        tx.sendto(frame, addr)
print("done", flush=True)
sys.stdin.read()
`;

async function ours(dir: string): Promise<RelayUnderTest> {
  const { startRelay } = (await import(
    pathToFileURL(join(dir, 'operator/src/air/relay.ts')).href
  )) as typeof import('../../operator/src/air/relay.ts');
  const relay = await startRelay({
    port: 0,
    bind: '127.0.0.1',
    rate: null,
    sendThread: process.argv.includes('--send-thread'),
  });
  // the kernel queue the relay holds, ten times a second (it sizes it to its speed)
  const sizes = setInterval(() => queueFrames.push(relay.stats().queueFrames), 100);
  return {
    port: relay.address.port,
    sample: async () => {
      const u = process.threadCpuUsage();
      // the send thread's CPU (--send-thread) is the relay's too
      return {
        delivered: relay.stats().framesOut,
        cpuUs: u.user + u.system + (await relay.sendThreadCpuUs()),
      };
    },
    close: () => {
      clearInterval(sizes);
      return relay.close();
    },
  };
}
const queueFrames: number[] = [];

const dir = arg('--dir');
const which = process.argv.includes('--reference') ? 'reference' : dir ? resolve(dir) : 'ours';
const relay =
  which === 'reference'
    ? await reference()
    : await ours(dir ? resolve(dir) : join(import.meta.dirname, '../..'));
const flood = spawn('python3', ['-c', FLOOD, String(relay.port), String(RECEIVERS), String(SECONDS)], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const floodLines = lineReader(flood.stdout);
await floodLines(/^flood/);
const before = await relay.sample();
const t0 = process.hrtime.bigint();
const elu = performance.eventLoopUtilization();
queueFrames.length = 0;
await floodLines(/^done/);
const after = await relay.sample();
const busy = performance.eventLoopUtilization(elu).utilization;
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
flood.stdin.end();
await relay.close();
const delivered = after.delivered - before.delivered;
const cpuSeconds = (after.cpuUs - before.cpuUs) / 1e6;
const q = queueFrames.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    relay: which,
    deliveriesPerSecond: Math.round(delivered / seconds),
    deliveriesPerCpuSecond: Math.round(delivered / cpuSeconds),
    coreShare: Number((cpuSeconds / seconds).toFixed(2)),
    // ours: the share of the time its loop was not waiting for datagrams (busy, or waiting for a
    // core), and the sizes of its kernel queue (min, median, max datagrams)
    ...(which === 'reference'
      ? {}
      : { loopBusy: Number(busy.toFixed(2)), queueFrames: [q[0], pct(q, 50), q.at(-1)] }),
  }),
);
