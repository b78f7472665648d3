import { afterEach, describe, expect, it } from 'vitest';
import { MachineRunner } from './runner.ts';
import type { FrameSnapshot } from './screen-input.ts';
import { regionChanged } from './screen-scan.ts';
import { BASE_IMAGE } from './test-disk.ts';
import { relay } from './test-relay.ts';

// End to end over the air: the image's own Net module (compiled in each machine by ORP) sends a
// message through SCC and our nRF24L01+ model, as UDP datagrams through a relay on 127.0.0.1.

const running: MachineRunner[] = [];
const closers: (() => void)[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.stop();
  for (const c of closers.splice(0)) c();
});

const LOG = { x0: 656, y0: 14, x1: 1016, y1: 250 }; // System.Log's text area (picture coordinates)
const logChanged = (a: FrameSnapshot, b: FrameSnapshot) =>
  regionChanged(a, b, LOG.x0, LOG.y0, LOG.x1, LOG.y1);

async function netMachine(air?: { host: string; port: number }): Promise<MachineRunner> {
  const m = await MachineRunner.start({ disk: BASE_IMAGE, air });
  running.push(m);
  await m.waitForBoot(20_000);
  m.runCommand('ORP.Compile Net.Mod ~');
  await m.waitForIdle(60_000);
  return m;
}

async function server(air?: { host: string; port: number }): Promise<MachineRunner> {
  const b = await netMachine(air);
  b.runCommand('System.SetUser');
  b.typeText('bob/secret ');
  b.runCommand('Net.StartServer');
  await b.waitForIdle(20_000);
  return b;
}

describe('two Oberon machines on one air', () => {
  it('deliver a Net.SendMsg message from one machine to the other over SCC and UDP', {
    timeout: 180_000,
  }, async () => {
    const rel = await relay();
    closers.push(rel.close);
    const air = { host: '127.0.0.1', port: rel.port };
    const b = await server(air);
    const a = await netMachine(air);
    const bBefore = await b.freshSnapshot();
    a.runCommand('Net.SendMsg bob hello over the air');
    await b.waitFor(
      async () => logChanged(bBefore, await b.freshSnapshot()),
      30_000,
      "the message in bob's log",
    );
    await a.waitForIdle(30_000);
    const sa = await a.state();
    const sb = await b.state();
    expect(sa.radio.sent).toBeGreaterThanOrEqual(2); // name request + message
    expect(sb.radio.received).toBeGreaterThanOrEqual(2);
    expect(sb.radio.sent).toBeGreaterThanOrEqual(2); // name response + ACK
    expect(rel.heard.some((d) => d.length === 33 && d.includes(Buffer.from('hello over the air')))).toBe(
      true,
    );
  });

  it('deliver nothing when the air is switched off', { timeout: 180_000 }, async () => {
    const rel = await relay();
    const b = await server({ host: '127.0.0.1', port: rel.port });
    rel.close(); // the relay is gone: the air is off
    const a = await netMachine({ host: '127.0.0.1', port: rel.port });
    const bBefore = await b.freshSnapshot();
    a.runCommand('Net.SendMsg bob hello');
    await a.waitForIdle(30_000); // FindPartner gives up after 3 s: "no link"
    await new Promise((r) => setTimeout(r, 500));
    expect(logChanged(bBefore, await b.freshSnapshot())).toBe(false);
    expect((await b.state()).radio.received).toBe(0);
  });
});
