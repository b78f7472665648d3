// The boot-commands check (kube-on-oberon spec §8.4): no key is ever pressed. The plane and the
// nodes get their role commands on the serial port at power-on; the cluster must form, and a
// plane that is switched off and on again must come back with not one assignment changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeCluster, sleep } from './kube-harness.ts';

const KEY = '00c0ffee00c0ffee';

describe('Kube on Oberon: commands at start', () => {
  let c: KubeCluster;
  let t0 = 0;
  beforeAll(async () => {
    t0 = Date.now();
    c = await KubeCluster.start({
      nodes: ['node-a', 'node-b'],
      key: KEY,
      plane: `Kube.Start;KubeNet.Serve kube ${KEY};Kube.Ensure web 4 Ticker`,
    });
  });
  afterAll(async () => {
    await c?.close();
  });

  let before: { running: Map<string, number[]>; assigned: Map<string, number[]> };

  it('forms the cluster from the boot commands alone: both kubelets heard, 4 pods converged', async () => {
    await c.wait(() => c.view().running.size === 2, 120_000, 'both kubelets heard');
    const ms = await c.wait(() => c.converged(4, ['node-a', 'node-b']), 120_000, 'converged(4)');
    const v = c.view();
    console.log(
      `boot check: converged(4) ${((Date.now() - t0) / 1000).toFixed(1)} s after power-on (${ms} ms after both were heard)`,
    );
    // Placement depends on join order: running pods never move to a node heard later.
    expect([...v.running.values()].flat().sort((a, b) => a - b)).toHaveLength(4);
    before = v;
  });

  it('a plane switched off for 5 s comes back with the same assignments and not one changed', async () => {
    await c.diskQuiet('plane', 1_500); // its bindings stored (500-ms store period), as kube-replay and DR 4
    await c.off('plane');
    await sleep(5000);
    const powerOn = Date.now();
    await c.on('plane');
    const ms = await c.wait(
      () => {
        const a = c.view(3000).assigned;
        return a.has('node-a') && a.has('node-b') && c.air(powerOn).some((r) => r.kind === 'assign');
      },
      120_000,
      'both nodes assigned by the restarted plane',
    );
    await sleep(3000);
    const after = c.view();
    for (const n of ['node-a', 'node-b']) {
      expect(new Set(after.running.get(n))).toEqual(new Set(before.running.get(n)));
      expect(new Set(after.assigned.get(n))).toEqual(new Set(before.assigned.get(n)));
    }
    const changed = c
      .air(powerOn)
      .filter(
        (r) =>
          r.kind === 'assign' &&
          r.node &&
          JSON.stringify([...(r.ids ?? [])].sort()) !==
            JSON.stringify([...(before.assigned.get(r.node) ?? [])].sort()),
      );
    console.log(
      `boot check: plane back, first assignment ${(ms / 1000).toFixed(1)} s after power-on; changed assignments ${changed.length}`,
    );
    expect(changed).toEqual([]);
  });
});
