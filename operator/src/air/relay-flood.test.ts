// The relay under a flood: radio drops what it cannot carry now, it never queues (#32). A sender
// thread floods the relay flat out; a receiver thread stamps each frame's arrival against the send
// time the frame carries (process.hrtime, one clock for every thread). The relay runs here, on a
// loop of its own, as in `retrokube air relay`.
import dgram from 'node:dgram';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { bufferBytesFor, framesForDelay, QUEUE_LIMITS, udpDrops } from './recv-queue.ts';
import { type Relay, startRelay } from './relay.ts';

const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

const FLOOD_MS = 2000;
/** Stations besides the sender and the timed receiver: an air of 20, as in bench/air. */
const SILENT = 18;

/**
 * Sends 33-byte frames to the relay as fast as it can for `ms`, the send time in every 8th, and
 * holds SILENT more stations that only listen (small buffers), so each frame costs the relay
 * as many sends as on a real air of that size and the relay, not the sender, is the bottleneck.
 */
const SENDER = `
const { parentPort, workerData } = require('node:worker_threads');
const dgram = require('node:dgram');
const s = dgram.createSocket('udp4');
const silent = Array.from({ length: workerData.silent }, () => dgram.createSocket({ type: 'udp4', recvBufferSize: 4096 }));
s.bind(0, '127.0.0.1', async () => {
  for (const q of silent) await new Promise((r) => q.bind(0, '127.0.0.1', r));
  const hello = () => { for (const q of [s, ...silent]) q.send(Uint8Array.of(0xff), workerData.port, '127.0.0.1'); };
  hello();
  await new Promise((r) => setTimeout(r, 1100));
  hello(); // heard again after a second: proven stations
  parentPort.postMessage('ready');
  await new Promise((r) => parentPort.once('message', r));
  const end = Date.now() + workerData.ms;
  let n = 0;
  while (Date.now() < end) {
    for (let k = 0; k < 32; k++) {
      const f = Buffer.alloc(33);
      f[0] = 5; f[1] = 1; f[2] = 0xff; f[4] = 0x60;
      if (n++ % 8 === 0) f.writeBigUInt64LE(process.hrtime.bigint(), 13);
      s.send(f, workerData.port, '127.0.0.1');
    }
    await new Promise((r) => setImmediate(r));
  }
  parentPort.postMessage(n);
  for (const q of [s, ...silent]) q.close();
});
`;

/** Hellos the relay twice, then answers 'take' with the delays (ms) of the stamped frames it heard. */
const RECEIVER = `
const { parentPort, workerData } = require('node:worker_threads');
const dgram = require('node:dgram');
const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 });
const delays = [];
s.on('message', (m) => {
  const t = m.length === 33 ? m.readBigUInt64LE(13) : 0n;
  if (t !== 0n) delays.push(Number(process.hrtime.bigint() - t) / 1e6);
});
s.bind(0, '127.0.0.1', async () => {
  const hello = () => s.send(Uint8Array.of(0xff), workerData.port, '127.0.0.1');
  hello();
  await new Promise((r) => setTimeout(r, 1100));
  hello();
  parentPort.postMessage('ready');
  parentPort.on('message', () => { parentPort.postMessage(delays); s.close(); });
});
`;

function thread(code: string, port: number): Worker {
  const w = new Worker(code, { eval: true, workerData: { port, ms: FLOOD_MS, silent: SILENT } });
  open.push({ close: () => w.terminate() });
  return w;
}
const next = <T>(w: Worker): Promise<T> => new Promise((r) => w.once('message', r));

async function relay(): Promise<Relay> {
  const r = await startRelay({
    port: 0,
    bind: '127.0.0.1',
    rate: null,
    metricsPort: 0,
    metricsBind: '127.0.0.1',
  });
  open.push(r);
  return r;
}

describe('the relay under a flood (#32)', () => {
  it('drops what it cannot forward within MAX_DELAY_MS, counts it by reason, and queues no longer', async () => {
    const r = await relay();
    const rx = thread(RECEIVER, r.address.port);
    const tx = thread(SENDER, r.address.port);
    await Promise.all([next(rx), next(tx)]);
    tx.postMessage('go');
    const sent = await next<number>(tx);
    await new Promise((res) => setTimeout(res, 200)); // the last deliveries land
    rx.postMessage('take');
    const delays = (await next<number[]>(rx)).sort((a, b) => a - b);
    const st = r.stats();

    // a flood: far more was sent than the relay took, and the kernel dropped the rest on arrival
    expect(st.framesIn).toBeLessThan(sent / 2);
    expect(st.droppedQueue).toBeGreaterThan(sent / 4);
    expect(st.queueFrames).toBeGreaterThanOrEqual(QUEUE_LIMITS.MIN_FRAMES);
    const text = await (await fetch(`${r.metrics!.url}/metrics`)).text();
    const counted = Number(/^air_relay_dropped_total\{reason="queue"\} (\d+)$/m.exec(text)?.[1]);
    expect(counted).toBeGreaterThanOrEqual(st.droppedQueue);
    expect(text).toMatch(/^air_relay_queue_frames \d+$/m);

    // what was forwarded was fresh. The queue holds QUEUE_MS of the relay's speed, half the bound,
    // so the typical frame waits about that (p50 ~20 ms at load 5) and within the bound; the other
    // half is for the threads of this test waiting for a core on a shared host. The slowest frame
    // (max 44–67 ms at load 5) may also wait for a core, so it is held to ten bounds, not one: this
    // file runs in CI beside other projects, and a test that fails on a busy host's scheduling
    // says nothing of the relay. A queue of seconds, as with the former 4-MiB buffer (p50 over
    // 1,000 ms), fails both by far.
    expect(delays.length).toBeGreaterThan(100);
    const p50 = delays[Math.floor(delays.length / 2)] ?? Number.NaN;
    const p99 = delays[Math.floor(delays.length * 0.99)];
    const seen = `delays p50 ${p50} p99 ${p99} max ${delays.at(-1)} ms, queue ${st.queueFrames} frames`;
    expect(p50, seen).toBeLessThanOrEqual(QUEUE_LIMITS.MAX_DELAY_MS);
    expect(delays.at(-1), seen).toBeLessThanOrEqual(10 * QUEUE_LIMITS.MAX_DELAY_MS);
  }, 20_000);
});

describe('sizing the queue (recv-queue.ts)', () => {
  it('holds QUEUE_MS of the measured speed, within its limits', () => {
    // 4,000 frames in 1,000 ms of work: 4 per ms, 100 in QUEUE_MS (25 ms, half the bound)
    expect(QUEUE_LIMITS.QUEUE_MS).toBeLessThanOrEqual(QUEUE_LIMITS.MAX_DELAY_MS / 2);
    expect(framesForDelay(4000, 1000)).toBe(100);
    expect(framesForDelay(10, 1000)).toBe(QUEUE_LIMITS.MIN_FRAMES);
    expect(framesForDelay(1e9, 1)).toBe(QUEUE_LIMITS.MAX_FRAMES);
    expect(framesForDelay(500, 0)).toBe(QUEUE_LIMITS.MAX_FRAMES);
    // Linux doubles what it is given: half the bytes of the datagrams' truesize
    expect(bufferBytesFor(200)).toBe((200 * QUEUE_LIMITS.DATAGRAM_TRUESIZE) / 2);
  });

  it.each([
    ['udp4', '127.0.0.1'],
    ['udp6', '::1'],
  ] as const)('reads the drops of its socket (%s) from /proc/net/udp', async (type, host) => {
    // a socket of ~4 datagrams; 100 sent before this loop can read any: the kernel drops the rest
    const rx = dgram.createSocket({ type, recvBufferSize: bufferBytesFor(4) });
    const tx = dgram.createSocket(type);
    open.push({ close: () => new Promise<void>((res) => rx.close(() => tx.close(() => res()))) });
    await new Promise<void>((res) => rx.bind(0, host, () => res()));
    const port = rx.address().port;
    expect(udpDrops(host, port, type === 'udp6')).toBe(0);
    for (let i = 0; i < 100; i++) tx.send(Buffer.alloc(33), port, host);
    await new Promise((res) => setTimeout(res, 50));
    expect(udpDrops(host, port, type === 'udp6')).toBeGreaterThan(50);
    // an address nobody holds reads as no drops, not an error
    expect(udpDrops(host, 1, type === 'udp6')).toBe(0);
  });
});
