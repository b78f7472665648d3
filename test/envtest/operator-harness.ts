// Helpers for the operator's envtest files: an in-process operator against the test API server,
// a raw client for assertions, and polling.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { onTestFinished } from 'vitest';
import { createOperatorManager } from '../../operator/src/cli/operator-run.ts';
import { OBERONAIR, type OberonAir } from '../../operator/src/controllers/oberonair.ts';
import { KINDS_OWNED } from '../../operator/src/controllers/oberonmachine.ts';
import { CORE_EVENT } from '../../operator/src/controllers/oberonmachine-observe.ts';
import type { MigrationControllerOptions } from '../../operator/src/controllers/sheetmigration.ts';
import { CORE, KubeClient, type KubeObject, resourcePath } from '../../operator/src/runtime/client.ts';
import type { Manager } from '../../operator/src/runtime/manager.ts';
import { REPO_ROOT } from './control-plane.ts';
import { kubeconfigPath } from './harness.ts';

export { publishRelayEndpoint } from './relay-endpoint.ts';
export type { KubeObject, OberonAir };
export { CORE, OBERONAIR };

/** A client for assertions (admin); closed when the test finishes. */
export function testClient(): KubeClient {
  const c = KubeClient.fromDefault(kubeconfigPath());
  onTestFinished(() => c.close());
  return c;
}

export interface TestOperatorOptions {
  namespace: string;
  leaderElect?: boolean;
  identity?: string;
  leaseNamespace?: string;
  resyncMs?: number;
  /** Watch KubeVirt VirtualMachines too. */
  kubevirt?: boolean;
  /** Where the operator hears airs (a local relay). */
  airAddress?: (namespace: string, air: string, port: number) => { host: string; port: number };
  keySeed?: string;
  /** Where the operator reaches a SheetCluster's apiserver (a local process), and shorter waits. */
  sheetsAddress?: (namespace: string, cluster: string) => string;
  sheetTiming?: { pollMs?: number; startGraceMs?: number; claimGraceMs?: number; secretRecheckMs?: number };
  /** Bind /metrics and probes on a free loopback port. */
  http?: boolean;
  /** Act as this kubeconfig's user (e.g. the chart's ServiceAccount, impersonated); default admin. */
  kubeConfig?: KubeConfig;
  /** SheetMigration hooks (a test crashes the operator between a step's writes and its status). */
  migration?: MigrationControllerOptions;
}

/** Starts the operator in this process, scoped to `namespace`; stopped when the test finishes. */
export async function startOperator(o: TestOperatorOptions): Promise<Manager> {
  const mgr = createOperatorManager({
    client: o.kubeConfig ? new KubeClient(o.kubeConfig) : KubeClient.fromDefault(kubeconfigPath()),
    namespace: o.namespace,
    leaderElect: o.leaderElect,
    leaseNamespace: o.leaseNamespace ?? o.namespace,
    leaseName: 'retrokube-operator',
    identity: o.identity,
    image: 'ghcr.io/retrokube/retrokube:test',
    kubevirt: o.kubevirt,
    airAddress: o.airAddress,
    keySeed: o.keySeed,
    sheetsAddress: o.sheetsAddress,
    memberHosts: ['127.0.0.1'], // the tests' member apiservers run on loopback
    sheetTiming: o.sheetTiming,
    migration: o.migration,
    resyncMs: o.resyncMs ?? 0,
    metrics: o.http ? { host: '127.0.0.1', port: 0 } : undefined,
    health: o.http ? { host: '127.0.0.1', port: 0 } : undefined,
  });
  onTestFinished(() => mgr.stop());
  await mgr.start();
  return mgr;
}

/** Polls `fn` until it returns a truthy value (or throws no more); fails with `what` on timeout. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function air(namespace: string, name: string, spec: Record<string, unknown> = {}): OberonAir {
  return { apiVersion: 'retrokube.io/v1alpha1', kind: 'OberonAir', metadata: { name, namespace }, spec };
}

export function oberonMachine(namespace: string, name: string, spec: Record<string, unknown>): KubeObject {
  return { apiVersion: 'retrokube.io/v1alpha1', kind: 'OberonMachine', metadata: { name, namespace }, spec };
}

/** Plays the StatefulSet controller (the test API server runs none): its one replica is ready. */
export async function markStatefulSetReady(
  k: KubeClient,
  namespace: string,
  name: string,
  observedGeneration: number,
): Promise<void> {
  await k.request('PATCH', resourcePath(KINDS_OWNED.statefulSet, namespace, name, 'status'), {
    body: {
      status: {
        replicas: 1,
        readyReplicas: 1,
        availableReplicas: 1,
        currentReplicas: 1,
        updatedReplicas: 1,
        observedGeneration,
      },
    },
    contentType: 'application/merge-patch+json',
  });
}

/** Plays the Job controller (the test API server runs none): the named Job succeeded just now. */
export async function completeJob(k: KubeClient, namespace: string, name: string): Promise<void> {
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
  await k.request('PATCH', resourcePath(KINDS_OWNED.job, namespace, name, 'status'), {
    body: {
      status: {
        startTime: now,
        completionTime: now,
        succeeded: 1,
        conditions: [
          { type: 'SuccessCriteriaMet', status: 'True', lastTransitionTime: now },
          { type: 'Complete', status: 'True', lastTransitionTime: now },
        ],
      },
    },
    contentType: 'application/merge-patch+json',
  });
}

/** Waits until the manager's controllers have nothing queued or in flight. */
export async function quiescent(mgr: Manager, settleMs = 500): Promise<void> {
  const idle = () => mgr.controllers.every((c) => c.queue.length === 0 && c.queue.processingCount === 0);
  await waitFor('an idle work queue', async () => idle());
  await new Promise((r) => setTimeout(r, settleMs));
  await waitFor('an idle work queue', async () => idle());
}

export function condition(
  obj: KubeObject | undefined,
  type: string,
): { status: string; reason: string; message?: string; observedGeneration?: number } | undefined {
  const conds = (
    obj?.status as
      | {
          conditions?: Array<{
            type: string;
            status: string;
            reason: string;
            message?: string;
            observedGeneration?: number;
          }>;
        }
      | undefined
  )?.conditions;
  return conds?.find((c) => c.type === type);
}

// --- playing kubelet for machine pods ------------------------------------------------------------

// biome-ignore lint/suspicious/noExplicitAny: a Pod template's container, navigated freely
type Container = any;

/** Local folders standing in for a pod's volumes (by volume name, e.g. disk → the PVC's folder). */
export type LocalMounts = Record<string, string>;

/** A path inside the container → the same path under the local folder of its volume mount. */
function localPath(c: Container, mounts: LocalMounts, text: string): string {
  for (const vm of (c.volumeMounts ?? []) as Array<{ name: string; mountPath: string }>) {
    const local = mounts[vm.name];
    if (local !== undefined && (text === vm.mountPath || text.startsWith(`${vm.mountPath}/`)))
      return local + text.slice(vm.mountPath.length);
  }
  return text;
}

/**
 * The machine container's arguments as the kubelet would run them, on this host: paths under a
 * volume mount point at its local folder, $(RK_KEY) is expanded and $$(RK_KEY) becomes $(RK_KEY)
 * (for `machine run` to expand from the env, localMachineEnv), the relay Service's address is a
 * local relay, and the VNC server stays off (no port to share between test machines).
 */
export function localMachineArgs(
  c: Container,
  o: { mounts: LocalMounts; relay?: string; key?: string },
): string[] {
  const args: string[] = [];
  const given = c.args as string[];
  for (let i = 0; i < given.length; i++) {
    const a = given[i];
    if (a === '--vnc' || a === '--vnc-host') i++;
    else if (given[i - 1] === '--air' && o.relay !== undefined) args.push(o.relay);
    else args.push(localPath(c, o.mounts, kubeletExpand(a, o.key ?? '')));
  }
  return args;
}

/** The kubelet's $(VAR) expansion of RK_KEY, with "$$" escaping a reference. */
function kubeletExpand(arg: string, key: string): string {
  return arg.replace(/\$\$|\$\(RK_KEY\)/g, (m) => (m === '$$' ? '$' : key));
}

/** The machine container's environment on this host: the key Secret's value as RK_KEY. */
export function localMachineEnv(key = ''): NodeJS.ProcessEnv {
  return { ...process.env, RK_KEY: key };
}

/** A kubeconfig file for `account` in `ns` with a token from the TokenRequest API; its path. */
export async function serviceAccountKubeconfig(
  k: KubeClient,
  ns: string,
  account: string,
  dir: string,
): Promise<string> {
  const tr = await k.request<{ status: { token: string } }>(
    'POST',
    `/api/v1/namespaces/${ns}/serviceaccounts/${account}/token`,
    {
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 3600 },
      },
    },
  );
  const cluster = k.kc.getCurrentCluster();
  if (!cluster) throw new Error('the test kubeconfig has no current cluster');
  const ca = cluster.caData
    ? { 'certificate-authority-data': cluster.caData }
    : cluster.caFile
      ? { 'certificate-authority': cluster.caFile }
      : { 'insecure-skip-tls-verify': true };
  const file = join(dir, `${account}.kubeconfig`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'envtest', cluster: { server: cluster.server, ...ca } }],
      users: [{ name: account, user: { token: tr.status.token } }],
      contexts: [{ name: account, context: { cluster: 'envtest', user: account, namespace: ns } }],
      'current-context': account,
    }),
    { mode: 0o600 },
  );
  return file;
}

/**
 * The kubelet's part for machine StatefulSets, played on this host: each StatefulSet scaled to 1
 * gets its pod as a local `retrokube machine run` process (volumes as folders: the PVC with a copy
 * of `disk`, the status emptyDir, ConfigMap volumes as a file per entry kept up to date), its key
 * read from the Secret its env names, its relay the local one; then the StatefulSet is marked ready.
 */
export class LocalKubelet {
  readonly procs = new Map<string, ChildProcess>();
  readonly pods = new Map<string, { c: Container; mounts: LocalMounts }>();
  private readonly k: KubeClient;
  private readonly ns: string;
  private readonly o: { disk: string; relay: string; work: string };
  constructor(k: KubeClient, ns: string, o: { disk: string; relay: string; work: string }) {
    this.k = k;
    this.ns = ns;
    this.o = o;
  }

  /** One pass: ConfigMap volumes refreshed, new pods started. */
  async sync(): Promise<void> {
    const sets = (await this.k.list(KINDS_OWNED.statefulSet, this.ns)).items as Container[];
    for (const sts of sets) {
      const name = sts.metadata.name as string;
      const pod = this.pods.get(name);
      if (pod) await this.refreshConfigMaps(sts, pod.mounts);
      if (this.procs.has(name) || sts.spec.replicas !== 1) continue;
      const c = sts.spec.template.spec.containers[0];
      const mounts: LocalMounts = {};
      for (const v of sts.spec.template.spec.volumes ?? []) mounts[v.name] = join(this.o.work, name, v.name);
      mounts.disk = join(this.o.work, name, 'disk');
      for (const dir of Object.values(mounts)) mkdirSync(dir, { recursive: true });
      copyFileSync(this.o.disk, join(mounts.disk, 'oberon.dsk'));
      await this.refreshConfigMaps(sts, mounts);
      const ref = c.env?.find((e: Container) => e.name === 'RK_KEY')?.valueFrom?.secretKeyRef;
      const secret = ref ? await this.k.get(CORE.secret, this.ns, ref.name) : undefined;
      const key = ref ? Buffer.from((secret as Container).data[ref.key], 'base64').toString() : undefined;
      const args = localMachineArgs(c, { mounts, relay: this.o.relay, key });
      // The kubelet's projected token: a pod that runs as a ServiceAccount with its token mounted
      // talks to the API as that account (and only as that), here through a kubeconfig file.
      const podSpec = sts.spec.template.spec;
      const asAccount =
        podSpec.automountServiceAccountToken === true && podSpec.serviceAccountName
          ? await serviceAccountKubeconfig(
              this.k,
              this.ns,
              podSpec.serviceAccountName,
              join(this.o.work, name),
            )
          : undefined;
      this.pods.set(name, { c, mounts });
      this.procs.set(
        name,
        spawn(join(REPO_ROOT, 'node_modules/.bin/node'), ['operator/src/cli/main.ts', ...args], {
          cwd: REPO_ROOT,
          stdio: 'ignore',
          env: { ...localMachineEnv(key), ...(asAccount ? { KUBECONFIG: asAccount } : {}) },
        }),
      );
      await markStatefulSetReady(this.k, this.ns, name, sts.metadata.generation);
    }
  }

  private async refreshConfigMaps(sts: Container, mounts: LocalMounts): Promise<void> {
    for (const v of sts.spec.template.spec.volumes ?? []) {
      if (!v.configMap) continue;
      const cm = (await this.k.getOrUndefined(CORE.configMap, this.ns, v.configMap.name)) as Container;
      for (const [entry, text] of Object.entries((cm?.data ?? {}) as Record<string, string>)) {
        const file = join(mounts[v.name], entry);
        if (!existsSync(file) || readFileSync(file, 'utf8') !== text) writeFileSync(file, text);
      }
    }
  }

  stop(): void {
    for (const p of this.procs.values()) p.kill('SIGKILL');
  }
}

/**
 * Runs the container's exec readiness probe for real (its own command, volume paths pointing at
 * the local folders) as the kubelet does: combined output, a failure on a non-zero exit or timeout.
 */
export function runExecProbe(c: Container, mounts: LocalMounts): { ok: boolean; output: string } {
  const cmd = (c.readinessProbe?.exec?.command ?? []) as string[];
  if (cmd.length === 0) throw new Error('the container has no exec readiness probe');
  const [file, ...rest] = cmd.map((part) => {
    let out = part;
    for (const vm of (c.volumeMounts ?? []) as Array<{ name: string; mountPath: string }>)
      if (mounts[vm.name] !== undefined) out = out.replaceAll(vm.mountPath, mounts[vm.name]);
    return out;
  });
  const r = spawnSync(file, rest, {
    encoding: 'utf8',
    timeout: (c.readinessProbe.timeoutSeconds ?? 1) * 1000,
  });
  return { ok: r.status === 0, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/**
 * What the kubelet writes when a readiness probe fails: a Warning `Unhealthy` event on the pod's
 * container, "Readiness probe failed: <output>"; the same message again bumps the count of the
 * event it wrote before (the kubelet's event correlator), as on a real node.
 */
export class ProbeEvents {
  private readonly written = new Map<string, { name: string; count: number }>();
  private readonly k: KubeClient;
  private readonly ns: string;
  constructor(k: KubeClient, ns: string) {
    this.k = k;
    this.ns = ns;
  }
  /** The count written so far for the pod's event with this probe output. */
  countOf(pod: string, output: string): number {
    return this.written.get(`${pod}\u0000Readiness probe failed: ${output}`)?.count ?? 0;
  }
  async failed(pod: string, container: string, output: string): Promise<void> {
    const message = `Readiness probe failed: ${output}`;
    const id = `${pod}\u0000${message}`;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const prev = this.written.get(id);
    if (prev) {
      prev.count++;
      await this.k.mergePatch(CORE_EVENT, this.ns, prev.name, { count: prev.count, lastTimestamp: now });
      return;
    }
    const e = await this.k.create<KubeObject>(CORE_EVENT, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${pod}.${randomBytes(8).toString('hex')}`, namespace: this.ns },
      involvedObject: {
        apiVersion: 'v1',
        kind: 'Pod',
        name: pod,
        namespace: this.ns,
        fieldPath: `spec.containers{${container}}`,
      },
      reason: 'Unhealthy',
      message,
      type: 'Warning',
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: 'kubelet', host: 'node-1' },
      reportingComponent: 'kubelet',
      reportingInstance: 'node-1',
    });
    this.written.set(id, { name: e.metadata.name as string, count: 1 });
  }
}

/** The operator as a real process (`retrokube operator`, trace logs captured), for tests of what it prints. */
export interface OperatorProcess {
  readonly proc: ChildProcess;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

export function spawnOperator(o: {
  kubeconfig: string;
  namespace: string;
  env?: Record<string, string>;
}): OperatorProcess {
  const proc = spawn(
    `${REPO_ROOT}/node_modules/.bin/node`,
    [
      'operator/src/cli/main.ts',
      'operator',
      '--kubeconfig',
      o.kubeconfig,
      '--namespace',
      o.namespace,
      '--metrics-port',
      '0',
      '--health-port',
      '0',
      '--log-level',
      'trace',
    ],
    { cwd: REPO_ROOT, env: { ...process.env, ...o.env, VITEST: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (b) => {
    out += b;
  });
  proc.stderr?.on('data', (b) => {
    out += b;
  });
  return {
    proc,
    output: () => out,
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
