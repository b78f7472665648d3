// #28.9: a machine's radio hears only its relay, probed as the issue did: ten frames sent straight
// to the radio's port from a foreign loopback address (127.0.0.9) were received before the fix.
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { type Relay, startRelay } from '../air/relay.ts';
import { UdpAir } from './air-udp.ts';

const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const until = async (cond: () => boolean, what: string, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('#28.9 the radio accepts frames only from the relay', () => {
  it('binds loopback like its relay and ignores frames from a foreign source address', async () => {
    const relay: Relay = await startRelay({ port: 0, bind: '127.0.0.1', rate: null });
    cleanup.push(() => relay.close());
    const heard: number[] = [];
    const radio = new UdpAir({
      host: '127.0.0.1',
      port: relay.address.port,
      onFrame: (_ch, p) => heard.push(p[0]),
    });
    await radio.start();
    cleanup.push(() => radio.close());
    const other = new UdpAir({ host: '127.0.0.1', port: relay.address.port, onFrame: () => {} });
    await other.start();
    cleanup.push(() => other.close());
    await until(() => relay.peers().length === 2, 'both radios on the air');

    const spoof = dgram.createSocket('udp4');
    cleanup.push(() => new Promise<void>((r) => spoof.close(() => r())));
    await new Promise<void>((r) => spoof.bind(0, '127.0.0.9', () => r()));
    const frame = new Uint8Array(33);
    frame[1] = 0xee;
    for (let i = 0; i < 10; i++) spoof.send(frame, radio.localPort, '127.0.0.1');
    await until(() => radio.stats.foreign === 10, 'the foreign frames to arrive');

    const ok = new Uint8Array(32);
    ok[0] = 0x42;
    other.send(5, ok); // through the relay: heard
    await until(() => heard.length === 1, 'the relayed frame');
    expect(heard).toEqual([0x42]);
    expect(radio.stats.received).toBe(1);
    // and the foreign address could not even reach it from outside loopback: the radio is on 127.0.0.1
    expect((radio as unknown as { sock: dgram.Socket }).sock.address().address).toBe('127.0.0.1');
  });
});
