// `node bench/air/queues.ts [--seconds 3] [--stock]`: where a flood's frames wait. Runs compare.ts's
// flood against one raw relay (in its own thread) and every 100 ms reads the kernel's queues of
// the three sockets on the path (/proc/net/udp: the relay's receive and send queue, receiver 0's
// receive queue, the sender's send queue, each socket's drops) and the sender's user-space send queue
// (libuv's, which the kernel does not see) and the relay's deliveries dropped because its own was not empty, beside the delay of the
// frames sent in that 100 ms. A queue that grows with the delay is where frames wait.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { frame, SILENT_RECEIVERS, sock } from './stations.ts';

const arg = (name: string): number | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : undefined;
};
const SECONDS = arg('--seconds') ?? 3;
const BURST = 32;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** tx_queue, rx_queue (bytes of kernel memory, not frames) and drops of the UDP socket bound to `port`. */
function udpQueue(port: number): { tx: number; rx: number; drops: number } {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (!f[1]?.endsWith(hex)) continue;
    const [tx, rx] = (f[4] ?? '0:0').split(':').map((h) => Number.parseInt(h, 16));
    return { tx: tx ?? 0, rx: rx ?? 0, drops: Number(f[12]) };
  }
  return { tx: Number.NaN, rx: Number.NaN, drops: Number.NaN };
}

// What one queued 33-byte datagram costs the kernel (its truesize), so bytes read as frames: a
// socket that never reads (python3's; Node's dgram reads whatever arrives) is sent 100 frames.
const TRUESIZE = `
import socket, time
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.bind(("127.0.0.1", 0))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(100):
    s.sendto(b"x" * 33, r.getsockname())
time.sleep(0.1)
print(r.getsockname()[1], flush=True)
time.sleep(0.5)
`;
const truesize = spawn('python3', ['-c', TRUESIZE], { stdio: ['ignore', 'pipe', 'inherit'] });
const probePort = Number(
  await new Promise<string>((r) => truesize.stdout?.once('data', (d) => r(String(d)))),
);
const perFrame = udpQueue(probePort).rx / 100;

const worker = new Worker(new URL('./relay-worker.ts', import.meta.url), { workerData: { raw: true } });
const { port } = await new Promise<{ port: number }>((r) => worker.once('message', r));
type Stats = { framesIn: number; framesOut: number; droppedLate: number; queueFrames?: number };
const relayState = (): Promise<Stats> =>
  new Promise((resolve) => {
    const on = (m: { type: string; stats: Stats }) => {
      if (m.type !== 'stats') return;
      worker.off('message', on);
      resolve(m.stats);
    };
    worker.on('message', on);
    worker.postMessage({ type: 'stats' });
  });

const others = spawn('python3', ['-c', SILENT_RECEIVERS, String(port), '19'], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const receiver = await sock();
const sender = await sock();
const sentAt = new Map<number, bigint>();
/** Per 100-ms slot of the flood (by send time): delays of the frames sent in it. */
const slots: number[][] = [];
let t0 = process.hrtime.bigint();
let heard = 0;
receiver.on('message', (m) => {
  heard++;
  const seq = m.readUInt32LE(9);
  const t = sentAt.get(seq);
  if (t === undefined) return;
  const slot = Math.floor(Number(t - t0) / 1e8);
  const delays = slots[slot] ?? [];
  slots[slot] = delays;
  delays.push(Number(process.hrtime.bigint() - t) / 1e6);
});
for (let k = 0; k < 2; k++) {
  for (const s of [receiver, sender]) s.send(Uint8Array.of(0xff), port, '127.0.0.1');
  await sleep(1100);
}
await new Promise((r) => others.stdout?.once('data', r));

console.log(
  `${perFrame} bytes of kernel memory per queued frame; receiver 0's receive buffer ${receiver.getRecvBufferSize()} B`,
);
const rows: string[] = [];
t0 = process.hrtime.bigint();
let sent = 0;
let stop = false;
const sample = async () => {
  const at = Number(process.hrtime.bigint() - t0) / 1e6;
  const r = udpQueue(port);
  const r0 = udpQueue(receiver.address().port);
  const s = udpQueue(sender.address().port);
  const relay = await relayState();
  rows.push(
    `${at.toFixed(0).padStart(5)} ms  sent ${String(sent).padStart(7)}  relay in ${String(relay.framesIn).padStart(7)} ` +
      `rxq ${String(Math.round(r.rx / perFrame)).padStart(6)}/${relay.queueFrames ?? '?'} fr drops ${String(r.drops).padStart(7)} ` +
      `txq ${String(r.tx).padStart(7)} B late ${String(relay.droppedLate).padStart(6)} · ` +
      `rcv0 rxq ${String(Math.round(r0.rx / perFrame)).padStart(5)} fr drops ${r0.drops} · ` +
      `sender txq ${s.tx} B libuv ${sender.getSendQueueCount()}`,
  );
};
const sampler = (async () => {
  while (!stop) {
    await sample();
    await sleep(100);
  }
})();
const end = Date.now() + SECONDS * 1000;
while (Date.now() < end) {
  for (let k = 0; k < BURST; k++) {
    if (sent % 16 === 0) sentAt.set(sent, process.hrtime.bigint());
    sender.send(frame(sent++), port, '127.0.0.1');
  }
  await new Promise((r) => setImmediate(r));
}
for (let i = 0; i < 10; i++) await sleep(100);
stop = true;
await sampler;
console.log(rows.join('\n'));
console.log('delay by send time (100-ms slots): p50 / max ms, frames timed');
for (const [i, d] of slots.entries()) {
  if (!d) continue;
  d.sort((a, b) => a - b);
  console.log(
    `${String(i * 100).padStart(5)} ms  ${d[Math.floor(d.length / 2)]?.toFixed(1)} / ${d.at(-1)?.toFixed(1)}  (${d.length})`,
  );
}
console.log(`sent ${sent}, receiver 0 heard ${heard}`);
for (const s of [receiver, sender]) s.close();
others.stdin?.end();
worker.postMessage({ type: 'close' });
