// The shared half of the operator benchmarks: a real kube-apiserver (kine memory://), `retrokube
// operator` as its own process, COUNT objects created with bounded concurrency, polling until a
// bench-specific check says every object is complete, then a quiet period in which the operator
// should write nothing. Figures come from the operator's own /metrics and /proc.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CORE, isStatus, KubeClient } from '../../operator/src/runtime/client.ts';
import { freePort, REPO_ROOT, startControlPlane } from '../../test/envtest/control-plane.ts';
import { startRecording, writeResults } from '../results.ts';

const LIMITS = {
  pollMs: 250, // convergence polling cadence
  quietMs: 10_000, // idle period after convergence in which we count writes (expect 0)
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

function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

export async function runOperatorBench(b: OperatorBench): Promise<void> {
  const record = startRecording();
  const { values: args } = parseArgs({
    options: {
      count: { type: 'string', default: String(b.defaultCount) },
      concurrency: { type: 'string', default: '16' },
    },
  });
  const count = Number(args.count);
  const concurrency = Number(args.concurrency);
  if (!Number.isInteger(count) || count < 1) throw new Error('--count must be a positive integer');
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error('--concurrency must be a positive integer');
  const ns = b.namespace;

  const plane = await startControlPlane();
  console.log(`kube-apiserver ${plane.server} ready`);
  const k = KubeClient.fromDefault(plane.kubeconfigPath);
  let op: ReturnType<typeof spawn> | undefined;
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

    const metricsPort = await freePort();
    op = spawn(
      join(REPO_ROOT, 'node_modules/.bin/node'),
      [
        join(REPO_ROOT, 'operator/src/cli/main.ts'),
        'operator',
        ...['--kubeconfig', plane.kubeconfigPath],
        ...['--metrics-bind-address', `127.0.0.1:${metricsPort}`, '--health-port', '0'],
        ...['--namespace', ns],
      ],
      { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, RETROKUBE_LOG_LEVEL: 'warn' } },
    );
    const pid = op.pid as number;
    for (;;) {
      try {
        await metrics(metricsPort);
        break;
      } catch {
        await sleep(100);
      }
    }
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
      loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
      node: process.versions.node,
    };
    console.log(JSON.stringify(result, null, 2));
    writeResults(b.name, result, record);
  } finally {
    if (op && op.exitCode === null) {
      op.kill('SIGTERM');
      await new Promise((r) => op?.once('exit', r));
    }
    k.close();
    await plane.stop();
  }
}
