// The relay's tests on loopback, continued (relay.test.ts): its peer table against sprays of sources.
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { RELAY_LIMITS, type Relay } from './relay.ts';
import { relayProbes, settle } from './relay-probes.test-helper.ts';
import { openStation } from './station.ts';
import { frame } from './stations.test-helper.ts';
import { until } from './until.test-helper.ts';
import { HELLO_BYTE } from './wire.ts';

const { open, closeAll, relay, station } = relayProbes();
afterEach(closeAll);

describe('#17.7 the peer table against one host with many ports', () => {
  /** `n` hello-only sockets bound to `host` (a loopback address: 127.0.0.0/8 all reach lo). */
  async function sprayHellos(r: Relay, host: string, n: number): Promise<dgram.Socket[]> {
    const socks: dgram.Socket[] = [];
    for (let i = 0; i < n; i++) {
      const s = dgram.createSocket('udp4');
      await new Promise<void>((ok) => s.bind(0, host, () => ok()));
      open.push({ close: () => new Promise<void>((ok) => s.close(() => ok())) });
      s.send(Buffer.from([HELLO_BYTE]), r.address.port, '127.0.0.1');
      socks.push(s);
    }
    return socks;
  }

  it('caps the stations of one address, keeps stations that sent frames, and honest stations still join', async () => {
    const r = await relay();
    const a = await station(r);
    const b = await station(r);
    await a.st.send(frame(1));
    await b.st.send(frame(2));
    await until(() => a.got.length === 1 && b.got.length === 1, 5000, 'a and b talk');
    await sprayHellos(r, '127.0.0.2', 80);
    await sprayHellos(r, '127.0.0.1', 60); // the honest stations' own address, too
    await until(() => r.stats().hellos >= 142, 5000, 'all hellos');
    await settle();
    const by = (h: string) => r.peers().filter((p) => p.host === h);
    // #28.3: stations not heard again yet (unproven) are capped lower per address
    expect(by('127.0.0.2').length).toBe(RELAY_LIMITS.MAX_UNPROVEN_PER_HOST);
    expect(by('127.0.0.1').length).toBe(RELAY_LIMITS.MAX_UNPROVEN_PER_HOST);
    // a and b sent frames: never evicted by hellos.
    expect(by('127.0.0.1').map((p) => p.port)).toEqual(expect.arrayContaining([a.port, b.port]));
    expect(r.stats().refusedPeers).toBeGreaterThan(0);
    // A new honest station from another address joins and hears a.
    const c = await openStation({
      host: '127.0.0.1',
      port: r.address.port,
      bind: '127.0.0.3',
      helloIntervalMs: 0,
      hello: true,
      onDatagram: () => {},
    });
    open.push(c);
    await until(() => by('127.0.0.3').length === 1, 5000, 'c joined');
  });

  it('one frame reaches every talking station but at most MAX_SILENT_RECEIVERS silent ones', async () => {
    const r = await relay();
    const a = await station(r);
    const b = await station(r);
    await b.st.send(frame(2));
    await until(() => a.got.length === 1, 5000, 'a hears b');
    // 104 silent stations, 8 per address, each heard twice 1 s apart (proven listeners, #28.3)
    const hosts = Array.from({ length: 13 }, (_, i) => `127.0.0.${4 + i}`);
    const socks = (await Promise.all(hosts.map((h) => sprayHellos(r, h, 8)))).flat();
    await until(() => r.peers().length === 106, 5000, '104 silent stations');
    await settle(RELAY_LIMITS.PROOF_MS + 100);
    await b.st.send(frame(2)); // a and b are proven too
    await a.st.send(frame(1));
    await until(() => a.got.length === 2 && b.got.length === 1, 5000, 'a and b proven');
    const hellos = r.stats().hellos;
    for (const s of socks) s.send(Buffer.from([HELLO_BYTE]), r.address.port, '127.0.0.1');
    await until(() => r.stats().hellos >= hellos + 104, 5000, 'second hellos');
    const budget = r.stats().droppedBudget;
    const before = r.stats().framesOut;
    await a.st.send(frame(1));
    await until(() => b.got.length === 2, 5000, 'b hears a');
    await settle();
    const out = r.stats().framesOut - before;
    expect(out).toBe(1 + RELAY_LIMITS.MAX_SILENT_RECEIVERS); // b, then the capped listeners
    expect(r.stats().droppedBudget - budget).toBe(104 - RELAY_LIMITS.MAX_SILENT_RECEIVERS);
  });
});

describe('#28.3 the peer table against a spray of one-frame sources', () => {
  it('33 addresses × 32 ports, one frame each: a proven station stays, a new one joins, the spray is not amplified', async () => {
    const r = await relay({ rate: null });
    const a = await station(r);
    await a.st.send(frame(1));
    await settle(RELAY_LIMITS.PROOF_MS + 100);
    await a.st.send(frame(1, 1)); // heard again a second later: proven
    const spray: dgram.Socket[] = [];
    for (let h = 0; h < 33; h++)
      for (let i = 0; i < 32; i++) {
        const s = dgram.createSocket('udp4');
        s.on('message', () => {}); // a spoofed source never reads what reaches it
        await new Promise<void>((ok) => s.bind(0, `127.0.1.${h + 1}`, () => ok()));
        open.push({ close: () => new Promise<void>((ok) => s.close(() => ok())) });
        s.send(Buffer.from(frame(50 + h, i)), r.address.port, '127.0.0.1');
        spray.push(s);
      }
    // what the relay's kernel queue could not hold is dropped there, as a flood is (RELAY_LIMITS.QUEUE_MS)
    await until(() => r.stats().framesIn + r.stats().droppedQueue >= 2 + 33 * 32, 10_000, 'the spray');
    await settle();
    // the spray held at most MAX_UNPROVEN_PER_HOST entries per address, and each frame reached few
    expect(r.peers().length).toBeLessThanOrEqual(1 + 33 * RELAY_LIMITS.MAX_UNPROVEN_PER_HOST);
    expect(r.stats().framesOut).toBeLessThanOrEqual(33 * 32 * (1 + RELAY_LIMITS.MAX_UNPROVEN_RECEIVERS));
    expect(r.peers().some((p) => p.port === a.port)).toBe(true); // never evicted
    // a legitimate newcomer joins, is heard by a, and hears a
    const c = await station(r);
    await c.st.send(frame(3));
    await until(() => a.got.some((m) => m[3] === 3), 5000, 'a hears c');
    await settle(RELAY_LIMITS.PROOF_MS + 100);
    await c.st.send(frame(3, 1)); // c is proven once heard again; then the air reaches it first
    await a.st.send(frame(1, 2));
    await until(() => c.got.some((m) => m[3] === 1), 5000, 'c hears a');
  }, 60_000);
});
