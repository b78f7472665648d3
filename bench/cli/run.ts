// Benchmark of the CLI's start: how long a verb takes to its first output, beside a bare `node -e 0`
// started in the same run (interleaved rounds, medians). Real processes through the `retrokube` launcher.
// Writes cli.json (bench/results.ts).
//
// Each round starts every case once, in turn, so load changes hit all alike. A case's figures: wall
// time from spawn to its first byte on stdout or stderr, wall time to exit, and the CPU the child used
// (the bench's own children's CPU from /proc/self/stat, read before and after: 10-ms ticks, so the
// median over the rounds is what counts). One unmeasured start of each case first warms Node's
// compile cache, as a person's second command finds it.
//
// With --baseline DIR (another checkout with node_modules, e.g. main's: `git archive main | tar -x -C
// DIR`), the same verbs run through DIR's launcher in the same rounds: before and after, same load.
//
//   node_modules/.bin/node bench/cli/run.ts [--rounds 15] [--baseline DIR] [--save]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join, resolve } from 'node:path';
import { REPO, startRecording, writeResults } from '../results.ts';

const record = startRecording();

const BENCH = {
  /** Rounds of every case: medians of 15 hold under a load of 5-20 on 2 cores. */
  ROUNDS: 15,
  /** The goal of issue #32: any verb's first output within this many bare Node starts. */
  GOAL_RATIO: 4,
} as const;

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const ROUNDS = Number(arg('--rounds') ?? BENCH.ROUNDS);
const baseline = arg('--baseline');

// A closed port on loopback: the verbs that talk to a server fail fast with their real error path.
const closedPort = await new Promise<number>((res) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as net.AddressInfo;
    s.close(() => res(port));
  });
});
const dead = `http://127.0.0.1:${closedPort}`;

/** The verbs measured: what a person types first, a status probe, a `skctl` and a `bridge` call. */
const VERBS: Record<string, string[]> = {
  help: ['--help'],
  version: ['--version'],
  status: ['status', '--state', join(REPO, '.cache/bench-cli-no-state')],
  skctl: ['skctl', '--server', dead, 'get', 'nodes'],
  bridge: ['sheets', 'bridge', 'status', '--local', dead, '--peer', dead],
  airHelp: ['air', 'relay', '--help'],
};

interface Case {
  name: string;
  cmd: string;
  args: string[];
}
const nodeBin = join(REPO, 'node_modules/node/bin/node');
const cases: Case[] = [{ name: 'bare node -e 0', cmd: nodeBin, args: ['-e', '0'] }];
const checkouts: [string, string][] = [['', REPO]];
if (baseline) checkouts.push(['baseline ', resolve(baseline)]);
for (const [label, dir] of checkouts) {
  for (const [verb, args] of Object.entries(VERBS)) {
    cases.push({ name: `${label}${verb}`, cmd: join(dir, 'retrokube'), args });
  }
}

const TICK_MS = 10; // USER_HZ is 100 on Linux
function childrenCpuMs(): number {
  // /proc/self/stat: fields after the ")" — cutime and cstime are the 14th and 15th of them.
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * TICK_MS;
}

interface Sample {
  firstOutputMs: number;
  exitMs: number;
  cpuMs: number;
  code: number | null;
}
function once(c: Case): Promise<Sample> {
  return new Promise((res, rej) => {
    const cpu0 = childrenCpuMs();
    const t0 = process.hrtime.bigint();
    let first = Number.NaN;
    const child = spawn(c.cmd, c.args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO });
    const mark = () => {
      if (Number.isNaN(first)) first = Number(process.hrtime.bigint() - t0) / 1e6;
    };
    child.stdout.on('data', mark);
    child.stderr.on('data', mark);
    child.on('error', rej);
    child.on('close', (code) => {
      const exitMs = Number(process.hrtime.bigint() - t0) / 1e6;
      res({
        firstOutputMs: Number.isNaN(first) ? exitMs : first,
        exitMs,
        cpuMs: childrenCpuMs() - cpu0,
        code,
      });
    });
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

for (const c of cases) await once(c); // warm the compile cache (and the page cache)
const samples = new Map<string, Sample[]>(cases.map((c) => [c.name, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const c of cases) samples.get(c.name)?.push(await once(c));
  process.stdout.write(`round ${r + 1}/${ROUNDS}\r`);
}
process.stdout.write('\n');

const bareMs = median((samples.get(cases[0].name) ?? []).map((s) => s.firstOutputMs));
const rows = cases.map((c) => {
  const s = samples.get(c.name) ?? [];
  const firstOutputMs = median(s.map((x) => x.firstOutputMs));
  return {
    name: c.name,
    argv: c.name === cases[0].name ? ['node', ...c.args] : ['retrokube', ...c.args],
    firstOutputMs: Math.round(firstOutputMs),
    exitMs: Math.round(median(s.map((x) => x.exitMs))),
    cpuMs: Math.round(median(s.map((x) => x.cpuMs))),
    /** First output over the bare Node start (the exit, for the bare start, which prints nothing). */
    ratioToBare: Number((firstOutputMs / bareMs).toFixed(1)),
    exitCodes: [...new Set(s.map((x) => x.code))],
  };
});
const verbRows = rows.filter((r) => r.name !== cases[0].name && !r.name.startsWith('baseline '));
const result = {
  benchmark: 'cli',
  rounds: ROUNDS,
  goalRatio: BENCH.GOAL_RATIO,
  bareNodeMs: Math.round(bareMs),
  /** The slowest verb's first output over the bare start. */
  worstRatio: Math.max(...verbRows.map((r) => r.ratioToBare)),
  byVerb: Object.fromEntries(rows.map((r) => [r.name.replace(/ /g, '_'), r])),
  rows,
};
for (const r of rows) {
  console.log(
    `${r.name.padEnd(22)} first output ${String(r.firstOutputMs).padStart(5)} ms (${r.ratioToBare}× bare)  exit ${String(r.exitMs).padStart(5)} ms  CPU ${String(r.cpuMs).padStart(4)} ms`,
  );
}
console.log(
  `worst verb: ${result.worstRatio}× a bare Node start (goal ≤ ${BENCH.GOAL_RATIO}×; bare ${result.bareNodeMs} ms)`,
);
writeResults('cli', result, record);
