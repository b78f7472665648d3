// The timing file of a CI run (issue #30): `.ci/run` calls this at its end with the phase times it
// measured, the log of `npm test` and vitest's JSON report; it writes .cache/ci/ci-run.json
// (git-ignored): date, CPU model and load, each phase, each set-up step (from its `[setup]` lines),
// each vitest project's wall time (projects run one after another) and the test counts.
// The docs cite CI figures only from a committed copy of such a file (bench/results/ci.json,
// `cp .cache/ci/ci-run.json bench/results/ci.json`), through the markers of bench/doc-figures.ts.
//
//   node .ci/timings.ts --log LOG --vitest JSON --phase npm-ci=14 --phase npm-test=2224 --exit 0 --load-start 1.2
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

export interface VitestReport {
  numPassedTests?: number;
  numFailedTests?: number;
  numPendingTests?: number;
  numTodoTests?: number;
  numTotalTests?: number;
  testResults?: { name: string; startTime: number; endTime: number }[];
}

/** The vitest project of a test file, by the include patterns of vitest.config.ts. */
export function projectOf(file: string): string {
  if (/\.host\.test\.ts$/.test(file)) return 'host';
  if (/\/test\/cluster\/nodes\.test\.ts$/.test(file)) return 'nodes';
  const m = /\/test\/(envtest|qemu|e2e|cluster|browser)\//.exec(file);
  return m ? m[1] : 'unit';
}

/** Wall seconds per project: from its first file's start to its last file's end. */
export function projectSeconds(report: VitestReport): Record<string, number> {
  const spans = new Map<string, { start: number; end: number }>();
  for (const r of report.testResults ?? []) {
    const p = projectOf(r.name);
    const s = spans.get(p) ?? { start: r.startTime, end: r.endTime };
    spans.set(p, { start: Math.min(s.start, r.startTime), end: Math.max(s.end, r.endTime) });
  }
  return Object.fromEntries([...spans].map(([p, s]) => [p, Math.round((s.end - s.start) / 100) / 10]));
}

/** `[setup] NAME: ready (0.1 s)` / `done (234.5 s)` / `installed (63.1 s)` lines, as seconds per step. */
export function setupSteps(log: string): Record<string, { seconds: number; state: string }> {
  const out: Record<string, { seconds: number; state: string }> = {};
  for (const m of log.matchAll(
    /^\[setup\] (.+?): (ready|done|installed)(?: \(\d+\))? \((\d+(?:\.\d+)?) s\)$/gm,
  ))
    out[m[1]] = { seconds: Number(m[3]), state: m[2] };
  const all = /^\[setup\] all set in (\d+(?:\.\d+)?) s$/m.exec(log);
  if (all) out.total = { seconds: Number(all[1]), state: 'all set' };
  return out;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      log: { type: 'string' },
      vitest: { type: 'string' },
      phase: { type: 'string', multiple: true, default: [] },
      exit: { type: 'string', default: '' },
      'load-start': { type: 'string', default: '' },
      out: { type: 'string', default: join(import.meta.dirname, '../.cache/ci/ci-run.json') },
    },
  });
  const read = (f: string | undefined): string => {
    try {
      return f ? readFileSync(f, 'utf8') : '';
    } catch {
      return '';
    }
  };
  const log = read(values.log).replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), ''); // colours
  let report: VitestReport = {};
  try {
    report = JSON.parse(read(values.vitest) || '{}') as VitestReport;
  } catch {
    report = {};
  }
  const phases = Object.fromEntries(
    (values.phase ?? []).map((p) => {
      const [k, v] = p.split('=');
      return [k, Number(v)];
    }),
  );
  const result = {
    recorded: {
      date: new Date().toISOString(),
      cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
      cpus: os.availableParallelism(),
      // The load at the end only: a CI run is long; the per-project times carry the rest.
      loadAverage1m: {
        start: Math.round(os.loadavg()[2] * 100) / 100,
        end: Math.round(os.loadavg()[0] * 100) / 100,
      },
      loadNote: 'start is the 15-min load average at the end of the run, end the 1-min one',
      node: process.versions.node,
    },
    exitCode: values.exit === '' ? null : Number(values.exit),
    phasesSeconds: phases,
    setupSteps: setupSteps(log),
    projectsSeconds: projectSeconds(report),
    tests: {
      passed: report.numPassedTests ?? null,
      failed: report.numFailedTests ?? null,
      skipped: report.numPendingTests ?? null,
      todo: report.numTodoTests ?? null,
      total: report.numTotalTests ?? null,
    },
  };
  mkdirSync(dirname(values.out ?? ''), { recursive: true });
  writeFileSync(values.out ?? '', `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`timings: ${values.out} (cite them by committing a copy as bench/results/ci.json)\n`);
}

if (process.argv[1] === import.meta.filename) main();
