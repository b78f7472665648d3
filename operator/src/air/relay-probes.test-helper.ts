// Probes for the relay's tests (relay*.test.ts) on loopback: relays and stations that are closed
// after each test, and waits that say what they waited for (frames: stations.test-helper.ts).
import { RELAY_LIMITS, type Relay, type RelayOptions, startRelay } from './relay.ts';
import { openStation, type Station } from './station.ts';
import { until } from './until.test-helper.ts';

export interface Probe {
  st: Station;
  got: Buffer[];
  port: number;
}

/**
 * A test file's relays and stations on loopback; `open` takes anything else to close, and the file
 * calls `afterEach(closeAll)` (this file ships in the image beside the code, so it imports no test
 * runner).
 */
export function relayProbes(): {
  open: { close(): Promise<void> }[];
  closeAll(): Promise<void>;
  relay(opts?: RelayOptions): Promise<Relay>;
  station(r: Relay, hello?: boolean): Promise<Probe>;
} {
  const open: { close(): Promise<void> }[] = [];
  return {
    open,
    closeAll: async () => {
      await Promise.all(open.splice(0).map((x) => x.close()));
    },
    relay: async (opts = {}) => {
      const r = await startRelay({ port: 0, bind: '127.0.0.1', ...opts });
      open.push(r);
      return r;
    },
    station: async (r, hello = true) => {
      const got: Buffer[] = [];
      const st = await openStation({
        host: '127.0.0.1',
        port: r.address.port,
        bind: '127.0.0.1',
        helloIntervalMs: 0,
        hello,
        onDatagram: (m) => got.push(m),
      });
      open.push(st);
      return { st, got, port: st.local.port };
    },
  };
}

/**
 * Frames a test may send in one turn of its loop (the relay's too: nothing is read until the turn
 * ends) and still count on the relay to judge them all: half the smallest kernel queue the relay
 * may hold in front of it. A flood times that queue, and a relay timed on a busy host holds as
 * little as QUEUE_MIN_FRAMES (25 ms of its speed there); whatever arrives beyond it the kernel
 * drops by design, and a count of judged frames would wait for them forever.
 */
export const BURST = RELAY_LIMITS.QUEUE_MIN_FRAMES / 2;

/** Waits (polling every ms) until the relay judged `n` frames; says what the kernel dropped if not. */
export async function judged(r: Relay, n: number, what: string): Promise<void> {
  try {
    await until(() => r.stats().framesIn >= n, 10_000, what, 1);
  } catch (e) {
    const { framesIn, droppedQueue, queueFrames } = r.stats();
    throw new Error(
      `${(e as Error).message}: ${framesIn} of ${n} judged, ${droppedQueue} dropped by the kernel queue of ${queueFrames} datagrams`,
    );
  }
}

export const settle = (ms = 100) => new Promise((r) => setTimeout(r, ms));
