// Kube on Oberon with QEMU machines on the air: the plane and one node run as qemu-system-risc5
// (our target and board), the other node as our TypeScript emulator, all on one real UDP relay,
// judged only from what a passive listener hears. Then the QEMU node is switched off and its
// pods must move to the TypeScript node.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeCluster } from '../e2e/kube-harness.ts';
import { requireQemu } from './qemu-harness.ts';

const LIMITS = {
  joinMs: 90_000, // boot of three machines on 2 shared cores, then the first heartbeats
  convergeMs: 60_000, // Kube converges in ~3 s when not starved (reference: ~3 s)
  failoverMs: 60_000, // 5 s NotReady TTL plus a re-assignment round (reference: ~6 s)
  refusalMs: 30_000, // the next round says it (1 s); a refusal no longer said is gone a TTL (5 s) later
} as const;

const bin = requireQemu();
const suite = bin === null ? describe.skip : describe.sequential;
const NODES = ['node-q', 'node-t'];
const figure = (text: string): void => console.log(`kube on QEMU: ${text}`);

suite('Kube on Oberon with QEMU machines on the air', () => {
  let c: KubeCluster;
  let poweredOn = 0;

  beforeAll(async () => {
    poweredOn = Date.now();
    c = await KubeCluster.start({
      nodes: NODES,
      key: '00c0ffee00c0ffee',
      qemu: { binary: bin as string, machines: ['plane', 'node-q'] },
    });
  });
  afterAll(async () => {
    await c?.close();
  });

  it('the QEMU plane hears both kubelets: the QEMU node and the TypeScript node', async () => {
    const ms = await c.wait(
      () => NODES.every((n) => c.view().running.has(n) && c.view(2000).assigned.has(n)),
      LIMITS.joinMs,
      'both kubelets heard and assigned by the QEMU plane',
    );
    figure(`both kubelets heard ${(ms / 1000).toFixed(1)} s after power-on`);
    // What the QEMU plane read from its radio, from the board's radio log (radio-log=FILE): signed
    // heartbeats of both nodes (KubeCluster keeps those only), dated by QEMU's wall clock within
    // this run. The DR suite judges its moves by it (kube-dr-suite.ts, scenario 6).
    await c.wait(
      () => NODES.every((n) => c.planeHeard.some((b) => b.node === n)),
      10_000,
      "both nodes' heartbeats in the QEMU plane's radio log",
    );
    for (const b of c.planeHeard) {
      expect(b.t).toBeGreaterThanOrEqual(poweredOn);
      expect(b.t).toBeLessThanOrEqual(Date.now());
    }
    const count = (beats: { node: string }[], n: string) => beats.filter((b) => b.node === n).length;
    figure(
      `heartbeats the QEMU plane read (handed by the relay): ${NODES.map((n) => `${n} ${count(c.planeHeard, n)} (${count(c.toPlane, n)})`).join(', ')}`,
    );
  });

  it('Kube.Apply web 4 Ticker on the QEMU plane converges over both nodes', async () => {
    c.run('plane', 'Kube.Apply web 4 Ticker');
    const ms = await c.wait(
      () => c.converged(4, NODES) && NODES.every((n) => (c.view().running.get(n) ?? []).length > 0),
      LIMITS.convergeMs,
      'converged(4) over the QEMU and the TS node',
    );
    figure(`apply web 4: converged in ${(ms / 1000).toFixed(1)} s`);
  });

  it('switching the QEMU node off moves its pods to the TypeScript node', async () => {
    const off = Date.now();
    await c.off('node-q');
    const ms = await c.wait(
      () =>
        c.converged(4, ['node-t']) &&
        !c.view().running.has('node-q') &&
        (c.view().running.get('node-t') ?? []).length === 4,
      LIMITS.failoverMs,
      'all 4 pods on node-t after node-q went off',
    );
    expect(Date.now() - off).toBeGreaterThanOrEqual(ms);
    figure(`QEMU node off: pods on node-t ${(ms / 1000).toFixed(1)} s later`);
  });

  // #31.5 for the kubevirt runtime: its plane is this board (qemu-system-risc5, which KubeVirt's
  // launcher runs through our hook), the operator writes Kube.Apply lines into its RS-232 (the VMI's
  // serial console) and hears the air as this listener does (AirView: the status's source).
  it('what the QEMU plane refuses of lines on its serial port is said on the air, and unsaid once fixed', async () => {
    const refusal = () => c.listener.view().plane.refusal;
    c.run('plane', 'Kube.Apply big 250 Ticker;Kube.Apply more 10 Ticker');
    await c.wait(
      () => refusal() === 'the store is full (256 objects), nothing is created',
      LIMITS.refusalMs,
      'the full store said on the air',
    );
    c.run('plane', 'Kube.Apply big 0 Ticker');
    await c.wait(() => refusal() === null, LIMITS.refusalMs, 'the full store no longer said');
    // A line the CRD would refuse, typed here: refused, said, and over once that deployment is taken.
    c.run('plane', 'Kube.Apply web 999 Ticker');
    await c.wait(
      () => refusal() === 'replicas must be 0..250: web 999',
      LIMITS.refusalMs,
      'the refusal said',
    );
    c.run('plane', 'Kube.Apply web 4 Ticker');
    await c.wait(() => refusal() === null, LIMITS.refusalMs, 'the refusal no longer said');
    expect(c.listener.view().counts.refusals).toBeGreaterThan(0);
  });
});
