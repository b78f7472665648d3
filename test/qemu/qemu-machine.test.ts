// qemu-system-risc5 (our target and board, qemu/) against our TypeScript emulator: two
// independent RISC5 machines that must agree — instruction by instruction over the boot, in the
// framebuffer after it, in the FPU (Wirth's 2016 vectors) — plus a command typed and middle-
// clicked through QEMU's own input (QMP), and the refusals of bad input.

import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assemble } from '../../operator/src/machine/asm.ts';
import { bootRom } from '../../operator/src/machine/boot-rom.ts';
import { Machine } from '../../operator/src/machine/machine.ts';
import { QemuRunner } from '../../operator/src/machine/qemu-runner.ts';
import {
  leftmostInk,
  lowestInkRow,
  rightmostInk,
  titleBars,
} from '../../operator/src/machine/screen-scan.ts';
import {
  BASE_DISK,
  LIMITS as H,
  type QemuMachine,
  qemuInput,
  REPO,
  requireQemu,
  runToFailure,
  snapshotOf,
  startQemu,
  traceWritten,
  until,
  writeProm,
} from './qemu-harness.ts';
import { compareTrace } from './trace-reference.ts';

const LIMITS = {
  traceInstructions: 10_000_000, // the first 10 M instructions: ROM, inner core, Oberon.Loop idling
  bootDeadlineMs: 120_000, // generous: 2 shared cores; the boot itself takes < 1 s of host time
  typedDeadlineMs: 60_000, // a typed command's viewer appears within a second when not starved
  lineSettledMs: 1_000, // the typed line is whole once its right end has not moved for this long
  clickSeenMs: 20_000, // a middle click's viewer, when the click was seen (under a second unstarved)
  clickAttempts: 3, // middle clicks before the test fails
} as const;

// Runs the vector records at 10000H (count, then op x y result) through the FPU instructions.
const FPU_PROGRAM = `
    MOV' R1, 1          ; R1 := 10000H
    LDW R2, R1, 0       ; the number of records
    ADD R1, R1, 16
  loop:
    MOV R2, R2
    BEQ done
    LDW R3, R1, 0
    LDW R4, R1, 4
    LDW R5, R1, 8
    SUB R0, R3, 1
    BEQ fsb
    SUB R0, R3, 2
    BEQ fml
    SUB R0, R3, 3
    BEQ fdv
    FAD R6, R4, R5
    B store
  fsb:
    FSB R6, R4, R5
    B store
  fml:
    FML R6, R4, R5
    B store
  fdv:
    FDV R6, R4, R5
  store:
    STW R6, R1, 12
    ADD R1, R1, 16
    SUB R2, R2, 1
    B loop
  done:
    MOV R1, -64
    MOV R2, 0FFH
    STW R2, R1, 4
  halt:
    B halt
`;

const bin = requireQemu();
const suite = bin === null ? describe.skip : describe;

function tsBootedFramebuffer(): Buffer {
  const m = new Machine({ disk: readFileSync(BASE_DISK), clock: 'deterministic', jit: true });
  m.setRom(bootRom(H.baseMemLim, H.baseStackOrg));
  expect(m.runUntil(() => m.booted, { maxInstructions: 50e6 })).toBe(true);
  const b = Buffer.from(m.cpu.mem.buffer, m.cpu.mem.byteOffset, m.memBytes);
  return Buffer.from(b.subarray(H.displayStart, H.displayStart + H.displayBytes));
}

suite('qemu-system-risc5: the RISC5 QEMU model agrees with our TypeScript emulator', () => {
  const qemu = bin as string;

  it("the FPU reproduces every vector of Wirth's 2016 revision (FDV rounds, a zero sum is +0)", () => {
    const dir = mkdtempSync(join(tmpdir(), 'retrokube-fpu-'));
    try {
      const exe = join(dir, 'fpu-vectors');
      execFileSync('gcc', [
        '-O2',
        '-o',
        exe,
        join(REPO, 'qemu/test/fpu-vectors.c'),
        join(REPO, 'qemu/target/risc5/fpu.c'),
      ]);
      const out = execFileSync(exe, ['/work/shared/ref/risc5-fpu-vectors.tsv'], { encoding: 'utf8' });
      expect(out).toMatch(/fpu vectors: 14372 checked, 0 mismatches/);
      // Negative control: a vector with a wrong expectation must be reported.
      const bad = join(dir, 'bad.tsv');
      writeFileSync(bad, 'FDV\t3f800000\t40400000\t0\t0\t3eaaaaaa\n');
      const control = spawnSync(exe, [bad], { encoding: 'utf8' });
      expect(control.status).toBe(1);
      expect(control.stdout).toMatch(/1 checked, 1 mismatches/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('FAD, FSB, FML and FDV executed by the QEMU CPU give every vector of the 2016 revision', async () => {
    // The vectors go into RAM (-device loader); a ROM program runs each through the CPU's own
    // instruction and stores the result next to it, then shows LED FFH.
    const lines = readFileSync('/work/shared/ref/risc5-fpu-vectors.tsv', 'utf8')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => l.split('\t'));
    const OPS = ['FAD', 'FSB', 'FML', 'FDV'];
    const base = 0x10000;
    const data = Buffer.alloc(16 + lines.length * 16);
    data.writeUInt32LE(lines.length, 0);
    lines.forEach(([op, x, y], i) => {
      data.writeUInt32LE(OPS.indexOf(op), 16 + i * 16);
      data.writeUInt32LE(Number.parseInt(x, 16), 20 + i * 16);
      data.writeUInt32LE(Number.parseInt(y, 16), 24 + i * 16);
      data.writeUInt32LE(0xdeadbeef, 28 + i * 16); // must be overwritten by the result
    });
    const dir = mkdtempSync(join(tmpdir(), 'retrokube-fpu-q-'));
    const vec = join(dir, 'vectors.bin');
    writeFileSync(vec, data);
    const program = assemble(FPU_PROGRAM, 0xfffff800).words;
    const m = await startQemu(qemu, {
      rom: program,
      args: ['-device', `loader,file=${vec},addr=${base},force-raw=on`],
    });
    try {
      await until(
        'the FPU program to finish (LED FFH)',
        async () => (await m.qmp.prop<number>('leds')) === 0xff,
        60_000,
      );
      const out = join(dir, 'results.bin');
      await m.qmp.cmd('pmemsave', { val: base, size: data.length, filename: out });
      const res = readFileSync(out);
      const wrong = lines.filter(
        ([, , , , , want], i) => res.readUInt32LE(28 + i * 16) !== Number.parseInt(want, 16),
      );
      expect(wrong.length).toBe(0);
      expect(lines.length).toBe(14_372);
    } finally {
      await m.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the first 10 M instructions of the base image boot exactly as the TS emulator, register by register', async () => {
    const n = LIMITS.traceInstructions;
    const dir = mkdtempSync(join(tmpdir(), 'retrokube-trace-'));
    const trace = join(dir, 'qemu.trace');
    const m = await startQemu(qemu, {
      machine: ['clock=deterministic', `trace=${trace}`, `trace-limit=${n}`],
    });
    try {
      await traceWritten(trace, n, LIMITS.bootDeadlineMs);
      const mismatch = compareTrace(
        readFileSync(BASE_DISK),
        { memLim: H.baseMemLim, stackOrg: H.baseStackOrg },
        readFileSync(trace),
        n,
      );
      expect(mismatch).toBeNull();
      // Negative control: a trace with one flipped bit in one state hash is caught.
      const corrupt = readFileSync(trace);
      corrupt.writeUInt32LE(corrupt.readUInt32LE(8 * 123_457 + 4) ^ 1, 8 * 123_457 + 4);
      expect(
        compareTrace(
          readFileSync(BASE_DISK),
          { memLim: H.baseMemLim, stackOrg: H.baseStackOrg },
          corrupt,
          200_000,
        )?.index,
      ).toBe(123_457);
    } finally {
      await m.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('a booted machine', () => {
    let m: QemuMachine;
    beforeAll(async () => {
      // QEMU's own VNC server on a free display from :20 on (to=99: it takes the first free port).
      m = await startQemu(qemu, { args: ['-vnc', '127.0.0.1:20,to=99'] });
      await until(
        'Oberon.Loop (the board reports booted)',
        () => m.qmp.prop<boolean>('booted'),
        LIMITS.bootDeadlineMs,
      );
    });
    afterAll(async () => {
      await m?.stop();
    });

    it('boots the base image to Oberon.Loop with a framebuffer byte for byte the TS emulator’s', async () => {
      const fb = await m.framebuffer();
      const ts = tsBootedFramebuffer();
      expect(fb.length).toBe(H.displayBytes);
      expect(fb.equals(ts)).toBe(true);
      // The booted screen: 18,607 foreground pixels (the System.Log and System.Tool viewers).
      let ink = 0;
      for (const b of fb) for (let x = b; x; x &= x - 1) ink++;
      expect(ink).toBe(18_607);
    });

    it("shows Oberon through QEMU's own VNC server to a real VNC client, pixel for pixel", async () => {
      // The last hop of `virtctl vnc` (libvirt's VNC socket is QEMU's VNC server).
      const vnc = (await m.qmp.cmd('query-vnc')) as { service: string; host: string };
      const jpg = join(m.dir, 'vnc.jpg');
      execFileSync('vncsnapshot', ['-quality', '100', `${vnc.host}::${vnc.service}`, jpg], { stdio: 'pipe' });
      const pgm = execFileSync('djpeg', ['-pnm', '-grayscale', jpg]);
      const header = pgm.subarray(0, 16).toString('latin1');
      expect(header.startsWith('P5\n1024 768\n255\n')).toBe(true);
      const pixels = pgm.subarray('P5\n1024 768\n255\n'.length);
      const fb = await m.framebuffer();
      let differ = 0;
      for (let yTop = 0; yTop < 768; yTop++) {
        const line = 767 - yTop;
        for (let x = 0; x < 1024; x++) {
          const bit = (fb[line * 128 + (x >>> 3)] >>> (x & 7)) & 1;
          if (bit !== (pixels[yTop * 1024 + x] > 128 ? 1 : 0)) differ++;
        }
      }
      expect(differ).toBe(0);
    });

    it('runs a command typed into System.Tool and middle-clicked through QEMU input (QMP)', async () => {
      const before = snapshotOf(await m.framebuffer());
      const trackX0 = 640 + 20;
      const barsBefore = titleBars(before, trackX0, 1016);
      const top = barsBefore[barsBefore.length - 1] + 15;
      const lowest = lowestInkRow(before, trackX0, 1016, top, 768);
      expect(lowest).toBeGreaterThan(top);

      // Caret to the end of System.Tool's text, a new line, the command, a middle click on it.
      const input = qemuInput(m);
      await input.click('left', 1012, Math.min(lowest + 8, 766));
      await input.type('\rSystem.Directory *.Tool');
      // The guest reads the keys at its own pace (slowly when the host is starved): wait until the
      // line has stopped growing for a second, so the click runs the whole command, not a prefix.
      let last = { right: -1, since: 0 };
      const typed = await until(
        'the whole typed line on the screen',
        async () => {
          const s = snapshotOf(await m.framebuffer());
          const low = lowestInkRow(s, trackX0, 1016, top, 768);
          if (low <= lowest) return null;
          const right = rightmostInk(s, trackX0, 1016, low - 10, low - 1);
          if (right !== last.right) last = { right, since: Date.now() };
          return Date.now() - last.since >= LIMITS.lineSettledMs ? { s, low } : null;
        },
        LIMITS.typedDeadlineMs,
      );
      const x = leftmostInk(typed.s, trackX0, 1016, typed.low - 10, typed.low - 1);
      // Oberon samples the buttons in its loop: a click held 120 ms can pass unseen while the host
      // starves the guest, so a click that opened nothing is repeated (said in the log).
      const opened = async () =>
        titleBars(snapshotOf(await m.framebuffer()), trackX0, 1016).length > barsBefore.length;
      for (let attempt = 1; ; attempt++) {
        await input.click('middle', x + 2, typed.low - 6);
        // System.Directory opens a viewer in the system track: one more title bar.
        const seen = await until('the System.Directory viewer', opened, LIMITS.clickSeenMs).catch(
          () => false,
        );
        if (seen) break;
        if (attempt === LIMITS.clickAttempts)
          throw new Error(
            `no System.Directory viewer after ${attempt} middle clicks of ${LIMITS.clickSeenMs} ms each`,
          );
        console.log(
          `[qemu-machine] middle click ${attempt} opened no viewer in ${LIMITS.clickSeenMs} ms: clicking again`,
        );
      }
    });
  });

  describe('bad input is refused with a clear error and nothing starts', () => {
    let dir: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'retrokube-qemu-bad-'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('a disk that is not an Oberon disk', () => {
      const disk = join(dir, 'not-oberon.img');
      writeFileSync(disk, Buffer.alloc(1 << 20, 0x5a));
      const r = runToFailure(qemu, [
        '-M',
        'oberon',
        '-bios',
        writeProm(dir),
        '-drive',
        `if=none,id=sd0,file=${disk},format=raw`,
        '-display',
        'none',
      ]);
      expect(r.code).not.toBe(0);
      expect(r.output).toMatch(/drive sd0 is not an Oberon disk: .*directory mark 9B1EA38D/);
    });

    it('a relay name that does not resolve', () => {
      const disk = join(dir, 'oberon.dsk');
      writeFileSync(disk, readFileSync(BASE_DISK));
      const r = runToFailure(qemu, [
        '-M',
        'oberon,radio=air',
        '-bios',
        writeProm(dir),
        '-drive',
        `if=none,id=sd0,file=${disk},format=raw`,
        '-chardev',
        'udp,id=air,host=no-such-relay.invalid,port=7524,localaddr=127.0.0.1,localport=0',
        '-display',
        'none',
      ]);
      expect(r.code).not.toBe(0);
      expect(r.output).toMatch(/no-such-relay\.invalid/);
    });

    it("QemuRunner (up --qemu, the e2e clusters) rejects a non-Oberon disk with QEMU's reason; no process stays", async () => {
      const disk = join(dir, 'runner-not-oberon.img');
      writeFileSync(disk, Buffer.alloc(1 << 20, 0x5a));
      const started = QemuRunner.start({ qemu, disk, commands: 'Kube.Start' });
      await expect(started).rejects.toThrow(/did not start: .*drive sd0 is not an Oberon disk/s);
      const left = spawnSync('pgrep', ['-f', disk]);
      expect(left.stdout.toString().trim()).toBe('');
    });

    it('a radio without its chardev, and no boot ROM', () => {
      const disk = join(dir, 'oberon2.dsk');
      writeFileSync(disk, readFileSync(BASE_DISK));
      const drive = ['-drive', `if=none,id=sd0,file=${disk},format=raw`, '-display', 'none'];
      const radio = runToFailure(qemu, ['-M', 'oberon,radio=air', '-bios', writeProm(dir), ...drive]);
      expect(radio.output).toMatch(/radio: no chardev 'air'/);
      const rom = runToFailure(qemu, ['-M', 'oberon', ...drive]);
      expect(rom.output).toMatch(/no boot ROM; give the 2 KiB image with -bios prom.bin/);
    });
  });
});
