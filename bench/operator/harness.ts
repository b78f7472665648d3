// The shared half of the operator benchmarks: a real kube-apiserver (kine memory://), `retrokube
// operator` as its own process, COUNT objects created with bounded concurrency, polling until a
// bench-specific check says every object is complete, then a quiet period in which the operator
// should write nothing. Figures come from the operator's own /metrics and /proc.
//
// First, the operator's RSS at start (#32's goal: 100 MiB), from --starts interleaved rounds against
// the same API server with no objects: a start is measured once its /readyz answers 200 (the
// controllers run on synced caches), as VmHWM (the peak so far) and VmRSS. Each round starts, in turn,
//   image          node operator/src/cli/main.ts: what the image's ENTRYPOINT runs (Node strips the
//                  types of every module at start: its TypeScript stripper is ~25 MiB of that RSS)
//   compileCache   node operator/bin/retrokube.js: the installed `retrokube` (a checkout's, npm's),
//                  with Node's compile cache warm (one unmeasured start fills it, as a second start finds it)
// and, with --baseline DIR (another checkout with node_modules, e.g. main's: `git archive main | tar
// -x -C DIR`), the same two from DIR: before and after, same API server, same load. When the image
// hack/build-image.sh builds from this checkout exists (or --image ARCHIVE names one), its /app and
// Node are unpacked and two more start in each round, as its pod runs them (the image's ENTRYPOINT,
// WORKDIR and ENV, uid 1000 in a user namespace, the baked compile cache read-only):
//   builtImage         with the compile cache baked into the image (Dockerfile: compile-cache stage)
//   builtImageNoCache  the same image with NODE_DISABLE_COMPILE_CACHE=1
//   node_modules/.bin/node bench/operator/<bench>.ts [--count N] [--starts 3] [--baseline DIR]
//     [--image ARCHIVE | --no-image] [--save]
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CORE, isStatus, KubeClient } from '../../operator/src/runtime/client.ts';
import { freePort, REPO_ROOT, startControlPlane } from '../../test/envtest/control-plane.ts';
import { cacheUse } from '../../test/unit/compile-cache-use.ts';
import { startRecording, writeResults } from '../results.ts';

const LIMITS = {
  pollMs: 250, // convergence polling cadence
  quietMs: 10_000, // idle period after convergence in which we count writes (expect 0)
  starts: 3, // default rounds of the start measurement: RSS at start varies by 1-2 MiB between starts
  startTimeoutMs: 60_000, // an operator whose /metrics does not answer by then failed to start
  stopTimeoutMs: 15_000, // SIGTERM grace (the manager stops its informers and servers) before SIGKILL
  warmSettleMs: 1_000, // after ready, before the warm-up start is stopped (see measureStarts)
} as const;

export interface OperatorBench {
  /** Name in the JSON results; they go to bench/results/<name>.json. */
  name: string;
  namespace: string;
  /** What one object is, for progress lines ("OberonAirs"). */
  objects: string;
  defaultCount: number;
  timeoutMs: number;
  /** The results key of the time until every object is complete. */
  completeKey: string;
  create(k: KubeClient, namespace: string, i: number): Promise<void>;
  /** How many objects are complete now. */
  countComplete(k: KubeClient, namespace: string): Promise<number>;
  /**
   * Optional: how many objects have reached their final state after being complete (e.g. a status
   * that waits out a grace period); the quiet period starts only once all have (settleSeconds).
   */
  countSettled?(k: KubeClient, namespace: string): Promise<number>;
  /** Extra fixed fields of the results. */
  extra?: Record<string, unknown>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function metrics(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

function sum(m: Map<string, number>, prefix: string, filter: (k: string) => boolean = () => true): number {
  let n = 0;
  for (const [k, v] of m) if (k.startsWith(prefix) && filter(k)) n += v;
  return n;
}

const writes = (m: Map<string, number>) =>
  sum(m, 'rest_client_requests_total{', (k) => /method="(POST|PUT|PATCH|DELETE)"/.test(k));
const reconciles = (m: Map<string, number>) => sum(m, 'controller_runtime_reconcile_total{');
const errors = (m: Map<string, number>) => sum(m, 'controller_runtime_reconcile_errors_total');

/** CPU seconds (user + system) the process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** A field of /proc/<pid>/status in MiB (VmHWM: the peak RSS so far; VmRSS: now). */
function statusMiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return kb / 1024;
}
const peakRssMiB = (pid: number) => statusMiB(pid, 'VmHWM');

interface Operator {
  proc: ChildProcess;
  pid: number;
  metricsPort: number;
  /** Its stderr so far, when the variant captures it. */
  stderr: () => string;
}

/** `env` without the variables set to undefined (a variant's way to say "not inherited"). */
const childEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));

/** The image's process: no compile cache, whatever this shell's environment says. */
const NO_COMPILE_CACHE = { NODE_COMPILE_CACHE: undefined } as const;

interface StartVariant {
  name: string;
  /** main.ts or the installed bin (relative to `cwd` when given). */
  entry: string;
  env?: NodeJS.ProcessEnv;
  /** What runs the entry (default: this checkout's Node), e.g. another Node behind `unshare`. */
  command?: string[];
  cwd?: string;
  /** Only the environment given here (an image's), not this shell's. */
  ownEnv?: boolean;
  /** One unmeasured start first fills its compile cache ($XDG_CACHE_HOME/retrokube/compile-cache). */
  warmUp?: boolean;
  /** Keep its stderr (Operator.stderr) rather than pass it through. */
  captureStderr?: boolean;
}

/** `retrokube operator` from `v.entry` (main.ts or the installed bin), once ready (/readyz 200). */
async function startOperator(v: StartVariant, kubeconfig: string, namespace: string): Promise<Operator> {
  const { entry } = v;
  const metricsPort = await freePort();
  const [cmd, ...pre] = v.command ?? [join(REPO_ROOT, 'node_modules/.bin/node')];
  // A captured stderr goes to a file: Node's native debug lines are lost when they meet a full pipe.
  const errFile = v.captureStderr ? join(mkdtempSync(join(tmpdir(), 'rk-bench-stderr-')), 'stderr') : '';
  const errFd = errFile ? openSync(errFile, 'w') : 'inherit';
  const proc = spawn(
    cmd as string,
    [
      ...pre,
      entry,
      'operator',
      ...['--kubeconfig', kubeconfig],
      ...['--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-port', '0'],
      ...['--namespace', namespace],
    ],
    {
      stdio: ['ignore', 'inherit', errFd],
      cwd: v.cwd,
      env: childEnv({ ...(v.ownEnv ? {} : process.env), RETROKUBE_LOG_LEVEL: 'warn', ...v.env }),
    },
  );
  if (typeof errFd === 'number') closeSync(errFd);
  const stderr = () => (errFile ? readFileSync(errFile, 'utf8') : '');
  const t0 = performance.now();
  // Started = ready: /readyz answers 200 once the controllers run on synced caches (their first
  // LISTs done, over TLS), which is later than /metrics, served before the controllers start.
  for (;;) {
    if (proc.exitCode !== null)
      throw new Error(`${entry} operator exited with ${proc.exitCode} before ready`);
    const ok = await fetch(`http://127.0.0.1:${metricsPort}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { proc, pid: proc.pid as number, metricsPort, stderr };
    if (performance.now() - t0 > LIMITS.startTimeoutMs) throw new Error(`${entry}: not ready in time`);
    await sleep(100);
  }
}

/** SIGTERM, then SIGKILL after the grace; resolves once it has exited (a clean exit writes the compile cache). */
async function stopOperator(op: Operator): Promise<void> {
  if (op.proc.exitCode !== null || op.proc.signalCode !== null) return;
  const exited = new Promise((r) => op.proc.once('exit', r));
  op.proc.kill('SIGTERM');
  const timer = setTimeout(() => op.proc.kill('SIGKILL'), LIMITS.stopTimeoutMs);
  await exited;
  clearTimeout(timer);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const mib = (x: number) => +x.toFixed(1);

/** The image's user: the Dockerfile's USER and the chart's runAsUser. */
const IMAGE_USER = '1000:1000';

interface UnpackedImage {
  archive: string;
  /** The variants that run it. */
  variants: StartVariant[];
  /** Entries of its baked compile cache (Node's folder for its version, flags and uid 1000). */
  compileCacheEntries: number;
  compileCacheDir: string;
}

/**
 * The image's /app and Node, unpacked under `dir` (the image's other files are not needed: this
 * host's libraries serve its Node), with the variants that start its operator as its pod does.
 */
function unpackImage(archive: string, dir: string): UnpackedImage {
  execFileSync('tar', ['-xf', archive, '-C', dir, 'index.json', 'blobs']);
  const blob = (digest: string) => join(dir, 'blobs/sha256', digest.replace('sha256:', ''));
  const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0].digest), 'utf8'));
  const config = JSON.parse(readFileSync(blob(manifest.config.digest), 'utf8')).config as {
    Env: string[];
    WorkingDir: string;
    User: string;
    Entrypoint: string[];
  };
  if (manifest.layers.length !== 1) throw new Error(`${archive}: one layer expected (hack/build-image.sh)`);
  if (config.User !== IMAGE_USER) throw new Error(`${archive}: user ${config.User}, expected ${IMAGE_USER}`);
  const root = join(dir, 'root');
  mkdirSync(root);
  const app = config.WorkingDir.replace(/^\//, '');
  // hack/lib-oci.sh's layer names its files ./app/..., ./usr/...
  execFileSync('tar', [
    '-xzf',
    blob(manifest.layers[0].digest),
    '-C',
    root,
    `./${app}`,
    './usr/local/bin/node',
  ]);
  rmSync(join(dir, 'blobs'), { recursive: true, force: true });
  // The ENV as the pod has it, with this tree for the image's WORKDIR.
  const wd = config.WorkingDir.replace(/\/$/, '');
  const env: NodeJS.ProcessEnv = { HOME: '/tmp' };
  for (const pair of config.Env) {
    const i = pair.indexOf('=');
    const v = pair.slice(i + 1);
    env[pair.slice(0, i)] = v === wd || v.startsWith(`${wd}/`) ? join(root, v) : v;
  }
  const cacheDir = env.NODE_COMPILE_CACHE;
  if (!cacheDir || env.NODE_COMPILE_CACHE_PORTABLE !== '1')
    throw new Error(
      `${archive}: no portable NODE_COMPILE_CACHE in its ENV (an image before the baked cache?)`,
    );
  // Read-only, as in the pod: its user cannot write there (nor can it here, in its user namespace).
  const tags = readdirSync(cacheDir);
  const compileCacheEntries = tags.reduce((n, d) => n + readdirSync(join(cacheDir, d)).length, 0);
  for (const d of tags) {
    for (const f of readdirSync(join(cacheDir, d))) chmodSync(join(cacheDir, d, f), 0o444);
    chmodSync(join(cacheDir, d), 0o555);
  }
  chmodSync(cacheDir, 0o555);
  const [uid, gid] = IMAGE_USER.split(':');
  const command = [
    'unshare',
    '--user',
    `--map-user=${uid}`,
    `--map-group=${gid}`,
    join(root, 'usr/local/bin/node'),
  ];
  if (config.Entrypoint[0] !== 'node') throw new Error(`${archive}: ENTRYPOINT ${config.Entrypoint}`);
  const base = { entry: config.Entrypoint[1] as string, command, cwd: join(root, app), ownEnv: true };
  return {
    archive,
    compileCacheEntries,
    compileCacheDir: join(cacheDir, tags[0] ?? ''),
    variants: [
      { name: 'builtImage', ...base, env },
      { name: 'builtImageNoCache', ...base, env: { ...env, NODE_DISABLE_COMPILE_CACHE: '1' } },
    ],
  };
}

/** Makes what unpackImage made read-only removable again. */
function writableAgain(dir: string): void {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true }))
    if (e.isDirectory()) chmodSync(join(e.parentPath, e.name), 0o755);
}

/** RSS at start of each variant, `rounds` interleaved rounds (module comment). */
async function measureStarts(
  kubeconfig: string,
  namespace: string,
  rounds: number,
  baseline: string | undefined,
  image: string | undefined,
): Promise<Record<string, unknown>> {
  const cache = mkdtempSync(join(tmpdir(), 'rk-bench-compile-cache-'));
  try {
    const variants: StartVariant[] = [];
    let unpacked: UnpackedImage | undefined;
    if (image) {
      console.log(`unpacking ${image}`);
      mkdirSync(join(cache, 'image'));
      unpacked = unpackImage(image, join(cache, 'image'));
      variants.push(...unpacked.variants);
    }
    for (const [prefix, dir] of [
      ['', REPO_ROOT],
      ...(baseline ? [['baseline', resolve(baseline)]] : []),
    ] as const) {
      const name = (n: string) => (prefix ? `${prefix}${n[0]?.toUpperCase()}${n.slice(1)}` : n);
      variants.push({
        name: name('image'),
        entry: join(dir, 'operator/src/cli/main.ts'),
        env: NO_COMPILE_CACHE,
      });
      variants.push({
        name: name('compileCache'),
        entry: join(dir, 'operator/bin/retrokube.js'),
        warmUp: true,
        // The compile cache goes to $XDG_CACHE_HOME/retrokube/compile-cache (bin/compile-cache.js);
        // one folder per checkout, so neither finds the other's entries.
        env: {
          XDG_CACHE_HOME: join(cache, prefix || 'this'),
          NODE_COMPILE_CACHE: undefined,
          NODE_DISABLE_COMPILE_CACHE: undefined,
        },
      });
    }
    const cacheEntries: Record<string, number> = {};
    for (const v of variants.filter((x) => x.warmUp)) {
      // Ready, then a moment for `retrokube operator` to install its signal handlers: a SIGTERM
      // before that kills it without the clean exit that writes the cache (main's operator writes
      // it only then).
      const warm = await startOperator(v, kubeconfig, namespace);
      await sleep(LIMITS.warmSettleMs);
      await stopOperator(warm);
      const dir = join(v.env?.XDG_CACHE_HOME as string, 'retrokube/compile-cache');
      cacheEntries[v.name] = readdirSync(dir).reduce((n, d) => n + readdirSync(join(dir, d)).length, 0);
    }
    // What the image's start took from its baked cache, in Node's own words (one unmeasured start
    // with NODE_DEBUG_NATIVE=COMPILE_CACHE, ready against the API server, then stopped).
    let builtImageCacheUse: Record<string, unknown> | undefined;
    const built = unpacked?.variants[0];
    if (built) {
      const probe = await startOperator(
        { ...built, env: { ...built.env, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }, captureStderr: true },
        kubeconfig,
        namespace,
      );
      await stopOperator(probe);
      const { stripped, compiled } = cacheUse(probe.stderr());
      const ts = [...stripped].filter(([u]) => u.includes('/app/operator/src/'));
      builtImageCacheUse = {
        typeScriptModules: ts.length,
        strippedAgain: ts.filter(([, hit]) => !hit).map(([u]) => u.replace(/^.*\/app\//, '')),
        modulesCompiled: compiled.size,
        modulesCompiledAgain: [...compiled.values()].filter((hit) => !hit).length,
      };
      console.log(`the image's start and its baked compile cache: ${JSON.stringify(builtImageCacheUse)}`);
    }
    const runs = new Map(
      variants.map((v) => [v.name, [] as Array<{ hwmMiB: number; rssMiB: number; load1m: number }>]),
    );
    for (let round = 0; round < rounds; round++) {
      for (const v of variants) {
        const load1m = +(loadavg()[0] ?? 0).toFixed(2);
        const op = await startOperator(v, kubeconfig, namespace);
        const sample = {
          hwmMiB: mib(statusMiB(op.pid, 'VmHWM')),
          rssMiB: mib(statusMiB(op.pid, 'VmRSS')),
          load1m,
        };
        await stopOperator(op);
        runs.get(v.name)?.push(sample);
      }
    }
    const out: Record<string, unknown> = {
      rounds,
      compileCacheEntries: cacheEntries,
      ...(unpacked
        ? {
            builtImageArchive: unpacked.archive.split('/').pop(),
            builtImageCompileCacheEntries: unpacked.compileCacheEntries,
            builtImageCompileCacheDir: unpacked.compileCacheDir.split('/').pop(),
            builtImageCacheUse,
          }
        : {}),
    };
    for (const [name, rs] of runs) {
      out[name] = {
        medianMiB: mib(median(rs.map((r) => r.hwmMiB))),
        minMiB: mib(Math.min(...rs.map((r) => r.hwmMiB))),
        maxMiB: mib(Math.max(...rs.map((r) => r.hwmMiB))),
        runs: rs,
      };
      console.log(`RSS at start, ${name}: ${rs.map((r) => r.hwmMiB).join(' / ')} MiB (VmHWM)`);
    }
    return out;
  } finally {
    writableAgain(cache);
    rmSync(cache, { recursive: true, force: true });
  }
}

export async function runOperatorBench(b: OperatorBench): Promise<void> {
  const record = startRecording();
  const { values: args } = parseArgs({
    options: {
      count: { type: 'string', default: String(b.defaultCount) },
      concurrency: { type: 'string', default: '16' },
      starts: { type: 'string', default: String(LIMITS.starts) },
      baseline: { type: 'string' },
      image: { type: 'string' },
      'no-image': { type: 'boolean', default: false },
      save: { type: 'boolean', default: false }, // read by results.ts (saving())
    },
  });
  const starts = Number(args.starts);
  if (!Number.isInteger(starts) || starts < 0) throw new Error('--starts must be a non-negative integer');
  const count = Number(args.count);
  const concurrency = Number(args.concurrency);
  if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error('--concurrency must be a positive integer');
  const ns = b.namespace;
  // The image of this checkout when it has been built (hack/build-image.sh --print-path names it).
  let image = args.image;
  if (!image && !args['no-image']) {
    const built = execFileSync('bash', [join(REPO_ROOT, 'hack/build-image.sh'), '--print-path'], {
      encoding: 'utf8',
    }).trim();
    if (existsSync(built)) image = built;
    else console.log(`no image of this checkout (${built}): the builtImage variants are left out`);
  }

  const plane = await startControlPlane();
  console.log(`kube-apiserver ${plane.server} ready`);
  const k = KubeClient.fromDefault(plane.kubeconfigPath);
  let op: Operator | undefined;
  try {
    await k.create(CORE.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    // The harness's service range is a /24 (254 ClusterIPs); add a ServiceCIDR for 500+ Services.
    try {
      await k.create(
        {
          group: 'networking.k8s.io',
          version: 'v1',
          plural: 'servicecidrs',
          kind: 'ServiceCIDR',
          namespaced: false,
        },
        {
          apiVersion: 'networking.k8s.io/v1',
          kind: 'ServiceCIDR',
          metadata: { name: ns },
          spec: { cidrs: ['10.96.0.0/20'] },
        },
      );
    } catch (err) {
      if (!isStatus(err, 409)) throw err;
    }

    const rssAtStart =
      starts > 0 ? await measureStarts(plane.kubeconfigPath, ns, starts, args.baseline, image) : undefined;

    // The operator of the run itself, as the image's ENTRYPOINT runs it from this checkout
    // (src/cli/main.ts, no compile cache).
    op = await startOperator(
      { name: 'run', entry: join(REPO_ROOT, 'operator/src/cli/main.ts'), env: NO_COMPILE_CACHE },
      plane.kubeconfigPath,
      ns,
    );
    const { pid, metricsPort } = op;
    const m0 = await metrics(metricsPort);
    const rssAtStartMiB = peakRssMiB(pid); // with no objects: the cost of the code itself
    const cpu0 = cpuSeconds(pid);

    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) await b.create(k, ns, next++);
      }),
    );
    const createdMs = performance.now() - t0;
    console.log(`created ${count} ${b.objects} in ${(createdMs / 1000).toFixed(1)} s`);

    let completeMs = 0;
    for (;;) {
      const done = await b.countComplete(k, ns);
      if (done === count) {
        completeMs = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > b.timeoutMs) throw new Error(`only ${done}/${count} complete in time`);
      await sleep(LIMITS.pollMs);
    }
    console.log(`complete in ${(completeMs / 1000).toFixed(1)} s`);
    let settleMs: number | undefined;
    if (b.countSettled) {
      for (;;) {
        const settled = await b.countSettled(k, ns);
        if (settled === count) break;
        if (performance.now() - t0 > b.timeoutMs) throw new Error(`only ${settled}/${count} settled in time`);
        await sleep(LIMITS.pollMs);
      }
      settleMs = performance.now() - t0;
      console.log(`settled in ${(settleMs / 1000).toFixed(1)} s`);
    }
    const m1 = await metrics(metricsPort);
    const cpu1 = cpuSeconds(pid);

    // Quiet period: nothing changes, so the operator should write nothing.
    await sleep(LIMITS.quietMs);
    const m2 = await metrics(metricsPort);

    const result = {
      benchmark: b.name,
      ...b.extra,
      date: new Date().toISOString(),
      objects: count,
      createConcurrency: concurrency,
      createSeconds: +(createdMs / 1000).toFixed(2),
      [b.completeKey]: +(completeMs / 1000).toFixed(2),
      ...(settleMs !== undefined ? { settleSeconds: +(settleMs / 1000).toFixed(2) } : {}),
      reconciles: reconciles(m1) - reconciles(m0),
      reconcilesPerSecond: +((reconciles(m1) - reconciles(m0)) / (completeMs / 1000)).toFixed(1),
      reconcileErrors: errors(m1) - errors(m0),
      apiWrites: writes(m1) - writes(m0),
      apiWritesPerObject: +((writes(m1) - writes(m0)) / count).toFixed(2),
      writesWhileQuiet: writes(m2) - writes(m1),
      quietSeconds: LIMITS.quietMs / 1000,
      operatorCpuSeconds: +(cpu1 - cpu0).toFixed(2),
      operatorCpuMsPerObject: +(((cpu1 - cpu0) * 1000) / count).toFixed(1),
      operatorPeakRssMiB: +peakRssMiB(pid).toFixed(1),
      operatorRssAtStartMiB: +rssAtStartMiB.toFixed(1),
      ...(rssAtStart ? { rssAtStart } : {}),
      loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
      node: process.versions.node,
    };
    console.log(JSON.stringify(result, null, 2));
    writeResults(b.name, result, record);
  } finally {
    if (op) await stopOperator(op);
    k.close();
    await plane.stop();
  }
}
