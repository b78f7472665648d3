// `bench/air/run.ts --compare`: our relay beside the reference relay (bench/air/reference-relay.py,
// the spec's relay.py, run by python3) in the same run, interleaved rounds. Writes air-compare.json.
//
// Each round runs every relay in turn: ours with its default limits, ours raw (`--no-rate-limit`)
// with its send thread (`--send-thread`: a second thread on the other core makes part of the sends,
// and its CPU counts as the relay's), ours raw in one thread, and the reference (and with
// --baseline DIR, DIR's relay the same three ways); the relay in its own
// thread (ours) or process (the reference). 20 receivers: receiver 0 and the sender in this
// process, one stamped receiver in a python3 process of its own (the kernel's arrival time of each
// frame, SO_TIMESTAMPNS), the other 18 in a python3 process that never reads them (the kernel drops
// what overflows them), so no receiver's work competes with the relay for the CPU. Per relay and
// round:
//  - flood: the sender sends as fast as it can for SECONDS (open loop); deliveries per second as the relay
//    counts them (the reference prints its count on SIGUSR1), the relay's CPU seconds (its thread;
//    the reference's process), and the delay of every 16th frame (p50, p99, max) from send to its
//    arrival in the stamped receiver's socket (`delayMs`: what the relay is answerable for) and to
//    receiver 0's read in this process (`readDelayMs`: adds this process's own waits for a core,
//    as the sender floods from the same thread; what runs before session 20 reported); the sender's
//    socket is connected to the relay, so each send is made right after its frame's time is taken;
//  - steady: one station sends STEADY_RATE frames/s for STEADY_SECONDS; frames receiver 0 missed,
//    and the stamped receiver's delays.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { startRecording, writeResults } from '../results.ts';
import {
  frame,
  pct,
  type RelayUnderTest,
  reference,
  SILENT_RECEIVERS,
  STAMPED_RECEIVER,
  sock,
} from './stations.ts';

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
/** Steady frames are numbered from here, apart from a flood's. */
const STEADY_SEQ = 10_000_000;

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
  const others = spawn('python3', ['-c', SILENT_RECEIVERS, String(relay.port), String(BENCH.RECEIVERS - 2)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const stamped = spawn(
    'python3',
    ['-c', STAMPED_RECEIVER, String(relay.port), String(BENCH.SAMPLE_EVERY), String(STEADY_SEQ)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  /** seq → the kernel's arrival time at the stamped receiver (hrtime ns). */
  const arrived = new Map<number, bigint>();
  const stampedReady = new Promise<void>((ready) => {
    let buf = '';
    stamped.stdout.on('data', (d: Buffer) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) {
        const [seq, ns] = line.split(' ');
        if (ns !== undefined) arrived.set(Number(seq), BigInt(ns));
        else if (line === 'ready') ready();
      }
    });
  });
  const receiver = await sock();
  const sender = await sock();
  let first = 0;
  const sentAt = new Map<number, bigint>();
  const readDelays: number[] = [];
  receiver.on('message', (m) => {
    first++;
    const t = sentAt.get(m.readUInt32LE(9));
    if (t !== undefined) readDelays.push(Number(process.hrtime.bigint() - t) / 1e6);
  });
  for (let k = 0; k < 2; k++) {
    for (const s of [receiver, sender]) s.send(Uint8Array.of(0xff), relay.port, '127.0.0.1');
    await sleep(1100);
  }
  await new Promise((r) => others.stdout?.once('data', r));
  await stampedReady;
  // Connected, a send names no address: dgram makes the system call at once, right after the
  // frame's time is taken (to an address it first defers the send to a lookup's callback, and a
  // wait for a core in between counted as the relay's delay).
  await new Promise<void>((r) => sender.connect(relay.port, '127.0.0.1', r));
  /** Delays (ms, sorted) from send to the kernel's arrival at the stamped receiver, of the frames sent. */
  const stampedDelays = (): number[] => {
    const out: number[] = [];
    for (const [seq, t] of sentAt) {
      const at = arrived.get(seq);
      if (at !== undefined) out.push(Number(at - t) / 1e6);
    }
    return out.sort((a, b) => a - b);
  };
  const summarize = (d: number[]) => ({
    p50: Number(pct(d, 50).toFixed(1)),
    p99: Number(pct(d, 99).toFixed(1)),
    max: Number((d.at(-1) ?? Number.NaN).toFixed(1)),
  });

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
      sender.send(frame(sent++));
    }
    await new Promise((r) => setImmediate(r));
  }
  const after = await relay.sample();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  // the flood drained: receiver 0 hears nothing more
  for (let prev = -1; prev !== first; ) {
    prev = first;
    await sleep(300);
  }
  const d = stampedDelays();
  const r = readDelays.sort((a, b) => a - b);
  const flood = {
    deliveriesPerSecond: Math.round((after.delivered - before.delivered) / seconds),
    relayCpuSeconds: Number(((after.cpuUs - before.cpuUs) / 1e6).toFixed(2)),
    deliveriesPerCpuSecond: Math.round(
      (after.delivered - before.delivered) / ((after.cpuUs - before.cpuUs) / 1e6),
    ),
    /**
     * Delay of every SAMPLE_EVERY-th frame from its send to its arrival in the stamped receiver's
     * socket (the kernel's stamp): the relay's queue and work, and its waits for a core.
     */
    delayMs: summarize(d),
    timedFrames: d.length,
    /**
     * The same frames from send to receiver 0's read in this process, which also floods: adds the
     * bench's own waits for a core (what earlier runs reported as the delay).
     */
    readDelayMs: summarize(r),
  };

  // steady: one station at STEADY_RATE frames/s, counted at receiver 0 once the flood has drained
  first = 0;
  sentAt.clear();
  const frames = BENCH.STEADY_RATE * BENCH.STEADY_SECONDS;
  const start = Date.now();
  for (let i = 0; i < frames; i++) {
    const due = start + (i * 1000) / BENCH.STEADY_RATE;
    if (due > Date.now()) await sleep(due - Date.now());
    sentAt.set(STEADY_SEQ + i, process.hrtime.bigint());
    sender.send(frame(STEADY_SEQ + i));
  }
  await sleep(500);
  /** Frames of the steady sender that receiver 0 did not get; the stamped receiver's delays. */
  const steady = { frames, framesLost: frames - first, delayMs: summarize(stampedDelays()) };
  for (const s of [receiver, sender]) s.close();
  others.stdin?.end();
  stamped.kill();
  return { flood, steady };
}

const RELAYS: [string, () => Promise<RelayUnderTest>][] = [
  ['ours', () => ours(false, false)],
  ['oursRaw', () => ours(true, true)],
  ['oursRawOneThread', () => ours(true, false)],
  ['reference', reference],
];
// --baseline DIR: another checkout's relay too (its bench/air/relay-worker.ts: with its default
// limits, and raw with its send thread and in one thread), e.g. main's
const baselineAt = process.argv.indexOf('--baseline');
if (baselineAt > 0) {
  const worker = pathToFileURL(
    join(resolve(process.argv[baselineAt + 1] as string), 'bench/air/relay-worker.ts'),
  );
  RELAYS.push(['baseline', () => ours(false, false, worker)]);
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
      `round ${r + 1} ${name.padEnd(16)} flood ${m.flood.deliveriesPerSecond} deliveries/s (${m.flood.deliveriesPerCpuSecond}/CPU-s), delay p50 ${m.flood.delayMs.p50} p99 ${m.flood.delayMs.p99} max ${m.flood.delayMs.max} ms (to the bench's read: p99 ${m.flood.readDelayMs.p99} max ${m.flood.readDelayMs.max}) · steady ${BENCH.STEADY_RATE}/s: ${m.steady.framesLost} of ${m.steady.frames} frames lost, delay max ${m.steady.delayMs.max} ms`,
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
        readDelayP99Ms: rs.map((x) => x.flood.readDelayMs.p99),
        readDelayMaxMs: rs.map((x) => x.flood.readDelayMs.max),
        steadyDelayMaxMs: rs.map((x) => x.steady.delayMs.max),
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
