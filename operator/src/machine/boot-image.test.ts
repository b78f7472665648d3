// Boot images are exact: a machine started from one is, instruction for instruction, the machine
// its own boot would have made. Each case compares a restored machine with a real boot of the
// same configuration at the image's instruction count (stateDigest: RAM, registers, devices) and
// again after both have run on (a compile, idle time).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BootImage } from './boot-image.ts';
import { emulatorVersion, loadBootImages, saveBootImage } from './boot-image-store.ts';
import { Machine } from './machine.ts';
import { MachineRunner } from './runner.ts';
import { BASE_IMAGE, copyBaseImage, removeCopies } from './test-disk.ts';

// This file's worker test wants a real first boot: no images from earlier processes.
process.env.RETROKUBE_BOOT_IMAGES = 'off';
const storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-boot-images-'));
afterAll(() => {
  removeCopies();
  fs.rmSync(storeDir, { recursive: true, force: true });
});

const diskHash = (m: Machine) => createHash('sha256').update(m.disk.bytes).digest('hex');

/** Run on to a command's end and 2 s of idle; what a user could see afterwards. */
function afterwards(m: Machine): { digest: string; disk: string; serial: string } {
  m.runCommand('ORP.Compile Sierpinski.Mod');
  expect(m.runUntilIdle(400e6)).toBe(true);
  const end = m.timerMs() + 2000;
  for (;;) {
    const r = m.run(100_000);
    if (r.idle && m.timerMs() >= end) break;
  }
  return { digest: m.stateDigest(), disk: diskHash(m), serial: m.serialText() };
}

describe('boot images', () => {
  const base = fs.readFileSync(copyBaseImage());

  it('taken at Oberon.Loop (nothing from outside before): the restored machine equals a real boot, then and after a compile', () => {
    const recorder = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [] });
    expect(recorder.runUntil(() => recorder.booted, { maxInstructions: 60e6 })).toBe(true);
    const image = recorder.bootImage as BootImage;
    expect(image).not.toBeNull();
    expect(image.instructions).toBeGreaterThan(5e6);
    expect(image.devices.booted).toBe(true);

    const restored = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [image] });
    expect(restored.restored).toBe(true);
    const real = new Machine({ disk: Buffer.from(base), clock: 'deterministic' });
    expect(real.runUntil(() => real.booted, { maxInstructions: 60e6 })).toBe(true);
    expect(real.cpu.instructions).toBe(image.instructions);
    expect(restored.stateDigest()).toBe(real.stateDigest());
    expect(afterwards(restored)).toEqual(afterwards(real));
  });

  it('taken before the first outside event (input typed early, read by Oberon.Loop): equal at the image and after, with other input', () => {
    const recorder = new Machine({
      disk: Buffer.from(base),
      clock: 'deterministic',
      bootImages: [],
      jit: false,
    });
    for (let i = 0; i < 3; i++) recorder.run(1_000_000);
    recorder.typeText('x');
    recorder.runUntil(() => recorder.booted, { maxInstructions: 60e6 });
    const image = recorder.bootImage as BootImage;
    expect(image).not.toBeNull();
    expect(image.devices.booted).toBe(false); // the run in which the Loop first read the keyboard is not in it
    expect(image.instructions).toBeLessThan(recorder.cpu.instructions);

    const restored = new Machine({
      disk: Buffer.from(base),
      clock: 'deterministic',
      bootImages: [image],
      jit: false,
    });
    expect(restored.restored).toBe(true);
    const real = new Machine({ disk: Buffer.from(base), clock: 'deterministic', jit: false });
    real.run(image.instructions); // the interpreter stops exactly there
    expect(real.cpu.instructions).toBe(image.instructions);
    expect(restored.stateDigest()).toBe(real.stateDigest());
    for (const m of [restored, real]) {
      m.typeText('y');
      expect(m.runUntil(() => m.booted, { maxInstructions: 60e6 })).toBe(true);
    }
    expect(afterwards(restored)).toEqual(afterwards(real));
  });

  it('survives the on-disk store: the image read back is accepted and gives the same machine', () => {
    const recorder = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [] });
    recorder.runUntil(() => recorder.booted, { maxInstructions: 60e6 });
    const image = recorder.bootImage as BootImage;
    saveBootImage(storeDir, image);
    fs.writeFileSync(path.join(storeDir, 'broken.img'), Buffer.from([1, 2, 3])); // skipped, not fatal
    const loaded = loadBootImages(storeDir);
    expect(loaded.length).toBe(1);
    const a = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: loaded });
    const b = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [image] });
    expect(a.restored).toBe(true);
    expect(a.stateDigest()).toBe(b.stateDigest());
  });

  it('is never taken from a file another version of the emulator code stored, even under this version’s name', () => {
    const dir = fs.mkdtempSync(path.join(storeDir, 'versions-'));
    const recorder = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [] });
    recorder.runUntil(() => recorder.booted, { maxInstructions: 60e6 });
    const image = recorder.bootImage as BootImage;
    const ours = emulatorVersion() as string;
    expect(ours).toMatch(/^[0-9a-f]{16}$/);
    saveBootImage(dir, image, '0123456789abcdef'); // a complete, valid image of other code
    expect(loadBootImages(dir, '0123456789abcdef').length).toBe(1);
    expect(loadBootImages(dir)).toEqual([]);
    const [file] = fs.readdirSync(dir);
    fs.renameSync(path.join(dir, file), path.join(dir, file.replace('0123456789abcdef', ours)));
    expect(loadBootImages(dir)).toEqual([]); // the header says which code wrote it
    // Cold store: a real boot; warm: this version's own image, the same machine after a compile.
    const cold = new Machine({
      disk: Buffer.from(base),
      clock: 'deterministic',
      bootImages: loadBootImages(dir),
    });
    expect(cold.restored).toBe(false);
    expect(cold.runUntil(() => cold.booted, { maxInstructions: 60e6 })).toBe(true);
    saveBootImage(dir, cold.bootImage as BootImage);
    const warm = new Machine({
      disk: Buffer.from(base),
      clock: 'deterministic',
      bootImages: loadBootImages(dir),
    });
    expect(warm.restored).toBe(true);
    expect(warm.stateDigest()).toBe(cold.stateDigest());
    expect(afterwards(warm)).toEqual(afterwards(cold));
  });

  it('is refused for another disk or configuration (the machine boots for real)', () => {
    const recorder = new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [] });
    recorder.runUntil(() => recorder.booted, { maxInstructions: 60e6 });
    const image = recorder.bootImage as BootImage;
    const other = Buffer.from(base);
    const sector = (image.reads[image.reads.length - 1] - 0x80002) * 512 + 100;
    other[sector] ^= 0xff;
    expect(new Machine({ disk: other, clock: 'deterministic', bootImages: [image] }).restored).toBe(false);
    expect(
      new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [image], switches: 2 })
        .restored,
    ).toBe(false);
    expect(
      new Machine({ disk: Buffer.from(base), clock: 'deterministic', bootImages: [image], memoryMiB: 2 })
        .restored,
    ).toBe(false);
  });

  it('in worker threads: the second machine of a process starts from the first one’s image and works', async () => {
    const a = await MachineRunner.start({ disk: BASE_IMAGE, frames: false });
    await a.waitForBoot(60_000);
    const sa = await a.state();
    await a.stop();
    expect(sa.restored).toBe(false);
    const b = await MachineRunner.start({ disk: BASE_IMAGE, frames: false });
    try {
      await b.waitForBoot(60_000);
      const sb = await b.state();
      expect(sb.restored).toBe(true);
      b.runCommand('System.Directory Sierpinski.*');
      await b.waitForIdle(60_000);
      expect((await b.state()).instructions).toBeGreaterThan(sb.instructions);
    } finally {
      await b.stop();
    }
  }, 120_000);
});
