// #28.4, the air half, driven as the probe was: an old genuine assignment, captured from the air,
// replayed 6.5 s after the plane went silent. The reference's kubelet learns the plane's counter
// again after 5 s of silence and obeys it (node-a [2,5,8] → [2,5]); ours keeps refusing anything
// older than the newest plane frame it took (KubeNet's PlaneTTL, 180 s), since our plane's counter
// never goes back. The restarted plane still takes over: its counter goes on from its disk.
// A real plane and node (emulated RISC5 machines from the Kube disk) on a real UDP relay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStation } from '../../operator/src/air/station.ts';
import { fromHex } from '../../operator/src/air/wire.ts';
import { KubeCluster, sleep } from './kube-harness.ts';

const KEY = '0123456789abcdef';
const SILENCE_MS = 6500; // the probe's: more than the reference's 5 s
const sorted = (ids: readonly number[] | undefined): string =>
  JSON.stringify([...(ids ?? [])].sort((a, b) => a - b));

describe.sequential('Kube on Oberon: an old assignment replayed while the plane is silent (#28.4)', () => {
  let c: KubeCluster;
  let captured = ''; // hex of a genuine assignment of node-a with two ids
  let three = '';

  beforeAll(async () => {
    c = await KubeCluster.start({ nodes: ['node-a'], key: KEY });
  });
  afterAll(async () => {
    // what the listener heard, by kind and verdict: a failure shows whether the plane spoke at all
    const counts = new Map<string, number>();
    for (const r of c?.records ?? []) {
      const k = `${r.kind ?? 'other'} ${r.verdict}${r.fresh ? ` ${r.fresh}` : ''}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    console.log(`kube replay: frames heard ${JSON.stringify([...counts])}`);
    await c?.close();
  });

  const heartbeatsOf = (node: string, since: number) =>
    c.records.filter((r) => r.t >= since && r.kind === 'heartbeat' && r.node === node && r.cluster === c.tag);

  it('captures a genuine assignment of two pods, then the node runs three', async () => {
    // heard, and Ready at the plane (it assigns only to Ready nodes): the plane has booted
    await c.wait(
      () => c.view().running.has('node-a') && c.view(2000).assigned.has('node-a'),
      60_000,
      'node-a heard and assigned',
    );
    c.run('plane', 'Kube.Apply web 2 Ticker');
    await c.wait(() => c.converged(2, ['node-a']), 30_000, 'converged(2)');
    const two = sorted(c.view().assigned.get('node-a'));
    captured = c
      .air()
      .findLast((r) => r.kind === 'assign' && r.node === 'node-a' && sorted(r.ids) === two)!.raw;
    c.run('plane', 'Kube.Apply web 3 Ticker');
    await c.wait(() => c.converged(3, ['node-a']), 30_000, 'converged(3)');
    three = sorted(c.view().running.get('node-a'));
    expect(JSON.parse(three)).toHaveLength(3);
  });

  it(`refuses the replay ${SILENCE_MS / 1000} s after the plane went silent`, async () => {
    // Off only once the plane has stored web 3 (its store period is 500 ms): cut inside it, the
    // restarted plane came back with web 2 and the last case waited for 3 in vain (a CI rehearsal).
    await c.diskQuiet('plane', 1_500);
    await c.off('plane');
    const lastPlane = Math.max(
      ...c.records
        .filter((r) => r.cluster === c.tag && (r.kind === 'assign' || r.kind === 'spec'))
        .map((r) => r.t),
    );
    await sleep(Math.max(0, lastPlane + SILENCE_MS - Date.now()));
    const intruder = await openStation({ host: '127.0.0.1', port: c.relay.address.port });
    const sent = Date.now();
    try {
      // a few times, as a lost frame would otherwise prove nothing
      for (let i = 0; i < 3; i++) {
        await intruder.send(fromHex(captured));
        await sleep(300);
      }
      await sleep(3000);
    } finally {
      await intruder.close();
    }
    // the listener heard it, and judges as our kubelets do: signed, but older than the plane's newest
    const heard = c.records.filter((r) => r.t >= sent && r.raw === captured);
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.every((r) => r.verdict === 'stale')).toBe(true);
    const beats = heartbeatsOf('node-a', sent + 500);
    expect(beats.length).toBeGreaterThan(1);
    console.log(
      `kube replay: ${Math.round((sent - lastPlane) / 100) / 10} s after the plane's last frame, node-a reports ${beats.map((b) => sorted(b.ids)).join(' ')} (ran ${three})`,
    );
    for (const b of beats) expect(sorted(b.ids)).toBe(three);
  });

  it('the restarted plane takes over: the same pods, then a scale to 4 is obeyed', async () => {
    await c.on('plane');
    const back = Date.now();
    await c.wait(
      () => c.converged(3, ['node-a']) && c.air(back).some((r) => r.kind === 'assign'),
      30_000,
      'converged(3) after the plane came back',
    );
    expect(sorted(c.view().running.get('node-a'))).toBe(three);
    c.run('plane', 'Kube.Apply web 4 Ticker');
    await c.wait(
      () => c.converged(4, ['node-a']) && (c.view().running.get('node-a') ?? []).length === 4,
      30_000,
      'node-a runs 4 pods the restarted plane assigned',
    );
  });
});
