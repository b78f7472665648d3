// The Oberon kubelet and the TypeScript air toolkit speak the same bytes: a node machine's
// heartbeats are byte-identical to what the toolkit encodes for the same fields (the spec's
// example heartbeat: node1, cluster kube, key 00c0ffee00c0ffee, counter 0x1234, ids [3, 7]),
// and the node obeys a plane played by the toolkit (specs and an assignment it signs) while it
// ignores the same assignment signed with the zero key.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assignDatagram,
  clusterTag,
  decodeKubeFrame,
  heartbeatDatagram,
  keyFromHex,
  specDatagram,
  ZERO_KEY,
} from '../../operator/src/air/kubenet.ts';
import { type Relay, startRelay } from '../../operator/src/air/relay.ts';
import { openStation, type Station } from '../../operator/src/air/station.ts';
import { toHex } from '../../operator/src/air/wire.ts';
import { OberonVolume } from '../../operator/src/machine/fs/volume.ts';
import { MachineRunner } from '../../operator/src/machine/runner.ts';
import { kubeDisk, sleep } from './kube-harness.ts';

const KEY = keyFromHex('00c0ffee00c0ffee');
const TAG = clusterTag('kube');

interface Heard {
  t: number;
  bytes: Uint8Array;
  ids: number[];
  counter: number;
  sadr: number;
}

describe('Kube on Oberon: the kubelet and the air toolkit agree on every byte', () => {
  const dir = mkdtempSync(join(tmpdir(), 'retrokube-kube-interop-'));
  let relay: Relay;
  let plane: Station;
  let node: MachineRunner;
  const heard: Heard[] = [];
  let counter = 0x4000;
  const send = (d: Uint8Array) => plane.send(d);

  beforeAll(async () => {
    // The node's counter starts at its reservation on the disk: 0x1234, as in the spec's example.
    const vol = OberonVolume.fromBuffer(readFileSync(await kubeDisk()));
    const c = Buffer.alloc(4);
    c.writeInt32LE(0x1234);
    vol.write('KubeNet.Counter', c);
    const disk = join(dir, 'node1.dsk');
    writeFileSync(disk, vol.toBuffer());
    relay = await startRelay({ port: 0, bind: '127.0.0.1', rate: null });
    plane = await openStation({
      host: '127.0.0.1',
      port: relay.address.port,
      onDatagram: (msg, t) => {
        const f = decodeKubeFrame(new Uint8Array(msg));
        if (f?.kube.ok && f.kube.msg.typ === 0x60) {
          heard.push({
            t,
            bytes: new Uint8Array(msg),
            ids: f.kube.msg.ids,
            counter: f.kube.msg.counter,
            sadr: f.header.sadr,
          });
        }
      },
    });
    node = await MachineRunner.start({
      disk,
      inPlace: true,
      commands: 'KubeNet.Join node1 kube 00c0ffee00c0ffee',
      air: { host: '127.0.0.1', port: relay.address.port },
      frames: false,
    });
  });
  afterAll(async () => {
    await node?.stop();
    await plane?.close();
    await relay?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const waitFor = async (test: () => boolean, ms: number, what: string) => {
    const t0 = Date.now();
    while (!test()) {
      if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s`);
      await sleep(100);
    }
  };
  const expected = (h: Heard) =>
    toHex(
      heartbeatDatagram({ cluster: TAG, node: 'node1', ids: h.ids, counter: h.counter }, KEY, {
        sadr: h.sadr,
      }),
    );

  it('sends its first heartbeat with counter 0x1234, byte for byte as the toolkit encodes it', async () => {
    await waitFor(() => heard.length > 0, 20_000, 'a heartbeat of node1');
    expect(heard[0].counter).toBe(0x1234);
    expect(heard[0].ids).toEqual([]);
    expect(toHex(heard[0].bytes)).toBe(expected(heard[0]));
  });

  it('runs the pods a toolkit-signed plane assigns, ignores the zero-key copy, and reports them in identical bytes', async () => {
    const planeSays = async (ids: number[], key = KEY) => {
      for (const id of ids)
        await send(specDatagram({ cluster: TAG, podId: id, image: 'Ticker', counter: counter++ }, KEY));
      await send(assignDatagram({ cluster: TAG, node: 'node1', ids, counter: counter++ }, key));
    };
    const since = Date.now();
    await planeSays([3, 7]);
    await waitFor(
      () => heard.some((h) => h.t >= since && h.ids.join() === '3,7'),
      10_000,
      'node1 running [3, 7]',
    );
    const forged = Date.now();
    for (let i = 0; i < 3; i++) {
      await send(assignDatagram({ cluster: TAG, node: 'node1', ids: [], counter: counter++ }, ZERO_KEY));
      await sleep(1000);
    }
    const after = heard.filter((h) => h.t >= forged);
    expect(after.length).toBeGreaterThan(1);
    for (const h of after) expect(h.ids).toEqual([3, 7]);
    for (const h of heard) expect(toHex(h.bytes)).toBe(expected(h));
    // The spec's example frame, for the record: node1, [3, 7], counter 0x1234 under this key.
    expect(
      toHex(
        heartbeatDatagram({ cluster: TAG, node: 'node1', ids: [3, 7], counter: 0x1234 }, KEY, { sadr: 0x2a }),
      ),
    ).toBe('0501ff2a6010000000146e6f646531000203073412e41167d70000000000000000');
  });
});
