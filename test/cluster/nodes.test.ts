// Several real nodes (hack/nodes-up.sh): one control plane and three worker nodes on this machine,
// started once for this file while the machine's lock of the several nodes is held (the `nodes`
// project's global setup, nodes-setup.ts). Proves the cluster itself (node IPs, pod networks routed
// between nodes, DNS, a volume any node can take), then an OberonKube of 5 node machines spread over
// the nodes with its plane, a drain that keeps to the machines' disruption budget, a whole node's
// power cut (its machines NotReady on the air, their pods moved, the cluster converged, the node
// back and Ready), and a SheetCluster whose agents spread over the nodes: a node's power cut moves
// its tickers to the other agents through the sheet's own scheduler, nothing twice; and a Rollout
// over three OberonKubes spread on the nodes: a manual canary aborted and heard rolled back, then a
// rolling walk whose operator pod is killed mid-way and resumes from status, no cluster changed twice.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import {
  apiProxy,
  apply,
  type Chart,
  type Deep,
  deleteNamespace,
  freshNamespace,
  getJson,
  installChart,
  kubectl,
  podReady,
  pods,
  run,
  secretValue,
  skipReason,
  useKubeconfig,
  waitFor,
} from './harness.ts';

const WORKERS = 3;
const LIMITS = {
  upMs: 600_000, // nodes-up: ~1-2 min quiet; images imported into every worker
  convergeMs: 600_000, // 6 machines booted and heard on a loaded 2-core machine
  recoverMs: 600_000, // a node's machines moved, seeded, booted and heard again
  nodeNotReadyMs: 120_000, // node-monitor grace 20 s (hack/nodes-up.sh) plus a loaded controller
} as const;
const KUBE = 'k';
const NODE_MACHINES = 'retrokube.io/role=node';
const HACK = join(REPO_ROOT, 'hack');

function hack(name: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const out = execFileSync('bash', [join(HACK, name), ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env,
    timeout: LIMITS.upMs,
  });
  return out.trim().split('\n').pop() ?? '';
}

/**
 * Cuts the power of worker `name` (hack/nodes-worker.sh off). `restore` — always called, in a
 * `finally`, so one failed case leaves the next a whole cluster — lifts an out-of-service taint
 * a case may have set and powers the worker on again (the script waits until it is Ready).
 */
function powerCut(name: string): { restore(): Promise<void> } {
  const index = name.replace('rk-w', '');
  hack('nodes-worker.sh', ['off', index]);
  return {
    async restore() {
      await kubectl(['taint', 'node', name, 'node.kubernetes.io/out-of-service-']).catch(() => '');
      hack('nodes-worker.sh', ['on', index]);
    },
  };
}

const cond = (o: Deep, type: string) =>
  (o?.status?.conditions ?? []).find((c: Deep) => c.type === type)?.status;
const nodeOf = (p: Deep): string => p.spec?.nodeName ?? '';

/**
 * Each group installs a cluster-wide operator of its own; left running, it reconciles the next
 * group's objects too, with another key (seen: the Rollout group's OberonKubes heard thousands of
 * "forged frames" and never got Ready). So a group ends its operator, then its namespace.
 */
async function endGroup(chart: Chart | undefined, ns: string | undefined): Promise<void> {
  if (process.env.RETROKUBE_NODE_KEEP) return;
  await chart?.uninstall();
  if (ns) await deleteNamespace(ns);
}

/** Every worker node name, and its InternalIP. */
async function workerNodes(): Promise<{ name: string; ip: string; ready: boolean }[]> {
  return (await getJson(['nodes'])).items.map((n: Deep) => ({
    name: n.metadata.name,
    ip: n.status.addresses.find((a: Deep) => a.type === 'InternalIP')?.address,
    ready: cond(n, 'Ready') === 'True',
  }));
}

// The `nodes` project's global setup (nodes-setup.ts) says why when it cannot run (not root, the
// suite pointed at another cluster); under CI=true that is a failure, never a skip.
describe.skipIf(skipReason())('several real nodes (hack/nodes-up.sh)', () => {
  let kubeconfig: string;
  let ns: string;

  beforeAll(async () => {
    const archive = hack('build-image.sh', []);
    const t0 = Date.now();
    kubeconfig = hack('nodes-up.sh', [String(WORKERS)], { ...process.env, RETROKUBE_NODES_IMAGES: archive });
    console.log(`[nodes] ${WORKERS} worker nodes up in ${Math.round((Date.now() - t0) / 1000)} s`);
    useKubeconfig(kubeconfig);
  }, LIMITS.upMs);
  afterAll(() => {
    useKubeconfig(undefined);
    if (!kubeconfig) return;
    if (process.env.RETROKUBE_NODE_KEEP) console.log(`[nodes] cluster left running: ${kubeconfig}`);
    else hack('nodes-down.sh', []);
  });

  it('each worker has its own node IP and pod network; pods on different nodes talk directly and by Service name', async () => {
    const nodes = await workerNodes();
    expect(nodes.map((n) => [n.name, n.ip, n.ready])).toEqual(
      Array.from({ length: WORKERS }, (_, i) => [`rk-w${i + 1}`, `10.250.0.${11 + i}`, true]),
    );
    ns = JSON.parse(
      await kubectl(['create', '-o', 'json', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { generateName: 'nodes-' } }),
      }),
    ).metadata.name;
    const image = await kubectl([
      '-n',
      'kube-system',
      'get',
      'deploy',
      'coredns',
      '-o',
      'jsonpath={..image}',
    ]);
    const pod = (name: string, node: string, script: string, labels: Record<string, string> = {}) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns, labels },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: 'c', image, imagePullPolicy: 'Never', command: ['/bin/sh', '-c', script] }],
      },
    });
    await apply(
      pod(
        'web',
        'rk-w1',
        'mkdir -p /tmp/www && echo "served by $(hostname)" > /tmp/www/index.html && exec busybox httpd -f -p 8080 -h /tmp/www',
        { app: 'web' },
      ),
    );
    await apply(pod('client', 'rk-w2', 'exec sleep 3600'));
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: ns },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    });
    const web = await waitFor(
      'the web pod running',
      async () => {
        const p = await getJson(['pod', '-n', ns, 'web']);
        return p.status?.phase === 'Running' && p;
      },
      120_000,
    );
    await waitFor(
      'the client pod running',
      async () => (await getJson(['pod', '-n', ns, 'client'])).status?.phase === 'Running',
      120_000,
    );
    expect(web.status.podIP).toMatch(/^10\.251\.1\./); // worker 1's pod network
    const client = await getJson(['pod', '-n', ns, 'client']);
    expect(client.status.podIP).toMatch(/^10\.251\.2\./);
    // busybox's own HTTP client (nc: Debian's static busybox wget crashed in these pods).
    const get = (host: string, port: number) =>
      kubectl([
        'exec',
        '-n',
        ns,
        'client',
        '--',
        'sh',
        '-c',
        `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | busybox nc -w 5 ${host} ${port} | tail -1`,
      ]).catch(() => '');
    // Pod to pod across nodes: worker 2's namespace routes 10.251.1.0/24 to worker 1's node IP.
    expect(await waitFor('pod to pod', () => get(web.status.podIP, 8080), 60_000)).toBe('served by web\n');
    // Cluster DNS (CoreDNS on whichever node) and the Service's ClusterIP (kube-proxy of worker 2).
    expect(await waitFor('by Service name', () => get(`web.${ns}.svc.cluster.local`, 80), 60_000)).toBe(
      'served by web\n',
    );
  });

  it('a volume of the default StorageClass is tied to no node (the nodes share this machine’s disk)', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '8Mi' } } },
    });
    const image = await kubectl([
      '-n',
      'kube-system',
      'get',
      'deploy',
      'coredns',
      '-o',
      'jsonpath={..image}',
    ]);
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'writer', namespace: ns },
      spec: {
        // Through the scheduler (not nodeName): the class binds a volume when its first pod is
        // scheduled (WaitForFirstConsumer), and a pod placed by nodeName is never scheduled.
        nodeSelector: { 'kubernetes.io/hostname': 'rk-w3' },
        restartPolicy: 'Never',
        containers: [
          {
            name: 'c',
            image,
            imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c', 'echo kept > /data/f'],
            volumeMounts: [{ name: 'd', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }],
      },
    });
    await waitFor(
      'the writer done',
      async () => (await getJson(['pod', '-n', ns, 'writer'])).status?.phase === 'Succeeded',
      180_000,
    );
    const pvc = await getJson(['pvc', '-n', ns, 'data']);
    const pv = await getJson(['pv', pvc.spec.volumeName]);
    expect(pv.spec.nodeAffinity).toBeUndefined();
  });

  describe('an OberonKube of 5 node machines', () => {
    let kns: string;
    let kchart: Chart | undefined;
    const kube = () => getJson(['oberonkube', '-n', kns, KUBE]);
    const machinePods = () => pods(kns, 'app.kubernetes.io/name=retrokube-machine');
    /** How many of the given pods each Kubernetes node holds. */
    const perHost = (ps: Deep[]) => {
      const m = new Map<string, number>();
      for (const p of ps) m.set(nodeOf(p), (m.get(nodeOf(p)) ?? 0) + 1);
      return m;
    };
    /** Ready and converged on the air with every node heard, and every machine pod Ready. */
    const allUp = async () => {
      const o = await kube();
      const ms = await machinePods();
      return (
        cond(o, 'Ready') === 'True' &&
        o.status?.converged === true &&
        o.status.nodes === '5/5' &&
        ms.length === 6 &&
        ms.every(podReady) &&
        o
      );
    };

    beforeAll(async () => {
      kns = JSON.parse(
        await kubectl(['create', '-o', 'json', '-f', '-'], {
          input: JSON.stringify({
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { generateName: 'nodes-kube-' },
          }),
        }),
      ).metadata.name;
      kchart = await installChart(kns, `rk-${kns.split('-').pop()}`);
    }, LIMITS.upMs);
    afterAll(() => endGroup(kchart, kns), LIMITS.upMs);

    it('spreads its node machines over all three nodes and budgets them one at a time', async () => {
      await apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonKube',
        metadata: { name: KUBE, namespace: kns },
        spec: { nodes: 5, runtime: 'pod', deployments: 'web 5 Ticker' },
      });
      await waitFor('5 nodes heard Ready, converged, 6 machine pods Ready', allUp, LIMITS.convergeMs);
      const nodesUsed = new Set((await pods(kns, NODE_MACHINES)).map(nodeOf));
      expect(nodesUsed.size).toBe(WORKERS); // soft spread of the plane and its nodes: 2 + 2 + 2
      expect(Math.max(...perHost(await machinePods()).values())).toBeLessThanOrEqual(3);
      const pdb = await getJson(['pdb', '-n', kns, `rk-kube-${KUBE}-nodes`]);
      expect(pdb.status).toMatchObject({ expectedPods: 5, currentHealthy: 5, disruptionsAllowed: 1 });
    });

    it(
      'kubectl drain evicts a node’s machines one at a time (the budget) and the cluster converges again',
      async () => {
        // A node with two node machines and neither the relay nor the operator (with 2 + 2 + 1 and a
        // plane, there is one): evicting the relay silences the air, its machines go unready, and
        // the budget rightly lets unhealthy pods go (AlwaysAllow) — not the case under test here.
        const perNode = perHost(await pods(kns, NODE_MACHINES));
        const target = await busiestHost(perNode, 2);
        expect(perNode.get(target)).toBeGreaterThanOrEqual(2);
        await waitFor(
          'the budget allowing one disruption, all five healthy',
          async () => {
            const st = (await getJson(['pdb', '-n', kns, `rk-kube-${KUBE}-nodes`])).status;
            return st?.currentHealthy === 5 && st.disruptionsAllowed === 1;
          },
          LIMITS.convergeMs,
        );
        try {
          await drainOne(target);
        } finally {
          await kubectl(['uncordon', target]);
        }
      },
      2 * LIMITS.recoverMs,
    );

    /** kubectl drain of `target`: one machine at a time, then converged again on the others. */
    async function drainOne(target: string): Promise<void> {
      const r = await run(
        inject('clusterTools').kubectl,
        [
          '--kubeconfig',
          kubeconfig,
          'drain',
          target,
          '--ignore-daemonsets',
          '--delete-emptydir-data',
          '--force', // the bare test pods of the first test
          '--timeout=480s',
        ],
        { timeoutMs: 500_000, allowFail: true },
      );
      expect(r.code, r.stderr).toBe(0);
      // The second machine waited for the first one's replacement: the API refused its eviction.
      expect(`${r.stdout}${r.stderr}`).toMatch(/disruption budget/);
      expect((await pods(kns, NODE_MACHINES)).filter((p) => nodeOf(p) === target)).toHaveLength(0);
      await waitFor('converged after the drain', allUp, LIMITS.recoverMs);
      // Two hosts left for six machines (the plane and five nodes): spread 3 + 3, not stacked. The
      // plane's anti-affinity once pushed four node machines onto the host without it.
      expect(Math.max(...perHost(await machinePods()).values())).toBeLessThanOrEqual(3);
    }

    /**
     * The host to fault: one holding at least `min` node machines, and of those one without the
     * operator or the relay when there is one (their own losses are another case: with the operator
     * on the dead node, status stays as it was until Kubernetes evicts the operator's pod after its
     * 300-s not-ready toleration), then the one holding the most.
     */
    async function busiestHost(counts: Map<string, number>, min = 1): Promise<string> {
      const busy = new Set(
        [
          ...(await pods(kns, 'app.kubernetes.io/name=retrokube')),
          ...(await pods(kns, 'app.kubernetes.io/component=air-relay')),
        ].map(nodeOf),
      );
      const [host] = [...counts.entries()]
        .filter(([, n]) => n >= min)
        .sort((a, b) => Number(busy.has(a[0])) - Number(busy.has(b[0])) || b[1] - a[1])[0] ?? [''];
      console.log(
        `[nodes] faulting ${host}: node machines per host ${JSON.stringify([...counts])}, operator/relay on ${[...busy].join(', ')}`,
      );
      return host;
    }

    it(
      'a node’s power cut: its machines NotReady on the air, their pods moved, converged; the node rejoins',
      async () => {
        // The operator's and the relay's own losses are healed by their Deployments; this case is
        // about the machines, so it spares those where it can (busiestHost).
        const victim = await busiestHost(perHost(await pods(kns, NODE_MACHINES)));
        const cut = powerCut(victim);
        try {
          await machinesMove(victim);
        } finally {
          await cut.restore();
        }
        expect((await workerNodes()).every((n) => n.ready)).toBe(true);
        expect(await waitFor('still converged', allUp, LIMITS.convergeMs)).toBeTruthy();
      },
      4 * LIMITS.recoverMs,
    );

    /** The machines of the dead node `victim` heard lost, moved, and the cluster converged again. */
    async function machinesMove(victim: string): Promise<void> {
      await waitFor(
        `${victim} NotReady`,
        async () =>
          (await getJson(['node', victim])).status.conditions.find((c: Deep) => c.type === 'Ready')
            ?.status !== 'True',
        LIMITS.nodeNotReadyMs,
      );
      // On the air: the machines of that node stop their heartbeats.
      await waitFor(
        'fewer nodes heard Ready',
        async () => ((await kube()).status?.readyNodes ?? 5) < 5,
        LIMITS.recoverMs,
      );
      // The kubelet is gone, so the evicted pods can never confirm they stopped: the StatefulSets
      // would wait for them forever. The node is declared out of service (Kubernetes' non-graceful
      // node shutdown), the pod garbage collector removes them, and the machines start elsewhere.
      await kubectl(['taint', 'node', victim, 'node.kubernetes.io/out-of-service=nodeshutdown:NoExecute']);
      await waitFor(
        'no machine pod left on the dead node',
        async () => (await machinePods()).every((p) => nodeOf(p) !== victim),
        LIMITS.recoverMs,
      );
      await waitFor('converged on the live nodes', allUp, LIMITS.recoverMs);
    }
  });
  describe('a SheetCluster of 3 agents', () => {
    const NAME = 'farm';
    const CHILD = `rk-sheets-${NAME}`;
    const AGENTS = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=node`;
    const APISERVER = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=apiserver`;
    const AGENT_NAMES = ['node-0', 'node-1', 'node-2'];
    const TICKERS = 6;
    const TTL_S = 15; // the sheet's failover TTL under test: long enough for a loaded 2-core machine
    type Row = Record<string, unknown>;
    let sns: string;
    let schart: Chart | undefined;
    let proxy: { url: string; close(): void } | undefined;
    let sheet: SheetsClient;
    const rows = (kind: string): Promise<Row[] | undefined> => sheet.get(kind).catch(() => undefined);
    /** Every ticker Running on an agent of `on`, exactly TICKERS of them, no name twice. */
    const tickersOn = async (on: string[]): Promise<Row[] | undefined> => {
      const t = (await rows('pods'))?.filter((p) => p.deployment === 'ticker');
      return t &&
        t.length === TICKERS &&
        new Set(t.map((p) => p.name)).size === TICKERS &&
        t.every((p) => p.phase === 'Running' && on.includes(String(p.node)))
        ? t
        : undefined;
    };
    const nodesInSheet = async (want: Record<string, string>): Promise<boolean> => {
      const n = await rows('nodes');
      return (
        !!n && Object.entries(want).every(([name, st]) => n.some((r) => r.name === name && r.status === st))
      );
    };

    beforeAll(async () => {
      sns = await freshNamespace('nodes-sheets');
      schart = await installChart(sns, `rk-${sns.split('-').pop()}`);
      proxy = await apiProxy();
    }, LIMITS.upMs);
    afterAll(async () => {
      proxy?.close();
      await endGroup(schart, sns);
    }, LIMITS.upMs);

    const sheetCluster = (tickers: number) =>
      apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetCluster',
        metadata: { name: NAME, namespace: sns },
        spec: {
          nodes: 3,
          failoverSeconds: TTL_S,
          store: { type: 'xlsx', xlsx: { size: '64Mi' } },
          deployments: [{ name: 'ticker', replicas: tickers }],
        },
      });

    it(
      'its agents spread over the three nodes; the tickers run on all of them, as the sheet says',
      async () => {
        await sheetCluster(TICKERS);
        await waitFor(
          'the apiserver and 3 agents Ready',
          async () =>
            (await pods(sns, APISERVER)).filter(podReady).length === 1 &&
            (await pods(sns, AGENTS)).filter(podReady).length === 3,
          LIMITS.convergeMs,
        );
        // Spread: one agent on each node (the apiserver shares one of them: four pods, three hosts).
        expect(new Set((await pods(sns, AGENTS)).map(nodeOf)).size).toBe(WORKERS);
        if (!proxy) throw new Error('no kubectl proxy');
        sheet = new SheetsClient({
          url: `${proxy.url}/api/v1/namespaces/${sns}/services/${CHILD}:http/proxy/`,
          token: await secretValue(sns, `${CHILD}-token`, 'token'),
          key: await secretValue(sns, `${CHILD}-signing`, 'key'),
          timeoutMs: 10_000,
        });
        await waitFor(
          'the 3 agents Ready in the sheet',
          () => nodesInSheet(Object.fromEntries(AGENT_NAMES.map((n) => [n, 'Ready']))),
          LIMITS.convergeMs,
        );
        const t = await waitFor(
          '6 tickers Running on the agents',
          () => tickersOn(AGENT_NAMES),
          LIMITS.convergeMs,
        );
        // Where the sheet's scheduler put them is its business (the first agent it hears may take
        // them all): the next case cuts the power of an agent that runs some.
        expect(t.length).toBe(TICKERS);
      },
      2 * LIMITS.convergeMs,
    );

    it(
      'a node’s power cut: its agent NotReady in the sheet after the TTL, its tickers rescheduled on the others, nothing twice; the node back, the agent rejoins',
      async () => {
        const agentHost = new Map(
          (await pods(sns, AGENTS)).map((p) => [
            (p.metadata.name as string).replace(`${CHILD}-`, ''),
            nodeOf(p),
          ]),
        );
        const apiHost = nodeOf((await pods(sns, APISERVER))[0]);
        const running = (await tickersOn(AGENT_NAMES)) ?? [];
        // An agent that runs tickers; where one can, not on the apiserver's node: an agent's node is
        // the loss a Sheeternetes cluster heals by itself, while the apiserver's pod waits for
        // Kubernetes' eviction before it opens the workbook elsewhere (docs/operator.md).
        const withTickers = AGENT_NAMES.filter((a) => running.some((p) => p.node === a));
        const victim = withTickers.find((a) => agentHost.get(a) !== apiHost) ?? withTickers[0] ?? '';
        const host = agentHost.get(victim) ?? '';
        const moving = running.filter((p) => p.node === victim).map((p) => p.name);
        expect(moving.length).toBeGreaterThan(0);
        const t0 = Date.now();
        const cut = powerCut(host);
        try {
          await agentLost(victim, moving, t0);
        } finally {
          await cut.restore();
        }
        await waitFor(
          `${victim} Ready again in the sheet`,
          () => nodesInSheet({ [victim]: 'Ready' }),
          LIMITS.recoverMs,
        );
        await waitFor(
          'the SheetCluster Ready 3/3 again',
          async () => {
            const c = await getJson(['sheetcluster', '-n', sns, NAME]);
            return cond(c, 'Ready') === 'True' && c.status?.nodes === '3/3';
          },
          LIMITS.recoverMs,
        );
        expect(await tickersOn(AGENT_NAMES)).toBeTruthy();
      },
      4 * LIMITS.recoverMs,
    );

    /** The agent `victim` of a dead node: NotReady in the sheet, its tickers on the others, status says so. */
    async function agentLost(victim: string, moving: unknown[], t0: number): Promise<void> {
      const survivors = AGENT_NAMES.filter((n) => n !== victim);
      await waitFor(
        `${victim} NotReady in the sheet`,
        () => nodesInSheet({ [victim]: 'NotReady' }),
        LIMITS.recoverMs,
      );
      const lostS = (Date.now() - t0) / 1000;
      const moved = await waitFor(
        `${moving.join(', ')} Running on ${survivors.join(' or ')}`,
        () => tickersOn(survivors),
        LIMITS.recoverMs,
      );
      console.log(
        `[nodes] sheet: ${victim} NotReady ${lostS.toFixed(1)} s after its node's power cut (TTL ${TTL_S} s); its tickers on the survivors after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      expect(lostS).toBeGreaterThanOrEqual(TTL_S - 5 - 2); // not before the TTL (a heartbeat, slack)
      for (const m of moving) expect(moved.some((p) => p.name === m)).toBe(true);
      const o = await waitFor(
        'the SheetCluster Degraded naming the lost agent',
        async () => {
          const c = await getJson(['sheetcluster', '-n', sns, NAME]);
          const d = (c.status?.conditions ?? []).find((x: Deep) => x.type === 'Degraded');
          return d?.reason === 'NodesNotReady' && d;
        },
        LIMITS.recoverMs,
      );
      expect(o.message).toContain(victim);
    }
  });

  describe('a Rollout over three OberonKubes', () => {
    const CLUSTERS = ['c1', 'c2', 'c3'];
    let rns: string;
    let rchart: Chart | undefined;
    const kubeOf = (c: string) => getJson(['oberonkube', '-n', rns, c]);
    const rolloutOf = (name: string) => getJson(['rollouts.retrokube.io', '-n', rns, name]);
    /** Ready, converged, and both pods of web heard running `image`. */
    const runs = async (c: string, image: string): Promise<boolean> => {
      const o = await kubeOf(c);
      const images = (o.status?.nodeTable ?? []).flatMap((n: Deep) => n.images ?? []);
      return (
        cond(o, 'Ready') === 'True' &&
        o.status?.converged === true &&
        images.length === 2 &&
        images.every((i: string) => i === image)
      );
    };
    const allRun = async (image: string, clusters = CLUSTERS): Promise<boolean> =>
      (await Promise.all(clusters.map((c) => runs(c, image)))).every(Boolean);
    const rollout = (name: string, strategy: Record<string, unknown>) =>
      apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'Rollout',
        metadata: { name, namespace: rns },
        spec: {
          selector: { matchLabels: { fleet: 'demo' } },
          change: { deployment: 'web', image: 'Ticker2' },
          strategy: { ...strategy, checkSeconds: 5, stepDeadlineSeconds: 300 },
          check: { minRunning: 1 },
        },
      });
    const settledAs = (name: string, phases: string[]) =>
      waitFor(
        `rollout ${name} ${phases.join(' or ')}`,
        async () => {
          const r = await rolloutOf(name);
          return phases.includes(r.status?.phase) && r;
        },
        LIMITS.recoverMs,
      );
    /** How many Events of `reason` the rollout `name` has per target (the note starts with its name). */
    const eventsPerTarget = async (name: string, reason: string): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const e of (await getJson(['events.events.k8s.io', '-n', rns])).items as Deep[]) {
        if (e.regarding?.name !== name || e.reason !== reason) continue;
        const target = String(e.note).split(':')[0];
        out[target] = (out[target] ?? 0) + (e.series?.count ?? 1);
      }
      return out;
    };

    beforeAll(async () => {
      rns = await freshNamespace('nodes-rollout');
      rchart = await installChart(rns, `rk-${rns.split('-').pop()}`);
      for (const c of CLUSTERS)
        await apply({
          apiVersion: 'retrokube.io/v1alpha1',
          kind: 'OberonKube',
          metadata: { name: c, namespace: rns, labels: { fleet: 'demo' } },
          spec: { nodes: 1, runtime: 'pod', deployments: 'web 2 Ticker' },
        });
      await waitFor('three clusters Ready, web 2 Ticker heard', () => allRun('Ticker'), LIMITS.convergeMs);
      // Each plane apart from its node: six machines over the three hosts.
      const hosts = new Set((await pods(rns, 'app.kubernetes.io/name=retrokube-machine')).map(nodeOf));
      expect(hosts.size).toBe(WORKERS);
    }, LIMITS.upMs + LIMITS.convergeMs);
    afterAll(() => endGroup(rchart, rns), LIMITS.upMs);

    it(
      'canary with manual promotion: one cluster changed and waiting; aborted, it is heard back on its old module, the others untouched',
      async () => {
        await rollout('canary', { type: 'canary', canary: { count: 1, promotion: 'manual' } });
        const waiting = await settledAs('canary', ['WaitingForPromotion', 'Failed']);
        expect(waiting.status.phase, waiting.status.message).toBe('WaitingForPromotion');
        const [first, ...rest] = waiting.status.targets as Deep[];
        expect([first.phase, rest.map((t: Deep) => t.phase)]).toEqual(['Succeeded', ['Pending', 'Pending']]);
        expect(await allRun('Ticker2', [first.name])).toBe(true);
        expect(
          await allRun(
            'Ticker',
            rest.map((t: Deep) => t.name),
          ),
        ).toBe(true);
        await kubectl([
          'patch',
          'rollouts.retrokube.io',
          'canary',
          '-n',
          rns,
          '--type=merge',
          '-p',
          '{"spec":{"abort":true}}',
        ]);
        const aborted = await waitFor(
          'the canary rolled back',
          async () => {
            const r = await rolloutOf('canary');
            return r.status?.phase === 'Aborted' && r.status.targets[0].phase === 'RolledBack' && r;
          },
          LIMITS.recoverMs,
        );
        expect(aborted.status.targets.map((t: Deep) => t.phase)).toEqual([
          'RolledBack',
          'Skipped',
          'Skipped',
        ]);
        await waitFor('every cluster heard on Ticker again', () => allRun('Ticker'), LIMITS.recoverMs);
        for (const c of CLUSTERS) expect((await kubeOf(c)).spec.deployments).toBe('web 2 Ticker');
        expect(await eventsPerTarget('canary', 'Updating')).toEqual({ [first.name]: 1 });
      },
      3 * LIMITS.recoverMs,
    );

    it(
      'rolling, the operator pod killed after the first cluster: the new leader resumes from status, every cluster changed once',
      async () => {
        await rollout('ticker2', { type: 'rolling', maxParallel: 1 });
        const first = await waitFor(
          'the first cluster changed',
          async () => {
            const r = await rolloutOf('ticker2');
            return r.status?.targets?.[0]?.phase === 'Succeeded' && r;
          },
          LIMITS.recoverMs,
        );
        expect(first.status.targets[1].phase).not.toBe('Succeeded');
        await kubectl(['delete', 'pod', '-n', rns, '-l', 'app.kubernetes.io/name=retrokube', '--wait=false']);
        const done = await settledAs('ticker2', ['Succeeded', 'Failed', 'Aborted']);
        expect([done.status.phase, done.status.message]).toEqual(['Succeeded', '3 of 3 targets changed']);
        expect(done.status.targets.map((t: Deep) => [t.name, t.phase, t.attempts, t.previous])).toEqual(
          CLUSTERS.map((c) => [c, 'Succeeded', 1, { image: 'Ticker', replicas: 2 }]),
        );
        const rows = done.status.targets as Deep[];
        for (let i = 1; i < rows.length; i++)
          expect(Date.parse(rows[i].startedAt)).toBeGreaterThanOrEqual(Date.parse(rows[i - 1].finishedAt));
        await waitFor('every cluster heard running Ticker2', () => allRun('Ticker2'), LIMITS.recoverMs);
        expect(await eventsPerTarget('ticker2', 'Updating')).toEqual({ c1: 1, c2: 1, c3: 1 });
      },
      3 * LIMITS.recoverMs,
    );
  });
});
