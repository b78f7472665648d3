// The reference C emulator (github.com/pdewacht/oberon-risc-emu) as a baseline for bench/machine:
// built from a checkout the caller names (--c-baseline DIR) into a temp folder outside the
// repository with gcc -O2, driven without a window by pdewacht-driver.c. It runs the same work as
// ours: the same disk, and for a command the very input our machine fed Oberon (mouse states and
// key bytes, recorded here from a run of ours), and its disk afterwards is compared with ours.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Machine } from '../../operator/src/machine/machine.ts';

const LIMITS = {
  bootInstructions: 20e6, // ours boots in about 7.6 M
  commandInstructions: 500e6, // the compiler compiling itself: about 46 M
  runMs: 120_000, // one run of the driver
} as const;

const SOURCES = [
  'risc.c',
  'risc.h',
  'risc-io.h',
  'risc-fp.c',
  'risc-fp.h',
  'disk.c',
  'disk.h',
  'risc-boot.inc',
];

/** Build the driver from a checkout of the C emulator; returns the binary (in a temp folder). */
export function buildCDriver(checkout: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-c-baseline-'));
  for (const f of SOURCES) {
    const from = path.join(checkout, 'src', f);
    if (!fs.existsSync(from))
      throw new Error(`${from} missing: --c-baseline wants a checkout of pdewacht/oberon-risc-emu`);
    fs.copyFileSync(from, path.join(dir, f));
  }
  // The one change: risc_run returns how many instructions it ran; two accessors for the driver.
  const risc = fs.readFileSync(path.join(dir, 'risc.c'), 'utf8');
  const loop =
    /void risc_run\(struct RISC \*risc, int cycles\) \{([\s\S]*?)for \(int i = 0; (i < cycles && risc->progress); i\+\+\) \{\s*risc_single_step\(risc\);\s*\}\s*\}/;
  if (!loop.test(risc)) throw new Error('risc_run of this checkout is not the one the driver knows');
  fs.writeFileSync(
    path.join(dir, 'risc.c'),
    `${risc.replace(loop, 'int risc_run(struct RISC *risc, int cycles) {$1int i;\n  for (i = 0; $2; i++) risc_single_step(risc);\n  return i;\n}')}
void risc_set_mouse(struct RISC *risc, uint32_t v) { risc->mouse = v; }
uint32_t risc_key_count(struct RISC *risc) { return risc->key_cnt; }
`,
  );
  const header = fs.readFileSync(path.join(dir, 'risc.h'), 'utf8');
  fs.writeFileSync(
    path.join(dir, 'risc.h'),
    header.replace(
      'void risc_run(struct RISC *risc, int cycles);',
      'int risc_run(struct RISC *risc, int cycles);\nvoid risc_set_mouse(struct RISC *risc, uint32_t v);\nuint32_t risc_key_count(struct RISC *risc);',
    ),
  );
  fs.copyFileSync(path.join(import.meta.dirname, 'pdewacht-driver.c'), path.join(dir, 'driver.c'));
  const bin = path.join(dir, 'driver');
  execFileSync('gcc', ['-O2', '-std=c99', '-o', bin, 'driver.c', 'risc.c', 'risc-fp.c', 'disk.c', '-lm'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  return bin;
}

/**
 * Boot our machine (interpreter) and run a command; the input Oberon read for it, as the
 * driver's events file, and the disk it left.
 */
export function recordCommand(disk: Buffer, command: string): { events: string; diskAfter: Uint8Array } {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit: false });
  if (!m.runUntil(() => m.booted, { maxInstructions: LIMITS.bootInstructions })) throw new Error('no boot');
  const events: string[] = [];
  let mouse = -1;
  const read = m.ioRead.bind(m);
  m.ioRead = (addr: number) => {
    const v = read(addr);
    if (addr === 0xffffffd8 && (v & 0x0fffffff) !== mouse) {
      mouse = v & 0x0fffffff; // without the key-available bit: the driver's keyboard sets it
      events.push(`m ${mouse}`);
    }
    if (addr === 0xffffffdc && v !== 0) events.push(`k ${v}`);
    return v;
  };
  m.runCommand(command);
  if (!m.runUntilIdle(LIMITS.commandInstructions)) throw new Error('the command did not finish');
  return { events: `${events.join('\n')}\n`, diskAfter: m.disk.bytes };
}

export interface CRun {
  bootInstructions: number;
  bootMs: number;
  compileInstructions: number;
  compileMs: number;
  compileMips: number;
  /** The driver's disk afterwards is byte for byte the one ours left. */
  sameDisk: boolean;
}

/** One run of the driver in a process of its own: boot, then the recorded command. */
export function runCDriver(bin: string, disk: Buffer, events: string, diskAfter: Uint8Array): CRun {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-c-run-'));
  try {
    const dsk = path.join(dir, 'disk.dsk');
    const ev = path.join(dir, 'events.txt');
    fs.writeFileSync(dsk, disk);
    fs.writeFileSync(ev, events);
    const out = execFileSync(bin, [dsk, ev], { encoding: 'utf8', timeout: LIMITS.runMs });
    const r = JSON.parse(out.trim());
    return { ...r, sameDisk: Buffer.from(diskAfter).equals(fs.readFileSync(dsk)) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The driver idling for `seconds` of wall time after a boot: % of a core, instructions/s. */
export function cDriverIdle(
  bin: string,
  disk: Buffer,
  seconds: number,
): { idleCpuPercent: number; idleInstructionsPerSecond: number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-c-run-'));
  try {
    const dsk = path.join(dir, 'disk.dsk');
    fs.writeFileSync(dsk, disk);
    const out = execFileSync(bin, [dsk, '--idle', String(seconds)], {
      encoding: 'utf8',
      timeout: LIMITS.runMs,
    });
    return JSON.parse(out.trim());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
