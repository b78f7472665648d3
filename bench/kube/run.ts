// Kube on Oberon at size: for N = 2, 4, 8, 16, 20 nodes (plane + N emulated RISC5 machines on one
// in-process air), the figures of the reference's load check (kube-on-oberon spec §8.3): converge
// time after `Kube.Apply web 3N Ticker`, failover time of the last node, frames per second on the
// air at rest, false NotReady (heartbeat gaps longer than the 5-s timeout on nodes that were never
// switched off), and host CPU of the whole cluster. Judged from the air only. Also the start:
// from LocalCluster.start to every node Ready at the plane, wall and CPU-seconds (the host is
// shared; the CPU figure does not depend on the neighbours), with the time to power every machine on.
// Run: node_modules/.bin/node bench/kube/run.ts [--sizes 2,4] [--rest 10]
// Writes bench/results/kube.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalCluster } from '../../operator/src/local/cluster.ts';
import { type LocalKube, nodeName } from '../../operator/src/local/spec.ts';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { startRecording, writeResults } from '../results.ts';

const record = startRecording();

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SIZES = (arg('--sizes') ?? '2,4,8,16,20').split(',').map(Number);
const REST_S = Number(arg('--rest') ?? 10);
// `--compare-start N`: the start of an N-node cluster, nodes on shared threads (the default)
// and on a thread each, interleaved, ROUNDS each; written to kube.json under startCompare.
const COMPARE = arg('--compare-start');
// ...with `--compare-full`, each run also converges, rests (--rest) and fails a node over.
const COMPARE_FULL = process.argv.includes('--compare-full');
const KEY = '0123456789abcdef';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  nodes: number;
  pods: number;
  /** From LocalCluster.start (air, listener, disks) to every node Ready at the plane. */
  upS: number;
  /** Of which: powering the plane and every node on (workers started, boot images restored). */
  machinesOnS: number;
  /** From the plane's power-on to every node Ready (the part startAll() does). */
  joinS: number;
  /** CPU of the whole process (all machines' threads) from LocalCluster.start to every node Ready. */
  upCpuS: number;
  convergeS: number;
  failoverS: number;
  framesPerS: number;
  falseNotReady: number;
  hostCores: number;
  load1: number;
}

async function measure(
  n: number,
  disk: { path: string; key: string },
  opts: { nodeThreads?: number; startOnly?: boolean } = {},
): Promise<Row> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `retrokube-bench-kube-${n}-`));
  const nodeNames = Array.from({ length: n }, (_, i) => nodeName(i));
  const spec: LocalKube = {
    name: `bench${n}`,
    nodes: n,
    nodeNames,
    cluster: 'kube',
    key: KEY,
    deployments: [],
    loss: 0,
    runtime: 'pod',
  };
  const up0 = Date.now();
  const upCpu0 = process.cpuUsage();
  let machinesOnAt = 0;
  const c = await LocalCluster.start(
    {
      spec,
      key: KEY,
      kubeDisk: disk.path,
      kubeDiskKey: disk.key,
      dir,
      vncBase: null,
      progress: (line) => {
        if (line.startsWith('machines booting')) machinesOnAt = Date.now();
      },
      nodeThreads: opts.nodeThreads,
    },
    false,
  );
  try {
    const t0 = Date.now();
    await c.startAll(); // plane, nodes, and returns once every node is Ready at the plane
    const joinS = (Date.now() - t0) / 1000;
    const upS = (Date.now() - up0) / 1000;
    const upCpu = process.cpuUsage(upCpu0);
    const upCpuS = (upCpu.user + upCpu.system) / 1e6;
    const machinesOnS = (machinesOnAt - t0) / 1000;
    const load1 = os.loadavg()[0];
    const falseNotReady = () =>
      c
        .view()
        .nodes.filter((x) => x.name !== nodeNames[n - 1])
        .reduce((s, x) => s + x.flaps, 0);
    if (opts.startOnly) {
      const none = Number.NaN;
      return {
        nodes: n,
        pods: 0,
        upS,
        machinesOnS,
        joinS,
        upCpuS,
        convergeS: none,
        failoverS: none,
        framesPerS: none,
        falseNotReady: falseNotReady(),
        hostCores: none,
        load1,
      };
    }
    const pods = 3 * n;
    const even = (): boolean => {
      const counts = c
        .view()
        .nodes.filter((x) => x.ready)
        .map((x) => x.running.length);
      return counts.length > 0 && Math.max(...counts) - Math.min(...counts) <= 1;
    };
    const applied = Date.now();
    c.serial('plane', `Kube.Apply web ${pods} Ticker`);
    if (!(await c.waitFor(() => c.view().converged && c.view().running === pods && even(), 60_000)))
      throw new Error(`${n} nodes: not converged(${pods}) within 60 s`);
    const convergeS = (Date.now() - applied) / 1000;

    const frames0 = c.view().counts.frames;
    const cpu0 = process.cpuUsage();
    const rest0 = Date.now();
    await sleep(REST_S * 1000);
    const cpu = process.cpuUsage(cpu0);
    const restMs = Date.now() - rest0;
    const framesPerS = (c.view().counts.frames - frames0) / (restMs / 1000);
    const hostCores = (cpu.user + cpu.system) / 1000 / restMs; // worker threads count in the process

    const last = nodeNames[n - 1];
    const off = Date.now();
    await c.power(last, false);
    const moved = await c.waitFor(() => {
      const v = c.view();
      const gone = !v.nodes.find((x) => x.name === last)?.ready;
      return gone && v.converged && v.running === pods;
    }, 60_000);
    if (!moved) throw new Error(`${n} nodes: pods of ${last} not moved within 60 s`);
    const failoverS = (Date.now() - off) / 1000;
    return {
      nodes: n,
      pods,
      upS,
      machinesOnS,
      joinS,
      upCpuS,
      convergeS,
      failoverS,
      framesPerS,
      falseNotReady: falseNotReady(),
      hostCores,
      load1,
    };
  } finally {
    await c.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const disk = await buildKubeDisk();
if (COMPARE !== undefined) {
  const n = Number(COMPARE);
  const runs: Record<string, Row[]> = { shared: [], own: [] };
  for (let r = 0; r < 3; r++) {
    for (const [variant, nodeThreads] of [
      ['shared', undefined],
      ['own', 0],
    ] as const) {
      const row = await measure(n, disk, { nodeThreads, startOnly: !COMPARE_FULL });
      runs[variant].push(row);
      console.log(
        `${n} nodes, ${variant === 'shared' ? 'nodes on shared threads' : 'a thread per node'}: up ${row.upS.toFixed(1)} s (machines on ${row.machinesOnS.toFixed(1)} s), ${row.upCpuS.toFixed(2)} CPU-s${COMPARE_FULL ? `, converge ${row.convergeS.toFixed(1)} s, failover ${row.failoverS.toFixed(1)} s, host ${row.hostCores.toFixed(2)} cores at rest` : ''}, false NotReady ${row.falseNotReady} (load ${row.load1.toFixed(1)})`,
      );
    }
  }
  writeResults('kube-start-compare', { nodes: n, runs }, record);
  process.exit(0);
}
const rows: Row[] = [];
for (const n of SIZES) {
  const r = await measure(n, disk);
  rows.push(r);
  console.log(
    `${n} nodes: up ${r.upS.toFixed(1)} s (machines on ${r.machinesOnS.toFixed(1)} s, join ${r.joinS.toFixed(1)} s; ${r.upCpuS.toFixed(2)} CPU-s), converge ${r.convergeS.toFixed(1)} s, failover ${r.failoverS.toFixed(1)} s, ` +
      `${r.framesPerS.toFixed(1)} frames/s, false NotReady ${r.falseNotReady}, host ${r.hostCores.toFixed(2)} cores (load ${r.load1.toFixed(1)})`,
  );
}
const table = [
  '| nodes | pods | up (CPU-s) | converge | failover | frames per second on the air | false NotReady | host cores (whole cluster) | load average |',
  '|---|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.nodes} | ${r.pods} | ${r.upS.toFixed(1)} s (${r.upCpuS.toFixed(2)}) | ${r.convergeS.toFixed(1)} s | ${r.failoverS.toFixed(1)} s | ${r.framesPerS.toFixed(1)} | ${r.falseNotReady} | ${r.hostCores.toFixed(2)} | ${r.load1.toFixed(1)} |`,
  ),
].join('\n');
console.log(`\n${table}`);
writeResults('kube', { restS: REST_S, rows }, record);
process.exit(0);
