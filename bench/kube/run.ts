// Kube on Oberon at size: for N = 2, 4, 8, 16, 20 nodes (plane + N emulated RISC5 machines on one
// in-process air), the figures of the reference's load check (kube-on-oberon spec §8.3): converge
// time after `Kube.Apply web 3N Ticker`, failover time of the last node, frames per second on the
// air at rest, false NotReady (heartbeat gaps longer than the 5-s timeout on nodes that were never
// switched off), and host CPU of the whole cluster. Judged from the air only.
// Run: node_modules/.bin/node bench/kube/run.ts [--sizes 2,4] [--rest 10]
// Writes bench/results/kube.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalCluster } from '../../operator/src/local/cluster.ts';
import { type LocalKube, nodeName } from '../../operator/src/local/spec.ts';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
};
const SIZES = (arg('--sizes') ?? '2,4,8,16,20').split(',').map(Number);
const REST_S = Number(arg('--rest') ?? 10);
const KEY = '0123456789abcdef';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Row {
  nodes: number;
  pods: number;
  joinS: number;
  convergeS: number;
  failoverS: number;
  framesPerS: number;
  falseNotReady: number;
  hostCores: number;
  load1: number;
}

async function measure(n: number, disk: { path: string; key: string }): Promise<Row> {
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
  const c = await LocalCluster.start(
    { spec, key: KEY, kubeDisk: disk.path, kubeDiskKey: disk.key, dir, vncBase: null },
    false,
  );
  try {
    const t0 = Date.now();
    await c.startAll(); // plane, nodes, and returns once every node is Ready at the plane
    const joinS = (Date.now() - t0) / 1000;
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
    const load1 = os.loadavg()[0];

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
    const falseNotReady = c
      .view()
      .nodes.filter((x) => x.name !== last)
      .reduce((s, x) => s + x.flaps, 0);
    return { nodes: n, pods, joinS, convergeS, failoverS, framesPerS, falseNotReady, hostCores, load1 };
  } finally {
    await c.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const disk = await buildKubeDisk();
const rows: Row[] = [];
for (const n of SIZES) {
  const r = await measure(n, disk);
  rows.push(r);
  console.log(
    `${n} nodes: join ${r.joinS.toFixed(1)} s, converge ${r.convergeS.toFixed(1)} s, failover ${r.failoverS.toFixed(1)} s, ` +
      `${r.framesPerS.toFixed(1)} frames/s, false NotReady ${r.falseNotReady}, host ${r.hostCores.toFixed(2)} cores (load ${r.load1.toFixed(1)})`,
  );
}
const table = [
  '| nodes | pods | converge | failover | frames per second on the air | false NotReady | host cores (whole cluster) | load average |',
  '|---|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.nodes} | ${r.pods} | ${r.convergeS.toFixed(1)} s | ${r.failoverS.toFixed(1)} s | ${r.framesPerS.toFixed(1)} | ${r.falseNotReady} | ${r.hostCores.toFixed(2)} | ${r.load1.toFixed(1)} |`,
  ),
].join('\n');
console.log(`\n${table}`);
const out = path.join(import.meta.dirname, '../results/kube.json');
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(
  out,
  `${JSON.stringify({ host: { cpus: os.cpus().length, node: process.version }, restS: REST_S, rows }, null, 2)}\n`,
);
console.log(`written ${out}`);
process.exit(0);
