// Two checkouts of the machine's code side by side, in one run: A (say, main) against B (a branch),
// round by round interleaved (the order alternating), so both see the same host load — on this
// shared 2-core host, figures from separate runs differ by more than most changes do. Per round
// and side: ORP compiling itself as the first compile of a fresh process with that side's hints
// (its own folder, filled by one run first: the README's "fresh with hints"), and a process that
// runs run.ts's tight loop (past jit.ts LIMITS.longLived) then compiles --warm-rounds times
// (LIMITS.warmRounds), a new machine each (the README's warm rounds; the first is the process's
// first compile); and, with --c-baseline DIR, the C emulator once per round. "Warm" is the steady
// state, the compiles from LIMITS.steadyFrom on of every warm process (run.ts STEADY_FROM says
// why). Prints medians and ratios; writes machine-ab.json (scratch unless --save).
//
// Run: node bench/machine/ab.ts A_DIR B_DIR [--rounds N] [--warm-rounds N] [--c-baseline DIR]
// A_DIR/B_DIR: checkouts with node_modules (e.g. `git archive main | tar -x -C /tmp/a` and a
// symlink to this one's node_modules). Each side runs its own bench/machine/run.ts and code.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BASE_IMAGE } from '../../operator/src/machine/test-disk.ts';
import { startRecording, writeResults } from '../results.ts';
import { buildCDriver, recordCommand, runCDriver } from './c-baseline.ts';
import { TIGHT_LOOP } from './tight-loop.ts';

const LIMITS = {
  rounds: 5, // rounds by default: a median of 5 per side
  warmRounds: 5, // compiles in the warm process (run.ts's ROUNDS)
  steadyFrom: 3, // ...of which the steady state ("warm", run.ts STEADY_FROM): from the third on
} as const;

const COMPILE = 'ORP.Compile ORS.Mod ORB.Mod ORG.Mod ORP.Mod ~';

/**
 * The warm child: the tight loop, then `rounds` boots + compiles, with the code of the
 * checkout `dir`; prints {mips, helperMs}. Its modules are imported from there (typed as this
 * checkout's: the two sides share their interfaces).
 */
async function warmChild(dir: string, rounds: number): Promise<void> {
  process.env.RETROKUBE_BOOT_IMAGES = 'off';
  process.env.RETROKUBE_JIT_HINTS = 'off';
  const from = (file: string) => pathToFileURL(path.join(dir, 'operator/src/machine', file)).href;
  const { assemble } = (await import(from('asm.ts'))) as typeof import('../../operator/src/machine/asm.ts');
  const { Risc5 } = (await import(from('cpu.ts'))) as typeof import('../../operator/src/machine/cpu.ts');
  const { Machine } = (await import(
    from('machine.ts')
  )) as typeof import('../../operator/src/machine/machine.ts');
  const { setUpNodeMachines } = (await import(
    from('node-setup.ts')
  )) as typeof import('../../operator/src/machine/node-setup.ts');
  setUpNodeMachines();
  const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
  // run.ts's tight loop, as many instructions as its --quick run: the thread is then long-lived.
  const prog = assemble(TIGHT_LOOP);
  const cpu = new Risc5(0x100000, 0xe7f00, { ioRead: () => 0, ioWrite: () => {}, voidFetch: () => {} });
  cpu.mem.set(prog.words);
  cpu.pc = 0;
  cpu.run(120_000_000);
  const disk = fs.readFileSync(BASE_IMAGE);
  const mips: number[] = [];
  const helperMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit: true });
    m.runUntil(() => m.booted, { maxInstructions: 20e6 });
    m.runCommand(COMPILE);
    const i0 = m.cpu.instructions;
    const p0 = process.cpuUsage();
    const t0 = process.threadCpuUsage();
    if (!m.runUntilIdle(500e6)) throw new Error('the compile did not finish');
    const ms = cpuMs(process.cpuUsage(p0));
    helperMs.push(ms - cpuMs(process.threadCpuUsage(t0)));
    mips.push((m.cpu.instructions - i0) / ms / 1000);
  }
  console.log(JSON.stringify({ mips, helperMs }));
}

const warmArg = process.argv.indexOf('--warm-child');
if (warmArg >= 0) {
  await warmChild(process.argv[warmArg + 1] ?? '', Number(process.argv[warmArg + 2] ?? LIMITS.warmRounds));
  process.exit(0);
}

const [dirA, dirB] = process.argv.slice(2, 4).map((d) => path.resolve(d ?? ''));
for (const d of [dirA, dirB])
  if (!fs.existsSync(path.join(d, 'bench/machine/run.ts')))
    throw new Error(
      `usage: ab.ts A_DIR B_DIR [--rounds N] [--warm-rounds N] [--c-baseline DIR] (${d}: no bench/machine/run.ts)`,
    );
const flag = (name: string) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const rounds = Number(flag('--rounds') ?? LIMITS.rounds);
const warmRounds = Number(flag('--warm-rounds') ?? LIMITS.warmRounds);
const cDir = flag('--c-baseline');
const record = startRecording();
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-bench-ab-'));
const node = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
  execFileSync(process.execPath, args, { encoding: 'utf8', env }).trim().split('\n').pop() ?? '{}';

/** The first compile of a fresh process (run.ts --cold-compile) with the side's hints folder. */
const fresh = (dir: string, hints: string): { compileMips: number; bootMsCold: number } =>
  JSON.parse(
    node([path.join(dir, 'bench/machine/run.ts'), '--cold-compile', 'on'], {
      ...process.env,
      RETROKUBE_JIT_HINTS: hints,
      RETROKUBE_BOOT_IMAGES: 'off',
    }),
  );
/** This file's warm child with the side's code. */
const warm = (dir: string): { mips: number[]; helperMs: number[] } =>
  JSON.parse(node([import.meta.filename, '--warm-child', dir, String(warmRounds)]));

const sides = [
  { key: 'A', dir: dirA, hints: path.join(root, 'A') },
  { key: 'B', dir: dirB, hints: path.join(root, 'B') },
] as const;
const cDriver = cDir === undefined ? null : buildCDriver(cDir);
const cInput = cDriver === null ? null : recordCommand(fs.readFileSync(BASE_IMAGE), COMPILE);
for (const s of sides) fresh(s.dir, s.hints); // fills the side's hints, as run.ts does
type Side = { fresh: number[]; bootMs: number[]; warm: number[][]; warmHelperMs: number[][] };
const out: Record<'A' | 'B', Side> = {
  A: { fresh: [], bootMs: [], warm: [], warmHelperMs: [] },
  B: { fresh: [], bootMs: [], warm: [], warmHelperMs: [] },
};
const c: number[] = [];
try {
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
      const f = fresh(s.dir, s.hints);
      out[s.key].fresh.push(f.compileMips);
      out[s.key].bootMs.push(f.bootMsCold);
      const w = warm(s.dir);
      out[s.key].warm.push(w.mips);
      out[s.key].warmHelperMs.push(w.helperMs);
    }
    if (cDriver !== null && cInput !== null)
      c.push(runCDriver(cDriver, fs.readFileSync(BASE_IMAGE), cInput.events, cInput.diskAfter).compileMips);
    const fmt = (s: Side) =>
      `fresh ${s.fresh.at(-1)?.toFixed(0)}, warm ${s.warm
        .at(-1)
        ?.map((x) => x.toFixed(0))
        .join('/')}`;
    console.log(
      `round ${r + 1}: A ${fmt(out.A)} | B ${fmt(out.B)}${c.length > 0 ? ` | C ${c.at(-1)?.toFixed(0)}` : ''} (load ${os.loadavg()[0].toFixed(1)})`,
    );
  }
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const cMedian = c.length > 0 ? median(c) : null;
const summary: Record<string, unknown> = {
  a: dirA,
  b: dirB,
  rounds,
  warmRounds,
  c: cMedian === null ? null : { runs: c, median: cMedian },
};
for (const s of sides) {
  const o = out[s.key];
  const warmByRound = Array.from({ length: warmRounds }, (_, k) => median(o.warm.map((w) => w[k])));
  const steady = o.warm.flatMap((w) => w.slice(LIMITS.steadyFrom - 1));
  const warmSteady = steady.length > 0 ? median(steady) : null;
  const ratio = (x: number) => (cMedian === null ? '' : ` (${(x / cMedian).toFixed(2)}x C)`);
  console.log(
    `${s.key}: fresh with hints, median ${median(o.fresh).toFixed(0)} M instructions/s${ratio(median(o.fresh))}; warm rounds, medians ${warmByRound.map((w) => `${w.toFixed(0)}${ratio(w)}`).join(' / ')}; warm steady state (compiles ${LIMITS.steadyFrom}–${warmRounds}), median ${warmSteady === null ? '-' : `${warmSteady.toFixed(0)}${ratio(warmSteady)}`}; boot median ${median(o.bootMs).toFixed(0)} ms CPU`,
  );
  summary[s.key] = {
    ...o,
    freshMedian: median(o.fresh),
    warmMedianByRound: warmByRound,
    warmSteadyMedian: warmSteady,
  };
}
const steadyOf = (k: 'A' | 'B') => (summary[k] as { warmSteadyMedian: number | null }).warmSteadyMedian;
const [steadyA, steadyB] = [steadyOf('A'), steadyOf('B')];
console.log(
  `B over A: fresh ${(median(out.B.fresh) / median(out.A.fresh)).toFixed(2)}x${steadyA !== null && steadyB !== null ? `, warm steady state ${(steadyB / steadyA).toFixed(2)}x` : ''}`,
);
writeResults('machine-ab', summary, record);
