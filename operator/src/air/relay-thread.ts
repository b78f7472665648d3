// The relay's side of its send thread (relay-sender.ts): starts it on the relay's port, hands it
// jobs, takes the datagrams its socket received, and folds its counters into the relay's.
import { Worker } from 'node:worker_threads';
import { CTL, createRings, drainInbound, JobWriter, openRings, RING } from './relay-rings.ts';
import type { SenderData } from './relay-sender.ts';

/** The send thread's counters, as the relay adds them to its own. */
export interface SenderCounts {
  sent: number;
  late: number;
  sendErrors: number;
  inboundDropped: number;
}

export interface SendThread {
  jobs: JobWriter;
  /** The kernel queue its socket holds, as the relay's. */
  sizeQueue(frames: number): void;
  /**
   * Moves the send thread's share of the deliveries towards the less busy thread, given how busy
   * the relay's thread was (ms) since the last call.
   */
  balance(relayBusyMs: number, windowMs: number): void;
  /** What it counted since the last call. */
  takeCounts(): SenderCounts;
  /** The CPU µs it used so far. */
  cpuUs(): Promise<number>;
  close(): Promise<void>;
}

const FOLDED = [CTL.SENT, CTL.LATE, CTL.SEND_ERRORS, CTL.INBOUND_DROPPED] as const;

/**
 * Starts the send thread on `port` of `bind` (the relay's socket must already be bound there with
 * reusePort) and feeds every datagram its socket receives to `handle`.
 */
export async function startSendThread(
  port: number,
  bind: string,
  handle: (msg: Buffer, ip: number, port: number) => void,
): Promise<SendThread> {
  const sab = createRings();
  const rings = openRings(sab);
  const data: SenderData = { sab, port, bind };
  const worker = new Worker(new URL('./relay-sender.ts', import.meta.url), { workerData: data });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.once('exit', (code) =>
      reject(new Error(`the relay's send thread exited (${code}) before it bound`)),
    );
  });
  worker.removeAllListeners('exit');
  worker.removeAllListeners('error');
  // A failure in the thread after its start is not the relay's end: it sends the whole air itself
  // once the job ring stays full (JobWriter.begin).
  worker.on('error', () => {});
  const draining = drainInbound(rings, handle);
  const last = FOLDED.map(() => 0);
  const jobs = new JobWriter(rings);
  let busyAt = Atomics.load(rings.ctl, CTL.BUSY_MS);
  return {
    jobs,
    balance: (relayBusyMs, windowMs) => {
      const busy = Atomics.load(rings.ctl, CTL.BUSY_MS);
      const senderBusyMs = (busy - busyAt) >>> 0;
      busyAt = busy;
      if (windowMs <= 0) return;
      const d = (senderBusyMs - relayBusyMs) / windowMs;
      if (d > RING.SHARE_DEADBAND) jobs.share = Math.max(RING.SHARE_MIN, jobs.share - RING.SHARE_STEP);
      else if (d < -RING.SHARE_DEADBAND) jobs.share = Math.min(RING.SHARE_MAX, jobs.share + RING.SHARE_STEP);
    },
    sizeQueue: (frames) => Atomics.store(rings.ctl, CTL.QUEUE_FRAMES, frames),
    takeCounts: () => {
      const d = FOLDED.map((w, i) => {
        const v = Atomics.load(rings.ctl, w);
        const delta = (v - (last[i] ?? 0)) >>> 0; // the counters wrap at 2^32
        last[i] = v;
        return delta;
      });
      return { sent: d[0] ?? 0, late: d[1] ?? 0, sendErrors: d[2] ?? 0, inboundDropped: d[3] ?? 0 };
    },
    cpuUs: () =>
      new Promise((resolve) => {
        worker.once('message', (m: { cpuUs: number }) => resolve(m.cpuUs));
        worker.postMessage('cpu');
      }),
    close: async () => {
      Atomics.store(rings.ctl, CTL.CLOSING, 1);
      Atomics.notify(rings.ctl, CTL.JOB_HEAD);
      Atomics.notify(rings.ctl, CTL.IN_HEAD);
      await draining;
      await worker.terminate();
    },
  };
}
