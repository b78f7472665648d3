// Benchmarks of the RISC5 machine: raw instruction rate (a tight loop, and Oberon's compiler
// compiling itself, in this process and in a fresh one), boot time to Oberon.Loop (in-process,
// and in worker threads: a real boot, then boots from its boot image), and host CPU per idle
// machine (1, 4, 8, 16).
// With --c-baseline DIR (a checkout of pdewacht/oberon-risc-emu) the reference C emulator runs
// the same boot and compile in fresh processes, interleaved with ours (c-baseline.ts), and idles.
// Writes bench/results/machine.json. Run: node_modules/.bin/node bench/machine/run.ts [--quick]
// [--c-baseline DIR]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assemble } from '../../operator/src/machine/asm.ts';
import { bootImageDir, loadBootImages, saveBootImage } from '../../operator/src/machine/boot-image-store.ts';
import { Risc5 } from '../../operator/src/machine/cpu.ts';
import { compileGeneration } from '../../operator/src/machine/jit.ts';
import { Machine } from '../../operator/src/machine/machine.ts';
import { setUpNodeMachines } from '../../operator/src/machine/node-setup.ts';
import { MachineRunner } from '../../operator/src/machine/runner.ts';
import { BASE_IMAGE } from '../../operator/src/machine/test-disk.ts';
import { startRecording, writeResults } from '../results.ts';
import { buildCDriver, type CRun, cDriverIdle, recordCommand, runCDriver } from './c-baseline.ts';
import { TIGHT_LOOP } from './tight-loop.ts';

const record = startRecording();

const quick = process.argv.includes('--quick');
// Boot images from earlier processes (boot-image-store.ts) would hide the real boot: this process
// starts without them; its own machines still share theirs. One kind of fresh child below gets a
// folder of its own (RETROKUBE_BOOT_IMAGES=<folder>): the first boot of a process from the store.
if (!process.argv.includes('--cold-compile')) process.env.RETROKUBE_BOOT_IMAGES = 'off';
// Likewise the translator's hints (jit-hints.ts): in this process and its workers, none; the
// fresh-process figures below give each child a folder of hints of its own.
if (!process.argv.includes('--cold-compile')) process.env.RETROKUBE_JIT_HINTS = 'off';
// This process's own machines are set up as a machine thread's (worker.ts): the hint store (off
// above but in the fresh children) and V8's wasm tiering.
setUpNodeMachines();
// Rates are per second of this thread's CPU time (the 2-core CI host is shared; wall time would
// measure the neighbours). Wall-clock figures are given where they are the point (boot, idle).
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
// This thread's share alone: the rest of the process's CPU is V8's helper threads (optimising
// compiles of our JavaScript and of wasm, garbage collection), which a fresh process pays anew.
const threadMs = () => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const results: Record<string, unknown> = {
  host: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
  loadAverageAtStart: os.loadavg(),
};

/** The compiler compiling itself, typed and middle-clicked as a person would. */
const COMPILE = 'ORP.Compile ORS.Mod ORB.Mod ORG.Mod ORP.Mod ~';

// `--cold-compile on|off`: this process only boots and compiles once and prints the rate: the
// figure of a fresh process (nothing translated or optimised yet), run as a child below.
const coldArg = process.argv.indexOf('--cold-compile');
if (coldArg >= 0) {
  const r = bootAndCompile(process.argv[coldArg + 1] === 'on');
  console.log(JSON.stringify(r));
  process.exit(0);
}

function tightLoop(jit: boolean): number {
  const prog = assemble(TIGHT_LOOP);
  const cpu = new Risc5(
    0x100000,
    0xe7f00,
    { ioRead: () => 0, ioWrite: () => {}, voidFetch: () => {} },
    { jit },
  );
  cpu.mem.set(prog.words);
  cpu.pc = 0;
  // Warm up in run() calls as a machine makes them until the thread is long-lived (jit.ts), then
  // two more: in the first the CPU compiles its blocks again for that tier (cpu-blocks.ts
  // recompile) and V8 optimises them, the second runs the optimised code. So the loop is measured
  // as a machine that has run a while runs it.
  cpu.run(20_000_000);
  if (jit) {
    // (bounded: with RETROKUBE_WASM_TIERING=default a thread never turns long-lived)
    for (let k = 0; k < 20 && compileGeneration() === 0; k++) cpu.run(20_000_000);
    cpu.run(20_000_000);
    cpu.run(20_000_000);
  }
  const n = quick ? 100_000_000 : 300_000_000;
  const t0 = cpuMs();
  cpu.run(n);
  return n / ((cpuMs() - t0) / 1000);
}

/**
 * Two boots to Oberon.Loop, then the compile. With the boot-image store on (a fresh child given a
 * folder), the first boot reads the store (inside the timed part), starts from an image when one
 * matches the disk and saves the one its real boot recorded; the second starts from the first's.
 */
function bootAndCompile(jit: boolean): {
  bootMsCold: number;
  bootMsWarm: number;
  bootInstructions: number;
  bootRestored: boolean;
  compileInstructions: number;
  compileMs: number;
  /** Of compileMs, this thread's (the rest: V8's helper threads). */
  compileThreadMs: number;
  compileMips: number;
} {
  const disk = fs.readFileSync(BASE_IMAGE);
  const imageDir = bootImageDir();
  let t0 = cpuMs();
  const stored = imageDir === null ? undefined : loadBootImages(imageDir);
  let m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit, bootImages: stored });
  m.runUntil(() => m.booted, { maxInstructions: 20e6 });
  const bootMsCold = cpuMs() - t0;
  const bootRestored = m.restored;
  const own = m.bootImage;
  if (own !== null) saveBootImage(imageDir, own);
  t0 = cpuMs();
  m = new Machine({
    disk: Buffer.from(disk),
    clock: 'deterministic',
    jit,
    bootImages: imageDir === null ? undefined : [...(own === null ? [] : [own]), ...(stored ?? [])],
  });
  m.runUntil(() => m.booted, { maxInstructions: 20e6 });
  const bootMsWarm = cpuMs() - t0;
  const bootInstructions = m.cpu.instructions;
  m.runCommand(COMPILE);
  const i0 = m.cpu.instructions;
  t0 = cpuMs();
  const th0 = threadMs();
  if (!m.runUntilIdle(500e6)) throw new Error('the compile did not finish');
  const compileMs = cpuMs() - t0;
  const compileThreadMs = threadMs() - th0;
  const compileInstructions = m.cpu.instructions - i0;
  if (m.disk.writes < 10) throw new Error('the compiler wrote no object files');
  return {
    bootMsCold,
    bootMsWarm,
    bootInstructions,
    bootRestored,
    compileInstructions,
    compileMs,
    compileThreadMs,
    compileMips: compileInstructions / compileMs / 1000,
  };
}

/**
 * How long idle machines settle before their CPU is measured. V8's memory reducer runs a full
 * collection in each isolate about 8 s after its last one: with 5 s here, the measured window held
 * that one-off collection in every machine's thread (with `--no-memory-reducer` the same window
 * cost a sixteenth of it in scratch runs), not the idle machine's steady cost.
 */
const IDLE_SETTLE_MS = 15_000;

async function idleCpu(n: number): Promise<{
  machines: number;
  cpuPercentPerMachine: number;
  workerCpuPercentPerMachine: number;
  instructionsPerSecondPerMachine: number;
  bootMs: number;
}> {
  const t0 = performance.now();
  const ms = await Promise.all(
    Array.from({ length: n }, () => MachineRunner.start({ disk: BASE_IMAGE, frames: false })),
  );
  try {
    await Promise.all(ms.map((m) => m.waitForBoot(120_000)));
    const bootMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, IDLE_SETTLE_MS));
    const before = await Promise.all(ms.map((m) => m.state()));
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, quick ? 4000 : 8000));
    const c1 = process.cpuUsage(c0);
    const wall = performance.now() - w0;
    const after = await Promise.all(ms.map((m) => m.state()));
    const cpuMs = (c1.user + c1.system) / 1000;
    const instr = after.reduce((s, a, i) => s + a.instructions - before[i].instructions, 0);
    const workerMs = after.reduce((s, a, i) => s + a.cpuMs - before[i].cpuMs, 0);
    return {
      machines: n,
      // The whole process (main thread, V8's helper threads) and the machines' own threads.
      cpuPercentPerMachine: (cpuMs / wall / n) * 100,
      workerCpuPercentPerMachine: (workerMs / wall / n) * 100,
      instructionsPerSecondPerMachine: instr / n / (wall / 1000),
      bootMs,
    };
  } finally {
    await Promise.all(ms.map((m) => m.stop()));
  }
}

/** Wall time from start() to Oberon.Loop, and the CPU the worker thread spent on it (all of its life). */
async function workerBoot(): Promise<{ wallMs: number; workerCpuMs: number; restored: boolean }> {
  const t0 = performance.now();
  const m = await MachineRunner.start({ disk: BASE_IMAGE, frames: false });
  await m.waitForBoot(60_000);
  const wallMs = performance.now() - t0;
  const st = await m.state();
  await m.stop();
  return { wallMs, workerCpuMs: st.cpuMs, restored: st.restored };
}

/**
 * Boot + compile once in a fresh Node process (translator on or off), with the translator's hints
 * (jit-hints.ts) in `hints`: an empty folder (cold), or one an earlier child filled (warm); and
 * boot images (boot-image-store.ts) in `images`, or 'off'.
 */
function coldCompile(jit: boolean, hints: string, images = 'off'): ReturnType<typeof bootAndCompile> {
  const out = execFileSync(process.execPath, [import.meta.filename, '--cold-compile', jit ? 'on' : 'off'], {
    encoding: 'utf8',
    env: { ...process.env, RETROKUBE_JIT_HINTS: hints, RETROKUBE_BOOT_IMAGES: images },
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}');
}

const cArg = process.argv.indexOf('--c-baseline');
const cDriver = cArg >= 0 ? buildCDriver(process.argv[cArg + 1] ?? '') : null;
const cInput = cDriver !== null ? recordCommand(fs.readFileSync(BASE_IMAGE), COMPILE) : null;

// The compile runs ROUNDS times per mode, the modes interleaved, so both see the same host load.
// "Warm" is the steady state: the median of the compiles from the STEADY_FROM-th on (this shared
// 2-core host is noisy), reported with all of them. The first compile is the process's first
// (its blocks translated and, past jit.ts LIMITS.longLived, compiled for V8's optimising tier);
// the second still pays V8's optimising compiles of the first's blocks on its helper threads
// (about 30 ms of a ~180 ms compile, bench/machine/ab.ts warmHelperMs); from the third on the
// compiles run as a long-lived machine's (a node's) do, within the spread between rounds.
const ROUNDS = 5;
const STEADY_FROM = 3;
const loops = new Map<boolean, number>();
const compiles = new Map<boolean, ReturnType<typeof bootAndCompile>[]>();
for (const jit of [false, true]) loops.set(jit, tightLoop(jit));
for (let r = 0; r < ROUNDS; r++) {
  for (const jit of [false, true]) {
    const list = compiles.get(jit) ?? [];
    list.push(bootAndCompile(jit));
    compiles.set(jit, list);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const jit of [false, true]) {
  const mode = jit ? 'translator' : 'interpreter';
  const loop = loops.get(jit) ?? 0;
  const runs = compiles.get(jit) ?? [];
  const bc = runs[0];
  const mips = runs.map((c) => c.compileMips);
  console.log(`[${mode}] tight loop: ${(loop / 1e6).toFixed(1)} M instructions per CPU-second`);
  console.log(
    `[${mode}] boot to Oberon.Loop: ${bc.bootInstructions} instructions, ${bc.bootMsCold.toFixed(0)} ms CPU cold, ${bc.bootMsWarm.toFixed(0)} ms warm (in-process)`,
  );
  console.log(
    `[${mode}] compiler compiling itself: ${(bc.compileInstructions / 1e6).toFixed(1)} M instructions; steady state (compiles ${STEADY_FROM}–${ROUNDS}), median ${median(mips.slice(STEADY_FROM - 1)).toFixed(1)} M instructions/s (runs: ${mips.map((m) => m.toFixed(1)).join(', ')})`,
  );
  results[mode] = {
    tightLoopMips: loop / 1e6,
    boot: {
      instructions: bc.bootInstructions,
      inProcessColdCpuMs: bc.bootMsCold,
      inProcessWarmCpuMs: bc.bootMsWarm,
    },
    compileSelf: {
      instructions: bc.compileInstructions,
      cpuMs: runs.map((c) => c.compileMs),
      // the process's CPU less the thread's: two clocks, so never below zero
      helperThreadsCpuMs: runs.map((c) => Math.max(0, c.compileMs - c.compileThreadMs)),
      mipsRuns: mips,
      steadyFrom: STEADY_FROM,
      mips: median(mips.slice(STEADY_FROM - 1)),
    },
  };
}
// The warm steady state again, in WARM_PROCESSES processes of translator rounds alone (ab.ts's
// warm child: the tight loop, then ROUNDS boots + compiles): one process's figure moved by a
// quarter between runs of the same code (its rounds share the process with the interpreter's,
// and V8's optimising compiles of a round's blocks land in one round or the next), so the
// figure the goals are judged by is the median of the processes' steady medians.
const WARM_PROCESSES = 3;
const warmRuns: number[][] = [];
for (let p = 0; p < WARM_PROCESSES; p++) {
  const out = execFileSync(
    process.execPath,
    [
      path.join(import.meta.dirname, 'ab.ts'),
      '--warm-child',
      path.resolve(import.meta.dirname, '../..'),
      String(ROUNDS),
    ],
    { encoding: 'utf8' },
  );
  warmRuns.push((JSON.parse(out.trim().split('\n').pop() ?? '{}') as { mips: number[] }).mips);
}
const warmSteady = warmRuns.map((runs) => median(runs.slice(STEADY_FROM - 1)));
console.log(
  `[translator, ${WARM_PROCESSES} warm processes] steady state (compiles ${STEADY_FROM}–${ROUNDS}) per process ${warmSteady.map((m) => m.toFixed(1)).join(', ')}, median ${median(warmSteady).toFixed(1)} M instructions/s`,
);
results.warmProcesses = {
  processes: WARM_PROCESSES,
  mipsRuns: warmRuns,
  steadyMedians: warmSteady,
  mips: median(warmSteady),
};

// A fresh process each: the figures of the first machine of a process. Four kinds, interleaved
// round by round so they see the same host load: the interpreter alone, the translator with no
// hints (a first run), the translator with the hints and translations of earlier runs (any later
// run), and the same starting from the stored boot image; with --c-baseline, the C emulator in
// each round too.
const hintsRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-bench-hints-'));
const warmHints = path.join(hintsRoot, 'warm');
const warmImages = path.join(hintsRoot, 'images');
coldCompile(true, warmHints, warmImages); // fills the warm folders
const FRESH = [
  { key: 'interpreter', jit: false, hints: () => path.join(hintsRoot, 'unused'), images: 'off' },
  {
    key: 'translatorNoHints',
    jit: true,
    hints: () => fs.mkdtempSync(path.join(hintsRoot, 'cold-')),
    images: 'off',
  },
  { key: 'translatorHints', jit: true, hints: () => warmHints, images: 'off' },
  // The first machine of a process starting from the stored boot image (as MachineRunner's do).
  { key: 'translatorHintsImage', jit: true, hints: () => warmHints, images: warmImages },
] as const;
const FRESH_ROUNDS = quick ? 3 : 5;
const fresh = new Map<string, ReturnType<typeof bootAndCompile>[]>();
const cRuns: CRun[] = [];
for (let r = 0; r < FRESH_ROUNDS; r++) {
  for (const f of FRESH)
    fresh.set(f.key, [...(fresh.get(f.key) ?? []), coldCompile(f.jit, f.hints(), f.images)]);
  if (cDriver !== null && cInput !== null)
    cRuns.push(runCDriver(cDriver, fs.readFileSync(BASE_IMAGE), cInput.events, cInput.diskAfter));
}
fs.rmSync(hintsRoot, { recursive: true, force: true });
const freshResults: Record<string, unknown> = {};
for (const f of FRESH) {
  const runs = fresh.get(f.key) ?? [];
  const mips = runs.map((c) => c.compileMips);
  const boots = runs.map((c) => c.bootMsCold);
  const helpers = runs.map((c) => c.compileMs - c.compileThreadMs);
  console.log(
    `[fresh process, ${f.key}] compile median ${median(mips).toFixed(1)} M instructions/s (runs: ${mips.map((m) => m.toFixed(1)).join(', ')}; of its CPU, V8's helper threads ${helpers.map((h) => h.toFixed(0)).join(', ')} ms); boot median ${median(boots).toFixed(0)} ms CPU (runs: ${boots.map((b) => b.toFixed(0)).join(', ')})`,
  );
  if (f.images !== 'off' && !runs.every((c) => c.bootRestored))
    throw new Error('a fresh process did not start from the stored boot image');
  freshResults[f.key] = {
    compileMipsRuns: mips,
    compileMips: median(mips),
    compileCpuMsRuns: runs.map((c) => c.compileMs),
    compileHelperThreadsCpuMsRuns: helpers,
    bootCpuMsRuns: boots,
    bootCpuMs: median(boots),
    bootRestored: runs.map((c) => c.bootRestored),
  };
}
results.freshProcess = freshResults;
if (cDriver !== null) {
  if (!cRuns.every((c) => c.sameDisk)) throw new Error('the C emulator left another disk than ours');
  const mips = cRuns.map((c) => c.compileMips);
  const boots = cRuns.map((c) => c.bootMs);
  const idle = cDriverIdle(cDriver, fs.readFileSync(BASE_IMAGE), quick ? 4 : 8);
  console.log(
    `[C reference, -O2, a process each] compile median ${median(mips).toFixed(1)} M instructions/s (runs: ${mips.map((m) => m.toFixed(1)).join(', ')}; ${(cRuns[0].compileInstructions / 1e6).toFixed(1)} M instructions, the same disk as ours); boot median ${median(boots).toFixed(0)} ms CPU (${cRuns[0].bootInstructions} instructions); idle ${idle.idleCpuPercent.toFixed(2)} % of a core`,
  );
  const ours = (key: string) => (freshResults[key] as { compileMips: number }).compileMips;
  const ratios = {
    freshNoHints: ours('translatorNoHints') / median(mips),
    freshHints: ours('translatorHints') / median(mips),
    freshHintsImage: ours('translatorHintsImage') / median(mips),
    warmInProcess: median(warmSteady) / median(mips),
  };
  // The first boot of a process, CPU: ours from the stored boot image over C's real boot (≤ 1 is
  // the goal), medians.
  const bootOverC = (freshResults.translatorHintsImage as { bootCpuMs: number }).bootCpuMs / median(boots);
  console.log(
    `compile, ours / C: fresh process without hints ${ratios.freshNoHints.toFixed(2)}x, with hints ${ratios.freshHints.toFixed(2)}x, with hints after a boot from the stored image ${ratios.freshHintsImage.toFixed(2)}x, warm in-process ${ratios.warmInProcess.toFixed(2)}x; first boot of a process from the stored image / C's boot, CPU: ${bootOverC.toFixed(2)}x`,
  );
  results.c = {
    build: 'gcc -O2, pdewacht/oberon-risc-emu risc.c + risc-fp.c + disk.c, bench/machine/pdewacht-driver.c',
    compileInstructions: cRuns[0].compileInstructions,
    compileMipsRuns: mips,
    compileMips: median(mips),
    bootInstructions: cRuns[0].bootInstructions,
    bootCpuMsRuns: boots,
    bootCpuMs: median(boots),
    sameDiskAsOurs: true,
    idleCpuPercent: idle.idleCpuPercent,
    idleInstructionsPerSecond: idle.idleInstructionsPerSecond,
    oursOverC: ratios,
    firstBootFromImageOverC: bootOverC,
  };
} else {
  console.log('no C baseline (--c-baseline DIR: a checkout of pdewacht/oberon-risc-emu)');
  results.c = null;
}
// Four starts in one process: the first boots for real (and gives its boot image), the later ones
// start from the image (boot-image.ts).
const wbs: { wallMs: number; workerCpuMs: number; restored: boolean }[] = [];
for (let k = 0; k < 4; k++) wbs.push(await workerBoot());
console.log(
  `boot in a worker thread (start to Oberon.Loop), 4 starts: ${wbs.map((w) => `${w.wallMs.toFixed(0)} ms wall / ${w.workerCpuMs.toFixed(0)} ms worker CPU${w.restored ? ' (boot image)' : ''}`).join(', ')}`,
);
const restoredBoots = wbs.filter((w) => w.restored);
results.workerBoot = wbs;
results.workerBootReal = wbs.find((w) => !w.restored) ?? null;
results.workerBootFromImageCpuMs = median(restoredBoots.map((w) => w.workerCpuMs));
const idle: unknown[] = [];
for (const n of quick ? [1, 4] : [1, 4, 8, 16]) {
  const r = await idleCpu(n);
  console.log(
    `idle, ${n} machine(s): ${r.cpuPercentPerMachine.toFixed(2)} % of a core per machine (process), ${r.workerCpuPercentPerMachine.toFixed(2)} % (the machine's thread), ${Math.round(r.instructionsPerSecondPerMachine)} instructions/s each (all booted in ${r.bootMs.toFixed(0)} ms)`,
  );
  idle.push(r);
}
results.idle = idle;
results.idleSettleMs = IDLE_SETTLE_MS;
results.loadAverage = os.loadavg();
writeResults('machine', results, record);
