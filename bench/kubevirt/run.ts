// KubeVirt against the pod runtime on the real node (#25), side by side in one run:
//   - `kubectl apply` of a 3-node OberonKube → Ready, converged, every node heard on the air:
//     runtime pod / runtime kubevirt (rounds interleaved, the order alternating);
//   - at rest, both clusters running: node-a's machine pod against node-a's virt-launcher pod
//     (its compute container with QEMU, our hook sidecar, KubeVirt's helpers): anonymous memory
//     (cgroup total_rss: the code pages the pods share are not counted) and CPU;
//   - node-a's pod deleted (the machine pod / the VM's launcher pod) → its new pod Running →
//     node-a heard NotReady by the operator, if it ever is → Ready again, the cluster 3/3.
// Needs the node in a PID namespace of its own, KubeVirt built, and the product image imported:
//   sudo RETROKUBE_NODE_PIDNS=1 bash hack/node-up.sh && bash hack/build-kubevirt.sh &&
//   ctr -a /tmp/retrokube-node/containerd.sock -n k8s.io images import "$(bash hack/build-image.sh)"
// (this script runs hack/kubevirt-up.sh itself, and hack/kubevirt-up.sh --down at the end unless
// --keep). Prints figures and writes bench/results/kubevirt.json (with --save).
// Usage: node bench/kubevirt/run.ts [--rounds 1] [--steady-s 30] [--keep] [--save]
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { imageNameOf } from '../../test/cluster/global-setup.ts';
import { locateTestBins, REPO_ROOT } from '../../test/envtest/control-plane.ts';
import { cpuShare, podCgroup } from '../cluster/cgroup.ts';
import { applyOberonKube, installOperator, kube, until as untilHolds } from '../cluster/kube.ts';
import { startRecording, writeResults } from '../results.ts';

const record = startRecording();

const LIMITS = {
  kubevirtUpS: 1_200, // images imported, virt-operator, then virt-api/controller/handler Ready (loaded 2 cores)
  convergeMs: 900_000, // fill Jobs, launcher pods, QEMU booting under TCG, every node heard
  healMs: 600_000, // a new pod, a boot, rejoining the air
  windowMs: 6_000, // a node unheard this long is NotReady as the operator hears it (the plane: 5 s)
  goneMs: 300_000, // the garbage collector deleting an OberonKube's children
  pollMs: 500, // status polling cadence (each poll is one kubectl call)
} as const;
const NODES = 3;
const RUNTIMES = ['pod', 'kubevirt'] as const;
type Runtime = (typeof RUNTIMES)[number];

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '1' },
    'steady-s': { type: 'string', default: '30' },
    keep: { type: 'boolean', default: false },
    save: { type: 'boolean', default: false },
  },
});
const rounds = Number(args.rounds);
const steadyS = Number(args['steady-s']);
if (!(rounds >= 1 && rounds <= 5) || !(steadyS >= 5 && steadyS <= 600)) {
  console.error('bench/kubevirt: --rounds takes 1 to 5, --steady-s 5 to 600');
  process.exit(2);
}
const kubeconfig = process.env.RETROKUBE_CLUSTER_KUBECONFIG ?? '/tmp/retrokube-node/kubeconfig';
if (!existsSync(kubeconfig)) {
  console.error(
    `bench/kubevirt: no node (${kubeconfig}); start it: sudo RETROKUBE_NODE_PIDNS=1 bash hack/node-up.sh`,
  );
  process.exit(1);
}
const hack = (script: string, a: string[] = []): string =>
  execFileSync('bash', [join(REPO_ROOT, 'hack', script), ...a], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, RETROKUBE_KUBEVIRT_WAIT_S: String(LIMITS.kubevirtUpS) },
  }).trim();
try {
  hack('build-kubevirt.sh', ['--check']);
} catch {
  console.error('bench/kubevirt: KubeVirt is not built: run bash hack/build-kubevirt.sh first');
  process.exit(1);
}

const bins = locateTestBins();
const imageRef = imageNameOf(hack('build-image.sh', ['--print-path']));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (s: string) => console.log(`[bench/kubevirt ${new Date().toISOString().slice(11, 19)}] ${s}`);
const k = kube(bins.kubectl, () => kubeconfig);
const { kubectl, getJson } = k;
const until = (what: string, ok: () => boolean, ms: number) => untilHolds(what, ok, ms, LIMITS.pollMs);

interface Status {
  nodes?: string;
  converged?: boolean;
  conditions?: { type: string; status: string }[];
  nodeTable?: { name: string; ready: boolean }[];
}
const status = (ns: string, name: string): Status => getJson(['oberonkube', '-n', ns, name]).status ?? {};
const readyAll = (st: Status): boolean =>
  st.nodes === `${NODES}/${NODES}` &&
  st.converged === true &&
  (st.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const nodeA = (st: Status) => (st.nodeTable ?? []).find((r) => r.name === 'node-a');

/** node-a's pod: the machine pod of the pod runtime, the VM's virt-launcher pod of kubevirt. */
const podSelector = (name: string, runtime: Runtime): string =>
  runtime === 'pod'
    ? `statefulset.kubernetes.io/pod-name=rk-m-${name}-node-a-0`
    : `vm.kubevirt.io/name=rk-m-${name}-node-a`;

function nodeAPod(ns: string, name: string, runtime: Runtime): { name: string; uid: string } {
  const selector = podSelector(name, runtime);
  const items = getJson(['pods', '-n', ns, '-l', selector]).items.filter(
    (p: { metadata: { deletionTimestamp?: string } }) => !p.metadata.deletionTimestamp,
  );
  if (items.length !== 1) throw new Error(`${name}: ${items.length} live pods of node-a (${selector})`);
  return { name: items[0].metadata.name, uid: items[0].metadata.uid };
}

const apply = (ns: string, name: string, runtime: Runtime) =>
  applyOberonKube(k, ns, name, { nodes: NODES, runtime, deployments: 'web 6 Ticker' });

interface Round {
  order: Runtime[];
  applyToReadyS: Record<Runtime, number>;
  atRest: Record<Runtime, { rssMiB: number; cpuPercentOfCore: number }>;
  /** Seconds from the deletion; null: the node was never heard NotReady (so never "again"). */
  restart: Record<
    Runtime,
    { newPodRunningS: number | null; notReadyHeardS: number | null; readyAgainS: number | null }
  >;
  load: number[];
}

const ns = `bench-kubevirt-${process.pid}`;
const results: Record<string, unknown> = { bench: 'kubevirt', image: imageRef, nodes: NODES, steadyS };
let kubevirtUp = false;
const t0 = Date.now();
say('hack/kubevirt-up.sh: KubeVirt v1.8.4 Deployed (our images; a few minutes the first time)');
hack('kubevirt-up.sh');
kubevirtUp = true;
results.kubevirtUpS = Math.round((Date.now() - t0) / 100) / 10;
kubectl(['create', 'namespace', ns]);
try {
  installOperator(k, { helm: bins.helm, kubeconfig, repo: REPO_ROOT }, ns, imageRef, [
    'kubevirt.enabled=true',
  ]);
  const runs: Round[] = [];
  for (let r = 0; r < rounds; r++) {
    const order: Runtime[] = r % 2 === 0 ? ['pod', 'kubevirt'] : ['kubevirt', 'pod'];
    const round: Round = {
      order,
      applyToReadyS: { pod: 0, kubevirt: 0 },
      atRest: { pod: { rssMiB: 0, cpuPercentOfCore: 0 }, kubevirt: { rssMiB: 0, cpuPercentOfCore: 0 } },
      restart: {
        pod: { newPodRunningS: null, notReadyHeardS: null, readyAgainS: null },
        kubevirt: { newPodRunningS: null, notReadyHeardS: null, readyAgainS: null },
      },
      load: [loadavg()[0]],
    };
    const name = (rt: Runtime) => `${rt === 'pod' ? 'p' : 'v'}${r}`;
    // One at a time: each apply has the host to itself (the other cluster is not yet there).
    for (const rt of order) {
      say(`round ${r + 1}: apply ${name(rt)}, ${NODES} nodes, runtime ${rt}`);
      const a0 = Date.now();
      apply(ns, name(rt), rt);
      await until(
        `${name(rt)} Ready ${NODES}/${NODES}`,
        () => readyAll(status(ns, name(rt))),
        LIMITS.convergeMs,
      );
      round.applyToReadyS[rt] = Math.round((Date.now() - a0) / 100) / 10;
      say(
        `${name(rt)}: Ready, ${NODES}/${NODES} heard, after ${round.applyToReadyS[rt]} s (load ${loadavg()[0].toFixed(1)})`,
      );
    }
    say(`at rest: ${steadyS} s of cgroup samples of node-a's pod, both runtimes at once`);
    await sleep(15_000); // both settled (the last one just turned Ready)
    const cgs = RUNTIMES.map((rt) => podCgroup(nodeAPod(ns, name(rt), rt).uid));
    const cpu = await Promise.all(cgs.map((cg) => cpuShare(cg.cpuNs, steadyS)));
    RUNTIMES.forEach((rt, i) => {
      round.atRest[rt] = {
        rssMiB: Math.round(cgs[i].rssBytes() / 2 ** 20),
        cpuPercentOfCore: +(cpu[i] * 100).toFixed(2),
      };
      say(
        `node-a at rest, ${rt}: ${round.atRest[rt].rssMiB} MiB RSS, ${round.atRest[rt].cpuPercentOfCore} % of a core`,
      );
    });
    for (const rt of order) {
      const victim = nodeAPod(ns, name(rt), rt);
      say(`${name(rt)}: delete node-a's pod ${victim.name}`);
      const d0 = Date.now();
      kubectl(['delete', 'pod', '-n', ns, victim.name, '--wait=false']);
      // The pod runtime's machine is back, from its boot image, within the plane's window: its
      // node may never be heard NotReady. Ready is then only believed once the new pod has run a
      // whole window (what is heard by then is the new machine's); after a NotReady it is news.
      let notReadyAt: number | null = null;
      let newPodAt: number | null = null;
      const newPodRunning = (): boolean => {
        const p = getJson(['pods', '-n', ns, '-l', podSelector(name(rt), rt)]).items;
        return p.some(
          (x: { metadata: { uid: string }; status: { phase?: string } }) =>
            x.metadata.uid !== victim.uid && x.status.phase === 'Running',
        );
      };
      await until(
        `${name(rt)} node-a back in a new pod, Ready ${NODES}/${NODES}`,
        () => {
          const st = status(ns, name(rt));
          if (notReadyAt === null && nodeA(st)?.ready === false) notReadyAt = Date.now();
          if (newPodAt === null && newPodRunning()) newPodAt = Date.now();
          const heardNew =
            notReadyAt !== null || (newPodAt !== null && Date.now() - newPodAt >= LIMITS.windowMs);
          return newPodAt !== null && heardNew && readyAll(st) && nodeA(st)?.ready === true;
        },
        LIMITS.healMs,
      );
      const secondsSince = (t: number | null) => (t === null ? null : Math.round((t - d0) / 100) / 10);
      round.restart[rt] = {
        newPodRunningS: secondsSince(newPodAt),
        notReadyHeardS: secondsSince(notReadyAt),
        readyAgainS: notReadyAt === null ? null : secondsSince(Date.now()),
      };
      const r = round.restart[rt];
      say(
        `${name(rt)}: new pod Running after ${r.newPodRunningS} s; ${r.notReadyHeardS === null ? 'never heard NotReady' : `NotReady heard after ${r.notReadyHeardS} s, Ready again after ${r.readyAgainS} s`}`,
      );
    }
    round.load.push(loadavg()[0]);
    for (const rt of order)
      kubectl(['delete', 'oberonkube', '-n', ns, name(rt), '--wait=true', '--timeout=300s']);
    await until(
      'the machines gone',
      () =>
        getJson(['pods,vmi', '-n', ns]).items.every(
          (o: { metadata: { name: string } }) => !o.metadata.name.startsWith('rk-m-'),
        ),
      LIMITS.goneMs,
    );
    runs.push(round);
  }
  results.runs = runs;
} finally {
  try {
    execFileSync(bins.helm, ['--kubeconfig', kubeconfig, 'uninstall', 'rk', '-n', ns, '--wait'], {
      stdio: 'ignore',
    });
  } catch {}
  kubectl(['delete', 'namespace', ns, '--wait=false']);
  if (kubevirtUp && !args.keep) hack('kubevirt-up.sh', ['--down']);
}
writeResults('kubevirt', results, record);
console.log(JSON.stringify(results, null, 2));
