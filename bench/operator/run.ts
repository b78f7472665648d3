// Benchmark: 500 OberonAir objects against a real kube-apiserver (kine memory://), reconciled by
// `retrokube operator` running as its own process.
// Measures: time until every air has its Deployment and Service and
// status.observedGeneration == metadata.generation; reconciles per second; API writes per object
// (from the operator's own rest_client_requests_total); writes during a quiet period afterwards
// (should be zero); the operator's peak RSS (VmHWM).
//   node_modules/.bin/node bench/operator/run.ts [--count 500] [--concurrency 16]
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { OBERONAIR, type OberonAir } from '../../operator/src/controllers/oberonair.ts';
import { CORE, isStatus, KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import { freePort, REPO_ROOT, startControlPlane } from '../../test/envtest/control-plane.ts';

const LIMITS = {
  timeoutMs: 15 * 60_000, // give up if 500 airs are not converged in 15 minutes
  pollMs: 250, // convergence polling cadence
  quietMs: 10_000, // idle period after convergence in which we count writes (expect 0)
} as const;

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '500' },
    concurrency: { type: 'string', default: '16' },
  },
});
const COUNT = Number(args.count);
const CONCURRENCY = Number(args.concurrency);
if (!Number.isInteger(COUNT) || COUNT < 1) throw new Error('--count must be a positive integer');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NS = 'bench';

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

async function main(): Promise<void> {
  const plane = await startControlPlane();
  console.log(`kube-apiserver ${plane.server} ready`);
  const k = KubeClient.fromDefault(plane.kubeconfigPath);
  let op: ReturnType<typeof spawn> | undefined;
  try {
    await k.create(CORE.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
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
          metadata: { name: 'bench' },
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
        '--kubeconfig',
        plane.kubeconfigPath,
        '--metrics-bind-address',
        `127.0.0.1:${metricsPort}`,
        '--health-port',
        '0',
        '--namespace',
        NS,
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

    // Create COUNT airs with bounded concurrency.
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < COUNT) {
          const i = next++;
          const spec = { loss: (i % 10) / 10 };
          await k.create<OberonAir>(OBERONAIR, {
            apiVersion: 'retrokube.io/v1alpha1',
            kind: 'OberonAir',
            metadata: { name: `air-${i}`, namespace: NS },
            spec,
          });
        }
      }),
    );
    const createdMs = performance.now() - t0;
    console.log(`created ${COUNT} OberonAirs in ${(createdMs / 1000).toFixed(1)} s`);

    // Wait until every air has both children and a status for its generation.
    let convergedMs = 0;
    for (;;) {
      const [airs, deps, svcs] = await Promise.all([
        k.list<OberonAir>(OBERONAIR, NS),
        k.list<KubeObject>(CORE.deployment, NS),
        k.list<KubeObject>(CORE.service, NS),
      ]);
      const depNames = new Set(deps.items.map((d) => d.metadata.name));
      const svcNames = new Set(svcs.items.map((s) => s.metadata.name));
      const done = airs.items.filter(
        (a) =>
          a.status?.observedGeneration === a.metadata.generation &&
          depNames.has(`rk-air-${a.metadata.name}`) &&
          svcNames.has(`rk-air-${a.metadata.name}`),
      ).length;
      if (done === COUNT) {
        convergedMs = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > LIMITS.timeoutMs)
        throw new Error(`only ${done}/${COUNT} converged in time`);
      await sleep(LIMITS.pollMs);
    }
    const m1 = await metrics(metricsPort);
    const cpu1 = cpuSeconds(pid);
    console.log(`converged in ${(convergedMs / 1000).toFixed(1)} s`);

    // Quiet period: nothing changes, so the operator should write nothing. Force a full pass of
    // reconciles too, by touching nothing but waiting for resync-free steady state.
    await sleep(LIMITS.quietMs);
    const m2 = await metrics(metricsPort);

    const result = {
      benchmark: 'operator',
      date: new Date().toISOString(),
      objects: COUNT,
      createConcurrency: CONCURRENCY,
      createSeconds: +(createdMs / 1000).toFixed(2),
      convergeSeconds: +(convergedMs / 1000).toFixed(2),
      reconciles: reconciles(m1) - reconciles(m0),
      reconcilesPerSecond: +((reconciles(m1) - reconciles(m0)) / (convergedMs / 1000)).toFixed(1),
      reconcileErrors:
        sum(m1, 'controller_runtime_reconcile_errors_total') -
        sum(m0, 'controller_runtime_reconcile_errors_total'),
      apiWrites: writes(m1) - writes(m0),
      apiWritesPerObject: +((writes(m1) - writes(m0)) / COUNT).toFixed(2),
      writesWhileQuiet: writes(m2) - writes(m1),
      quietSeconds: LIMITS.quietMs / 1000,
      operatorCpuSeconds: +(cpu1 - cpu0).toFixed(2),
      operatorCpuMsPerObject: +(((cpu1 - cpu0) * 1000) / COUNT).toFixed(1),
      operatorPeakRssMiB: +peakRssMiB(pid).toFixed(1),
      operatorRssAtStartMiB: +rssAtStartMiB.toFixed(1),
      loadAverage1m: +(loadavg()[0] ?? 0).toFixed(1),
      node: process.versions.node,
    };
    console.log(JSON.stringify(result, null, 2));
    const out = join(REPO_ROOT, 'bench/results/operator.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${out}`);
  } finally {
    if (op && op.exitCode === null) {
      op.kill('SIGTERM');
      await new Promise((r) => op?.once('exit', r));
    }
    k.close();
    await plane.stop();
  }
}

await main();
