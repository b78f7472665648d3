// Where a benchmark writes its JSON, and the host record every results file carries.
// By default a run writes to .cache/bench-results/ (git-ignored), so running a benchmark never
// changes a tracked file; `--save` (or RETROKUBE_BENCH_SAVE=1, which `npm run bench -- X --save`
// sets) writes to bench/results/, the files the docs' figures are generated from
// (`npm run docs:figures`, checked by test/unit/doc-figures.test.ts).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The committed results, cited by the docs. */
export const SAVED_DIR = join(REPO, 'bench/results');
/** Where runs without --save write (git-ignored through `.cache/`). */
export const SCRATCH_DIR = join(REPO, '.cache/bench-results');

/** When and where a figure was measured: what every doc figure states beside it. */
export interface Recorded {
  /** ISO 8601, the end of the run. */
  date: string;
  /** os.cpus()[0].model, e.g. "AMD EPYC 7B13". */
  cpuModel: string;
  cpus: number;
  /** 1-minute load average at the start and at the end of the run. */
  loadAverage1m: { start: number; end: number };
  node: string;
}

export function saving(argv = process.argv, env = process.env): boolean {
  return argv.includes('--save') || env.RETROKUBE_BENCH_SAVE === '1';
}

/** The file a benchmark named `name` writes (results of a run without --save go to scratch). */
export function resultsPath(name: string, save = saving()): string {
  return join(save ? SAVED_DIR : SCRATCH_DIR, `${name}.json`);
}

/** The committed results file of `name`, or null when none was saved (for benches that keep a part of it). */
export function readSaved(name: string): Record<string, unknown> | null {
  try {
    return JSON.parse(readFileSync(join(SAVED_DIR, `${name}.json`), 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Call at the start of a run: the load then is half of the record. */
export function startRecording(): () => Recorded {
  const start = os.loadavg()[0];
  return () => ({
    date: new Date().toISOString(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    cpus: os.availableParallelism(),
    loadAverage1m: { start: round2(start), end: round2(os.loadavg()[0]) },
    node: process.versions.node,
  });
}

/**
 * Writes `{ recorded, ...data }` to the benchmark's results file and says where (and, without
 * --save, how to keep it). Returns the path.
 */
export function writeResults(name: string, data: object, record: () => Recorded, save = saving()): string {
  const out = resultsPath(name, save);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ recorded: record(), ...data }, null, 2)}\n`);
  process.stdout.write(
    save
      ? `wrote ${out}; regenerate the docs' figures: npm run docs:figures\n`
      : `wrote ${out} (not tracked; add --save to write bench/results/${name}.json, the file the docs cite)\n`,
  );
  return out;
}
