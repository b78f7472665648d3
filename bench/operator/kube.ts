// Benchmark: 100 OberonKube objects of 3 nodes against a real kube-apiserver (kine memory://),
// reconciled by `retrokube operator` running as its own process (each cluster also gets a
// passive air station; no machine runs, so the planes stay gated behind their nodes).
// Measures: time until every cluster has its key Secret, OberonAir (+ relay Deployment and
// Service), 3 node OberonMachines (+ StatefulSet and Service each) and a status; API writes per
// object; writes during a quiet period afterwards (must be zero, although every cluster is
// re-examined every 2 s); the operator's peak RSS.
//   node_modules/.bin/node bench/operator/kube.ts [--count 100] [--concurrency 16]
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { OBERONAIR } from '../../operator/src/controllers/oberonair.ts';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { CORE, isStatus, KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import { freePort, REPO_ROOT, startControlPlane } from '../../test/envtest/control-plane.ts';

const LIMITS = {
  timeoutMs: 10 * 60_000, // give up if the clusters are not all created in 10 minutes
  pollMs: 250, // convergence polling cadence
  quietMs: 10_000, // idle period after convergence in which we count writes (expect 0)
} as const;

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '16' },
  },
});
const COUNT = Number(args.count);
const CONCURRENCY = Number(args.concurrency);
if (!Number.isInteger(COUNT) || COUNT < 1) throw new Error('--count must be a positive integer');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const NS = 'bench-kube';
const NODES = 3;

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
          metadata: { name: 'bench-kube' },
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

    // Create COUNT clusters with bounded concurrency.
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < COUNT) {
          const i = next++;
          await k.create(OBERONKUBE, {
            apiVersion: 'retrokube.io/v1alpha1',
            kind: 'OberonKube',
            metadata: { name: `k${i}`, namespace: NS },
            spec: { nodes: NODES, deployments: 'web 4 Ticker; api 2 Ticker2' },
          });
        }
      }),
    );
    const createdMs = performance.now() - t0;
    console.log(`created ${COUNT} OberonKubes in ${(createdMs / 1000).toFixed(1)} s`);

    let convergedMs = 0;
    for (;;) {
      const names = async (t: Parameters<typeof k.list>[0]) =>
        new Set((await k.list<KubeObject>(t, NS)).items.map((o) => o.metadata.name));
      const [kubes, airs, machines, stss, svcs, deps, secrets] = await Promise.all([
        k.list<KubeObject & { status?: { nodes?: string } }>(OBERONKUBE, NS),
        names(OBERONAIR),
        names(OBERONMACHINE),
        names(KINDS_OWNED.statefulSet),
        names(CORE.service),
        names(CORE.deployment),
        names(CORE.secret),
      ]);
      const done = kubes.items.filter((o) => {
        const n = o.metadata.name;
        const nodes = Array.from({ length: NODES }, (_, j) => `${n}-node-${String.fromCharCode(97 + j)}`);
        return (
          o.status?.nodes !== undefined &&
          secrets.has(`rk-kube-${n}-key`) &&
          airs.has(`${n}-air`) &&
          deps.has(`rk-air-${n}-air`) &&
          svcs.has(`rk-air-${n}-air`) &&
          nodes.every((m) => machines.has(m) && stss.has(`rk-m-${m}`) && svcs.has(`rk-m-${m}`))
        );
      }).length;
      if (done === COUNT) {
        convergedMs = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > LIMITS.timeoutMs)
        throw new Error(`only ${done}/${COUNT} complete in time`);
      await sleep(LIMITS.pollMs);
    }
    const m1 = await metrics(metricsPort);
    const cpu1 = cpuSeconds(pid);
    console.log(`all children created in ${(convergedMs / 1000).toFixed(1)} s`);

    // Quiet period: nothing changes, so the operator should write nothing (it still looks at every
    // cluster's air every 2 s).
    await sleep(LIMITS.quietMs);
    const m2 = await metrics(metricsPort);

    const result = {
      benchmark: 'operator-kube',
      nodesPerCluster: NODES,
      childrenPerObject: 1 + 3 + NODES * 3, // Secret, air + Deployment + Service, per node machine + StatefulSet + Service
      date: new Date().toISOString(),
      objects: COUNT,
      createConcurrency: CONCURRENCY,
      createSeconds: +(createdMs / 1000).toFixed(2),
      allChildrenSeconds: +(convergedMs / 1000).toFixed(2),
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
    const out = join(REPO_ROOT, 'bench/results/operator-kube.json');
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
