// Several real nodes (hack/nodes-up.sh): one control plane and three worker nodes on this machine,
// started once for this file while the machine's lock of the several nodes is held (the `nodes`
// project's global setup, nodes-setup.ts). Proves the cluster itself here (node IPs, pod networks
// routed between nodes, DNS, a volume any node can take), then every kind on it, a group each, one
// after the other (each ends its own operator): an OberonKube spread, drained and power-cut
// (nodes/oberonkube.ts), a SheetCluster whose agent's node is power-cut (nodes/sheetcluster.ts), a
// Rollout over three OberonKubes (nodes/rollout.ts), a SheetCluster on the Google backend
// (cases/sheetcluster-google.ts) and SheetMigrations and a SheetFederation between an xlsx and a
// Google-backed SheetCluster (cases/sheetmigration.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { googleSheetClusterGroup } from './cases/sheetcluster-google.ts';
import { sheetMigrationGroup } from './cases/sheetmigration.ts';
import { apply, getJson, kubectl, skipReason, useKubeconfig, waitFor } from './harness.ts';
import { hack, LIMITS, WORKERS, workerNodes } from './nodes/common.ts';
import { oberonKubeOnNodes } from './nodes/oberonkube.ts';
import { rolloutOnNodes } from './nodes/rollout.ts';
import { sheetClusterOnNodes } from './nodes/sheetcluster.ts';

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

  oberonKubeOnNodes();
  sheetClusterOnNodes();
  rolloutOnNodes();
  googleSheetClusterGroup();
  sheetMigrationGroup();
});
