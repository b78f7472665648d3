// A workload that traps must not take its node down: the kubelet calls workloads from a task of
// its own, notices a call that never came back, marks that pod failed and goes on. Judged from
// the air: the node keeps reporting, the trapping pod stays Pending, nothing else moves.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDisk } from '../../operator/src/machine/builder/build.ts';
import { KubeCluster, kubeDisk, sleep } from './kube-harness.ts';

// A workload whose Start dereferences NIL (trap 4 on RISC5).
const CRASH = [
  'MODULE Crash; (*test workload: Start traps*)',
  '  IMPORT Pods;',
  '  TYPE P = POINTER TO R; R = RECORD x: INTEGER END;',
  '  VAR p: P;',
  '  PROCEDURE Start*; BEGIN p := NIL; p.x := Pods.id END Start;',
  '  PROCEDURE Stop*; END Stop;',
  'END Crash.',
].join('\n');

describe('Kube on Oberon: a workload that traps', () => {
  let c: KubeCluster;
  const dir = mkdtempSync(join(tmpdir(), 'retrokube-kube-trap-'));
  beforeAll(async () => {
    const disk = join(dir, 'crash.dsk');
    writeFileSync(
      disk,
      buildDisk({ base: readFileSync(await kubeDisk()), sources: [{ name: 'Crash.Mod', text: CRASH }] }).disk,
    );
    c = await KubeCluster.start({ nodes: ['node-a', 'node-b'], disk });
  });
  afterAll(async () => {
    await c?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('leaves its node running: the pod stays Pending, the node keeps reporting, no pod moves', async () => {
    await c.wait(() => c.view().running.size === 2, 20_000, 'both kubelets heard');
    c.run('plane', 'Kube.Apply web 2 Ticker');
    await c.wait(() => c.converged(2, ['node-a', 'node-b']), 20_000, 'converged(2)');
    const before = c.view().running;
    const t = Date.now();
    c.run('plane', 'Kube.Apply crash 2 Crash');
    await sleep(10_000); // longer than the node timeout: a dead kubelet would be NotReady by now
    const v = c.view(2000);
    for (const n of ['node-a', 'node-b']) {
      expect(v.running.has(n)).toBe(true); // still heartbeating
      for (const id of before.get(n) ?? []) expect(v.running.get(n)).toContain(id); // web untouched
    }
    const assigned = [...v.assigned.values()].flat();
    const running = new Set([...v.running.values()].flat());
    const pending = assigned.filter((id) => !running.has(id));
    expect(pending).toHaveLength(2);
    for (const id of pending) expect(c.listener.airView.imageOf(id)).toBe('Crash');
    const beats = c.air(t).filter((r) => r.kind === 'heartbeat');
    const gaps = ['node-a', 'node-b'].map((n) => {
      const ts = beats.filter((r) => r.node === n).map((r) => r.t);
      return Math.max(0, ...ts.slice(1).map((x, i) => x - ts[i]));
    });
    console.log(`kube trap: 2 Crash pods Pending, longest heartbeat gap ${Math.max(...gaps)} ms`);
    expect(Math.max(...gaps)).toBeLessThan(2500);
  });
});
