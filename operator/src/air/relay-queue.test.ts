// The relay's tests on loopback, continued (relay.test.ts): the kernel queue in front of the relay.
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { procAddress } from './kernel-drops.ts';
import { RELAY_LIMITS, type Relay } from './relay.ts';
import { BURST, relayProbes, settle } from './relay-probes.test-helper.ts';
import { frame } from './stations.test-helper.ts';
import { until } from './until.test-helper.ts';

const { open, closeAll, relay, station } = relayProbes();
afterEach(closeAll);

describe('the kernel queue in front of the relay (#32: drop, as radio does, rather than queue)', () => {
  it('holds the Linux default before a flood is timed; a burst beyond it is dropped by the kernel and counted', async () => {
    const r = await relay({ rate: null, metricsPort: 0, metricsBind: '127.0.0.1' });
    const a = await station(r);
    await station(r);
    await until(() => r.peers().length === 2, 5000, 'two stations');
    expect(r.stats().queueFrames).toBe(RELAY_LIMITS.QUEUE_INITIAL_FRAMES);
    // one turn of this loop (the relay's too): nothing is read until every frame is sent
    const raw = dgram.createSocket('udp4');
    open.push({ close: () => new Promise<void>((res) => raw.close(() => res())) });
    const burst = 4 * RELAY_LIMITS.QUEUE_INITIAL_FRAMES;
    for (let i = 0; i < burst; i++) raw.send(frame(9, i), r.address.port, '127.0.0.1');
    await until(() => r.stats().framesIn + r.stats().droppedQueue === burst, 5000, 'the burst judged');
    const st = r.stats();
    if (process.platform === 'linux') {
      expect(st.droppedQueue).toBeGreaterThan(0);
      expect(st.framesIn).toBeLessThanOrEqual(RELAY_LIMITS.QUEUE_INITIAL_FRAMES + 1);
    }
    const text = await (await fetch(`${r.metrics!.url}/metrics`)).text();
    expect(text).toMatch(new RegExp(`^air_relay_dropped_total\\{reason="queue"\\} ${st.droppedQueue}$`, 'm'));
    expect(text).toMatch(/^air_relay_queue_frames \d+$/m);
    // and the air still carries frames
    await a.st.send(frame(1, 7));
    await until(() => r.stats().framesIn === st.framesIn + 1, 5000, 'a frame after the burst');
  });

  it('a flood times the queue (within its bounds); light traffic puts back the Linux default', async () => {
    const r = await relay({ rate: null });
    const a = await station(r);
    for (let i = 0; i < 4; i++) await station(r);
    await until(() => r.peers().length === 5, 5000, 'five stations');
    const sizes = new Set<number>();
    const end = Date.now() + 3 * RELAY_LIMITS.QUEUE_MEASURE_MS;
    for (let n = 0; Date.now() < end; ) {
      for (let k = 0; k < 50; k++) void a.st.send(frame(1, n++));
      await new Promise((res) => setImmediate(res)); // the relay reads between bursts
      sizes.add(r.stats().queueFrames);
    }
    sizes.delete(RELAY_LIMITS.QUEUE_INITIAL_FRAMES);
    expect(sizes.size).toBeGreaterThan(0); // timed at least once
    for (const q of sizes) {
      expect(q).toBeGreaterThanOrEqual(RELAY_LIMITS.QUEUE_MIN_FRAMES);
      expect(q).toBeLessThanOrEqual(RELAY_LIMITS.QUEUE_MAX_FRAMES);
    }
    // light traffic, 10 frames/s: the window that holds the flood's tail is timed, the next one not
    for (let i = 0; i < 20 && r.stats().queueFrames !== RELAY_LIMITS.QUEUE_INITIAL_FRAMES; i++) {
      await a.st.send(frame(1, i));
      await settle(100);
    }
    expect(r.stats()).toMatchObject({ queueFrames: RELAY_LIMITS.QUEUE_INITIAL_FRAMES, queueTimed: false });
  });

  it('a burst on the queue for light traffic is timed as soon as it makes a sample, not a window later', async () => {
    let rr: Relay | undefined;
    /** Per frame judged: whether the queue was timed when it was. */
    const timed: boolean[] = [];
    const r = await relay({
      rate: null,
      frameEvents: true,
      onEvent: (e) => {
        if (e.type === 'frame' && rr) timed.push(rr.stats().queueTimed);
      },
    });
    rr = r;
    const a = await station(r);
    await station(r);
    await until(() => r.peers().length === 2, 5000, 'two stations');
    // a frame after a whole window: the relay times itself, finds too little traffic, stays untimed
    await settle(RELAY_LIMITS.QUEUE_MEASURE_MS + 20);
    await a.st.send(frame(1, 0));
    await until(() => timed.length === 1, 5000, 'the first frame judged');
    expect(timed[0]).toBe(false);
    // then a burst far shorter than a window, BURST frames at a time (no kernel queue overflows).
    // Twice the sample: should the host hold this thread past the window's end mid-burst, that
    // timing finds too few frames and the next sample still falls inside the burst.
    const burst = 2 * RELAY_LIMITS.QUEUE_MIN_SAMPLE + 8;
    for (let i = 1; i <= burst; ) {
      const end = Math.min(burst, i + BURST - 1);
      for (; i <= end; i++) void a.st.send(frame(1, i));
      await until(() => timed.length === 1 + end, 5000, `frames to ${end} judged`, 0);
    }
    const first = timed.indexOf(true);
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(2 * RELAY_LIMITS.QUEUE_MIN_SAMPLE);
    expect(r.stats().queueTimed).toBe(true);
  });

  it('finds its socket in /proc/net/udp by the address as the kernel prints it', () => {
    expect(procAddress('127.0.0.1', false)).toBe('0100007F');
    expect(procAddress('0.0.0.0', false)).toBe('00000000');
    expect(procAddress('::1', true)).toBe('00000000000000000000000001000000');
    expect(procAddress('::', true)).toBe('0'.repeat(32));
  });
});
