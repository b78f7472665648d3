import { afterEach, describe, expect, it } from 'vitest';
import { UdpAir } from './air-udp.ts';
import { Nrf24 } from './nrf24.ts';
import { relay } from './test-relay.ts';

// Drive a radio the way SCC.Mod does: spiCtrl writes (select = device 2, bit 3 = CE, bit 2 = fast)
// and SPI data bytes/words.
const SEL = 2;
const FAST = 4;
const CE = 8;
function cmd(r: Nrf24, bytes: number[], ce = false): number[] {
  r.control(SEL | (ce ? CE : 0));
  const out: number[] = [];
  for (const b of bytes) {
    r.write(b, false);
    out.push(r.read());
  }
  r.control(ce ? CE : 0);
  return out;
}
function writeReg(r: Nrf24, reg: number, v: number): void {
  cmd(r, [0x20 | reg, v]);
}
function startListening(r: Nrf24, channel: number): void {
  writeReg(r, 5, channel);
  writeReg(r, 0x11, 32);
  writeReg(r, 0, 0x7f); // PWR_UP | PRIM_RX
  r.control(CE);
}
function transmit(r: Nrf24, payload: Uint8Array): number {
  writeReg(r, 0, 0x7e); // PWR_UP, TX mode
  r.control(SEL);
  r.write(0xa0, false);
  r.control(SEL | FAST);
  for (let i = 0; i < 32; i += 4)
    r.write(payload[i] | (payload[i + 1] << 8) | (payload[i + 2] << 16) | (payload[i + 3] << 24), true);
  r.control(0);
  r.control(SEL | CE); // rising CE: transmit
  r.write(0xff, false); // NOP answers STATUS
  const status = r.read();
  r.control(0);
  return status;
}
function readPayload(r: Nrf24): Uint8Array {
  r.control(SEL);
  r.write(0x61, false);
  r.control(SEL | FAST);
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i += 4) {
    r.write(-1, true);
    const w = r.read();
    out.set([w & 0xff, (w >>> 8) & 0xff, (w >>> 16) & 0xff, (w >>> 24) & 0xff], i);
  }
  r.control(0);
  return out;
}

const until = async (pred: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('nRF24L01+ radio and the UDP air', () => {
  it('answers STATUS to every command and keeps registers (RF_CH reset value 2, CONFIG 08H)', () => {
    const r = new Nrf24();
    expect(cmd(r, [0x05, 0xff])).toEqual([0x0e, 2]);
    expect(cmd(r, [0x00, 0xff])[1]).toBe(0x08);
    writeReg(r, 5, 15);
    expect(cmd(r, [0x05, 0xff])[1]).toBe(15);
    expect(cmd(r, [0x17, 0xff])[1]).toBe(0x11); // RX empty, TX empty
  });

  it('sets MAX_RT instead of TX_DS when no air is connected', () => {
    const r = new Nrf24();
    expect(transmit(r, new Uint8Array(32)) & 0x30).toBe(0x10);
  });

  it("two machines' radios exchange a frame through a relay of real UDP sockets, and the air hears hellos", async () => {
    const rel = await relay();
    cleanups.push(rel.close);
    const a = new Nrf24();
    const b = new Nrf24();
    const airA = new UdpAir({ host: '127.0.0.1', port: rel.port, onFrame: (ch, p) => a.receive(ch, p) });
    const airB = new UdpAir({ host: 'localhost', port: rel.port, onFrame: (ch, p) => b.receive(ch, p) });
    await airA.start();
    await airB.start();
    cleanups.push(
      () => airA.close(),
      () => airB.close(),
    );
    a.air = airA;
    b.air = airB;
    await until(() => rel.heard.filter((m) => m.length === 1 && m[0] === 0xff).length >= 2); // both hellos
    startListening(b, 5);
    writeReg(a, 5, 5);
    const payload = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);
    expect(transmit(a, payload) & 0x20).toBe(0x20); // TX_DS
    await until(() => b.stats.received === 1);
    expect(cmd(b, [0x07])[0] & 0x4e).toBe(0x40); // RX_DR, pipe 0
    expect(Array.from(readPayload(b))).toEqual(Array.from(payload));
    expect(cmd(b, [0x17, 0xff])[1] & 1).toBe(1); // RX empty again
    const frame = rel.heard.find((m) => m.length === 33);
    expect(frame?.[0]).toBe(5); // the channel byte is the sender's RF_CH
  });

  it('resolves the relay name again after failed sends (a replaced relay pod is found again)', async () => {
    const rel = await relay();
    cleanups.push(rel.close);
    // The name first points where sends fail (an IPv6 address on an IPv4 socket), later at the relay.
    const answers = ['::1', '127.0.0.1'];
    let asked = 0;
    const air = new UdpAir({
      host: 'relay.test',
      port: rel.port,
      onFrame: () => {},
      lookup: async () => ({ address: answers[Math.min(asked++, 1)], family: 4 }),
    });
    await air.start();
    cleanups.push(() => air.close());
    await until(() => air.stats.sendErrors >= 1); // the hello failed
    expect(rel.heard.length).toBe(0);
    await new Promise((r) => setTimeout(r, 1100)); // at most one resolution per second
    air.send(5, new Uint8Array(32)); // fails, triggers the second resolution
    await until(() => air.stats.resolves >= 2);
    air.send(5, new Uint8Array(32).fill(9));
    await until(() => rel.heard.some((d) => d.length === 33 && d[1] === 9));
    expect(asked).toBe(2);
  });

  it('starts even when the relay name does not resolve yet, says since when, and finds the relay once it does', async () => {
    const rel = await relay();
    cleanups.push(rel.close);
    let asked = 0;
    const air = new UdpAir({
      host: 'rk-air-later',
      port: rel.port,
      onFrame: () => {},
      lookup: async () => {
        if (asked++ === 0) throw new Error('getaddrinfo ENOTFOUND rk-air-later');
        return { address: '127.0.0.1', family: 4 };
      },
    });
    const before = Date.now();
    await air.start(); // not fatal: the machine runs without an air meanwhile
    cleanups.push(() => air.close());
    expect(air.unresolvedSince).toBeGreaterThanOrEqual(before);
    expect(air.resolveError).toMatch(/ENOTFOUND/);
    await new Promise((r) => setTimeout(r, 1100)); // at most one resolution per second
    air.send(5, new Uint8Array(32)); // nowhere to send: resolves again
    await until(() => air.unresolvedSince === null);
    expect(air.resolveError).toBeNull();
    air.send(5, new Uint8Array(32).fill(7));
    await until(() => rel.heard.some((d) => d.length === 33 && d[1] === 7));
  });

  it('drops frames on another channel and keeps at most 3 in the RX queue', async () => {
    const rel = await relay();
    cleanups.push(rel.close);
    const a = new Nrf24();
    const b = new Nrf24();
    const airA = new UdpAir({ host: '127.0.0.1', port: rel.port, onFrame: (ch, p) => a.receive(ch, p) });
    const airB = new UdpAir({ host: '127.0.0.1', port: rel.port, onFrame: (ch, p) => b.receive(ch, p) });
    await airA.start();
    await airB.start();
    cleanups.push(
      () => airA.close(),
      () => airB.close(),
    );
    a.air = airA;
    await until(() => rel.heard.length >= 2);
    startListening(b, 15);
    writeReg(a, 5, 25);
    transmit(a, new Uint8Array(32).fill(1)); // channel 25: not for b
    writeReg(a, 5, 15);
    for (let i = 0; i < 5; i++) transmit(a, new Uint8Array(32).fill(i + 10));
    await until(() => airB.stats.received === 6);
    expect(b.stats.received).toBe(3);
    expect(cmd(b, [0x17, 0xff])[1] & 2).toBe(2); // RX full
    expect(readPayload(b)[0]).toBe(10); // first in, first out
  });

  it('tells onRead each frame Oberon reads out of the RX queue, once, with its channel (not those it only holds)', () => {
    const r = new Nrf24();
    const read: [number, number][] = [];
    r.onRead = (ch, p) => read.push([ch, p[0]]);
    startListening(r, 15);
    for (const first of [7, 8]) r.receive(15, new Uint8Array(32).fill(first));
    expect(read).toEqual([]); // held, not read
    expect(readPayload(r)[0]).toBe(7);
    expect(read).toEqual([[15, 7]]);
    expect(readPayload(r)[0]).toBe(8);
    expect(readPayload(r)[0]).toBe(0); // empty queue: nothing read, nothing told
    expect(read).toEqual([
      [15, 7],
      [15, 8],
    ]);
  });
});
