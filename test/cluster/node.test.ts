// The node itself, as the operator's pods need it: cluster DNS answers *.svc.cluster.local, a UDP
// Service's ClusterIP reaches its pod (the air's relay is a UDP Service), and a PVC without a
// StorageClass binds through the default one. Runs the product image (node, no busybox tools).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  apply,
  deleteNamespace,
  freshNamespace,
  getJson,
  kubectl,
  productImage,
  skipReason,
  waitFor,
} from './harness.ts';

const LIMITS = { podDoneMs: 180_000 } as const; // image already on the node: seconds, unless the CPU is starved

/** A pod running `node -e script` as the image's user 1000, hardened like our machine pods. */
function nodePod(
  ns: string,
  name: string,
  script: string,
  extra: Record<string, unknown> = {},
  volumes: unknown[] = [],
) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      securityContext: { runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000, runAsNonRoot: true },
      containers: [
        {
          name: 'main',
          image: productImage().ref,
          imagePullPolicy: 'Never',
          command: ['node', '-e', script],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          ...extra,
        },
      ],
      ...(volumes.length ? { volumes } : {}),
    },
  };
}

async function logsWhenDone(ns: string, pod: string): Promise<string> {
  await waitFor(
    `pod ${pod} to finish`,
    async () => {
      const p = await getJson(['pod', '-n', ns, pod]);
      return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';
    },
    LIMITS.podDoneMs,
  );
  return kubectl(['logs', '-n', ns, pod]);
}

describe.skipIf(skipReason())('the real node', () => {
  let ns: string;
  beforeAll(async () => {
    ns = await freshNamespace('node');
  });
  afterAll(async () => {
    if (ns) await deleteNamespace(ns);
  });

  it('cluster DNS resolves the API Service and a Service of the pod namespace; a UDP ClusterIP answers', async () => {
    // A UDP echo server behind a ClusterIP Service, as the air relay is.
    await apply(
      nodePod(
        ns,
        'echo',
        "const s=require('dgram').createSocket('udp4');s.on('message',(m,r)=>s.send('echo:'+m,r.port,r.address));s.bind(7000)",
        { ports: [{ containerPort: 7000, protocol: 'UDP' }] },
      ),
    );
    await apply({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'echo', namespace: ns },
      spec: { selector: { app: 'echo' }, ports: [{ port: 7000, protocol: 'UDP' }] },
    });
    await waitFor(
      'the echo pod Running',
      async () => (await getJson(['pod', '-n', ns, 'echo'])).status?.phase === 'Running',
      LIMITS.podDoneMs,
    );
    const client = `
      const dns = require('dns').promises, dgram = require('dgram');
      (async () => {
        const api = await dns.lookup('kubernetes.default.svc.cluster.local');
        const echo = await dns.lookup('echo'); // the pod's search path: echo.${ns}.svc.cluster.local
        const s = dgram.createSocket('udp4');
        const reply = await new Promise((ok, fail) => {
          const t = setInterval(() => s.send('ping', 7000, echo.address), 500);
          s.on('message', (m) => { clearInterval(t); ok(String(m)); });
          setTimeout(() => fail(new Error('no UDP reply in 20 s')), 20000);
        });
        console.log(JSON.stringify({ api: api.address, echo: echo.address, reply }));
        process.exit(0);
      })().catch((e) => { console.log(JSON.stringify({ error: e.message })); process.exit(1); });`;
    await apply(nodePod(ns, 'client', client));
    const out = JSON.parse((await logsWhenDone(ns, 'client')).trim().split('\n').pop() ?? '{}');
    const svc = await getJson(['service', '-n', ns, 'echo']);
    const api = await getJson(['service', '-n', 'default', 'kubernetes']);
    expect(out).toEqual({ api: api.spec.clusterIP, echo: svc.spec.clusterIP, reply: 'echo:ping' });
  });

  it('a PVC with no StorageClass binds through the default class and is writable by user 1000', async () => {
    await apply({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } } },
    });
    await apply(
      nodePod(
        ns,
        'writer',
        "require('fs').writeFileSync('/data/f', 'kept'); console.log(require('fs').readFileSync('/data/f', 'utf8'))",
        { volumeMounts: [{ name: 'data', mountPath: '/data' }] },
        [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      ),
    );
    expect((await logsWhenDone(ns, 'writer')).trim()).toBe('kept');
    const pvc = await getJson(['pvc', '-n', ns, 'data']);
    const defaults = (await getJson(['storageclass'])).items.filter(
      (c: { metadata: { annotations?: Record<string, string> } }) =>
        c.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true',
    );
    expect(defaults).toHaveLength(1);
    expect(pvc.status.phase).toBe('Bound');
    expect(pvc.spec.storageClassName).toBe(defaults[0].metadata.name);
  });
});
