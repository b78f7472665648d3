// The shared half of the operator benchmarks: a real kube-apiserver (kine memory:// or etcd), `retrokube
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
// -x -C DIR`), the same two from DIR: before and after, same API server, same load.
//   node_modules/.bin/node bench/operator/<bench>.ts [--count N] [--starts 3] [--baseline DIR] [--save]
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CORE, isStatus, KubeClient } from '../../operator/src/runtime/client.ts';
import {
  type ControlPlane,
  type Datastore,
  freePort,
  REPO_ROOT,
  startControlPlane,
} from '../../test/envtest/control-plane.ts';
import { startRecording, writeResults } from '../results.ts';
import { type ChangeProbe, changeLatency, overload, percentiles } from './phases.ts';

const LIMITS = {
  pollMs: 250, // convergence polling cadence
  quietMs: 10_000, // idle period after convergence in which we count writes (expect 0)
  starts: 3, // default rounds of the start measurement: RSS at start varies by 1-2 MiB between starts
  startTimeoutMs: 60_000, // an operator whose /metrics does not answer by then failed to start
  stopTimeoutMs: 15_000, // SIGTERM grace (the manager stops its informers and servers) before SIGKILL
  warmSettleMs: 1_000, // after ready, before the warm-up start is stopped (see measureStarts)
  changes: 50, // spec changes in the latency phase (#32: p99 over them)
  pauseMs: 15_000, // the API server paused (SIGSTOP) in the overload phase: shorter than a request's 30 s timeout
  downMs: 5_000, // the API server down in the restart of the overload phase
  overloadWindowMs: 20_000, // what the operator does after each disturbance is counted over this window
  recoveryTimeoutMs: 120_000, // a change not reconciled by then after a disturbance fails the run
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
  /** A spec change whose child write the latency and overload phases time. */
  probe?: ChangeProbe;
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
}

/** `env` without the variables set to undefined (a variant's way to say "not inherited"). */
const childEnv = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined));

/** The image's process: no compile cache, whatever this shell's environment says. */
const NO_COMPILE_CACHE = { NODE_COMPILE_CACHE: undefined } as const;

/** `retrokube operator` from `entry` (main.ts or the installed bin), once ready (/readyz 200). */
async function startOperator(
  entry: string,
  kubeconfig: string,
  namespace: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Operator> {
  const metricsPort = await freePort();
  const proc = spawn(
    join(REPO_ROOT, 'node_modules/.bin/node'),
    [
      entry,
      'operator',
      ...['--kubeconfig', kubeconfig],
      ...['--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-port', '0'],
      ...['--namespace', namespace],
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: childEnv({ ...process.env, RETROKUBE_LOG_LEVEL: 'warn', ...env }),
    },
  );
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
    if (ok) return { proc, pid: proc.pid as number, metricsPort };
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

interface StartVariant {
  name: string;
  entry: string;
  env?: NodeJS.ProcessEnv;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const mib = (x: number) => +x.toFixed(1);

/** RSS at start of each variant, `rounds` interleaved rounds (module comment). */
async function measureStarts(
  kubeconfig: string,
  namespace: string,
  rounds: number,
  baseline: string | undefined,
): Promise<Record<string, unknown>> {
  const cache = mkdtempSync(join(tmpdir(), 'rk-bench-compile-cache-'));
  try {
    const variants: StartVariant[] = [];
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
    for (const v of variants.filter((x) => x.env?.XDG_CACHE_HOME)) {
      // Ready, then a moment for `retrokube operator` to install its signal handlers: a SIGTERM
      // before that kills it without the clean exit that writes the cache (main's operator writes
      // it only then).
      const warm = await startOperator(v.entry, kubeconfig, namespace, v.env);
      await sleep(LIMITS.warmSettleMs);
      await stopOperator(warm);
      const dir = join(v.env?.XDG_CACHE_HOME as string, 'retrokube/compile-cache');
      cacheEntries[v.name] = readdirSync(dir).reduce((n, d) => n + readdirSync(join(dir, d)).length, 0);
    }
    const runs = new Map(
      variants.map((v) => [v.name, [] as Array<{ hwmMiB: number; rssMiB: number; load1m: number }>]),
    );
    for (let round = 0; round < rounds; round++) {
      for (const v of variants) {
        const load1m = +(loadavg()[0] ?? 0).toFixed(2);
        const op = await startOperator(v.entry, kubeconfig, namespace, v.env);
        const sample = {
          hwmMiB: mib(statusMiB(op.pid, 'VmHWM')),
          rssMiB: mib(statusMiB(op.pid, 'VmRSS')),
          load1m,
        };
        await stopOperator(op);
        runs.get(v.name)?.push(sample);
      }
    }
    const out: Record<string, unknown> = { rounds, compileCacheEntries: cacheEntries };
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
    rmSync(cache, { recursive: true, force: true });
  }
}

export async function runOperatorBench(b: OperatorBench): Promise<void> {
  const record = startRecording();
  const { values: args } = parseArgs({
    options: {
      // One count, or several (e.g. 100,1000: a reference and the scale), each on a fresh API server.
      count: { type: 'string', default: String(b.defaultCount) },
      concurrency: { type: 'string', default: '16' },
      starts: { type: 'string', default: String(LIMITS.starts) },
      baseline: { type: 'string' },
      datastore: { type: 'string', default: 'kine' },
      changes: { type: 'string', default: String(LIMITS.changes) },
      overload: { type: 'boolean', default: false }, // the overload phase, on the largest count
      timeout: { type: 'string' }, // seconds until the objects must be complete (default: the bench's)
      save: { type: 'boolean', default: false }, // read by results.ts (saving())
    },
  });
  const starts = Number(args.starts);
  if (!Number.isInteger(starts) || starts < 0) throw new Error('--starts must be a non-negative integer');
  const counts = String(args.count).split(',').map(Number);
  const concurrency = Number(args.concurrency);
  const changes = Number(args.changes);
  if (counts.some((c) => !Number.isInteger(c) || c < 1))
    throw new Error('--count must be positive integers, comma-separated');
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error('--concurrency must be a positive integer');
  if (!Number.isInteger(changes) || changes < 0) throw new Error('--changes must be a non-negative integer');
  if (args.datastore !== 'kine' && args.datastore !== 'etcd') throw new Error('--datastore: kine or etcd');
  const datastore: Datastore = args.datastore;
  const largest = Math.max(...counts);
  const timeoutMs = args.timeout === undefined ? b.timeoutMs : Number(args.timeout) * 1000;
  if (!(timeoutMs > 0)) throw new Error('--timeout must be a positive number of seconds');

  const runs: Record<string, unknown>[] = [];
  for (const [n, count] of counts.entries()) {
    runs.push(
      await runOnce(
        { ...b, timeoutMs },
        {
          count,
          concurrency,
          datastore,
          starts: n === 0 ? starts : 0,
          baseline: args.baseline,
          changes,
          overload: args.overload && count === largest,
        },
      ),
    );
  }
  // The first count's figures stay at the top level (the docs' figures of one run read them there).
  const result = { ...runs[0], ...(runs.length > 1 ? { runs } : {}) };
  writeResults(b.name, result, record);
}

interface RunOptions {
  count: number;
  concurrency: number;
  datastore: Datastore;
  starts: number;
  baseline: string | undefined;
  changes: number;
  overload: boolean;
}

async function runOnce(b: OperatorBench, o: RunOptions): Promise<Record<string, unknown>> {
  const { count, concurrency } = o;
  const ns = b.namespace;
  const plane = await startControlPlane({ datastore: o.datastore });
  console.log(`kube-apiserver ${plane.server} on ${plane.datastore} ready; ${count} ${b.objects}`);
  const k = KubeClient.fromDefault(plane.kubeconfigPath);
  let op: Operator | undefined;
  try {
    await prepareNamespace(k, ns);
    const rssAtStart =
      o.starts > 0 ? await measureStarts(plane.kubeconfigPath, ns, o.starts, o.baseline) : undefined;

    // The operator of the run itself, as the image runs it (src/cli/main.ts).
    op = await startOperator(
      join(REPO_ROOT, 'operator/src/cli/main.ts'),
      plane.kubeconfigPath,
      ns,
      NO_COMPILE_CACHE,
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
    let done = 0;
    for (;;) {
      done = await b.countComplete(k, ns);
      if (done === count) {
        completeMs = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > b.timeoutMs) break;
      // Each poll LISTs every kind: at 1,000 clusters (15,000 objects) every 250 ms the bench itself
      // was most of the API server's load. 2.5 ms per object: 2.5 s at 1,000.
      await sleep(Math.max(LIMITS.pollMs, count * 2.5));
    }
    if (done < count) {
      // Not all complete in time: what the operator reached is the figure (no phase at rest follows).
      console.log(`only ${done}/${count} complete after ${b.timeoutMs / 1000} s`);
      return {
        benchmark: b.name,
        datastore: plane.datastore,
        objects: count,
        completeAtTimeout: done,
        timeoutSeconds: b.timeoutMs / 1000,
        reconcileErrors: errors(await metrics(metricsPort)) - errors(m0),
        operatorPeakRssMiB: +peakRssMiB(pid).toFixed(1),
        operatorCpuSeconds: +(cpuSeconds(pid) - cpu0).toFixed(2),
        loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
      };
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
    const rssCompleteMiB = statusMiB(pid, 'VmRSS');

    // Quiet period: nothing changes, so the operator should write nothing.
    await sleep(LIMITS.quietMs);
    const m2 = await metrics(metricsPort);
    const cpu2 = cpuSeconds(pid);

    let changeLatencyMs: ReturnType<typeof percentiles> | undefined;
    let changeWrites: number | undefined;
    if (b.probe && o.changes > 0) {
      const lat = await changeLatency(k, ns, b.probe, count, o.changes);
      changeLatencyMs = percentiles(lat);
      changeWrites = writes(await metrics(metricsPort)) - writes(m2);
      console.log(`change → child write: ${JSON.stringify(changeLatencyMs)} ms`);
    }
    const rssRestMiB = statusMiB(pid, 'VmRSS');
    const overloadResult =
      o.overload && b.probe
        ? await runOverload(plane, k, ns, b.probe, count, metricsPort, o.changes)
        : undefined;

    const result = {
      benchmark: b.name,
      ...b.extra,
      date: new Date().toISOString(),
      datastore: plane.datastore,
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
      // At rest the controllers still look at every object every few seconds (reads only).
      quietCpuPercentOfCore: +(((cpu2 - cpu1) * 100) / (LIMITS.quietMs / 1000)).toFixed(1),
      operatorCpuSeconds: +(cpu1 - cpu0).toFixed(2),
      operatorCpuMsPerObject: +(((cpu1 - cpu0) * 1000) / count).toFixed(1),
      operatorPeakRssMiB: +peakRssMiB(pid).toFixed(1),
      operatorRssAtStartMiB: +rssAtStartMiB.toFixed(1),
      operatorRssCompleteMiB: mib(rssCompleteMiB),
      operatorRssAtRestMiB: mib(rssRestMiB),
      ...(changeLatencyMs ? { changeToChildWriteMs: changeLatencyMs, changeWrites } : {}),
      ...(overloadResult ? { overload: overloadResult } : {}),
      ...(rssAtStart ? { rssAtStart } : {}),
      loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
      node: process.versions.node,
    };
    console.log(JSON.stringify(result, null, 2));
    return result;
  } finally {
    if (op) await stopOperator(op);
    k.close();
    await plane.stop();
  }
}

async function prepareNamespace(k: KubeClient, ns: string): Promise<void> {
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
        // A /18: 16,382 addresses, for 1,000 clusters' 4,000+ Services.
        spec: { cidrs: ['10.96.0.0/18'] },
      },
    );
  } catch (err) {
    if (!isStatus(err, 409)) throw err;
  }
}

/** The overload phase (phases.ts) against this run's API server and operator. */
function runOverload(
  plane: ControlPlane,
  k: KubeClient,
  ns: string,
  probe: ChangeProbe,
  count: number,
  metricsPort: number,
  firstRound: number,
) {
  return overload(
    {
      metrics: () => metrics(metricsPort),
      apiPid: () => {
        const pid = plane.apiServerPid;
        if (pid === undefined) throw new Error('no kube-apiserver process');
        return pid;
      },
      restart: (downMs) => plane.restartApiServer(downMs),
      // From the moment the API server is back: retried until a change goes through.
      probeChange: async (round) => {
        const t0 = performance.now();
        for (;;) {
          try {
            await changeLatency(k, ns, probe, count, 1, round);
            return performance.now() - t0;
          } catch (err) {
            if (performance.now() - t0 > LIMITS.recoveryTimeoutMs) throw err;
            await sleep(LIMITS.pollMs);
          }
        }
      },
    },
    {
      pauseMs: LIMITS.pauseMs,
      downMs: LIMITS.downMs,
      windowMs: LIMITS.overloadWindowMs,
      firstRound: firstRound + 1,
    },
  );
}
