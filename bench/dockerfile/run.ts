// The root Dockerfile built by buildah (hack/build-dockerfile.sh, the set-up step): cold, again with
// nothing changed, and warm after a change in operator/, in operator/src/machine and in package-lock.json.
// Each build runs on a fresh clone of HEAD with a cache of its own (nothing shared is touched) and is
// measured in wall seconds and CPU seconds (every process it ran: this process's waited-for children),
// with the build's steps that came from the layer cache and those that ran. It fails when the cache
// does not behave as the Dockerfile says: a source change reruns only `COPY operator` and the bake of
// the operator's compile cache (its stage's COPY operator and RUN, the runtime's COPY of it), a change
// in operator/src/machine reruns the disks stage, a changed lock reruns `npm ci`.
// Writes bench/results/dockerfile.json. Needs root (buildah). Run:
//   node_modules/.bin/node bench/dockerfile/run.ts
import { execFileSync, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { findBaseImage } from '../../operator/src/machine/base-image.ts';
import { REPO, startRecording, writeResults } from '../results.ts';

const record = startRecording();

const LIMITS = {
  buildTimeoutMs: 3_600_000, // a cold build on a loaded 2-core machine: minutes, never an hour
  stepChars: 90, // a step's text in the results, shortened
} as const;

if (process.getuid?.() !== 0) {
  process.stderr.write('bench/dockerfile: needs root (buildah mounts its layers); run as root\n');
  process.exit(1);
}

const WORK = join(REPO, '.cache/bench-dockerfile');
const STORE = join(WORK, 'cache/retrokube/image-work/buildah');
/** Removes the work folder; first buildah's working containers, whose layers may be mounted there. */
function clean(): void {
  if (existsSync(join(STORE, 'store')))
    spawnSync('buildah', ['--root', join(STORE, 'store'), '--runroot', join(STORE, 'run'), 'rm', '--all'], {
      stdio: 'ignore',
    });
  rmSync(WORK, { recursive: true, force: true });
}
clean();
// Each build's whole output, kept after the run (the work folder goes).
const LOGS = join(REPO, '.cache/bench-dockerfile-logs');
mkdirSync(LOGS, { recursive: true });
mkdirSync(WORK, { recursive: true });
const clone = join(WORK, 'repo');
execFileSync('git', ['clone', '--quiet', '--shared', REPO, clone]);
symlinkSync(realpathSync(join(REPO, 'node_modules')), join(clone, 'node_modules'));
const env = {
  ...process.env,
  XDG_CACHE_HOME: join(WORK, 'cache'), // an empty cache: the first build is cold
  RETROKUBE_OBERON_BASE: (await findBaseImage()).path, // the base disk the build serves on loopback
};
const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** CPU seconds of this process's children that have been waited for (and theirs), from /proc. */
function childCpuS(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields 3.. of proc(5)
  return (Number(fields[13]) + Number(fields[14])) / ticks; // cutime, cstime
}

interface Step {
  step: string;
  cached: boolean;
}
interface Build {
  name: string;
  change: string;
  wallS: number;
  cpuS: number;
  /** hack/build-dockerfile.sh found the archive of this key and built nothing. */
  archiveCached: boolean;
  /** RUN and COPY steps, in order, and whether buildah took each from its layer cache. */
  steps: Step[];
  archiveMiB: number;
  storeMiB: number;
}

/**
 * buildah's output: "[2/3] STEP 4/7: COPY ..." then "--> Using cache <id>" when cached, and "--> <id>"
 * once the step is done. A step that needs a stage not built yet waits for it, and that stage's steps
 * come in between (a COPY --from=disks, then the disks stage's steps, then the COPY's own lines):
 * each "-->" line belongs to the latest step still waiting for its result (FROM prints none).
 */
function stepsOf(log: string): Step[] {
  const out: Step[] = [];
  const waiting: Step[] = [];
  for (const l of log.split('\n')) {
    const m = /^\[\d+\/\d+\] STEP \d+\/\d+: ((\S+) .*)$/.exec(l);
    if (m) {
      if (m[2] === 'FROM') continue;
      const s = { step: m[1].slice(0, LIMITS.stepChars), cached: false };
      waiting.push(s);
      if (m[2] === 'RUN' || m[2] === 'COPY') out.push(s);
    } else if (l.startsWith('--> Using cache')) {
      const s = waiting.at(-1);
      if (s) s.cached = true;
    } else if (/^--> [0-9a-f]+$/.test(l)) waiting.pop();
  }
  return out;
}

const mib = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10;
const duMiB = (dir: string) => Number(execFileSync('du', ['-sm', dir], { encoding: 'utf8' }).split('\t')[0]);

function build(name: string, change: string): Build {
  const wall0 = performance.now();
  const cpu0 = childCpuS();
  const r = spawnSync('bash', [join(clone, 'hack/build-dockerfile.sh')], {
    cwd: clone,
    env,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: LIMITS.buildTimeoutMs,
  });
  const wallS = (performance.now() - wall0) / 1000;
  const cpuS = childCpuS() - cpu0;
  const log = `${r.stdout}\n${r.stderr}`;
  writeFileSync(join(LOGS, `${name}.log`), log);
  if (r.status !== 0) {
    process.stderr.write(
      `${log.slice(-4000)}\nbench/dockerfile: the ${name} build failed (exit ${r.status})\n`,
    );
    clean();
    process.exit(1);
  }
  const archive = r.stdout.trim().split('\n').pop() ?? '';
  const b: Build = {
    name,
    change,
    wallS: Math.round(wallS * 10) / 10,
    cpuS: Math.round(cpuS * 10) / 10,
    archiveCached: /^\[build-dockerfile [^\]]*\] cached/m.test(r.stderr),
    steps: stepsOf(r.stderr),
    archiveMiB: mib(statSync(archive).size),
    storeMiB: duMiB(join(STORE, 'store')),
  };
  const ran = b.steps.filter((s) => !s.cached).map((s) => s.step.split(' ').slice(0, 2).join(' '));
  process.stdout.write(
    `${name}: ${b.wallS} s wall, ${b.cpuS} s CPU; ${b.archiveCached ? 'archive cached' : `ran: ${ran.join(', ') || 'nothing'}`}\n`,
  );
  return b;
}

const problems: string[] = [];
const ranSteps = (b: Build) => b.steps.filter((s) => !s.cached).map((s) => s.step);
/** Each of `must` matches a step that ran, none of `mustNot` does. */
function expectRan(b: Build, must: RegExp[], mustNot: RegExp[]): void {
  const ran = ranSteps(b);
  for (const w of must) if (!ran.some((s) => w.test(s))) problems.push(`${b.name}: ${w} did not run`);
  for (const w of mustNot) if (ran.some((s) => w.test(s))) problems.push(`${b.name}: ${w} ran, not cached`);
}
const DEPS = /^RUN npm ci /;
const DISKS = /^RUN .*RETROKUBE_OBERON_BASE_URL=/;
const SOURCES = /^COPY operator \.\/operator$/;
const BAKE = /^RUN node operator\/bin\/bake-compile-cache\.js /;
const BAKED = /^COPY --from=compile-cache /;

const builds: Build[] = [];
const cold = build('cold', 'none: an empty cache (the base image, npm ci, the disks, every layer)');
builds.push(cold);
if (cold.steps.some((s) => s.cached)) problems.push('cold: a step came from a cache that should be empty');

const again = build('unchanged', 'none: the same sources again');
builds.push(again);
if (!again.archiveCached) problems.push('unchanged: the archive was built again');

appendFileSync(join(clone, 'operator/src/version.ts'), '\n// bench/dockerfile: a source change\n');
const source = build('source', 'a line added to operator/src/version.ts');
builds.push(source);
expectRan(source, [SOURCES, BAKE, BAKED], [DEPS, DISKS]);
const more = ranSteps(source).filter((s) => ![SOURCES, BAKE, BAKED].some((w) => w.test(s)));
if (more.length > 0) problems.push(`source: more than COPY operator and the compile cache ran: ${more}`);

appendFileSync(
  join(clone, 'operator/src/machine/palette.ts'),
  '\n// bench/dockerfile: a change in the disk builder\n',
);
const machine = build('machine', 'a line added to operator/src/machine/palette.ts (in the disks stage)');
builds.push(machine);
expectRan(machine, [DISKS, SOURCES], [DEPS, /^COPY --from=deps /, /^COPY package.json /, /^COPY crds /]);

appendFileSync(join(clone, 'package-lock.json'), '\n');
const lock = build('lock', 'a newline added to package-lock.json');
builds.push(lock);
expectRan(lock, [DEPS], []);

clean();
writeResults('dockerfile', { builds, problems }, record);
for (const p of problems) process.stderr.write(`bench/dockerfile: ${p}\n`);
process.exit(problems.length === 0 ? 0 : 1);
