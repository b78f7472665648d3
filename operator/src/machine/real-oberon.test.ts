// REAL arithmetic end to end: ORP, running on the emulated FPU, compiles a module with REAL
// constants and zero comparisons; its object file must carry the constants' correct bits (ORS
// computes them with FAD/FML/FDV, so a truncating divider gave 0.1 = 3DCCCCCC), and its run must
// give the 2016 hardware's answers (0.0 - 0.0 = +0, so a = b holds and a < b does not).
import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { findBaseImage } from './base-image.ts';
import { buildDisk } from './builder/build.ts';
import { OberonVolume } from './fs/volume.ts';
import { Machine } from './machine.ts';
import { REAL_MODULE, REAL_RESULTS } from './testdata/real-module.ts';

/** Where a REAL constant is loaded as ORG does it: MOV' Ra, hi then IOR Ra, Ra, lo. */
function loadsConstant(rsc: Buffer, bits: number): boolean {
  for (let p = 0; p + 8 <= rsc.length; p++) {
    const w1 = rsc.readInt32LE(p);
    const w2 = rsc.readInt32LE(p + 4);
    if ((w1 & 0xf0ffffff) !== (0x60000000 | (bits >>> 16))) continue;
    const a = (w1 >>> 24) & 15;
    if (w2 === (0x40060000 | (a << 24) | (a << 20) | (bits & 0xffff))) return true;
  }
  return false;
}

describe('REAL constants and zero comparisons compiled and run in the machine', () => {
  let disk: Buffer;
  beforeAll(async () => {
    const base = await readFile((await findBaseImage({ download: false })).path);
    disk = buildDisk({ base, sources: [{ name: 'RkReal.Mod', text: REAL_MODULE }], growTo: 2 << 20 }).disk;
  }, 120_000);

  it('the object file loads 0.1 as 3DCCCCCD and 3.14159 as 40490FD0 (not 3DCCCCCC / 40490FCF)', () => {
    const rsc = OberonVolume.fromBuffer(disk).read('RkReal.rsc');
    expect(loadsConstant(rsc, 0x3dcccccd)).toBe(true);
    expect(loadsConstant(rsc, 0x40490fd0)).toBe(true);
    expect(loadsConstant(rsc, 0x3dcccccc)).toBe(false);
    expect(loadsConstant(rsc, 0x40490fcf)).toBe(false);
  });

  it('its run writes the 2016 hardware answers: 1/3 = 3EAAAAAB, 0 - 0 = +0, a = b, not a < b', () => {
    const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic' });
    expect(m.runUntil(() => m.booted, { maxInstructions: 60e6 })).toBe(true);
    m.runCommand('RkReal.Run');
    expect(m.runUntilIdle(5e8)).toBe(true);
    const out = OberonVolume.fromBuffer(m.disk.bytes).read('RkReal.Out');
    expect(REAL_RESULTS.read(out)).toEqual(REAL_RESULTS.expected);
  });
});
