import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MachineRunner, MachineThread } from './runner.ts';
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

describe('machines sharing one thread', () => {
  it('run side by side, each on its own disk, one failing to start without harming the others; the thread ends with the last', async () => {
    const thread = new MachineThread();
    const files = [copyBaseImage(), copyBaseImage(), copyBaseImage()];
    const ms = await Promise.all(
      files.map((disk) => MachineRunner.start({ disk, inPlace: true, thread, frames: false })),
    );
    running.push(...ms);
    expect(thread.current).not.toBeNull();
    await Promise.all(ms.map((m) => m.waitForBoot(30_000)));
    // A disk that does not open (a folder): this machine's start fails, the thread and the others go on.
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-not-a-disk-'));
    try {
      await expect(MachineRunner.start({ disk: folder, inPlace: true, thread })).rejects.toThrow(/EISDIR/);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
    // A machine joining the thread later starts from the boot image the first ones gave the process
    // (sent to the thread once, shared by its machines).
    const late = await MachineRunner.start({ disk: copyBaseImage(), inPlace: true, thread, frames: false });
    running.push(late);
    await late.waitForBoot(30_000);
    expect((await late.state()).restored).toBe(true);
    await late.stop();
    ms[0].runCommand('System.CopyFiles System.Tool => First.Tool ~');
    ms[2].runCommand('System.CopyFiles System.Tool => Third.Tool ~');
    await Promise.all([ms[0].waitForIdle(30_000), ms[2].waitForIdle(30_000)]);
    await ms[0].waitFor(async () => (await ms[0].state()).diskWrites > 0, 10_000, 'disk writes');
    await ms[2].waitFor(async () => (await ms[2].state()).diskWrites > 0, 10_000, 'disk writes');
    await Promise.all(ms.map((m) => m.stop()));
    running.length = 0;
    const has = (f: string, name: string) => fs.readFileSync(f).includes(Buffer.from(`${name}\0`));
    expect([has(files[0], 'First.Tool'), has(files[0], 'Third.Tool')]).toEqual([true, false]);
    expect([has(files[2], 'Third.Tool'), has(files[2], 'First.Tool')]).toEqual([true, false]);
    expect(has(files[1], 'First.Tool') || has(files[1], 'Third.Tool')).toBe(false);
    expect(thread.current).toBeNull(); // the last machine's stop ended the thread
  });
});
