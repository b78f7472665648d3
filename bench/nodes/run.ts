// Several real nodes (hack/nodes-up.sh, run here as root): node join time, memory and CPU of one
// more worker node, a 5-node OberonKube apply → Ready on 1 vs all nodes, and a node's power cut →
// converged again. Prints figures and writes nodes.json (bench/results/ with --save; results.ts).
// Usage: node bench/nodes/run.ts [--nodes 3] [--steady-s 20] [--save]
// Starts and stops its own cluster (it takes /tmp/retrokube-nodes.lock like the suite); needs the
// node binaries (npm run setup) and root.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { imageNameOf } from '../../test/cluster/global-setup.ts';
import { locateTestBins, REPO_ROOT } from '../../test/envtest/control-plane.ts';
import { applyOberonKube, kube, until as untilHolds } from '../cluster/kube.ts';
import { startRecording, writeResults } from '../results.ts';

const LIMITS = {
  convergeMs: 900_000, // 6 machines booting on 2 shared cores
  pollMs: 1_000,
  notReadyMs: 180_000,
} as const;
const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3' },
    'steady-s': { type: 'string', default: '20' },
    save: { type: 'boolean', default: false },
  },
});
const workers = Number(args.nodes);
const steadyS = Number(args['steady-s']);
const DIR = process.env.RETROKUBE_NODES_DIR ?? '/tmp/retrokube-nodes';
const LOCK = '/tmp/retrokube-nodes.lock';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (s: string) => console.log(`[bench/nodes ${new Date().toISOString().slice(11, 19)}] ${s}`);
const hack = (name: string, a: string[], env: NodeJS.ProcessEnv = process.env) =>
  execFileSync('bash', [join(REPO_ROOT, 'hack', name), ...a], {
    encoding: 'utf8',
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n')
    .pop() ?? '';
const bins = locateTestBins();
let kubeconfig = '';
const k = kube(bins.kubectl, () => kubeconfig);
const { kubectl, getJson } = k;
const until = (what: string, ok: () => boolean, ms: number) => untilHolds(what, ok, ms, LIMITS.pollMs);

/** RSS (KiB) and CPU ticks of worker I's own processes (containerd, kubelet, kube-proxy). */
function workerProcs(i: number): { rssKiB: number; ticks: number } {
  let rssKiB = 0;
  let ticks = 0;
  for (const p of ['containerd', 'kubelet', 'kube-proxy']) {
    const pid = readFileSync(join(DIR, 'pids', `w${i}-${p}.pid`), 'utf8').trim();
    rssKiB += Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    ticks += Number(f[11]) + Number(f[12]);
  }
  return { rssKiB, ticks };
}
/** Anonymous memory of worker I's pods (its kubelet's cgroup root). */
function workerPodsRssKiB(i: number): number {
  const stat = readFileSync(`/sys/fs/cgroup/memory/rkn-w${i}/memory.stat`, 'utf8');
  return Math.round(Number(/^total_rss (\d+)$/m.exec(stat)?.[1] ?? 0) / 1024);
}

function kubeReady(ns: string, name: string, nodes: number): boolean {
  const o = getJson(['oberonkube', '-n', ns, name]);
  const ready = (o.status?.conditions ?? []).some(
    (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
  );
  const ms = getJson(['pods', '-n', ns, '-l', 'app.kubernetes.io/name=retrokube-machine']).items;
  const podsReady = ms.every((p: { status?: { conditions?: { type: string; status: string }[] } }) =>
    (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  return (
    ready &&
    o.status?.converged === true &&
    o.status.nodes === `${nodes}/${nodes}` &&
    ms.length === nodes + 1 &&
    podsReady
  );
}

const record = startRecording();
const results: Record<string, unknown> = { workers };
try {
  writeFileSync(LOCK, `${process.pid}\n`, { flag: 'wx' });
} catch {
  console.error(
    `bench/nodes: ${LOCK} is held (pid ${readFileSync(LOCK, 'utf8').trim()}): a test run or a cluster started by hand uses the several nodes; wait for it`,
  );
  process.exit(1);
}
try {
  const archive = hack('build-image.sh', []);
  const image = imageNameOf(archive);
  say(`hack/nodes-up.sh ${workers} (images imported into every worker)`);
  let t0 = Date.now();
  kubeconfig = hack('nodes-up.sh', [String(workers)], { ...process.env, RETROKUBE_NODES_IMAGES: archive });
  results.clusterUpMs = Date.now() - t0;
  // Join time of one node: power a worker off and on (same state, images already there) until Ready.
  hack('nodes-worker.sh', ['off', String(workers)]);
  t0 = Date.now();
  hack('nodes-worker.sh', ['on', String(workers)]);
  results.nodeJoinMs = Date.now() - t0;
  say(`cluster up in ${results.clusterUpMs} ms; one node rejoins in ${results.nodeJoinMs} ms`);

  await sleep(10_000);
  const idle = Array.from({ length: workers }, (_, k) => workerProcs(k + 1));
  await sleep(steadyS * 1000);
  const after = Array.from({ length: workers }, (_, k) => workerProcs(k + 1));
  const hz = 100;
  results.perNodeProcessesRssMiB = after.map((a) => Math.round(a.rssKiB / 1024));
  results.perNodePodsRssMiB = after.map((_, k) => Math.round(workerPodsRssKiB(k + 1) / 1024));
  results.perNodeIdleCpuPercentOfCore = after.map(
    (a, k) => +(((a.ticks - idle[k].ticks) / hz / steadyS) * 100).toFixed(2),
  );
  say(
    `per node: processes ${results.perNodeProcessesRssMiB} MiB, pods ${results.perNodePodsRssMiB} MiB, idle CPU ${results.perNodeIdleCpuPercentOfCore} % of a core`,
  );

  const ns = `bench-nodes-${process.pid}`;
  kubectl(['create', 'namespace', ns]);
  const [repository, tag] = [image.slice(0, image.lastIndexOf(':')), image.slice(image.lastIndexOf(':') + 1)];
  execFileSync(
    bins.helm,
    [
      '--kubeconfig',
      kubeconfig,
      'install',
      'rk',
      'charts/retrokube',
      '-n',
      ns,
      '--set',
      `image.repository=${repository}`,
      '--set',
      `image.tag=${tag}`,
      '--set',
      'image.pullPolicy=Never',
    ],
    { cwd: REPO_ROOT, stdio: 'inherit' },
  );
  kubectl(['rollout', 'status', '-n', ns, 'deployment/rk-retrokube', '--timeout=300s']);
  const applyKube = (name: string) => applyOberonKube(k, ns, name, { nodes: 5, runtime: 'pod' });
  const gone = () =>
    getJson(['pods', '-n', ns, '-l', 'app.kubernetes.io/name=retrokube-machine']).items.length === 0;

  // One node: the others cordoned, so every machine lands on rk-w1.
  for (let i = 2; i <= workers; i++) kubectl(['cordon', `rk-w${i}`]);
  say('5-node OberonKube on 1 node');
  applyKube('one');
  results.apply5On1NodeMs = await until('5 nodes on 1', () => kubeReady(ns, 'one', 5), LIMITS.convergeMs);
  results.loadavgAt1Node = loadavg()[0];
  kubectl(['delete', 'oberonkube', '-n', ns, 'one', '--wait=true']);
  await until('machines gone', gone, 300_000);
  for (let i = 2; i <= workers; i++) kubectl(['uncordon', `rk-w${i}`]);

  say(`5-node OberonKube on ${workers} nodes`);
  applyKube('many');
  results[`apply5On${workers}NodesMs`] = await until(
    `5 nodes on ${workers}`,
    () => kubeReady(ns, 'many', 5),
    LIMITS.convergeMs,
  );
  results[`loadavgAt${workers}Nodes`] = loadavg()[0];

  // A node's power cut → converged again (out-of-service taint as soon as it is NotReady).
  const machines = getJson(['pods', '-n', ns, '-l', 'retrokube.io/role=node']).items as {
    spec: { nodeName: string };
  }[];
  const counts = new Map<string, number>();
  for (const m of machines) counts.set(m.spec.nodeName, (counts.get(m.spec.nodeName) ?? 0) + 1);
  const victim = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0];
  say(`power cut of ${victim} (${counts.get(victim)} node machines)`);
  t0 = Date.now();
  hack('nodes-worker.sh', ['off', victim.replace('rk-w', '')]);
  results.powerCutToNodeNotReadyMs = await until(
    'NotReady',
    () =>
      getJson(['node', victim]).status.conditions.find((c: { type: string }) => c.type === 'Ready')
        ?.status !== 'True',
    LIMITS.notReadyMs,
  );
  kubectl(['taint', 'node', victim, 'node.kubernetes.io/out-of-service=nodeshutdown:NoExecute']);
  await sleep(5_000); // the air notices the silence (5 s) before Ready can be judged again
  await until('converged after the power cut', () => kubeReady(ns, 'many', 5), LIMITS.convergeMs);
  results.powerCutToConvergedMs = Date.now() - t0;
  results.loadavgAtPowerCut = loadavg()[0];
  kubectl(['taint', 'node', victim, 'node.kubernetes.io/out-of-service-']);
  hack('nodes-worker.sh', ['on', victim.replace('rk-w', '')]);
  execFileSync(bins.helm, ['--kubeconfig', kubeconfig, 'uninstall', 'rk', '-n', ns, '--wait'], {
    stdio: 'ignore',
  });
} finally {
  if (kubeconfig && !process.env.RETROKUBE_NODE_KEEP) hack('nodes-down.sh', []);
  if (readFileSync(LOCK, 'utf8').trim() === String(process.pid)) rmSync(LOCK, { force: true });
}
writeResults('nodes', results, record);
console.log(JSON.stringify(results, null, 2));
