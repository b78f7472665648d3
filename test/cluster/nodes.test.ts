// Several real nodes (hack/nodes-up.sh): one control plane and three worker nodes on this machine,
// started once for this file while the suite's node lock is held (the global setup's). Proves the
// cluster itself (node IPs, pod networks routed between nodes, DNS, a volume any node can take),
// then an OberonKube of 5 node machines spread over the nodes, a drain that keeps to the
// machines' disruption budget, and a whole node's power cut: its machines NotReady on the air,
// their pods moved and the cluster converged, the node back and Ready.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import {
  apply,
  type Deep,
  getJson,
  installChart,
  kubectl,
  localNode,
  podReady,
  pods,
  run,
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

const cond = (o: Deep, type: string) =>
  (o?.status?.conditions ?? []).find((c: Deep) => c.type === type)?.status;
const nodeOf = (p: Deep): string => p.spec?.nodeName ?? '';

/** Every worker node name, and its InternalIP. */
async function workerNodes(): Promise<{ name: string; ip: string; ready: boolean }[]> {
  return (await getJson(['nodes'])).items.map((n: Deep) => ({
    name: n.metadata.name,
    ip: n.status.addresses.find((a: Deep) => a.type === 'InternalIP')?.address,
    ready: cond(n, 'Ready') === 'True',
  }));
}

// Only where the suite started its own node as root: the scripts act on this machine.
describe.skipIf(skipReason() || !localNode())('several real nodes (hack/nodes-up.sh)', () => {
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
    const kube = () => getJson(['oberonkube', '-n', kns, KUBE]);
    const machinePods = () => pods(kns, 'app.kubernetes.io/name=retrokube-machine');
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
      await installChart(kns, `rk-${kns.split('-').pop()}`);
    }, LIMITS.upMs);

    it('spreads its node machines over all three nodes and budgets them one at a time', async () => {
      await apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonKube',
        metadata: { name: KUBE, namespace: kns },
        spec: { nodes: 5, runtime: 'pod', deployments: 'web 5 Ticker' },
      });
      await waitFor('5 nodes heard Ready, converged, 6 machine pods Ready', allUp, LIMITS.convergeMs);
      const nodesUsed = new Set((await pods(kns, NODE_MACHINES)).map(nodeOf));
      expect(nodesUsed.size).toBe(WORKERS); // soft spread: 2 + 2 + 1
      const pdb = await getJson(['pdb', '-n', kns, `rk-kube-${KUBE}-nodes`]);
      expect(pdb.status).toMatchObject({ expectedPods: 5, currentHealthy: 5, disruptionsAllowed: 1 });
    });

    it('kubectl drain evicts a node’s machines one at a time (the budget) and the cluster converges again', async () => {
      const perNode = new Map<string, number>();
      for (const p of await pods(kns, NODE_MACHINES))
        perNode.set(nodeOf(p), (perNode.get(nodeOf(p)) ?? 0) + 1);
      const [target] = [...perNode.entries()].sort((a, b) => b[1] - a[1])[0];
      expect(perNode.get(target)).toBeGreaterThanOrEqual(2);
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
      await kubectl(['uncordon', target]);
    });

    it('a node’s power cut: its machines NotReady on the air, their pods moved, converged; the node rejoins', async () => {
      const byNode = new Map<string, number>();
      for (const p of await pods(kns, NODE_MACHINES)) byNode.set(nodeOf(p), (byNode.get(nodeOf(p)) ?? 0) + 1);
      const [victim] = [...byNode.entries()].sort((a, b) => b[1] - a[1])[0];
      const index = victim.replace('rk-w', '');
      hack('nodes-worker.sh', ['off', index]);
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
        120_000,
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
      // Power back: the node rejoins under its name.
      await kubectl(['taint', 'node', victim, 'node.kubernetes.io/out-of-service-']);
      hack('nodes-worker.sh', ['on', index]);
      expect((await workerNodes()).every((n) => n.ready)).toBe(true);
      expect(await waitFor('still converged', allUp, LIMITS.convergeMs)).toBeTruthy();
    });
  });
});
