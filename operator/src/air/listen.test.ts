import { afterEach, describe, expect, it } from 'vitest';
import { assignDatagram, clusterTag, heartbeatDatagram, keyFromHex, specDatagram } from './kubenet.ts';
import { startListener } from './listen.ts';
import { startRelay } from './relay.ts';
import { openStation } from './station.ts';
import { until } from './until.test-helper.ts';

const KEY = keyFromHex('00c0ffee00c0ffee');
const TAG = clusterTag('kube');
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((x) => x.close()));
});

describe('the passive listener', () => {
  it('only says hello, never sends a frame, and prints every frame it hears', async () => {
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    open.push(relay);
    let text = '';
    const listener = await startListener({
      host: '127.0.0.1',
      port: relay.address.port,
      key: KEY,
      output: 'text',
      helloIntervalMs: 50,
      write: (s) => {
        text += s;
      },
    });
    open.push(listener);
    const plane = await openStation({
      host: '127.0.0.1',
      port: relay.address.port,
      bind: '127.0.0.1',
      helloIntervalMs: 0,
    });
    open.push(plane);
    await until(() => relay.peers().length === 2, 5000, 'both on the air');
    await plane.send(assignDatagram({ cluster: TAG, node: 'node1', ids: [3, 7], counter: 1 }, KEY));
    await plane.send(specDatagram({ cluster: TAG, podId: 3, image: 'Ticker', counter: 2 }, KEY));
    await plane.send(heartbeatDatagram({ cluster: TAG, node: 'node1', ids: [3, 7], counter: 0x1234 }, KEY));
    await until(() => listener.view().counts.frames === 3, 5000, 'three frames');
    await until(() => relay.stats().hellos >= 6, 5000, 'repeated hellos');
    const me = relay.peers().find((p) => p.port === listener.station.local.port)!;
    expect(me.framesIn).toBe(0);
    expect(relay.stats().framesIn).toBe(3);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^\s+\d+\.\d\d {2}assign {5}\[ 20\] node1 {5}\[3, 7\]$/);
    expect(lines[1]).toMatch(/spec {7}\[ 20\] id 3 {6}Ticker$/);
    expect(lines[2]).toMatch(/heartbeat {2}\[ 20\] node1 {5}\[3, 7\]$/);
    const v = listener.view();
    expect(v.converged).toBe(true);
    expect(v.pods.find((p) => p.id === 3)).toEqual({
      id: 3,
      image: 'Ticker',
      assignedTo: ['node1'],
      runningOn: ['node1'],
    });
  });

  it('redraws the cluster view in place in table mode', async () => {
    const relay = await startRelay({ port: 0, bind: '127.0.0.1' });
    open.push(relay);
    const screens: string[] = [];
    const listener = await startListener({
      host: '127.0.0.1',
      port: relay.address.port,
      key: KEY,
      output: 'table',
      write: (s) => screens.push(s),
    });
    open.push(listener);
    const node = await openStation({
      host: '127.0.0.1',
      port: relay.address.port,
      bind: '127.0.0.1',
      helloIntervalMs: 0,
    });
    open.push(node);
    await until(() => relay.peers().length === 2, 5000, 'both on the air');
    await node.send(heartbeatDatagram({ cluster: TAG, node: 'node1', ids: [3], counter: 1 }, KEY));
    await until(() => screens.some((s) => s.includes('node1')), 5000, 'a redraw with node1');
    const last = screens.at(-1)!;
    expect(last.startsWith('\x1b[H\x1b[2J')).toBe(true);
    expect(last).toMatch(/^node1\s+Ready\*\s+\S+\s+3\s+-$/m); // Ready, nothing assigned yet
    expect(last).toMatch(/frames 1: ok 1, forged 0/);
  });
});
