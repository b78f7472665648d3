// The Kube DR suite (kube-dr-suite.ts) on emulated machines; RETROKUBE_E2E_QEMU=plane,node-a
// runs those machines in qemu-system-risc5 (kube-harness.ts).
import { describeKubeDr } from './kube-dr-suite.ts';

describeKubeDr('Kube on Oberon: disaster recovery, judged from the air');
