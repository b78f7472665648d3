// The relay with its send thread (`sendThread: true`): real UDP on loopback, stations whose
// sockets are connect()ed to the relay as QEMU's chardev is (they hear only the relay's address
// and port), so a delivery from any other source would be lost.
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { RELAY_LIMITS, startRelay } from './relay.ts';
import type { Relay } from './relay-types.ts';
import {
  bindsPlain,
  boundTo,
  type Connected,
  frame,
  send,
  connected as station,
} from './stations.test-helper.ts';
import { until } from './until.test-helper.ts';
import { HELLO_BYTE } from './wire.ts';

const open: { close(): Promise<void> }[] = [];
const connected = (r: Relay): Promise<Connected> => station(r, open);
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

async function relay(opts: Parameters<typeof startRelay>[0] = {}): Promise<Relay> {
  const r = await startRelay({ port: 0, bind: '127.0.0.1', sendThread: true, ...opts });
  open.push(r);
  return r;
}

describe('the relay with a send thread', () => {
  it('every frame reaches every other station from the relay’s own address; stations the kernel gives the send thread’s socket are heard too', async () => {
    const r = await relay();
    // enough stations that the kernel's hash (by source port) puts some on each socket
    const s = await Promise.all(Array.from({ length: 16 }, () => connected(r)));
    for (const x of s) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => r.peers().length === 16, 10_000, 'sixteen stations');
    const rounds = 8;
    for (let n = 0; n < rounds; n++) {
      await Promise.all(s.map((x, i) => send(x, frame(i, n))));
      await until(() => r.stats().framesIn === 16 * (n + 1), 10_000, `round ${n} judged`);
    }
    // A delivery either arrives or is counted late: on a loaded host a thread that waits for a core
    // longer than the delay bound drops, as radio does (RELAY_LIMITS.MAX_DELAY_MS).
    const total = 16 * 15 * rounds;
    const received = () => s.reduce((n, x) => n + x.got.length, 0);
    await until(
      () => r.stats().framesOut + r.stats().droppedLate === total && received() === r.stats().framesOut,
      10_000,
      'every delivery made or counted late',
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${received()} received, ${JSON.stringify(r.stats())}`);
    });
    for (const [i, x] of s.entries()) expect(x.got.map((m) => m[3])).not.toContain(i); // never back to the sender
    const st = r.stats();
    expect(st).toMatchObject({ framesIn: 16 * rounds, sendErrors: 0 });
    expect(st.droppedLate).toBeLessThan(total / 2);
    // both threads sent, and the send thread's socket received some stations and handed them over
    expect(st.framesOutThread).toBeGreaterThan(0);
    expect(st.framesOutThread).toBeLessThan(st.framesOut);
    expect(st.handedOver).toBeGreaterThan(0);
    expect(await r.sendThreadCpuUs()).toBeGreaterThan(0);
  });

  it('keeps the limits: a cut station gets nothing and its frames go nowhere; loss drops deliveries', async () => {
    const r = await relay({ loss: 0 });
    const s = await Promise.all(Array.from({ length: 8 }, () => connected(r)));
    for (const x of s) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => r.peers().length === 8, 10_000, 'eight stations');
    const cut = s[0] as Connected;
    r.cut(`127.0.0.1:${cut.port}`);
    for (let n = 0; n < 4; n++) await Promise.all(s.map((x, i) => send(x, frame(i, n))));
    await until(() => r.stats().framesIn === 32, 10_000, 'every frame judged');
    const seven = () => s.slice(1).reduce((n, x) => n + x.got.length, 0);
    // each made or counted late (a thread waiting for a core past the delay bound drops)
    await until(
      () => r.stats().framesOut + r.stats().droppedLate === 7 * 6 * 4 && seven() === r.stats().framesOut,
      10_000,
      'deliveries to the seven',
    );
    await new Promise((res) => setTimeout(res, 100));
    expect(cut.got.length).toBe(0);
    for (const x of s.slice(1)) expect(x.got.some((m) => m[3] === 0)).toBe(false);
    r.restore('*');
    r.setLoss(1);
    const before = r.stats().framesOut;
    await send(s[1] as Connected, frame(1, 99));
    await until(() => r.stats().framesIn === 33, 10_000, 'the lossy frame judged');
    expect(r.stats().framesOut).toBe(before);
    expect(r.stats().droppedLoss).toBe(7);
  });

  it('a proven station is heard on the relay’s own thread (its connected socket), whichever socket the kernel gave it before; forgotten, its socket closes', async () => {
    const clock = new ManualClock();
    const r = await relay({ clock });
    const s = await Promise.all(Array.from({ length: 16 }, () => connected(r)));
    for (const x of s) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => r.stats().hellos === 16, 10_000, 'sixteen hellos');
    // the kernel's hash put some on the send thread's socket (as in the first test)
    expect(r.stats().handedOver).toBeGreaterThan(0);
    clock.advance(RELAY_LIMITS.PROOF_MS);
    for (const x of s) await send(x, Uint8Array.of(HELLO_BYTE));
    await until(() => r.stats().hellos === 32, 10_000, 'heard again: proven');
    const handed = r.stats().handedOver;
    // a station's socket connects on the next turns of the relay's loop; a frame before may still be handed over
    await until(() => boundTo(r.address.port).connected === 16, 10_000, 'a connected socket per station');
    for (let n = 0; n < 4; n++) {
      await Promise.all(s.map((x, i) => send(x, frame(i, n))));
      await until(() => r.stats().framesIn === 16 * (n + 1), 10_000, `round ${n} judged`);
    }
    const received = () => s.reduce((n, x) => n + x.got.length, 0);
    await until(
      () => r.stats().framesOut + r.stats().droppedLate === 16 * 15 * 4 && received() === r.stats().framesOut,
      10_000,
      'every delivery made or counted late',
    );
    expect(r.stats().handedOver).toBe(handed);
    // the station's deliveries come from the relay's address and port, or its station would not hear them
    expect(received()).toBeGreaterThan(0);
    // silent past the TTL: forgotten, and the relay's sockets bound to its port are back to two
    clock.advance(RELAY_LIMITS.PEER_TTL_MS + 1);
    r.expire();
    expect(r.peers()).toHaveLength(0);
    await until(
      () => boundTo(r.address.port).bound === 2,
      10_000,
      'the relay’s and the send thread’s socket only',
    );
    expect(boundTo(r.address.port).connected).toBe(0);
  });

  it('a taken port fails as without the thread, and a closed relay leaves the port free', async () => {
    const r = await relay();
    await expect(startRelay({ port: r.address.port, bind: '127.0.0.1', sendThread: true })).rejects.toThrow(
      /cannot open the air on udp 127.0.0.1:\d+ \(EADDRINUSE\); another relay runs there/,
    );
    await expect(startRelay({ port: r.address.port, bind: '127.0.0.1' })).rejects.toThrow(/EADDRINUSE/);
    const port = r.address.port;
    await r.close();
    // nothing of the relay (neither socket, nor the thread's) still holds it: a plain socket binds
    await bindsPlain(port);
  });
});
