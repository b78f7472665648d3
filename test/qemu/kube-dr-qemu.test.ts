// The Kube DR suite (test/e2e/kube-dr-suite.ts, kube-on-oberon spec §8.2) with the plane and
// node-a as qemu-system-risc5 and node-b as the TS emulator: a restarted QEMU plane restores its
// placement from its disk, and every scenario passes as with emulated machines, judged from the air.
import { describe } from 'vitest';
import { describeKubeDr } from '../e2e/kube-dr-suite.ts';
import { requireQemu } from './qemu-harness.ts';

const bin = requireQemu();
if (bin === null) describe.skip('Kube DR with a QEMU plane: qemu-system-risc5 is not built', () => {});
else
  describeKubeDr('Kube on Oberon: disaster recovery with the plane and node-a in QEMU', {
    binary: bin,
    machines: ['plane', 'node-a'],
  });
