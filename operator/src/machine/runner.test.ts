import fs from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MachineRunner } from './runner.ts';
import { titleBars } from './screen-scan.ts';
import { BASE_IMAGE, copyBaseImage, removeCopies } from './test-disk.ts';

afterAll(removeCopies);

const running: MachineRunner[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.stop();
});

describe('a machine in a worker thread', () => {
  it('boots in real time, runs a middle-clicked command and then idles at almost no host CPU', async () => {
    const original = fs.readFileSync(BASE_IMAGE);
    const m = await MachineRunner.start({ disk: BASE_IMAGE });
    running.push(m);
    expect(m.diskPath).not.toBe(BASE_IMAGE); // runs on a temporary copy
    await m.waitForBoot(10_000);
    m.runCommand('System.CopyFiles System.Tool => Runner.Tool ~');
    await m.waitForIdle(15_000);
    await m.waitFor(async () => (await m.state()).diskWrites > 0, 5000, 'disk writes');
    expect(fs.readFileSync(m.diskPath).includes(Buffer.from('Runner.Tool\0'))).toBe(true);
    expect(fs.readFileSync(BASE_IMAGE).equals(original)).toBe(true); // the original is untouched
    const shot = await m.freshSnapshot();
    expect(titleBars(shot, 660, 1016)).toEqual([0, 255]);
    // Idle: the ms timer follows the wall clock while the worker mostly sleeps.
    const s1 = await m.state();
    await new Promise((r) => setTimeout(r, 1500));
    const s2 = await m.state();
    expect(s2.timerMs - s1.timerMs).toBeGreaterThanOrEqual(1400);
    expect(s2.instructions - s1.instructions).toBeLessThan(1_000_000); // far below 25 M/s
    expect((s2.cpuMs - s1.cpuMs) / 1500).toBeLessThan(0.1);
  });

  it('keeps its disk in place only when asked, and power-cycles back to a booted Oberon', async () => {
    const file = copyBaseImage();
    const m = await MachineRunner.start({ disk: file, inPlace: true, clock: 'deterministic' });
    running.push(m);
    expect(m.diskPath).toBe(file);
    await m.waitForBoot(10_000);
    m.powerCycle();
    expect(m.booted).toBe(false);
    await m.waitForBoot(10_000);
    const st = await m.state();
    expect(st.booted).toBe(true);
    expect(st.instructions).toBeLessThan(20_000_000);
  });

  it('rejects text it cannot type in the caller, before anything is queued', async () => {
    const m = await MachineRunner.start({ disk: BASE_IMAGE, clock: 'deterministic' });
    running.push(m);
    expect(() => m.typeText('grüße')).toThrow(/cannot type/);
    expect(() => m.runCommand('A\nB')).toThrow(/one line/);
  });
});
