// A real Kubernetes control plane for tests: a datastore + kube-apiserver on loopback, token auth,
// RBAC, our CRDs and the KubeVirt VirtualMachine CRD installed. No kubelet, no controller-manager.
// Used by the vitest global setup of the `envtest` project and by benchmarks that need an API
// server outside vitest. Binaries come from hack/build-testbins.sh; etcd from hack/build-node-bins.sh.
// The datastore is kine `memory://` (light, starts at once: the tests) or a real etcd on a temp
// data dir (`datastore: 'etcd'`: the benchmarks at scale, where kine's in-memory backend fell over
// with "WATCH SEND EVENTS FOR PAST REVISION" at 1,000 OberonKubes).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

const LIMITS = {
  readyTimeoutMs: 90_000, // a cold kube-apiserver on 2 busy cores needs 5-30 s to serve /readyz
  stopTimeoutMs: 15_000, // SIGTERM grace before SIGKILL; the apiserver drains for a few seconds
  crdEstablishedTimeoutMs: 60_000, // CRDs usually establish in < 1 s; the KubeVirt one is 300 KB
  pollIntervalMs: 200, // readiness/established polling cadence
  logTailBytes: 4_000, // how much of a process log goes into an error message
} as const;

/** The field manager the harness uses when it installs CRDs. */
export const HARNESS_FIELD_MANAGER = 'retrokube-envtest';

export interface TestBins {
  dir: string;
  kubeApiserver: string;
  kine: string;
  helm: string;
  kubectl: string;
}

export type Datastore = 'kine' | 'etcd';

/** The etcd binary hack/build-node-bins.sh builds (or would build); ETCD_BIN wins. */
export function locateEtcd(): string {
  if (process.env.ETCD_BIN) return process.env.ETCD_BIN;
  const dir =
    process.env.RETROKUBE_NODEBINS_DIR ||
    execFileSync('bash', [join(REPO_ROOT, 'hack/build-node-bins.sh'), '--print-dir'], {
      encoding: 'utf8',
    }).trim();
  const bin = join(dir, 'etcd');
  if (!existsSync(bin)) {
    throw new Error(
      `envtest: etcd missing (${bin}). Build it with: bash hack/build-node-bins.sh (needs Go; ~3-5 min cold).`,
    );
  }
  return bin;
}

/** Where hack/build-testbins.sh puts (or would put) the binaries; env overrides win. */
export function locateTestBins(): TestBins {
  const dir =
    process.env.RETROKUBE_TESTBINS_DIR ||
    execFileSync('bash', [join(REPO_ROOT, 'hack/build-testbins.sh'), '--print-dir'], {
      encoding: 'utf8',
    }).trim();
  return {
    dir,
    kubeApiserver: process.env.KUBE_APISERVER_BIN ?? join(dir, 'kube-apiserver'),
    kine: process.env.KINE_BIN ?? join(dir, 'kine'),
    helm: process.env.HELM_BIN ?? join(dir, 'helm'),
    kubectl: process.env.KUBECTL_BIN ?? join(dir, 'kubectl'),
  };
}

/** Throws a message that says how to get the binaries when any of them is missing. */
export function assertTestBins(bins: TestBins): void {
  const missing = [bins.kubeApiserver, bins.kine, bins.helm].filter((p) => !existsSync(p));
  if (missing.length === 0) return;
  const why = `envtest: test binaries missing (${missing.join(', ')}).`;
  if (process.env.CI) {
    throw new Error(
      `${why} CI must build them first: npm test runs the set-up (node hack/setup.ts) before the suites.`,
    );
  }
  throw new Error(
    `${why} Run the set-up once with: npm run setup (needs Go; builds with bash hack/build-testbins.sh, ~5 min cold on idle cores, cached afterwards).`,
  );
}

/**
 * The CRD files installed into every test API server: ours (crds/*.yaml, or the folder named by
 * RETROKUBE_ENVTEST_CRDS) + KubeVirt's VirtualMachine.
 */
export function crdFiles(): string[] {
  const ours = process.env.RETROKUBE_ENVTEST_CRDS ?? join(REPO_ROOT, 'crds');
  const files = existsSync(ours)
    ? readdirSync(ours)
        .filter((f) => f.endsWith('.yaml') || f.endsWith('.yml'))
        .sort()
        .map((f) => join(ours, f))
    : [];
  files.push(join(REPO_ROOT, 'test/fixtures/kubevirt/virtualmachines.kubevirt.io.yaml'));
  return files;
}

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? ok(addr.port) : fail(new Error('no port'))));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function tail(file: string): string {
  try {
    const text = readFileSync(file, 'utf8');
    return text.slice(-LIMITS.logTailBytes);
  } catch {
    return '(no log)';
  }
}

interface Proc {
  child: ChildProcess;
  exited: Promise<number | null>;
}

function startProcess(bin: string, args: string[], logFile: string): Proc {
  // The child writes its log straight to the file: no pipes for this process to keep open.
  const fd = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<number | null>((ok) => {
    child.once('exit', (code) => ok(code));
    child.once('error', (err) => {
      appendFileSync(logFile, `spawn error: ${err.message}\n`);
      ok(-1);
    });
  });
  return { child, exited };
}

async function stopProcess(p: Proc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  // A cleared timer, not a bare sleep: a pending 15 s timer would keep the process alive.
  const timer = setTimeout(() => p.child.kill('SIGKILL'), LIMITS.stopTimeoutMs);
  await p.exited;
  clearTimeout(timer);
}

/** Where and how the harness talks to the API server itself (raw HTTPS, no typed client). */
export interface ApiTarget {
  server: string;
  token: string;
  /** The serving cert bundle to trust; undefined only before it exists (readiness polling). */
  ca: Buffer | undefined;
}

/**
 * One raw request to the API server. The harness does not send objects through client-node's
 * typed serializer: it drops JSON keys that are not model attribute names (for a CRD, every
 * `x-kubernetes-*` schema keyword), which silently changes what is applied.
 */
export function kubeRequest(
  t: ApiTarget,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: string }> {
  return new Promise((ok, fail) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {
      Authorization: `Bearer ${t.token}`,
      Accept: 'application/json',
    };
    if (payload !== undefined) headers['Content-Type'] = contentType;
    const req = request(
      `${t.server}${path}`,
      // agent: false: no keep-alive socket outlives the request (it would hold the process open).
      { method, headers, ca: t.ca, rejectUnauthorized: t.ca !== undefined, timeout: 30_000, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => ok({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timeout`)));
    req.on('error', fail);
    req.end(payload);
  });
}

export interface ControlPlaneOptions {
  bins?: TestBins;
  /** Install crds/*.yaml and the KubeVirt VM CRD (default true). */
  installCrds?: boolean;
  /** Keep the temp folder (logs, certs) after stop() (default: env RETROKUBE_ENVTEST_KEEP). */
  keep?: boolean;
  /** kine memory:// (default, or env RETROKUBE_ENVTEST_DATASTORE) or etcd on a temp data dir. */
  datastore?: Datastore;
}

export interface ControlPlane {
  dir: string;
  server: string;
  kubeconfigPath: string;
  adminToken: string;
  bins: TestBins;
  datastore: Datastore;
  /** The kube-apiserver's process id (a bench pauses it with SIGSTOP to play an overloaded server). */
  readonly apiServerPid: number | undefined;
  /** Stops kube-apiserver, waits `downMs`, starts it again on the same port with the same data. */
  restartApiServer(downMs?: number): Promise<{ downMs: number; readyMs: number }>;
  stopApiServer(): Promise<void>;
  startApiServer(): Promise<number>;
  stop(): Promise<void>;
}

export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const bins = opts.bins ?? locateTestBins();
  assertTestBins(bins);
  const keep = opts.keep ?? Boolean(process.env.RETROKUBE_ENVTEST_KEEP);
  const dir = await mkdtemp(join(tmpdir(), 'retrokube-envtest-'));
  const certDir = join(dir, 'certs');
  await mkdir(certDir);

  // Service-account signing keys (the apiserver refuses to start without them).
  const sa = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  await writeFile(join(dir, 'sa.pub'), sa.publicKey);
  await writeFile(join(dir, 'sa.key'), sa.privateKey, { mode: 0o600 });

  const adminToken = randomBytes(24).toString('hex');
  await writeFile(join(dir, 'tokens.csv'), `${adminToken},admin,admin-uid,"system:masters"\n`, {
    mode: 0o600,
  });

  const datastore = opts.datastore ?? (process.env.RETROKUBE_ENVTEST_DATASTORE === 'etcd' ? 'etcd' : 'kine');
  const storePort = await freePort();
  const apiPort = await freePort();
  const server = `https://127.0.0.1:${apiPort}`;
  const store = await startDatastore(datastore, bins, dir, storePort);

  const apiArgs = [
    `--etcd-servers=http://127.0.0.1:${storePort}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${certDir}`, // no --tls-cert-file: the apiserver self-signs into this folder once
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    `--token-auth-file=${join(dir, 'tokens.csv')}`,
    '--authorization-mode=RBAC',
    '--disable-admission-plugins=ServiceAccount', // no controller-manager creates default SAs
    '--allow-privileged=true',
    '--enable-priority-and-fairness=false', // fewer background writes; tests measure our writes
  ];
  let api: Proc | undefined;
  let ca: Buffer | undefined;

  const waitReady = async (): Promise<number> => {
    const t0 = Date.now();
    let last = '';
    while (Date.now() - t0 < LIMITS.readyTimeoutMs) {
      if (api && api.child.exitCode !== null) {
        throw new Error(
          `kube-apiserver exited (${api.child.exitCode}):\n${tail(join(dir, 'kube-apiserver.log'))}`,
        );
      }
      if (store.child.exitCode !== null) {
        throw new Error(
          `${datastore} exited (${store.child.exitCode}):\n${tail(join(dir, `${datastore}.log`))}`,
        );
      }
      try {
        const r = await kubeRequest({ server, token: adminToken, ca }, 'GET', '/readyz');
        if (r.status === 200) return Date.now() - t0;
        last = `HTTP ${r.status}: ${r.body.slice(0, 300)}`;
      } catch (err) {
        last = (err as Error).message;
      }
      await sleep(LIMITS.pollIntervalMs);
    }
    throw new Error(
      `kube-apiserver not ready after ${LIMITS.readyTimeoutMs} ms (${last}):\n${tail(join(dir, 'kube-apiserver.log'))}`,
    );
  };

  const startApiServer = async (): Promise<number> => {
    api = startProcess(bins.kubeApiserver, apiArgs, join(dir, 'kube-apiserver.log'));
    return waitReady();
  };
  const stopApiServer = async (): Promise<void> => {
    await stopProcess(api);
  };

  // If our process exits without stop() (e.g. vitest gives up on a hanging teardown and calls
  // process.exit), still take the children down: 'exit' handlers may only do synchronous work.
  const onExit = () => {
    api?.child.kill('SIGKILL');
    store.child.kill('SIGKILL');
    if (!keep) rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  const stopAll = async (): Promise<void> => {
    process.removeListener('exit', onExit);
    await stopProcess(api);
    await stopProcess(store);
    if (!keep) await rm(dir, { recursive: true, force: true });
  };

  try {
    await startApiServer();
    // The self-signed serving cert (leaf + its CA) now exists; trust it from here on.
    ca = await readFile(join(certDir, 'apiserver.crt'));
    const kubeconfigPath = join(dir, 'kubeconfig.yaml');
    await writeFile(kubeconfigPath, kubeconfigYaml(server, join(certDir, 'apiserver.crt'), adminToken), {
      mode: 0o600,
    });
    if (opts.installCrds ?? true) await installCrds({ server, token: adminToken, ca }, crdFiles());
    return {
      dir,
      server,
      kubeconfigPath,
      adminToken,
      bins,
      datastore,
      get apiServerPid() {
        return api?.child.pid;
      },
      startApiServer,
      stopApiServer,
      async restartApiServer(downMs = 0) {
        const t0 = Date.now();
        await stopApiServer();
        if (downMs > 0) await sleep(downMs);
        const down = Date.now() - t0;
        const readyMs = await startApiServer();
        return { downMs: down, readyMs };
      },
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/** kine on memory://, or a single-member etcd on `dir`/etcd (loopback client and peer ports). */
async function startDatastore(kind: Datastore, bins: TestBins, dir: string, port: number): Promise<Proc> {
  if (kind === 'kine') {
    return startProcess(
      bins.kine,
      [
        `--listen-address=127.0.0.1:${port}`,
        '--endpoint=memory://',
        '--metrics-bind-address=0', // off: kine defaults to :8080, which our operator uses
      ],
      join(dir, 'kine.log'),
    );
  }
  const peer = `http://127.0.0.1:${await freePort()}`;
  const client = `http://127.0.0.1:${port}`;
  return startProcess(
    locateEtcd(),
    [
      '--name=envtest',
      `--data-dir=${join(dir, 'etcd')}`,
      '--log-level=warn',
      '--unsafe-no-fsync', // a throwaway store: durability would only measure this host's disk
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=envtest=${peer}`,
    ],
    join(dir, 'etcd.log'),
  );
}

export function kubeconfigYaml(server: string, caFile: string, token: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: envtest',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${caFile}`,
    'users:',
    '- name: admin',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: envtest',
    '  context:',
    '    cluster: envtest',
    '    user: admin',
    '    namespace: default',
    'current-context: envtest',
    '',
  ].join('\n');
}

/** Server-side applies every CRD in `files` and waits until each is Established. */
export async function installCrds(t: ApiTarget, files: string[]): Promise<string[]> {
  const names: string[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(await readFile(file, 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`);
      const obj = doc.toJS() as CrdLike | null;
      if (!obj) continue;
      const name = obj.metadata?.name;
      if (obj.kind !== 'CustomResourceDefinition' || !name) {
        throw new Error(`${file}: expected only named CustomResourceDefinitions, found ${obj.kind}`);
      }
      const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}?fieldManager=${HARNESS_FIELD_MANAGER}&force=true`;
      const r = await kubeRequest(t, 'PATCH', path, obj, 'application/apply-patch+yaml');
      if (r.status !== 200 && r.status !== 201) {
        throw new Error(
          `${file}: the API server refused CRD ${name} (HTTP ${r.status}): ${r.body.slice(0, 2_000)}`,
        );
      }
      names.push(name);
    }
  }
  for (const name of names) await waitEstablished(t, name);
  return names;
}

interface CrdLike {
  kind?: string;
  metadata?: { name?: string };
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

async function waitEstablished(t: ApiTarget, name: string): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const r = await kubeRequest(t, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    if (r.status !== 200) throw new Error(`CRD ${name}: HTTP ${r.status}: ${r.body.slice(0, 500)}`);
    const conds = (JSON.parse(r.body) as CrdLike).status?.conditions ?? [];
    if (conds.some((c) => c.type === 'Established' && c.status === 'True')) return;
    const refused = conds.find((c) => c.type === 'NamesAccepted' && c.status === 'False');
    if (refused) throw new Error(`CRD ${name}: names not accepted: ${refused.message}`);
    if (Date.now() - t0 > LIMITS.crdEstablishedTimeoutMs) {
      throw new Error(`CRD ${name} not Established after ${LIMITS.crdEstablishedTimeoutMs} ms`);
    }
    await sleep(LIMITS.pollIntervalMs);
  }
}
