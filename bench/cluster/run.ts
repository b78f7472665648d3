// Benchmarks on the real node (hack/node-up.sh; or any cluster of RETROKUBE_CLUSTER_KUBECONFIG
// whose nodes are this machine, since the cgroup figures are read from /sys/fs/cgroup here):
//   - `kubectl apply` of an OberonKube → Ready and converged as heard on the air, 3 and 10 nodes;
//   - the operator pod's RSS and CPU at steady state (cgroup figures);
//   - one idle machine pod's CPU (its cgroup) against the same machine run as a local process.
// Prints figures and writes bench/results/cluster.json.
// Usage: node bench/cluster/run.ts [--nodes 3,10] [--steady-s 30]
// Needs the node up and the image imported: npx vitest run --project cluster does both, or
//   bash hack/node-up.sh && ctr -a /tmp/retrokube-node/containerd.sock -n k8s.io images import "$(bash hack/build-image.sh)"
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { imageNameOf } from '../../test/cluster/global-setup.ts';
import { locateTestBins, REPO_ROOT } from '../../test/envtest/control-plane.ts';
import { startRecording, writeResults } from '../results.ts';
import { cpuShare, podCgroup } from './cgroup.ts';
import { applyOberonKube, installOperator, kube } from './kube.ts';

const record = startRecording();

const LIMITS = {
  convergeMs: 900_000, // 10 machines booting on 2 shared cores: minutes, not hours
  pollMs: 500, // status polling cadence (each poll is one kubectl call)
  goneMs: 300_000, // an OberonKube's children deleted by the garbage collector
} as const;

const { values: args } = parseArgs({
  options: {
    nodes: { type: 'string', default: '3,10' },
    'steady-s': { type: 'string', default: '30' },
    save: { type: 'boolean', default: false },
  },
});
const sizes = (args.nodes ?? '3,10').split(',').map(Number);
const steadyS = Number(args['steady-s']);
const kubeconfig = process.env.RETROKUBE_CLUSTER_KUBECONFIG ?? '/tmp/retrokube-node/kubeconfig';
if (!existsSync(kubeconfig)) {
  console.error(`bench/cluster: no cluster (${kubeconfig}); start the node: sudo bash hack/node-up.sh`);
  process.exit(1);
}
const bins = locateTestBins();
const imageRef = imageNameOf(
  execFileSync('bash', [join(REPO_ROOT, 'hack/build-image.sh'), '--print-path'], { encoding: 'utf8' }).trim(),
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (s: string) => console.log(`[bench/cluster ${new Date().toISOString().slice(11, 19)}] ${s}`);
const k = kube(bins.kubectl, () => kubeconfig);
const { kubectl, getJson } = k;

function heard(ns: string, name: string, nodes: number): boolean {
  const o = getJson(['oberonkube', '-n', ns, name]);
  const ready = (o.status?.conditions ?? []).some(
    (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
  );
  return ready && o.status.converged === true && o.status.nodes === `${nodes}/${nodes}`;
}

const ns = `bench-cluster-${process.pid}`;
const results: Record<string, unknown> = {
  bench: 'cluster',
  date: new Date().toISOString(),
  image: imageRef,
  loadavgStart: loadavg()[0],
};
kubectl(['create', 'namespace', ns]);
let local: ChildProcess | undefined;
const work = mkdtempSync(join(tmpdir(), 'rk-bench-cluster-'));
try {
  say(`helm install into ${ns} (${imageRef}); CRDs applied from crds/ (a test run may own them)`);
  installOperator(k, { helm: bins.helm, kubeconfig, repo: REPO_ROOT }, ns, imageRef);
  for (const n of sizes) {
    const name = `b${n}`;
    say(`apply OberonKube ${name}: ${n} nodes, runtime pod (expect ~1-5 min)`);
    const t0 = Date.now();
    applyOberonKube(k, ns, name, { nodes: n, runtime: 'pod' });
    while (!heard(ns, name, n)) {
      if (Date.now() - t0 > LIMITS.convergeMs)
        throw new Error(`${name} not Ready after ${LIMITS.convergeMs} ms`);
      await sleep(LIMITS.pollMs);
    }
    const ms = Date.now() - t0;
    results[`applyToReady${n}NodesMs`] = ms;
    results[`loadavgAt${n}Nodes`] = loadavg()[0];
    say(
      `${name}: Ready, ${n}/${n} nodes heard, after ${(ms / 1000).toFixed(1)} s (load ${loadavg()[0].toFixed(1)})`,
    );

    if (n === sizes[0]) {
      say(`steady state: ${steadyS} s of cgroup samples`);
      const op = getJson(['pods', '-n', ns, '-l', 'app.kubernetes.io/name=retrokube']).items[0];
      const machine = getJson(['pod', '-n', ns, `rk-m-${name}-node-a-0`]);
      const opCg = podCgroup(op.metadata.uid);
      const mCg = podCgroup(machine.metadata.uid);
      const [opCpu, mCpu] = await Promise.all([cpuShare(opCg.cpuNs, steadyS), cpuShare(mCg.cpuNs, steadyS)]);
      results.operatorPodRssMiB = Math.round(opCg.rssBytes() / 2 ** 20);
      results.operatorPodCpuPercentOfCore = +(opCpu * 100).toFixed(2);
      results.idleMachinePodCpuPercentOfCore = +(mCpu * 100).toFixed(2);
      results.idleMachinePodRssMiB = Math.round(mCg.rssBytes() / 2 ** 20);
      say(
        `operator pod: ${results.operatorPodRssMiB} MiB RSS, ${results.operatorPodCpuPercentOfCore} % of a core; machine pod node-a: ${results.idleMachinePodCpuPercentOfCore} % of a core`,
      );

      // The same machine as a local process: the node-a pod's own arguments, its disk copied out
      // of its volume, on the same relay (its Service's ClusterIP, reached through kube-proxy).
      // It joins as node-x (an extra node of the same cluster, same role, same work) for the window.
      const sts = getJson(['statefulset', '-n', ns, `rk-m-${name}-node-a`]);
      const c = sts.spec.template.spec.containers[0];
      const relay = getJson(['service', '-n', ns, `rk-air-${name}-air`]).spec.clusterIP;
      const key = Buffer.from(
        getJson(['secret', '-n', ns, `rk-kube-${name}-key`]).data.key,
        'base64',
      ).toString();
      const disk = join(work, 'oberon.dsk');
      copyFileSync((await buildKubeDisk()).cachePath, disk);
      const localArgs: string[] = [];
      for (let i = 0; i < c.args.length; i++) {
        const a: string = c.args[i];
        if (a === '--vnc' || a === '--vnc-host') i++;
        else if (a === '/disk/oberon.dsk') localArgs.push(disk);
        else if (a === '--status-file') {
          localArgs.push(a, join(work, 'status'));
          i++;
        } else if (c.args[i - 1] === '--air') localArgs.push(`${relay}:7524`);
        else localArgs.push(a.replaceAll('$(RK_KEY)', key).replaceAll('node-a', 'node-x'));
      }
      local = spawn(join(REPO_ROOT, 'node_modules/.bin/node'), ['operator/src/cli/main.ts', ...localArgs], {
        cwd: REPO_ROOT,
        stdio: 'ignore',
      });
      const pid = local.pid as number;
      const procCpuNs = () => {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        return ((Number(f[11]) + Number(f[12])) * 1e9) / 100; // utime + stime, clock ticks of 10 ms
      };
      await sleep(15_000); // boot and settle, as the pod had
      const localCpu = await cpuShare(procCpuNs, steadyS);
      results.sameMachineLocalProcessCpuPercentOfCore = +(localCpu * 100).toFixed(2);
      say(
        `the same machine as a local process: ${results.sameMachineLocalProcessCpuPercentOfCore} % of a core`,
      );
      local.kill('SIGKILL');
      local = undefined;
    }
    say(`delete ${name}; waiting for the garbage collector`);
    kubectl(['delete', 'oberonkube', '-n', ns, name, '--wait=true', '--timeout=300s']);
    const g0 = Date.now();
    while (getJson(['pods', '-n', ns, '-l', 'app.kubernetes.io/name=retrokube-machine']).items.length > 0) {
      if (Date.now() - g0 > LIMITS.goneMs)
        throw new Error(`${name}: machine pods still there after ${LIMITS.goneMs} ms`);
      await sleep(1000);
    }
  }
} finally {
  local?.kill('SIGKILL');
  rmSync(work, { recursive: true, force: true });
  try {
    execFileSync(bins.helm, ['--kubeconfig', kubeconfig, 'uninstall', 'rk', '-n', ns, '--wait'], {
      stdio: 'ignore',
    });
  } catch {}
  kubectl(['delete', 'namespace', ns, '--wait=false']);
}
results.loadavgEnd = loadavg()[0];
writeResults('cluster', results, record);
console.log(JSON.stringify(results, null, 2));
