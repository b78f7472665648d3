// The relay in one thread gives each proven station a connected socket on its port too
// (relay-conns.ts): real UDP on loopback, stations connect()ed to the relay as QEMU's chardev is,
// so a delivery from any address but the relay's own would be lost.
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { RELAY_LIMITS, startRelay } from './relay.ts';
import { bindsPlain, boundTo, frame, send, connected as station } from './stations.test-helper.ts';
import { until } from './until.test-helper.ts';
import { HELLO_BYTE } from './wire.ts';

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

describe('the relay in one thread, with its stations’ sockets', () => {
  it('a proven station gets a connected socket and hears every other station through it; forgotten, its socket closes', async () => {
    const clock = new ManualClock();
    const r = await startRelay({ port: 0, bind: '127.0.0.1', clock });
    open.push(r);
    const s = await Promise.all(Array.from({ length: 8 }, () => station(r, open)));
    for (const x of s) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => r.peers().length === 8, 10_000, 'eight stations');
    expect(boundTo(r.address.port)).toEqual({ bound: 1, connected: 0 });
    clock.advance(RELAY_LIMITS.PROOF_MS);
    for (const x of s) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(
      () => boundTo(r.address.port).connected === 8,
      10_000,
      'a connected socket per proven station',
    );
    const rounds = 4;
    for (let n = 0; n < rounds; n++) {
      await Promise.all(s.map((x, i) => send(x, frame(i, n))));
      await until(() => r.stats().framesIn === 8 * (n + 1), 10_000, `round ${n} judged`);
    }
    const received = () => s.reduce((n, x) => n + x.got.length, 0);
    // made or counted late (a relay waiting for a core past the delay bound drops, as radio does)
    await until(
      () =>
        r.stats().framesOut + r.stats().droppedLate === 8 * 7 * rounds && received() === r.stats().framesOut,
      10_000,
      'every delivery made or counted late',
    );
    expect(received()).toBeGreaterThan(8 * 7 * rounds * 0.5);
    for (const [i, x] of s.entries()) expect(x.got.map((m) => m[3])).not.toContain(i); // never back to the sender
    expect(r.stats()).toMatchObject({
      framesIn: 8 * rounds,
      framesOutThread: 0,
      handedOver: 0,
      sendErrors: 0,
    });
    clock.advance(RELAY_LIMITS.PEER_TTL_MS + 1);
    r.expire();
    expect(r.peers()).toHaveLength(0);
    await until(() => boundTo(r.address.port).bound === 1, 10_000, 'the relay’s own socket only');
  });

  it('before a flood is timed, a proven station’s own socket holds what one station needs: beyond it the kernel drops, and counts', async () => {
    const clock = new ManualClock();
    const r = await startRelay({ port: 0, bind: '127.0.0.1', clock, rate: null });
    open.push(r);
    const [a, b] = await Promise.all([station(r, open), station(r, open)]);
    if (!a || !b) throw new Error('two stations');
    for (const x of [a, b]) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => r.peers().length === 2, 10_000, 'two stations');
    clock.advance(RELAY_LIMITS.PROOF_MS);
    for (const x of [a, b]) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => boundTo(r.address.port).connected === 2, 10_000, 'their connected sockets');
    expect(r.stats()).toMatchObject({ queueTimed: false, queueFrames: RELAY_LIMITS.QUEUE_INITIAL_FRAMES });
    // one turn of this loop (the relay's too): nothing is read until every frame is sent, and the
    // kernel hands a's datagrams to a's socket on the relay's port
    const burst = RELAY_LIMITS.QUEUE_INITIAL_FRAMES;
    for (let i = 0; i < burst; i++) a.sock.send(frame(0, i));
    await until(
      () => r.stats().framesIn + r.stats().droppedQueue === burst,
      10_000,
      'the burst judged or counted as dropped',
    );
    if (process.platform === 'linux') {
      expect(r.stats().framesIn).toBeLessThanOrEqual(RELAY_LIMITS.STATION_QUEUE_INITIAL_FRAMES + 1);
      expect(r.stats().droppedQueue).toBeGreaterThanOrEqual(
        burst - RELAY_LIMITS.STATION_QUEUE_INITIAL_FRAMES - 1,
      );
    }
    await until(() => b.got.length === r.stats().framesIn, 10_000, 'b hears what was judged');
  });

  it('a taken port fails as before, and a closed relay leaves the port free', async () => {
    const r = await startRelay({ port: 0, bind: '127.0.0.1' });
    open.push(r);
    await expect(startRelay({ port: r.address.port, bind: '127.0.0.1' })).rejects.toThrow(/EADDRINUSE/);
    const port = r.address.port;
    await r.close();
    await bindsPlain(port);
  });
});
