// The ORP compile, instruction by instruction, in qemu-system-risc5 and in our TS emulator: both
// boot the Kube disk with Ticker's object and symbol files removed and `ORP.Compile Ticker.Mod/s`
// as boot commands on RS-232 (read by Boot at a point fixed by the deterministic clock, unlike
// typed keys, which reach QEMU at host-chosen instructions), and their per-instruction state
// records agree through boot, the compiler's loading and the compile itself. Then the Ticker.rsc
// and Ticker.smb the two machines wrote are the same bytes, and the same as the disk build's.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OberonVolume } from '../../operator/src/machine/fs/volume.ts';
import { endCommands } from '../../operator/src/machine/machine.ts';
import { kubeDisk } from '../e2e/kube-harness.ts';
import { LIMITS as H, requireQemu, startQemu, traceWritten } from './qemu-harness.ts';
import { stepAndCompare, traceMachine } from './trace-reference.ts';

const LIMITS = {
  // Boot idles at ~8.0 M instructions, Boot reads the command, ORP runs from ~8.1 M to ~14.4 M
  // (measured in the TS emulator): 15 M covers all of it. 8 bytes a record: 120 MB of trace.
  traceInstructions: 15_000_000,
  traceDeadlineMs: 180_000, // QEMU writes 15 M records in seconds when not starved
} as const;

const COMMAND = 'ORP.Compile Ticker.Mod/s';
const OUTPUTS = ['Ticker.rsc', 'Ticker.smb'];
const qemu = requireQemu();
const suite = qemu === null ? describe.skip : describe;

suite('the ORP compile in QEMU and in the TS emulator, instruction by instruction', () => {
  it('agree on every instruction of boot + ORP.Compile Ticker.Mod/s, and write the same object file', async () => {
    const original = OberonVolume.fromBuffer(readFileSync(await kubeDisk()));
    const built = OUTPUTS.map((f) => original.read(f));
    for (const f of OUTPUTS) expect(original.remove(f)).toBe(true);
    const disk = original.toBuffer();

    const dir = mkdtempSync(join(tmpdir(), 'retrokube-orp-trace-'));
    const n = LIMITS.traceInstructions;
    const trace = join(dir, 'qemu.trace');
    const start = join(dir, 'start.dsk');
    writeFileSync(start, disk);
    const m = await startQemu(qemu as string, {
      disk: start,
      machine: [
        'clock=deterministic',
        `trace=${trace}`,
        `trace-limit=${n}`,
        `commands=${endCommands(COMMAND)}`,
      ],
    });
    let stopped = false;
    try {
      await traceWritten(trace, n, LIMITS.traceDeadlineMs);
      // startQemu's copy of the disk, written in place; the compile ended long before the trace.
      const qemuVol = OberonVolume.fromBuffer(readFileSync(join(m.dir, 'oberon.dsk')));
      await m.stop();
      stopped = true;
      const ts = traceMachine(disk, { memLim: H.baseMemLim, stackOrg: H.baseStackOrg }, COMMAND);
      const t0 = Date.now();
      const mismatch = stepAndCompare(ts, readFileSync(trace), n);
      console.log(`orp trace: ${n / 1e6} M records compared in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      expect(mismatch).toBeNull();

      // The compile ran inside the trace: both machines wrote the object and symbol files anew,
      // byte for byte as the disk build's ORP did.
      const tsVol = OberonVolume.fromBuffer(ts.disk.bytes);
      for (const [i, f] of OUTPUTS.entries()) {
        expect(qemuVol.read(f).equals(built[i])).toBe(true);
        expect(tsVol.read(f).equals(built[i])).toBe(true);
      }
    } finally {
      if (!stopped) await m.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
