// Where a compile of the compiler runs in the interpreter rather than in translated code: ORP
// compiles itself ROUNDS times in one process (a new machine each, as run.ts's warm rounds), and
// in the last round every interpreter run that runMixed starts (cpu.ts: after translated code
// led to untranslated code) is counted by the block start it began at, with its instructions and
// the time spent in it. Starts are grouped by how often that machine entered them by the end
// (cpu-blocks.ts `hits`: below LIMITS.knownBlock, below the machine's hotBlock, or translated by then).
// With RETROKUBE_JIT_HINTS=<folder> (filled by an earlier run) the first round is the compile of
// a fresh process with hints. Prints, and writes machine-census.json (scratch unless --save).
//
// Run: node bench/machine/census.ts [--rounds N] [--top N]
import fs from 'node:fs';
import { Risc5 } from '../../operator/src/machine/cpu.ts';
import { LIMITS as JIT } from '../../operator/src/machine/jit.ts';
import { Machine } from '../../operator/src/machine/machine.ts';
import { setUpNodeMachines } from '../../operator/src/machine/node-setup.ts';
import { BASE_IMAGE } from '../../operator/src/machine/test-disk.ts';
import { startRecording, writeResults } from '../results.ts';

const flag = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const ROUNDS = flag('--rounds', 3);
const TOP = flag('--top', 15);
process.env.RETROKUBE_BOOT_IMAGES = 'off';
process.env.RETROKUBE_JIT_HINTS ??= 'off';
setUpNodeMachines();
const record = startRecording();
const results: Record<string, unknown> = { rounds: ROUNDS, hints: process.env.RETROKUBE_JIT_HINTS };

interface Start {
  runs: number;
  instructions: number;
}
let census: Map<number, Start> | null = null;
let interpretMs = 0;
// Wrapped on the prototype: runMixed calls this.interpret, so every interpreter run passes here.
const interpret = Risc5.prototype.interpret;
Risc5.prototype.interpret = function (this: Risc5, n: number, toHot = false): number {
  if (census === null || !toHot) return interpret.call(this, n, toHot);
  const pc = this.pc;
  const t0 = performance.now();
  const ran = interpret.call(this, n, toHot);
  interpretMs += performance.now() - t0;
  const s = census.get(pc) ?? { runs: 0, instructions: 0 };
  s.runs++;
  s.instructions += ran;
  census.set(pc, s);
  return ran;
};

/** The CPU's block bookkeeping (private to cpu.ts; read here for the diagnosis only). */
function blocksOf(cpu: Risc5): { hits: Uint16Array; slotOf: Int32Array } {
  return (cpu as unknown as { blocks: { hits: Uint16Array; slotOf: Int32Array } }).blocks;
}

const disk = fs.readFileSync(BASE_IMAGE);
for (let round = 1; round <= ROUNDS; round++) {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit: true });
  m.runUntil(() => m.booted, { maxInstructions: 20e6 });
  m.runCommand('ORP.Compile ORS.Mod ORB.Mod ORG.Mod ORP.Mod ~');
  const last = round === ROUNDS;
  if (last) census = new Map();
  const i0 = m.cpu.instructions;
  const u0 = process.cpuUsage();
  if (!m.runUntilIdle(500e6)) throw new Error('the compile did not finish');
  const u = process.cpuUsage(u0);
  const total = m.cpu.instructions - i0;
  console.log(
    `round ${round}: ${(total / 1e6).toFixed(1)} M instructions, ${((u.user + u.system) / 1000).toFixed(0)} ms CPU${last ? ' (counting, which slows it)' : ''}, ${m.cpu.translations} translations`,
  );
  if (!last || census === null) continue;
  const { hits, slotOf } = blocksOf(m.cpu);
  const groups = new Map<string, Start & { starts: number }>();
  let runs = 0;
  let interpreted = 0;
  for (const [pc, s] of census) {
    runs += s.runs;
    interpreted += s.instructions;
    const h = hits[pc];
    const group = slotOf[pc] !== 0 ? 'translatedByEnd' : h < JIT.knownBlock ? 'belowKnown' : 'belowHot';
    const g = groups.get(group) ?? { starts: 0, runs: 0, instructions: 0 };
    g.starts++;
    g.runs += s.runs;
    g.instructions += s.instructions;
    groups.set(group, g);
  }
  console.log(
    `interpreted: ${(interpreted / 1e6).toFixed(2)} M of ${(total / 1e6).toFixed(1)} M instructions (${((interpreted / total) * 100).toFixed(1)} %) in ${runs} runs from ${census.size} starts, ${(interpreted / runs).toFixed(1)} instructions a run; ${interpretMs.toFixed(0)} ms in the interpreter`,
  );
  results.lastRound = {
    instructions: total,
    cpuMs: (u.user + u.system) / 1000,
    interpreted,
    runs,
    starts: census.size,
    instructionsPerRun: interpreted / runs,
    hotBlock: m.cpu.hotBlock,
    interpreterMs: interpretMs,
    nsPerInterpretedInstruction: (interpretMs * 1e6) / interpreted,
    groups: Object.fromEntries(groups),
  };
  const names: Record<string, string> = {
    belowKnown: `entered < ${JIT.knownBlock} times`,
    belowHot: `entered ${JIT.knownBlock}–${m.cpu.hotBlock - 1} times`, // jit.ts defaultHotBlock: lower in a long-lived thread
    translatedByEnd: 'translated by the end',
  };
  for (const [group, g] of groups)
    console.log(
      `  ${names[group]}: ${g.starts} starts, ${g.runs} runs, ${(g.instructions / 1e6).toFixed(2)} M instructions`,
    );
  console.log(
    `the ${TOP} starts with the most interpreted instructions (word address: runs, instructions, entries):`,
  );
  for (const [pc, s] of [...census].sort((a, b) => b[1].instructions - a[1].instructions).slice(0, TOP))
    console.log(`  ${pc.toString(16).padStart(5, '0')}H: ${s.runs}, ${s.instructions}, ${hits[pc]}`);
}
writeResults('machine-census', results, record);
