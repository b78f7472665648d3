// `npm run bench`: the benchmarks under bench/, each a folder with a run.ts that prints its figures
// and writes JSON (bench/results.ts): to .cache/bench-results/ (git-ignored) by default, to
// bench/results/ — the files the docs' figures come from — only with --save. With no name, lists
// them (the first lines of each run.ts say what it measures); with names, runs those one after
// another (the machine is shared: never in parallel), passing any further flags on.
// `npm run bench -- all` runs every one.
//   npm run bench                        # list
//   npm run bench -- air disk            # run two; results in .cache/bench-results/
//   npm run bench -- machine --quick
//   npm run bench -- air --save          # write bench/results/air.json, then: npm run docs:figures
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = dirname(fileURLToPath(import.meta.url));

export interface Benchmark {
  name: string;
  file: string;
  /** The opening comment of its run.ts, as one line. */
  about: string;
}

export function listBenchmarks(dir = BENCH): Benchmark[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(dir, d.name, 'run.ts')))
    .map((d) => {
      const file = join(dir, d.name, 'run.ts');
      const about = readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('//'))
        .slice(0, 2)
        .map((l) => l.replace(/^\/\/\s?/, '').trim())
        .join(' ');
      return { name: d.name, file, about };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

function main(argv: string[]): number {
  const all = listBenchmarks();
  const names = argv.filter((a) => !a.startsWith('-'));
  const save = argv.includes('--save');
  const flags = argv.filter((a) => a.startsWith('-') && a !== '--save');
  if (names.length === 0) {
    process.stdout.write('benchmarks (npm run bench -- NAME... [flags]; "all" runs every one):\n');
    for (const b of all) process.stdout.write(`  ${b.name.padEnd(13)} ${b.about}\n`);
    return 0;
  }
  const chosen = names.includes('all') ? all : names.map((n) => all.find((b) => b.name === n) ?? n);
  const unknown = chosen.filter((b): b is string => typeof b === 'string');
  if (unknown.length > 0) {
    process.stderr.write(
      `no benchmark named ${unknown.join(', ')}; choose from ${all.map((b) => b.name).join(', ')} (or all)\n`,
    );
    return 2;
  }
  for (const b of chosen as Benchmark[]) {
    process.stdout.write(`\n== bench/${b.name}\n`);
    const r = spawnSync(process.execPath, [b.file, ...flags], {
      stdio: 'inherit',
      env: { ...process.env, RETROKUBE_BENCH_SAVE: save ? '1' : '0' },
    });
    if (r.status !== 0) {
      process.stderr.write(`bench/${b.name} failed (exit ${r.status ?? r.signal})\n`);
      return r.status ?? 1;
    }
  }
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = main(process.argv.slice(2));
