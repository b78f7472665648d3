// The catalog installed through Flux, as Cozystack installs a tenant's app (issue 15, "go further"):
// Flux's source-controller and helm-controller (built from their Go modules by
// hack/build-flux-bins.sh) run beside the real node with its admin kubeconfig; the apps repository
// is a Helm repository served over HTTP by this test (`helm package` + `helm repo index`); a
// HelmRepository points at it, and the app is a HelmRelease shaped as cozystack-engine writes one
// (release `<prefix><name>`, the tenants shard label, the injected `_cluster`/`_namespace` from a
// values Secret). The OberonKube it renders reaches Ready; values outside the schema leave the
// HelmRelease failed, naming the field, with nothing created; deleting the HelmRelease removes
// every part.
// Runs only where the Flux binaries were built (not part of hack/setup.ts: a cold build costs
// many minutes, see docs/operator.md, "Order it from Cozystack"); elsewhere every test reports itself skipped, saying so.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPS, type App } from '../../operator/src/marketplace/apps.ts';
import { APPS_REPO, prefixOf } from '../../operator/src/marketplace/render.ts';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import {
  apply,
  type Chart,
  type Deep,
  deleteNamespace,
  freshNamespace,
  getJson,
  helm,
  installChart,
  kubeconfigPath,
  kubectl,
  skipReason,
  waitFor,
} from './harness.ts';

const LIMITS = {
  controllerStartMs: 60_000, // a controller's /readyz answers within seconds
  releaseReadyMs: 300_000, // HelmRepository index → HelmChart artifact → helm install (kstatus wait)
  convergeMs: 540_000, // an OberonKube of 2 nodes (see oberonkube.test.ts)
  failedMs: 180_000, // a HelmRelease with values outside the schema reports its failure
  goneMs: 240_000, // HelmRelease deleted → helm uninstall → garbage collector
} as const;

const FLUX_DIR = execFileSync('bash', [join(REPO_ROOT, 'hack/build-flux-bins.sh'), '--print-dir'], {
  encoding: 'utf8',
}).trim();
const CONTROLLERS = ['source-controller', 'helm-controller'] as const;
const fluxMissing = CONTROLLERS.some((c) => !existsSync(join(FLUX_DIR, c)))
  ? `Flux controllers not built (${FLUX_DIR}): run npm run setup (or hack/build-flux-bins.sh)`
  : '';
// The set-up builds them (hack/setup.ts); under CI a missing build is a failure, never a skip.
if (fluxMissing && !skipReason() && process.env.CI === 'true')
  throw new Error(`marketplace-flux: ${fluxMissing}`);
const skip = skipReason() || fluxMissing;
if (fluxMissing) console.log(`[cluster] marketplace-flux not run: ${fluxMissing}`);

const KUBE_APP = APPS.find((a) => a.name === 'oberon-kube') as App;

/** A free loopback port (bound, then released for the child to take). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
  const port = (s.address() as { port: number }).port;
  await new Promise((ok) => s.close(ok));
  return port;
}

/** A static Helm repository: index.yaml and the packaged charts, GET only, loopback only. */
async function serveRepo(dir: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const file = join(dir, basename(decodeURIComponent((req.url ?? '/').split('?')[0])));
    if (req.method !== 'GET' || !existsSync(file) || file === dir) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': file.endsWith('.yaml') ? 'text/yaml' : 'application/gzip' });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

describe.skipIf(skip)('the catalog through Flux HelmRelease, as Cozystack installs it (real node)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'rk-flux-'));
  const procs: ChildProcess[] = [];
  let repo: { url: string; server: Server } | undefined;
  let opNs: string;
  let sourceNs: string;
  let tenant: string;
  let operator: Chart | undefined;

  const logsOf = (name: string) => readFileSync(join(tmp, `${name}.log`), 'utf8').slice(-3000);
  const startController = async (name: (typeof CONTROLLERS)[number], args: string[]) => {
    const health = await freePort();
    const log = openSync(join(tmp, `${name}.log`), 'a');
    const p = spawn(
      join(FLUX_DIR, name),
      [
        `--health-addr=127.0.0.1:${health}`,
        '--metrics-addr=127.0.0.1:0',
        '--enable-leader-election=false',
        '--log-level=info',
        ...args,
      ],
      {
        stdio: ['ignore', log, log],
        env: { ...process.env, KUBECONFIG: kubeconfigPath(), RUNTIME_NAMESPACE: sourceNs },
      },
    );
    procs.push(p);
    const state = await waitFor(
      `${name} ready`,
      async () => {
        if (p.exitCode !== null) return 'exited';
        const r = await fetch(`http://127.0.0.1:${health}/readyz`).catch(() => undefined);
        return r?.ok && 'ready';
      },
      LIMITS.controllerStartMs,
    );
    if (state === 'exited') throw new Error(`${name} exited ${p.exitCode}: ${logsOf(name)}`);
  };

  beforeAll(async () => {
    opNs = await freshNamespace('rk-platform');
    sourceNs = await freshNamespace('cozy-public');
    tenant = await freshNamespace('tenant');
    await kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(FLUX_DIR, 'crds')]);
    // A controller started before its kinds are served exits at once ("no matches for kind
    // HelmChart"): seen under load, when the API server took seconds to establish the CRDs.
    await kubectl(['wait', '--for=condition=Established', '--timeout=120s', '-f', join(FLUX_DIR, 'crds')]);
    // The apps repository as a Helm repository over HTTP.
    const charts = join(tmp, 'repo');
    mkdirSync(charts);
    repo = await serveRepo(charts);
    for (const a of APPS)
      await helm(['package', join(REPO_ROOT, APPS_REPO, 'packages/apps', a.name), '-d', charts]);
    await helm(['repo', 'index', charts, '--url', repo.url]);
    const storage = await freePort();
    mkdirSync(join(tmp, 'storage')); // source-controller refuses a storage path that does not exist
    await startController('source-controller', [
      `--storage-path=${join(tmp, 'storage')}`,
      `--storage-addr=127.0.0.1:${storage}`,
      `--storage-adv-addr=127.0.0.1:${storage}`,
    ]);
    await startController('helm-controller', ['--graceful-shutdown-timeout=5s']);
    operator = await installChart(opNs, `rk-${opNs.split('-').pop()}`);
  });
  afterAll(async () => {
    if (tenant)
      await kubectl(['delete', 'helmreleases', '--all', '-n', tenant, '--timeout=120s']).catch(
        () => undefined,
      );
    // Stop the controllers we started (SIGTERM, then SIGKILL after 5 s: helm-controller waits up
    // to its graceful-shutdown-timeout for reconciles in flight).
    await Promise.all(
      procs.map(
        (p) =>
          new Promise<void>((done) => {
            if (p.exitCode !== null) return done();
            const kill = setTimeout(() => p.kill('SIGKILL'), 5_000);
            p.on('exit', () => {
              clearTimeout(kill);
              done();
            });
            p.kill('SIGTERM');
          }),
      ),
    );
    repo?.server.close();
    await operator?.uninstall().catch(() => undefined);
    for (const ns of [tenant, sourceNs, opNs]) if (ns) await deleteNamespace(ns);
    rmSync(tmp, { recursive: true, force: true });
  });

  /** A HelmRelease as cozystack-engine writes one for an app object `name` of kind RkOberonKube. */
  const helmRelease = (name: string, values: Record<string, unknown>) => ({
    apiVersion: 'helm.toolkit.fluxcd.io/v2',
    kind: 'HelmRelease',
    metadata: {
      name: `${prefixOf(KUBE_APP)}${name}`,
      namespace: tenant,
      labels: {
        'sharding.fluxcd.io/key': 'tenants',
        'apps.cozystack.io/application.group': 'apps.cozystack.io',
        'apps.cozystack.io/application.kind': KUBE_APP.appKind,
        'apps.cozystack.io/application.name': name,
      },
    },
    spec: {
      interval: '5m',
      releaseName: `${prefixOf(KUBE_APP)}${name}`,
      chart: {
        spec: {
          chart: KUBE_APP.name,
          version: '>= 0.0.0-0',
          reconcileStrategy: 'Revision',
          sourceRef: { kind: 'HelmRepository', name: 'retrokube-apps', namespace: sourceNs },
        },
      },
      install: { remediation: { retries: -1 } },
      upgrade: { remediation: { retries: -1 } },
      values,
      valuesFrom: [{ kind: 'Secret', name: 'cozystack-values' }],
    },
  });
  const hrReady = (hr: Deep) => (hr?.status?.conditions ?? []).find((c: Deep) => c.type === 'Ready');

  it('a HelmRepository over HTTP and a HelmRelease of oberon-kube: released, and the OberonKube Ready 2/2', async () => {
    if (!repo) throw new Error('no repository served');
    await apply({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'HelmRepository',
      metadata: { name: 'retrokube-apps', namespace: sourceNs },
      spec: { url: repo.url, interval: '1m' },
    });
    // cozystack-engine keeps the injected keys in a Secret of the tenant namespace.
    await apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cozystack-values', namespace: tenant },
      stringData: {
        'values.yaml':
          '_cluster:\n  root-host: example.org\n_namespace:\n  host: tenant-a.example.org\n  etcd: tenant-root\n',
      },
    });
    await apply(helmRelease('flock', KUBE_APP.example));
    const hr = await waitFor(
      'the HelmRelease Ready',
      async () => {
        const h = await getJson(['helmrelease', '-n', tenant, `${prefixOf(KUBE_APP)}flock`]);
        const c = hrReady(h);
        return c?.status === 'True' && h;
      },
      LIMITS.releaseReadyMs,
    ).catch((err) => {
      throw new Error(
        `${err.message}\nsource-controller: ${logsOf('source-controller')}\nhelm-controller: ${logsOf('helm-controller')}`,
      );
    });
    expect(hr.status.history?.[0]?.chartName ?? hr.status.lastAttemptedRevision).toBeTruthy();
    const o = await waitFor(
      'the OberonKube flock Ready, NODES 2/2, PODS 6/6',
      async () => {
        const k = await getJson(['oberonkube', '-n', tenant, 'flock']);
        const ready = (k?.status?.conditions ?? []).find((c: Deep) => c.type === 'Ready');
        return ready?.status === 'True' && k.status.nodes === '2/2' && k.status.pods === '6/6' && k;
      },
      LIMITS.convergeMs,
    );
    expect(o.spec).toMatchObject(KUBE_APP.example);
    expect(o.metadata.labels['app.kubernetes.io/instance']).toBe(`${prefixOf(KUBE_APP)}flock`);
    // Helm's release record is the one Flux made (the same a `helm list` shows a tenant).
    const releases = JSON.parse(await helm(['list', '-n', tenant, '-o', 'json']));
    expect(releases.map((r: Deep) => [r.name, r.status])).toEqual([
      [`${prefixOf(KUBE_APP)}flock`, 'deployed'],
    ]);
    // The NOTES as Flux's Helm rendered them (its lookup ran with helm-controller's rights).
    const notes = await helm(['get', 'notes', `${prefixOf(KUBE_APP)}flock`, '-n', tenant]);
    expect(notes).toContain(`The retrokube operator is running (Lease ${opNs}/retrokube-operator held by`);
  });

  it('a HelmRelease with values outside the schema fails naming the field, and creates nothing', async () => {
    await apply(helmRelease('bad', { nodes: 99 }));
    const failed = await waitFor(
      'the HelmRelease failed',
      async () => {
        const h = await getJson(['helmrelease', '-n', tenant, `${prefixOf(KUBE_APP)}bad`]);
        const c = hrReady(h);
        return c?.status === 'False' && /schema/.test(c.message) && c;
      },
      LIMITS.failedMs,
    );
    expect(failed.message).toContain('nodes');
    const kubes = (await getJson(['oberonkubes', '-n', tenant])).items.map((i: Deep) => i.metadata.name);
    expect(kubes).toEqual(['flock']);
    await kubectl(['delete', 'helmrelease', '-n', tenant, `${prefixOf(KUBE_APP)}bad`, '--timeout=120s']);
  });

  it('the HelmRelease deleted: Flux uninstalls the release, the OberonKube and all its parts go', async () => {
    await kubectl(['delete', 'helmrelease', '-n', tenant, `${prefixOf(KUBE_APP)}flock`, '--timeout=180s'], {
      timeoutMs: 200_000,
    });
    await waitFor(
      'no OberonKube, air, machine, workload or pod left in the tenant namespace',
      async () =>
        (
          await getJson([
            'oberonkubes,oberonairs,oberonmachines,statefulsets,deployments,pvc,pods',
            '-n',
            tenant,
          ])
        ).items.length === 0,
      LIMITS.goneMs,
    );
    expect(JSON.parse(await helm(['list', '-n', tenant, '-o', 'json']))).toEqual([]);
  });
});
