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

const SOURCE = `MODULE RkReal; (*REAL constants and zeros, written raw to RkReal.Out*)
  IMPORT Files;
  VAR a, b, one, three, ten: REAL; r: Files.Rider;
  PROCEDURE Bool(ok: BOOLEAN);
  BEGIN IF ok THEN Files.Write(r, "T") ELSE Files.Write(r, "F") END
  END Bool;
  PROCEDURE Run*;
    VAR f: Files.File;
  BEGIN f := Files.New("RkReal.Out"); Files.Set(r, f, 0);
    a := 0.0; b := 0.0; one := 1.0; three := 3.0; ten := 10.0;
    Files.WriteReal(r, 0.1); Files.WriteReal(r, 3.14159);
    Files.WriteReal(r, one / three); Files.WriteReal(r, one / ten);
    Files.WriteReal(r, a - b); Files.WriteReal(r, a + b); Files.WriteReal(r, -a - b);
    Bool(a = b); Bool(a < b); Bool(a > b); Bool(a <= b); Bool(a - b = 0.0); Bool(a - b >= 0.0);
    Files.Register(f)
  END Run;
END RkReal.
`;

const hex = (v: number) => (v >>> 0).toString(16).toUpperCase().padStart(8, '0');

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
    disk = buildDisk({ base, sources: [{ name: 'RkReal.Mod', text: SOURCE }], growTo: 2 << 20 }).disk;
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
    const reals = [0, 1, 2, 3, 4, 5, 6].map((i) => hex(out.readInt32LE(i * 4)));
    expect(reals).toEqual([
      '3DCCCCCD',
      '40490FD0',
      '3EAAAAAB',
      '3DCCCCCD',
      '00000000',
      '00000000',
      '00000000',
    ]);
    expect(out.subarray(28).toString('latin1')).toBe('TFFTTT');
  });
});
