// Kube.Hold (issue #31 item 1): a new plane that hears its nodes one after another must not bind
// every first pod to the node it heard first. With `Kube.Hold 3` the plane binds nothing until 3
// nodes are Ready, so the 6 pods spread 2/2/2; a node that never comes delays the pods by at most
// the hold's limit (30 s), never for good. Judged from the air, as every e2e suite is.
import { afterEach, describe, expect, it } from 'vitest';
import { KubeCluster, sleep } from './kube-harness.ts';

const KEY = '0123456789abcdef';
const join = (n: string) => `KubeNet.Join ${n} kube ${KEY}`;
const plane = (hold: string) => `Kube.Start;KubeNet.Serve kube ${KEY};${hold}Kube.Ensure web 6 Ticker`;

describe('Kube on Oberon: a new cluster holds its first pods until its nodes are heard', () => {
  let c: KubeCluster | undefined;
  afterEach(async () => {
    await c?.close();
    c = undefined;
  });

  it('Kube.Hold 3: node-a heard alone gets nothing; once b and c are heard the 6 pods spread 2/2/2', async () => {
    c = await KubeCluster.start({ nodes: ['node-a'], key: KEY, plane: plane('Kube.Hold 3;') });
    const cl = c;
    await cl.wait(() => cl.view().running.has('node-a'), 120_000, 'node-a heard');
    // node-a alone for several assignment rounds: the plane assigns it an empty list.
    await cl.wait(() => cl.view().assigned.has('node-a'), 60_000, 'node-a assigned by the plane');
    await sleep(4000);
    expect(cl.view().assigned.get('node-a')).toEqual([]);
    await cl.on('node-b', join('node-b'));
    await sleep(2500); // node-b heard, node-c not yet: still held
    expect(cl.view(2000).assigned.get('node-a') ?? []).toEqual([]);
    await cl.on('node-c', join('node-c'));
    await cl.wait(() => cl.converged(6, ['node-a', 'node-b', 'node-c']), 120_000, 'converged(6)');
    const v = cl.view();
    expect(['node-a', 'node-b', 'node-c'].map((n) => v.running.get(n)?.length)).toEqual([2, 2, 2]);
  }, 300_000);

  it('without a hold the first node heard takes every pod (what the hold is for)', async () => {
    c = await KubeCluster.start({ nodes: ['node-a'], key: KEY, plane: plane('') });
    const cl = c;
    await cl.wait(() => cl.converged(6, ['node-a']), 120_000, 'converged(6) on node-a');
    await cl.on('node-b', join('node-b'));
    await cl.wait(() => cl.view().running.has('node-b'), 60_000, 'node-b heard');
    await sleep(3000);
    expect(cl.view().running.get('node-a')).toHaveLength(6);
    expect(cl.view().running.get('node-b')).toEqual([]);
  }, 300_000);

  it('Kube.Hold 3 with only 2 nodes: the pods are bound anyway once the hold runs out (30 s)', async () => {
    c = await KubeCluster.start({ nodes: ['node-a', 'node-b'], key: KEY, plane: plane('Kube.Hold 3;') });
    const cl = c;
    await cl.wait(() => cl.view().running.size === 2, 120_000, 'both nodes heard');
    await sleep(5000);
    expect([...cl.view().running.values()].flat()).toEqual([]);
    await cl.wait(() => cl.converged(6, ['node-a', 'node-b']), 120_000, 'converged(6) after the hold');
    const v = cl.view();
    expect(['node-a', 'node-b'].map((n) => v.running.get(n)?.length)).toEqual([3, 3]);
  }, 300_000);
});
