// Wirth's 2016 FPU in a real-time machine: the module with REAL constants and zero comparisons,
// compiled in the machine by ORP, runs in a worker thread (wall clock, translator on) and writes
// the 2016 hardware's answers (1/3 = 3EAAAAAB, 0.0 - 0.0 = +0, a = b, not a < b) to its disk.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findBaseImage } from '../../operator/src/machine/base-image.ts';
import { buildDisk } from '../../operator/src/machine/builder/build.ts';
import { OberonVolume } from '../../operator/src/machine/fs/volume.ts';
import { MachineRunner } from '../../operator/src/machine/runner.ts';
import { REAL_MODULE, REAL_RESULTS } from '../../operator/src/machine/testdata/real-module.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-e2e-real-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('REAL arithmetic on a real-time machine', () => {
  it('RkReal.Run on a worker-thread machine writes the 2016 FPU answers', async () => {
    const base = fs.readFileSync((await findBaseImage({ download: false })).path);
    const built = buildDisk({ base, sources: [{ name: 'RkReal.Mod', text: REAL_MODULE }], growTo: 2 << 20 });
    const file = path.join(dir, 'real.dsk');
    fs.writeFileSync(file, built.disk);
    const m = await MachineRunner.start({ disk: file, inPlace: true, frames: false });
    try {
      await m.waitForBoot(60_000);
      m.runCommand('RkReal.Run');
      await m.waitForIdle(60_000);
    } finally {
      await m.stop();
    }
    const out = OberonVolume.fromBuffer(fs.readFileSync(file)).read('RkReal.Out');
    expect(REAL_RESULTS.read(out)).toEqual(REAL_RESULTS.expected);
  });
});
