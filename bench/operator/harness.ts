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
// -x -C DIR`), the same two from DIR: before and after, same API server, same load. When the image
// hack/build-image.sh builds from this checkout exists (or --image ARCHIVE names one), its /app and
// Node are unpacked and two more start in each round, as its pod runs them (the image's ENTRYPOINT,
// WORKDIR and ENV, uid 1000 in a user namespace, the baked compile cache read-only):
//   builtImage         with the compile cache baked into the image (Dockerfile: compile-cache stage)
//   builtImageNoCache  the same image with NODE_DISABLE_COMPILE_CACHE=1
//   node_modules/.bin/node bench/operator/<bench>.ts [--count N] [--starts 3] [--baseline DIR]
//     [--image ARCHIVE | --no-image] [--save]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { OPERATOR_ENV } from '../../operator/src/cli/operator-env.ts';
import { CORE, isStatus, KubeClient } from '../../operator/src/runtime/client.ts';
import {
  type ControlPlane,
  type Datastore,
  REPO_ROOT,
  startControlPlane,
} from '../../test/envtest/control-plane.ts';
import { startRecording, writeResults } from '../results.ts';
import {
  cpuSeconds,
  errors,
  metrics,
  mib,
  type Operator,
  peakRssMiB,
  reconciles,
  type StartVariant,
  sleep,
  startOperator,
  statusMiB,
  stopOperator,
  writes,
} from './operator-process.ts';
import {
  type ChangeProbe,
  type ChangeStages,
  changeLatency,
  overload,
  percentiles,
  stagePercentiles,
} from './phases.ts';
import { measureStarts } from './starts.ts';

const LIMITS = {
  pollMs: 250, // convergence polling cadence
  quietMs: 10_000, // idle period after convergence in which we count writes (expect 0)
  starts: 3, // default rounds of the start measurement: RSS at start varies by 1-2 MiB between starts
  changes: 50, // spec changes in the latency phase (#32: p99 over them)
  pauseMs: 15_000, // the API server paused (SIGSTOP) in the overload phase: shorter than a request's 30 s timeout
  downMs: 5_000, // the API server down in the restart of the overload phase
  overloadWindowMs: 20_000, // what the operator does after each disturbance is counted over this window
  recoveryTimeoutMs: 120_000, // a change not reconciled by then after a disturbance fails the run
  warmSettleMs: 1_000, // after the compile cache's warm-up start is ready, before it is stopped (starts.ts)
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

export async function runOperatorBench(b: OperatorBench): Promise<void> {
  const record = startRecording();
  const { values: args } = parseArgs({
    options: {
      // One count, or several (e.g. 100,1000: a reference and the scale), each on a fresh API server.
      count: { type: 'string', default: String(b.defaultCount) },
      concurrency: { type: 'string', default: '16' },
      starts: { type: 'string', default: String(LIMITS.starts) },
      baseline: { type: 'string' },
      image: { type: 'string' },
      'no-image': { type: 'boolean', default: false },
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
  // The image of this checkout when it has been built (hack/build-image.sh --print-path names it).
  let image = args.image;
  if (!image && !args['no-image']) {
    const built = execFileSync('bash', [join(REPO_ROOT, 'hack/build-image.sh'), '--print-path'], {
      encoding: 'utf8',
    }).trim();
    if (existsSync(built)) image = built;
    else console.log(`no image of this checkout (${built}): the builtImage variants are left out`);
  }

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
          image,
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
  /** The built image of this checkout, for the builtImage variants of the starts. */
  image: string | undefined;
}

async function runOnce(b: OperatorBench, o: RunOptions): Promise<Record<string, unknown>> {
  const { count, concurrency } = o;
  const ns = b.namespace;
  const plane = await startControlPlane({ datastore: o.datastore });
  console.log(`kube-apiserver ${plane.server} on ${plane.datastore} ready; ${count} ${b.objects}`);
  const k = KubeClient.fromDefault(plane.kubeconfigPath);
  const scratch = mkdtempSync(join(tmpdir(), 'rk-bench-run-'));
  let op: Operator | undefined;
  try {
    await prepareNamespace(k, ns);
    const rssAtStart =
      o.starts > 0 ? await measureStarts(plane.kubeconfigPath, ns, o.starts, o.baseline, o.image) : undefined;

    // The operator of the run itself, as the chart runs the image, from this checkout: its
    // ENTRYPOINT (src/cli/main.ts) with a compile cache filled beforehand (the image's is baked at
    // build), and the Deployment's process environment (operator-env.ts). Until 2026-12-03 it ran
    // with no compile cache and glibc's default arenas: ~30 MiB more RSS than the pod.
    const run: StartVariant = {
      name: 'run',
      entry: join(REPO_ROOT, 'operator/src/cli/main.ts'),
      env: {
        NODE_COMPILE_CACHE: join(scratch, 'compile-cache'),
        NODE_COMPILE_CACHE_PORTABLE: '1',
        NODE_DISABLE_COMPILE_CACHE: undefined,
        ...OPERATOR_ENV,
      },
    };
    const warm = await startOperator(run, plane.kubeconfigPath, ns);
    await sleep(LIMITS.warmSettleMs);
    await stopOperator(warm);
    op = await startOperator(run, plane.kubeconfigPath, ns);
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
      // Its own budget from completion: what settles (the planes) may start only then.
      for (;;) {
        const settled = await b.countSettled(k, ns);
        if (settled === count) break;
        if (performance.now() - t0 > completeMs + b.timeoutMs)
          throw new Error(`only ${settled}/${count} settled in time`);
        await sleep(Math.max(LIMITS.pollMs, count * 2.5)); // as the completion polls: LISTs of every kind
      }
      settleMs = performance.now() - t0;
      console.log(`settled in ${(settleMs / 1000).toFixed(1)} s`);
    }
    const m1 = await metrics(metricsPort);
    const cpu1 = cpuSeconds(pid);
    const rssCompleteMiB = statusMiB(pid, 'VmRSS');
    const hwmCompleteMiB = peakRssMiB(pid);

    // Quiet period: nothing changes, so the operator should write nothing.
    await sleep(LIMITS.quietMs);
    const m2 = await metrics(metricsPort);
    const cpu2 = cpuSeconds(pid);

    let changeLatencyMs: ReturnType<typeof percentiles> | undefined;
    let changeStagesMs: ReturnType<typeof stagePercentiles> | undefined;
    let changeWrites: number | undefined;
    if (b.probe && o.changes > 0) {
      const stages: ChangeStages[] = [];
      const lat = await changeLatency(k, ns, b.probe, count, o.changes, 0, stages);
      changeLatencyMs = percentiles(lat);
      if (stages.length) changeStagesMs = stagePercentiles(stages);
      changeWrites = writes(await metrics(metricsPort)) - writes(m2);
      console.log(`change → child write: ${JSON.stringify(changeLatencyMs)} ms`);
      if (changeStagesMs) console.log(`its stages: ${JSON.stringify(changeStagesMs)}`);
    }
    const rssRestMiB = statusMiB(pid, 'VmRSS');
    const hwmRestMiB = peakRssMiB(pid);
    const overloadResult =
      o.overload && b.probe
        ? await runOverload(plane, k, ns, b.probe, count, metricsPort, o.changes)
        : undefined;
    const peakMiB = mib(peakRssMiB(pid)); // the last phase's peak is the run's

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
      operatorPeakRssMiB: peakMiB,
      // VmHWM at the end of each phase: which one reached the peak (creation and settling, the quiet
      // period and the changes, the overload's pause and restart).
      operatorPeakRssByPhaseMiB: {
        complete: mib(hwmCompleteMiB),
        rest: mib(hwmRestMiB),
        ...(overloadResult ? { overload: peakMiB } : {}),
      },
      operatorRssAtStartMiB: +rssAtStartMiB.toFixed(1),
      operatorRssCompleteMiB: mib(rssCompleteMiB),
      operatorRssAtRestMiB: mib(rssRestMiB),
      ...(changeLatencyMs ? { changeToChildWriteMs: changeLatencyMs, changeWrites } : {}),
      ...(changeStagesMs ? { changeStagesMs } : {}),
      ...(overloadResult ? { overload: overloadResult } : {}),
      ...(rssAtStart ? { rssAtStart } : {}),
      loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
      node: process.versions.node,
    };
    console.log(JSON.stringify(result, null, 2));
    return result;
  } finally {
    if (op) await stopOperator(op);
    rmSync(scratch, { recursive: true, force: true });
    k.close();
    await plane.stop();
  }
}

export async function prepareNamespace(k: KubeClient, ns: string): Promise<void> {
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
