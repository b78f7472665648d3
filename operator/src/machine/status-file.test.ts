import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { MachineState } from './protocol.ts';
import { MachineRunner } from './runner.ts';
import {
  missingModules,
  modulesNamedBy,
  STATUS_LIMITS,
  type StatusFacts,
  StatusFileWriter,
  statusLine,
} from './status-file.ts';
import { copyBaseImage, removeCopies } from './test-disk.ts';

const dirs: string[] = [];
const running: MachineRunner[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.stop();
});
afterAll(() => {
  removeCopies();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const statusPath = (): string => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'rk-status-'));
  dirs.push(d);
  return path.join(d, 'status');
};
const firstLine = (file: string): string => fs.readFileSync(file, 'utf8').split('\n')[0];
async function until(pred: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the machine status file', () => {
  it('a real machine on the base image: "booting" from power-on, then "booted" with when Oberon.Loop was reached; a quiet booted machine never rewrites it; stop leaves "stopped"', async () => {
    const file = statusPath();
    fs.writeFileSync(file, 'booted: a stale file of a previous run\n');
    const w = new StatusFileWriter(file, { watchMs: 50 });
    expect(firstLine(file)).toMatch(/^booting: 0\.0 M instructions, 0\.\d s since power-on$/);
    const before = Date.now();
    const m = await MachineRunner.start({ disk: copyBaseImage() });
    running.push(m);
    w.follow(m);
    await until(() => firstLine(file).startsWith('booted: '));
    const text = fs.readFileSync(file, 'utf8');
    const at = /^booted: Oberon\.Loop reached at (\S+) after (\d+\.\d) M instructions \((\d+\.\d) s\)$/m.exec(
      text,
    );
    expect(at).not.toBeNull();
    const bootedAt = Date.parse(at?.[1] ?? '');
    expect(bootedAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(bootedAt).toBeLessThanOrEqual(Date.now());
    expect(Number(at?.[2])).toBeGreaterThan(0);
    expect(text).toMatch(/^phase: booted$/m);
    expect(text).toMatch(/^voidFetches: 0$/m);
    expect(w.phase).toBe('booted');
    // Resting: many state queries (every 50 ms here), no write.
    const writes = w.writes;
    await new Promise((r) => setTimeout(r, 800));
    expect(w.writes).toBe(writes);
    w.stop('SIGTERM');
    expect(firstLine(file)).toMatch(/^stopped: SIGTERM at \S+Z$/);
    w.stop('the emulator exited'); // the first word on stopping stays
    expect(firstLine(file)).toMatch(/^stopped: SIGTERM/);
    expect(fs.readdirSync(path.dirname(file))).toEqual(['status']); // no temporary left behind
  }, 30_000);

  it('a disk without the modules the boot commands name is trouble from the start (the base image has no Boot or KubeNet)', async () => {
    const disk = copyBaseImage();
    expect(modulesNamedBy('KubeNet.Join a kube 00c0ffee;System.Directory *.Mod')).toEqual([
      'Boot',
      'KubeNet',
      'System',
    ]);
    expect(modulesNamedBy('  ')).toEqual([]);
    expect(await missingModules(disk, 'KubeNet.Join a kube 00c0ffee')).toEqual(['Boot.rsc', 'KubeNet.rsc']);
    expect(await missingModules(disk, 'System.Directory *.Mod')).toEqual(['Boot.rsc']);
    expect(await missingModules(disk, undefined)).toEqual([]);
    const file = statusPath();
    const w = new StatusFileWriter(file);
    w.setMissingModules(await missingModules(disk, 'KubeNet.Join a kube 00c0ffee'));
    expect(firstLine(file)).toBe(
      'trouble: the disk has no Boot.rsc, KubeNet.rsc (named by the boot commands); seed it with `retrokube disk build-kube`',
    );
    expect(w.phase).toBe('trouble');
    w.stop('finished');
  });

  it('says so when the relay name stays unresolvable past the grace, and when the machine branched into the void recently', () => {
    const state = (over: Partial<MachineState> = {}): MachineState => ({
      booted: true,
      idle: true,
      inputPending: false,
      instructions: 3_100_000,
      timerMs: 0,
      leds: 0,
      diskWrites: 0,
      radio: { sent: 0, received: 0, dropped: 0 },
      air: null,
      cpuMs: 0,
      voidFetches: 0,
      restored: false,
      ...over,
    });
    const t0 = Date.parse('2026-11-29T12:30:00Z');
    const f: StatusFacts = {
      now: t0 + 20_000,
      poweredOn: t0,
      state: state(),
      booted: { at: t0 + 600, instructions: 3_100_000 },
      missingModules: [],
      relayHost: 'rk-air-lab',
      lastVoidAt: null,
    };
    expect(statusLine(f)).toEqual({
      phase: 'booted',
      line: 'booted: Oberon.Loop reached at 2026-11-29T12:30:00Z after 3.1 M instructions (0.6 s)',
    });
    // a wall clock read a millisecond earlier than power-on (it can step back) is not "-0.0 s"
    expect(statusLine({ ...f, now: t0 - 1, state: null, booted: null }).line).toBe(
      'booting: 0.0 M instructions, 0.0 s since power-on',
    );
    const air = {
      sent: 0,
      received: 0,
      sendErrors: 3,
      ignored: 0,
      resolves: 3,
      localPort: 40000,
      unresolvedSince: t0 + 15_000,
      resolveError: 'getaddrinfo ENOTFOUND rk-air-lab',
    };
    expect(statusLine({ ...f, state: state({ air }) }).phase).toBe('booted'); // 5 s: within the grace
    expect(
      statusLine({ ...f, now: t0 + 15_000 + STATUS_LIMITS.relayGraceMs, state: state({ air }) }),
    ).toEqual({
      phase: 'trouble',
      line: 'trouble: relay rk-air-lab unresolvable since 2026-11-29T12:30:15Z (getaddrinfo ENOTFOUND rk-air-lab)',
    });
    const voids = { ...f, state: state({ voidFetches: 2 }), lastVoidAt: t0 + 10_000 };
    expect(statusLine(voids)).toEqual({
      phase: 'trouble',
      line: 'trouble: 2 branches into the void (each reset the machine), the last at 2026-11-29T12:30:10Z',
    });
    expect(statusLine({ ...voids, now: t0 + 10_000 + STATUS_LIMITS.voidHoldMs }).phase).toBe('booted');
    expect(statusLine({ ...f, booted: null, now: t0 + 400, state: state({ booted: false }) }).line).toBe(
      'booting: 3.1 M instructions, 0.4 s since power-on',
    );
  });
});
