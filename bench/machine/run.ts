// Benchmarks of the RISC5 machine: raw instruction rate (a tight loop, and Oberon's compiler
// compiling itself), boot time to Oberon.Loop, and host CPU per idle machine (1, 4, 8, 16).
// Writes bench/results/machine.json. Run: node_modules/.bin/node bench/machine/run.ts [--quick]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { assemble } from '../../operator/src/machine/asm.ts';
import { Risc5 } from '../../operator/src/machine/cpu.ts';
import { Machine } from '../../operator/src/machine/machine.ts';
import { MachineRunner } from '../../operator/src/machine/runner.ts';
import { BASE_IMAGE } from '../../operator/src/machine/test-disk.ts';

const quick = process.argv.includes('--quick');
// Rates are per second of this thread's CPU time (the 2-core CI host is shared; wall time would
// measure the neighbours). Wall-clock figures are given where they are the point (boot, idle).
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const results: Record<string, unknown> = {
  host: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
};

function tightLoop(jit: boolean): number {
  const prog = assemble(`
      MOV R0, 0
      MOV R3, 100H
    loop:
      ADD R0, R0, 1
      LDW R2, R3, 0
      ADD R2, R2, R0
      STW R2, R3, 0
      XOR R4, R0, R2
      LSL R5, R4, 3
      SUB R6, R0, R5
      BNE loop
      B loop`);
  const cpu = new Risc5(
    0x100000,
    0xe7f00,
    { ioRead: () => 0, ioWrite: () => {}, voidFetch: () => {} },
    { jit },
  );
  cpu.mem.set(prog.words);
  cpu.pc = 0;
  cpu.run(20_000_000); // warm up the JIT
  const n = quick ? 100_000_000 : 300_000_000;
  const t0 = cpuMs();
  cpu.run(n);
  return n / ((cpuMs() - t0) / 1000);
}

function bootAndCompile(jit: boolean): {
  bootMsCold: number;
  bootMsWarm: number;
  bootInstructions: number;
  compileInstructions: number;
  compileMs: number;
  compileMips: number;
} {
  const disk = fs.readFileSync(BASE_IMAGE);
  let t0 = cpuMs();
  let m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit });
  m.runUntil(() => m.booted, { maxInstructions: 20e6 });
  const bootMsCold = cpuMs() - t0;
  t0 = cpuMs();
  m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit });
  m.runUntil(() => m.booted, { maxInstructions: 20e6 });
  const bootMsWarm = cpuMs() - t0;
  const bootInstructions = m.cpu.instructions;
  // The compiler compiling itself, typed and middle-clicked as a person would.
  m.runCommand('ORP.Compile ORS.Mod ORB.Mod ORG.Mod ORP.Mod ~');
  const i0 = m.cpu.instructions;
  t0 = cpuMs();
  if (!m.runUntilIdle(500e6)) throw new Error('the compile did not finish');
  const compileMs = cpuMs() - t0;
  const compileInstructions = m.cpu.instructions - i0;
  if (m.disk.writes < 10) throw new Error('the compiler wrote no object files');
  return {
    bootMsCold,
    bootMsWarm,
    bootInstructions,
    compileInstructions,
    compileMs,
    compileMips: compileInstructions / compileMs / 1000,
  };
}

async function idleCpu(n: number): Promise<{
  machines: number;
  cpuPercentPerMachine: number;
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
    await new Promise((r) => setTimeout(r, 1000)); // settle
    const before = await Promise.all(ms.map((m) => m.state()));
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    await new Promise((r) => setTimeout(r, quick ? 2000 : 4000));
    const c1 = process.cpuUsage(c0);
    const wall = performance.now() - w0;
    const after = await Promise.all(ms.map((m) => m.state()));
    const cpuMs = (c1.user + c1.system) / 1000;
    const instr = after.reduce((s, a, i) => s + a.instructions - before[i].instructions, 0);
    return {
      machines: n,
      cpuPercentPerMachine: (cpuMs / wall / n) * 100,
      instructionsPerSecondPerMachine: instr / n / (wall / 1000),
      bootMs,
    };
  } finally {
    await Promise.all(ms.map((m) => m.stop()));
  }
}

/** Wall time from start() to Oberon.Loop, and the CPU the worker thread spent on it (all of its life). */
async function workerBoot(): Promise<{ wallMs: number; workerCpuMs: number }> {
  const t0 = performance.now();
  const m = await MachineRunner.start({ disk: BASE_IMAGE, frames: false });
  await m.waitForBoot(60_000);
  const wallMs = performance.now() - t0;
  const st = await m.state();
  await m.stop();
  return { wallMs, workerCpuMs: st.cpuMs };
}

// The compile runs three times per mode, the modes interleaved, so both see the same host load;
// the median is reported (this shared 2-core host is noisy) together with all three.
const ROUNDS = 3;
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
    `[${mode}] compiler compiling itself: ${(bc.compileInstructions / 1e6).toFixed(1)} M instructions; median ${median(mips).toFixed(1)} M instructions/s (runs: ${mips.map((m) => m.toFixed(1)).join(', ')})`,
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
      mipsRuns: mips,
      mips: median(mips),
    },
  };
}
// Three starts: the first one may fill Node's compile cache (runner.ts), later ones read it.
const wbs: { wallMs: number; workerCpuMs: number }[] = [];
for (let k = 0; k < 3; k++) wbs.push(await workerBoot());
console.log(
  `boot in a worker thread (start to Oberon.Loop), 3 starts: ${wbs.map((w) => `${w.wallMs.toFixed(0)} ms wall / ${w.workerCpuMs.toFixed(0)} ms worker CPU`).join(', ')}`,
);
results.workerBootWallMs = Math.min(...wbs.map((w) => w.wallMs));
results.workerBoot = wbs;
const idle: unknown[] = [];
for (const n of quick ? [1, 4] : [1, 4, 8, 16]) {
  const r = await idleCpu(n);
  console.log(
    `idle, ${n} machine(s): ${r.cpuPercentPerMachine.toFixed(2)} % of a core per machine, ${Math.round(r.instructionsPerSecondPerMachine)} instructions/s each (all booted in ${r.bootMs.toFixed(0)} ms)`,
  );
  idle.push(r);
}
results.idle = idle;
results.date = new Date().toISOString();
results.loadAverage = os.loadavg();
const out = path.resolve(import.meta.dirname, '../results/machine.json');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${out}`);
