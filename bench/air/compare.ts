// `bench/air/run.ts --compare`: our relay beside the reference relay (bench/air/reference-relay.py,
// the spec's relay.py, run by python3) in the same run, interleaved rounds. Writes air-compare.json.
//
// Each round runs every relay in turn: ours with its default limits, ours raw (`--no-rate-limit`) with
// its send thread (`--send-thread`: a second thread on the other core makes part of the sends, and
// its CPU counts as the relay's), ours raw in one thread, and the reference (and with --baseline DIR, DIR's relay raw with its send thread and in one thread); the relay in its own thread (ours) or process (the reference). 20 receivers: receiver
// 0 and the sender in this process, the other 19 in a python3 process that never reads them (the
// kernel drops what overflows them), so no receiver's work competes with the relay for the CPU.
// Per relay and round:
//  - flood: the sender sends as fast as it can for SECONDS (open loop); deliveries per second as the relay
//    counts them (the reference prints its count on SIGUSR1), the relay's CPU seconds (its thread;
//    the reference's process), and the delay of every 16th frame from send to receiver 0 (p50, p99, max);
//  - steady: one station sends STEADY_RATE frames/s for STEADY_SECONDS; frames receiver 0 missed.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { startRecording, writeResults } from '../results.ts';
import { frame, pct, type RelayUnderTest, reference, SILENT_RECEIVERS, sock } from './stations.ts';

const record = startRecording();

const BENCH = {
  RECEIVERS: 20,
  /** Frames sent per turn of the sender's event loop during a flood (open loop). */
  BURST: 32,
  ROUNDS: 3,
  FLOOD_SECONDS: 3,
  /** Every Nth frame of a flood is timed at receiver 0. */
  SAMPLE_EVERY: 16,
  /** The steady case: one station at 400 frames/s (a machine on machine time, see relay.ts). */
  STEADY_RATE: 400,
  STEADY_SECONDS: 3,
} as const;

const arg = (name: string): number | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : undefined;
};
const ROUNDS = arg('--rounds') ?? BENCH.ROUNDS;
const SECONDS = arg('--seconds') ?? BENCH.FLOOD_SECONDS;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function ours(
  raw: boolean,
  sendThread: boolean,
  workerFile = new URL('./relay-worker.ts', import.meta.url),
): Promise<RelayUnderTest> {
  const worker = new Worker(workerFile, { workerData: { raw, sendThread } });
  const { port } = await new Promise<{ port: number }>((r) => worker.once('message', r));
  return {
    port,
    sample: () =>
      new Promise((resolve) => {
        const on = (m: { type: string; stats: { framesOut: number }; cpuUs: number }) => {
          if (m.type !== 'stats') return;
          worker.off('message', on);
          resolve({ delivered: m.stats.framesOut, cpuUs: m.cpuUs });
        };
        worker.on('message', on);
        worker.postMessage({ type: 'stats' });
      }),
    close: async () => {
      worker.postMessage({ type: 'close' });
      await new Promise((r) => worker.once('exit', r));
    },
  };
}

async function measure(relay: RelayUnderTest) {
  const others = spawn('python3', ['-c', SILENT_RECEIVERS, String(relay.port), String(BENCH.RECEIVERS - 1)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const receiver = await sock();
  const sender = await sock();
  let first = 0;
  const sentAt = new Map<number, bigint>();
  const delays: number[] = [];
  receiver.on('message', (m) => {
    first++;
    const t = sentAt.get(m.readUInt32LE(9));
    if (t !== undefined) delays.push(Number(process.hrtime.bigint() - t) / 1e6);
  });
  for (let k = 0; k < 2; k++) {
    for (const s of [receiver, sender]) s.send(Uint8Array.of(0xff), relay.port, '127.0.0.1');
    await sleep(1100);
  }
  await new Promise((r) => others.stdout?.once('data', r));

  // flood
  const before = await relay.sample();
  const t0 = process.hrtime.bigint();
  const end = Date.now() + SECONDS * 1000;
  let sent = 0;
  // open loop: BURST frames per turn of the event loop, as fast as this process sends; what the
  // relay cannot take, its kernel queue drops, so the relay runs flat out
  while (Date.now() < end) {
    for (let k = 0; k < BENCH.BURST; k++) {
      if (sent % BENCH.SAMPLE_EVERY === 0) sentAt.set(sent, process.hrtime.bigint());
      sender.send(frame(sent++), relay.port, '127.0.0.1');
    }
    await new Promise((r) => setImmediate(r));
  }
  const after = await relay.sample();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  await sleep(300);
  const d = delays.sort((a, b) => a - b);
  const flood = {
    deliveriesPerSecond: Math.round((after.delivered - before.delivered) / seconds),
    relayCpuSeconds: Number(((after.cpuUs - before.cpuUs) / 1e6).toFixed(2)),
    deliveriesPerCpuSecond: Math.round(
      (after.delivered - before.delivered) / ((after.cpuUs - before.cpuUs) / 1e6),
    ),
    /** Delay from send to receiver 0 of every SAMPLE_EVERY-th frame (the relay's queue, and the bench's). */
    delayMs: {
      p50: Number(pct(d, 50).toFixed(1)),
      p99: Number(pct(d, 99).toFixed(1)),
      max: Number((d.at(-1) ?? Number.NaN).toFixed(1)),
    },
    timedFrames: d.length,
  };

  // steady: one station at STEADY_RATE frames/s, counted at receiver 0 once the flood has drained
  for (let prev = -1; prev !== first; ) {
    prev = first;
    await sleep(300);
  }
  first = 0;
  sentAt.clear();
  const frames = BENCH.STEADY_RATE * BENCH.STEADY_SECONDS;
  const start = Date.now();
  for (let i = 0; i < frames; i++) {
    const due = start + (i * 1000) / BENCH.STEADY_RATE;
    if (due > Date.now()) await sleep(due - Date.now());
    sender.send(frame(10_000_000 + i), relay.port, '127.0.0.1');
  }
  await sleep(500);
  /** Frames of the steady sender that receiver 0 did not get. */
  const steady = { frames, framesLost: frames - first };
  for (const s of [receiver, sender]) s.close();
  others.stdin?.end();
  return { flood, steady };
}

const RELAYS: [string, () => Promise<RelayUnderTest>][] = [
  ['ours', () => ours(false, false)],
  ['oursRaw', () => ours(true, true)],
  ['oursRawOneThread', () => ours(true, false)],
  ['reference', reference],
];
// --baseline DIR: another checkout's relay too (its bench/air/relay-worker.ts, raw, with its send
// thread and in one thread), e.g. main's
const baselineAt = process.argv.indexOf('--baseline');
if (baselineAt > 0) {
  const worker = pathToFileURL(
    join(resolve(process.argv[baselineAt + 1] as string), 'bench/air/relay-worker.ts'),
  );
  RELAYS.push(['baselineRaw', () => ours(true, true, worker)]);
  RELAYS.push(['baselineRawOneThread', () => ours(true, false, worker)]);
}
// --only NAME,NAME: just these relays (quicker A/B runs while working; a saved run measures all)
const onlyAt = process.argv.indexOf('--only');
if (onlyAt > 0) {
  const only = new Set((process.argv[onlyAt + 1] ?? '').split(','));
  RELAYS.splice(0, RELAYS.length, ...RELAYS.filter(([n]) => only.has(n)));
}
const runs: Record<string, Awaited<ReturnType<typeof measure>>[]> = Object.fromEntries(
  RELAYS.map(([n]) => [n, []]),
);
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, start] of RELAYS) {
    const relay = await start();
    const m = await measure(relay);
    await relay.close();
    runs[name]?.push(m);
    console.log(
      `round ${r + 1} ${name.padEnd(16)} flood ${m.flood.deliveriesPerSecond} deliveries/s (${m.flood.deliveriesPerCpuSecond}/CPU-s), delay p50 ${m.flood.delayMs.p50} p99 ${m.flood.delayMs.p99} max ${m.flood.delayMs.max} ms · steady ${BENCH.STEADY_RATE}/s: ${m.steady.framesLost} of ${m.steady.frames} frames lost`,
    );
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const summary = Object.fromEntries(
  RELAYS.map(([n]) => {
    const rs = runs[n] ?? [];
    return [
      n,
      {
        deliveriesPerSecond: rs.map((x) => x.flood.deliveriesPerSecond),
        medianDeliveriesPerSecond: median(rs.map((x) => x.flood.deliveriesPerSecond)),
        deliveriesPerCpuSecond: rs.map((x) => x.flood.deliveriesPerCpuSecond),
        delayP99Ms: rs.map((x) => x.flood.delayMs.p99),
        delayMaxMs: rs.map((x) => x.flood.delayMs.max),
        steadyFramesLost: rs.map((x) => x.steady.framesLost),
      },
    ];
  }),
);
const overReference = (n: string): number =>
  Number(
    (
      (summary[n]?.medianDeliveriesPerSecond ?? 0) /
      (summary.reference?.medianDeliveriesPerSecond ?? Number.NaN)
    ).toFixed(2),
  );
// every relay's median deliveries/s over the reference's (main's with --baseline beside ours)
for (const [n] of RELAYS) Object.assign(summary[n] ?? {}, { medianOverReference: overReference(n) });
const ratio =
  (summary.oursRaw?.medianDeliveriesPerSecond ?? 0) / (summary.reference?.medianDeliveriesPerSecond ?? 1);
console.log(`raw throughput, ours over the reference (medians): ${ratio.toFixed(2)}×`);
writeResults(
  'air-compare',
  {
    benchmark: 'air --compare',
    receivers: BENCH.RECEIVERS,
    rounds: ROUNDS,
    floodSeconds: SECONDS,
    steadyRate: BENCH.STEADY_RATE,
    rawOverReference: Number(ratio.toFixed(2)),
    summary,
    runs,
  },
  record,
);
