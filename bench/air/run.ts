// Benchmark of the air relay: how many frames per second one relay thread forwards to 20
// stations, and how much latency it adds over a direct UDP hop. Writes air.json (bench/results.ts).
// The relay's air-wide delivery budget (RELAY_LIMITS.OUT_PER_SECOND) holds even with the per-peer
// rate off: deliveries beyond it are dropped and counted, and only delivered frames count here.
//
//   node_modules/.bin/node bench/air/run.ts [--seconds 3] [--save]
//   node_modules/.bin/node bench/air/run.ts --compare [--rounds 3] [--seconds 3] [--save]  # beside the reference (compare.ts)
import { Worker } from 'node:worker_threads';
import { RELAY_LIMITS } from '../../operator/src/air/relay.ts';
import { startRecording, writeResults } from '../results.ts';
import { frame, pct, sock } from './stations.ts';

if (process.argv.includes('--compare')) {
  await import('./compare.ts');
  process.exit(0);
}
const record = startRecording();

const BENCH = {
  /** Receiving stations: the issue asks for 20. */
  RECEIVERS: 20,
  /** Frames in flight during the throughput run: enough to keep the relay busy, few enough for kernel buffers. */
  WINDOW: 256,
  /** Latency samples, one every 2 ms (a lightly loaded air: well above the real ~15 frames/s). */
  LATENCY_SAMPLES: 1000,
  LATENCY_GAP_MS: 2,
} as const;

const secondsArg = process.argv.indexOf('--seconds');
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 3;

type Stats = {
  framesIn: number;
  framesOut: number;
  droppedLoss: number;
  droppedBudget: number;
  peers: number;
};
type Answer = { stats: Stats; elu: { idle: number; active: number; utilization: number }; cpuUs: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const worker = new Worker(new URL('./relay-worker.ts', import.meta.url));
const ask = <T>(type: string, answer: string): Promise<T> =>
  new Promise((resolve) => {
    const on = (m: { type: string } & T) => {
      if (m.type === answer) {
        worker.off('message', on);
        resolve(m);
      }
    };
    worker.on('message', on);
    worker.postMessage({ type });
  });
const { port } = await new Promise<{ port: number }>((resolve) => {
  worker.once('message', (m) => resolve(m));
});

// 20 receivers and one sender, all registered by hello.
const receivers = await Promise.all(Array.from({ length: BENCH.RECEIVERS }, sock));
const counts = new Array<number>(BENCH.RECEIVERS).fill(0);
const arrivals = new Map<number, bigint>(); // seq → first arrival at receiver 0 (latency run)
receivers.forEach((r, i) => {
  r.on('message', (m) => {
    counts[i]++;
    if (i === 0 && latencyRun) arrivals.set(m.readUInt32LE(9), process.hrtime.bigint());
  });
});
let latencyRun = false;
const sender = await sock();
for (const s of [...receivers, sender]) s.send(Uint8Array.of(0xff), port, '127.0.0.1');
for (let i = 0; i < 200; i++) {
  const st = (await ask<{ stats: Stats }>('stats', 'stats')).stats;
  if (st.peers === BENCH.RECEIVERS + 1) break;
  await sleep(10);
}

// Throughput: keep WINDOW frames in flight, judged by what the slowest... receiver 0 got.
const beforeA = await ask<Answer>('stats', 'stats');
const before = beforeA.stats;
const t0 = process.hrtime.bigint();
const end = Date.now() + SECONDS * 1000;
let sent = 0;
let writtenOff = 0; // frames a kernel buffer dropped: without this the window would close for good
let lastCount = 0;
let lastProgress = Date.now();
while (Date.now() < end) {
  while (sent - counts[0] - writtenOff < BENCH.WINDOW) sender.send(frame(sent++), port, '127.0.0.1');
  await new Promise((r) => setImmediate(r));
  if (counts[0] !== lastCount) {
    lastCount = counts[0];
    lastProgress = Date.now();
  } else if (Date.now() - lastProgress > 50) {
    writtenOff = sent - counts[0];
    lastProgress = Date.now();
  }
}
const t1 = process.hrtime.bigint();
const afterA = await ask<Answer>('stats', 'stats');
const after = afterA.stats;
const relayBusy =
  (afterA.elu.active - beforeA.elu.active) /
  (afterA.elu.active + afterA.elu.idle - beforeA.elu.active - beforeA.elu.idle);
const elapsedS = Number(t1 - t0) / 1e9;
const relayCpuS = (afterA.cpuUs - beforeA.cpuUs) / 1e6;
const framesPerCoreS = (after.framesIn - before.framesIn) / relayCpuS;
const framesPerS = (after.framesIn - before.framesIn) / elapsedS;
const deliveriesPerS = (after.framesOut - before.framesOut) / elapsedS;
// Let the relay drain what is still queued before measuring latency.
for (let prev = -1, cur = after.framesOut; cur !== prev; ) {
  await sleep(200);
  prev = cur;
  cur = (await ask<Answer>('stats', 'stats')).stats.framesOut;
}

// Latency: one frame every 2 ms through the relay, then the same over a direct UDP hop.
async function latency(targetPort: number, viaRelay: boolean): Promise<number[]> {
  arrivals.clear();
  latencyRun = true;
  const sentAt = new Map<number, bigint>();
  const base = viaRelay ? 1_000_000 : 2_000_000;
  for (let i = 0; i < BENCH.LATENCY_SAMPLES; i++) {
    sentAt.set(base + i, process.hrtime.bigint());
    sender.send(frame(base + i), targetPort, '127.0.0.1');
    await sleep(BENCH.LATENCY_GAP_MS);
  }
  await sleep(200);
  latencyRun = false;
  const us: number[] = [];
  for (const [seq, t] of sentAt) {
    const a = arrivals.get(seq);
    if (a) us.push(Number(a - t) / 1000);
  }
  return us.sort((a, b) => a - b);
}
const viaRelay = await latency(port, true);
const direct = await latency(receivers[0].address().port, false);

const delivered = after.framesOut - before.framesOut;
const droppedBudget = after.droppedBudget - before.droppedBudget;
const result = {
  benchmark: 'air',
  receivers: BENCH.RECEIVERS,
  seconds: Number(elapsedS.toFixed(2)),
  /** Frames the sender offered the relay per second. */
  framesInPerSecond: Math.round(framesPerS),
  /** Deliveries made per second (a frame to 20 stations is 20 deliveries). */
  deliveriesPerSecond: Math.round(deliveriesPerS),
  /** Frames per second that reached every station: deliveries / receivers. */
  framesDeliveredPerSecond: Math.round(deliveriesPerS / BENCH.RECEIVERS),
  /** The relay's air-wide delivery budget (RELAY_LIMITS.OUT_PER_SECOND). */
  budgetDeliveriesPerSecond: RELAY_LIMITS.OUT_PER_SECOND,
  /** Deliveries the budget dropped during the run (the relay counts them). */
  deliveriesDroppedByBudget: droppedBudget,
  /** Delivered frames (to all 20) per second of the relay thread's own CPU time. */
  framesDeliveredPerCoreSecond: Math.round(delivered / BENCH.RECEIVERS / relayCpuS),
  deliveriesPerCoreSecond: Math.round(delivered / relayCpuS),
  /** Frames in per relay CPU-second, dropped deliveries included (not a delivery rate). */
  framesInPerCoreSecond: Math.round(framesPerCoreS),
  relayCpuSeconds: Number(relayCpuS.toFixed(2)),
  /** Share of the relay thread's time spent working during the run (1 = one core saturated). */
  relayThreadBusy: Number(relayBusy.toFixed(2)),
  framesLostInKernel: writtenOff,
  latencyUs: {
    relayP50: Math.round(pct(viaRelay, 50)),
    relayP99: Math.round(pct(viaRelay, 99)),
    directP50: Math.round(pct(direct, 50)),
    directP99: Math.round(pct(direct, 99)),
    addedP50: Math.round(pct(viaRelay, 50) - pct(direct, 50)),
    samples: viaRelay.length,
  },
};
console.log(
  `relay → ${BENCH.RECEIVERS} stations: ${result.framesInPerSecond} frames/s in, ${result.deliveriesPerSecond} deliveries/s out (${result.framesDeliveredPerSecond} frames/s to every station; budget ${RELAY_LIMITS.OUT_PER_SECOND} deliveries/s, ${droppedBudget} dropped by it; relay thread busy ${Math.round(relayBusy * 100)} %); per core-second of the relay thread: ${result.framesDeliveredPerCoreSecond} frames delivered, ${result.deliveriesPerCoreSecond} deliveries`,
);
console.log(
  `latency: via relay p50 ${result.latencyUs.relayP50} µs, p99 ${result.latencyUs.relayP99} µs; direct p50 ${result.latencyUs.directP50} µs; added p50 ${result.latencyUs.addedP50} µs`,
);
writeResults('air', result, record);

worker.postMessage({ type: 'close' });
for (const s of [...receivers, sender]) s.close();
