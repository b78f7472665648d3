// Helpers for the `cluster` project: tests against a real cluster (the node of hack/node-up.sh,
// or any kubeconfig given in RETROKUBE_CLUSTER_KUBECONFIG). Reusable by every kind's tests: the
// chart installed once per file, namespaces, kubectl/helm, pods, port-forwards, polling.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { inject, onTestFinished } from 'vitest';
import { KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import type { ClusterNodeInfo, NodeOutcome } from './global-setup.ts';

export { waitFor } from '../envtest/operator-harness.ts';
export type { KubeObject };

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
export type Deep = any;

const LIMITS = {
  commandTimeoutMs: 120_000, // one kubectl/helm call; `helm install --wait` gets its own
  portForwardReadyMs: 30_000, // kubectl port-forward prints its local port within seconds
  outputBytes: 4_000, // how much of a failed command's output goes into the error
  outcomePollMs: 500, // how often a background start's outcome file is looked for
  outcomeReportMs: 30_000, // a progress line while waiting for it
} as const;

/**
 * Waits for the outcome file of a background start of the global setup (the node, KubeVirt) and
 * reads it, printing a progress line every half minute.
 */
export async function awaitOutcome(file: string, what: string, waitMs: number): Promise<NodeOutcome> {
  const t0 = Date.now();
  let reported = t0;
  while (!existsSync(file)) {
    if (Date.now() - t0 > waitMs)
      throw new Error(`cluster: ${what} was not up after ${Math.round(waitMs / 60_000)} min (no ${file})`);
    if (Date.now() - reported >= LIMITS.outcomeReportMs) {
      reported = Date.now();
      console.log(
        `[cluster] waiting for ${what} to come up (${Math.round((reported - t0) / 1000)} s so far)`,
      );
    }
    await new Promise((r) => setTimeout(r, LIMITS.outcomePollMs));
  }
  return JSON.parse(readFileSync(file, 'utf8')) as NodeOutcome;
}

/** How the node's background start ended (node-ready.ts waited for it); undefined: none started. */
export function nodeOutcome(): NodeOutcome | undefined {
  const file = inject('clusterReadyFile');
  return file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as NodeOutcome) : undefined;
}

/** Why the suite does not run here ('' when it does). */
export function skipReason(): string {
  const outcome = nodeOutcome();
  return inject('clusterSkip') || (outcome && !outcome.ok ? outcome.reason : '');
}
let otherCluster: string | undefined;
/**
 * Points every helper of this file (in this test file's worker) at another cluster: the
 * multi-node cluster a file starts for itself (nodes.test.ts); undefined goes back to the node.
 */
export function useKubeconfig(path: string | undefined): void {
  otherCluster = path;
}
export function kubeconfigPath(): string {
  return otherCluster ?? inject('clusterKubeconfig');
}
/** The product image as the cluster knows it (imported, never pulled). */
export function productImage(): { repository: string; tag: string; ref: string } {
  const ref = inject('clusterImage');
  const i = ref.lastIndexOf(':');
  return { repository: ref.slice(0, i), tag: ref.slice(i + 1), ref };
}
/** The node of hack/node-up.sh, when the suite runs on it (undefined on kind and other clusters). */
export function localNode(): ClusterNodeInfo | undefined {
  return inject('clusterNode');
}
/**
 * For `skipIf`: true when a test that needs the node of hack/node-up.sh (its cgroups, its scripts)
 * runs on another cluster. Under CI=true the suite always runs on that node, so its absence is a
 * failure there, never a silent skip (docs/testing.md, "Every skip").
 */
export function noLocalNode(what: string): boolean {
  if (skipReason() || localNode()) return false;
  if (process.env.CI === 'true')
    throw new Error(`${what} needs the node of hack/node-up.sh, and CI=true runs on it`);
  console.log(
    `[cluster] ${what}: not run (needs the node of hack/node-up.sh, not RETROKUBE_CLUSTER_KUBECONFIG)`,
  );
  return true;
}

/** A client (the operator's own runtime client) as the kubeconfig's user; closed after the test. */
export function client(): KubeClient {
  const c = KubeClient.fromDefault(kubeconfigPath());
  onTestFinished(() => c.close());
  return c;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to the end; rejects with its output unless it exits 0 (or `allowFail`). */
export function run(
  file: string,
  args: string[],
  o: { input?: string; timeoutMs?: number; allowFail?: boolean } = {},
): Promise<RunResult> {
  return new Promise((ok, fail) => {
    const p = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b) => {
      stdout += b;
    });
    p.stderr.on('data', (b) => {
      stderr += b;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), o.timeoutMs ?? LIMITS.commandTimeoutMs);
    p.on('error', fail);
    p.on('close', (code) => {
      clearTimeout(timer);
      const r = { code: code ?? -1, stdout, stderr };
      if (r.code === 0 || o.allowFail) ok(r);
      else
        fail(
          new Error(
            `${file.split('/').pop()} ${args.join(' ')} exited ${r.code}: ${(stderr || stdout).slice(-LIMITS.outputBytes)}`,
          ),
        );
    });
    p.stdin.on('error', () => undefined); // a command that exits before reading its input
    p.stdin.end(o.input ?? '');
  });
}

export async function kubectl(
  args: string[],
  o: { input?: string; timeoutMs?: number } = {},
): Promise<string> {
  return (await run(inject('clusterTools').kubectl, ['--kubeconfig', kubeconfigPath(), ...args], o)).stdout;
}

export async function helm(args: string[], timeoutMs = 300_000): Promise<string> {
  return (await helmRun(args, { timeoutMs })).stdout;
}

/** helm with the cluster's kubeconfig; its whole result (`allowFail`: a refusal is what a test expects). */
export function helmRun(
  args: string[],
  o: { timeoutMs?: number; allowFail?: boolean } = {},
): Promise<RunResult> {
  return run(inject('clusterTools').helm, ['--kubeconfig', kubeconfigPath(), ...args], {
    timeoutMs: 300_000,
    ...o,
  });
}

/** The condition `type` of an object's status (undefined when it has none). */
export const condition = (o: Deep, type: string): Deep =>
  (o?.status?.conditions ?? []).find((c: Deep) => c.type === type);

/** kubectl get -o json, parsed. */
export async function getJson(args: string[]): Promise<Deep> {
  return JSON.parse(await kubectl(['get', ...args, '-o', 'json']));
}

/** Applies YAML or JSON objects (server-side). */
export async function apply(doc: unknown): Promise<void> {
  const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
  await kubectl(['apply', '--server-side', '--field-manager=retrokube-cluster-test', '-f', '-'], {
    input: text,
  });
}

/**
 * A new namespace (generateName), deleted when the current test (or the file, from beforeAll)
 * finishes; on a real cluster the namespace controller really removes everything inside.
 */
export async function freshNamespace(prefix: string): Promise<string> {
  const created = JSON.parse(
    await kubectl(['create', '-o', 'json', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { generateName: `${prefix}-`, labels: { 'retrokube.io/cluster-test': 'true' } },
      }),
    }),
  );
  return created.metadata.name as string;
}

/** One entry of a Secret, decoded (the cluster tests read the generated token and keys this way). */
export async function secretValue(ns: string, name: string, entry: string): Promise<string> {
  return Buffer.from((await getJson(['secret', '-n', ns, name])).data[entry], 'base64').toString();
}

export async function deleteNamespace(ns: string): Promise<void> {
  await kubectl(['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
}

/** The namespace's events, oldest first. */
export async function events(ns: string): Promise<Deep[]> {
  const items: Deep[] = (await getJson(['events', '-n', ns])).items;
  const at = (e: Deep) => String(e.lastTimestamp ?? e.eventTime);
  return items.sort((a, b) => at(a).localeCompare(at(b)));
}

/** The messages of the namespace's events that match `re` ("kind/name: message"), oldest first. */
export async function eventsMatching(ns: string, re: RegExp): Promise<string[]> {
  return (await events(ns))
    .filter((e) => re.test(e.message ?? ''))
    .map((e) => `${e.involvedObject?.kind}/${e.involvedObject?.name}: ${e.message}`);
}

/** The pods matching a label selector. */
export async function pods(ns: string, selector: string): Promise<Deep[]> {
  return (await getJson(['pods', '-n', ns, '-l', selector])).items;
}

export function podReady(p: Deep): boolean {
  return (
    p?.status?.phase === 'Running' &&
    !p.metadata.deletionTimestamp &&
    (p.status.conditions ?? []).some((c: Deep) => c.type === 'Ready' && c.status === 'True')
  );
}

/**
 * Freezes (or thaws) a container with the cgroup freezer, as a hung machine would stand still: its
 * processes keep their memory and sockets but run no instruction. Only on the node of
 * hack/node-up.sh (cgroup v1 here), whose cgroups this process can write.
 */
export async function freezeContainer(pod: Deep, container: string, frozen: boolean): Promise<void> {
  const { readdirSync, writeFileSync, existsSync } = await import('node:fs');
  const id = (pod.status.containerStatuses as Deep[])
    .find((c) => c.name === container)
    ?.containerID?.replace(/^containerd:\/\//, '');
  if (!id) throw new Error(`pod ${pod.metadata.name} has no running container ${container}`);
  const base = '/sys/fs/cgroup/freezer/kubepods';
  for (const qos of ['', 'burstable', 'besteffort']) {
    const dir = `${base}/${qos ? `${qos}/` : ''}pod${pod.metadata.uid}/${id}`;
    if (existsSync(dir)) {
      writeFileSync(`${dir}/freezer.state`, frozen ? 'FROZEN' : 'THAWED');
      return;
    }
  }
  throw new Error(
    `no freezer cgroup for ${pod.metadata.name}/${container} under ${base} (${readdirSync(base).join(', ')})`,
  );
}

export interface Chart {
  namespace: string;
  release: string;
  uninstall(): Promise<void>;
}

/**
 * Our CRDs outlive `helm uninstall` (helm.sh/resource-policy: keep), still annotated with their old
 * release, and helm refuses to install over them from another release. CRDs of a release that is
 * gone (its namespace gone or going) are handed to the new one (helm adopts objects annotated with
 * its name and namespace); while another release lives, the new one installs without CRDs.
 * Returns the extra helm flags.
 */
async function crdOwnership(namespace: string, release: string): Promise<string[]> {
  let extra: string[] = [];
  const ours = (await getJson(['crd'])).items.filter((c: Deep) => c.spec.group === 'retrokube.io');
  for (const crd of ours) {
    const name = crd.metadata.name as string;
    const ownerNs = crd?.metadata?.annotations?.['meta.helm.sh/release-namespace'];
    if (!crd || !ownerNs || ownerNs === namespace) continue;
    const owner = await getJson(['namespace', ownerNs]).catch(() => undefined);
    if (owner && !owner.metadata.deletionTimestamp) {
      extra = ['--set', 'crds.install=false'];
      continue;
    }
    await kubectl([
      'annotate',
      'crd',
      name,
      '--overwrite',
      `meta.helm.sh/release-name=${release}`,
      `meta.helm.sh/release-namespace=${namespace}`,
    ]);
  }
  return extra;
}

/**
 * `helm install` of charts/retrokube with the product image (pullPolicy Never: it was imported,
 * there is no registry), waiting until the operator Deployment is available.
 */
export async function installChart(
  namespace: string,
  release = 'retrokube',
  extra: string[] = [],
): Promise<Chart> {
  const img = productImage();
  await helm(
    [
      'install',
      release,
      'charts/retrokube',
      '--namespace',
      namespace,
      '--set',
      `image.repository=${img.repository}`,
      '--set',
      `image.tag=${img.tag}`,
      '--set',
      'image.pullPolicy=Never',
      // The chart's CRDs win over fields an earlier run, a benchmark or a by-hand apply left.
      '--force-conflicts',
      ...(await crdOwnership(namespace, release)),
      ...extra,
    ],
    300_000,
  );
  // Not `helm install --wait`: helm 4's watcher once sat on "Replicas: 0/1" for its whole timeout
  // while the Deployment was long available; kubectl's rollout status reads it level-triggered.
  await kubectl(['rollout', 'status', '-n', namespace, `deployment/${release}-retrokube`, '--timeout=300s'], {
    timeoutMs: 310_000,
  });
  return {
    namespace,
    release,
    uninstall: async () => {
      await helm(['uninstall', release, '--namespace', namespace, '--wait', '--timeout', '2m']);
    },
  };
}

/** `kubectl port-forward` to `target` (e.g. svc/name); resolves with the local port once it listens. */
export async function portForward(
  ns: string,
  target: string,
  remotePort: number,
): Promise<{ port: number; close(): void }> {
  const p: ChildProcess = spawn(
    inject('clusterTools').kubectl,
    [
      '--kubeconfig',
      kubeconfigPath(),
      'port-forward',
      '-n',
      ns,
      '--address',
      '127.0.0.1',
      target,
      `:${remotePort}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const close = (): void => {
    p.kill('SIGTERM');
  };
  onTestFinished(close);
  return await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => {
      close();
      fail(new Error(`port-forward ${target}: no local port after ${LIMITS.portForwardReadyMs} ms: ${out}`));
    }, LIMITS.portForwardReadyMs);
    const onData = (b: Buffer) => {
      out += b;
      const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok({ port: Number(m[1]), close });
      }
    };
    p.stdout?.on('data', onData);
    p.stderr?.on('data', onData);
    p.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`port-forward ${target} exited ${code}: ${out}`));
    });
  });
}

/**
 * `kubectl proxy` on a free loopback port: the API server's own proxy to Services and pods
 * (`/api/v1/namespaces/NS/services/NAME:PORT/proxy/...`), which follows a Service's endpoints when
 * its pods are replaced (a port-forward is bound to one pod). The caller closes it.
 */
export async function apiProxy(): Promise<{ url: string; close(): void }> {
  const p: ChildProcess = spawn(
    inject('clusterTools').kubectl,
    ['--kubeconfig', kubeconfigPath(), 'proxy', '--address', '127.0.0.1', '--port', '0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const close = (): void => {
    p.kill('SIGTERM');
  };
  return await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => {
      close();
      fail(new Error(`kubectl proxy: no port after ${LIMITS.portForwardReadyMs} ms: ${out}`));
    }, LIMITS.portForwardReadyMs);
    const onData = (b: Buffer) => {
      out += b;
      const m = /Starting to serve on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        ok({ url: `http://127.0.0.1:${m[1]}`, close });
      }
    };
    p.stdout?.on('data', onData);
    p.stderr?.on('data', onData);
    p.on('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`kubectl proxy exited ${code}: ${out}`));
    });
  });
}

// --- a machine's screen through a real VNC client ------------------------------------------------

export interface Screen {
  width: number;
  height: number;
  /** RGBA, top row first. */
  rgba: Buffer;
  png: Buffer;
}

/**
 * The screen of a machine's VNC Service as a real RFB client sees it: `kubectl port-forward` to the
 * Service, vncsnapshot (JPEG, its only format) and djpeg decode it, pngjs writes the PNG.
 */
export async function vncScreen(ns: string, service: string, port = 5900): Promise<Screen> {
  const fwd = await portForward(ns, `svc/${service}`, port);
  try {
    return await vncScreenAt(fwd.port);
  } finally {
    fwd.close();
  }
}

/** The screen of an RFB server on 127.0.0.1:`port` (vncsnapshot, djpeg, pngjs). */
export async function vncScreenAt(port: number): Promise<Screen> {
  const { mkdtemp, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { PNG } = await import('pngjs');
  const dir = await mkdtemp(join(tmpdir(), 'rk-vnc-'));
  try {
    // vncsnapshot names a display (5900 + n) with one colon, a raw port with two.
    await run('vncsnapshot', ['-quiet', '-quality', '95', `127.0.0.1::${port}`, join(dir, 'shot.jpg')], {
      timeoutMs: 60_000,
    });
    const ppm = await decodeJpeg(join(dir, 'shot.jpg'));
    const png = new PNG({ width: ppm.width, height: ppm.height });
    for (let p = 0; p < ppm.width * ppm.height; p++) {
      png.data[p * 4] = ppm.rgb[p * 3];
      png.data[p * 4 + 1] = ppm.rgb[p * 3 + 1];
      png.data[p * 4 + 2] = ppm.rgb[p * 3 + 2];
      png.data[p * 4 + 3] = 255;
    }
    return { width: ppm.width, height: ppm.height, rgba: png.data, png: PNG.sync.write(png) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** djpeg (Debian libjpeg-turbo-progs) to a binary PPM on stdout, parsed. */
async function decodeJpeg(jpg: string): Promise<{ width: number; height: number; rgb: Buffer }> {
  const r = await new Promise<Buffer>((ok, fail) => {
    const p = spawn('djpeg', ['-pnm', jpg], { stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    p.stdout.on('data', (b: Buffer) => chunks.push(b));
    p.on('error', fail);
    p.on('close', (code) =>
      code === 0 ? ok(Buffer.concat(chunks)) : fail(new Error(`djpeg exited ${code}`)),
    );
  });
  // P6 header: "P6\n<w> <h>\n<max>\n" then RGB bytes.
  const header = /^P6\s+(\d+)\s+(\d+)\s+(\d+)\s/.exec(r.subarray(0, 64).toString('latin1'));
  if (!header) throw new Error('djpeg did not write a binary PPM');
  return { width: Number(header[1]), height: Number(header[2]), rgb: r.subarray(header[0].length) };
}

/** Lit (text or bar) pixel: Oberon's light foreground against its dark background, JPEG noise aside. */
function lit(s: Screen, x: number, y: number): boolean {
  const i = (y * s.width + x) * 4;
  return s.rgba[i] * 0.3 + s.rgba[i + 1] * 0.59 + s.rgba[i + 2] * 0.11 > 176;
}

/**
 * The viewers of the track between x0 and x1: title bars (bands ≥ 8 rows that are mostly lit) and,
 * in the frame below each bar, the number of text lines (bands of rows with some ink). Pure.
 */
export function viewersOf(s: Screen, x0: number, x1: number): { top: number; textLines: number }[] {
  const rowLit = (y: number, from: number, to: number) => {
    let n = 0;
    for (let x = from; x < to; x++) if (lit(s, x, y)) n++;
    return n;
  };
  const bars: number[] = [];
  let start = -1;
  for (let y = 0; y <= s.height; y++) {
    const isBar = y < s.height && rowLit(y, x0, x1) >= 0.5 * (x1 - x0);
    if (isBar && start < 0) start = y;
    if (!isBar && start >= 0) {
      if (y - start >= 8) bars.push(start);
      start = -1;
    }
  }
  return bars.map((top, i) => {
    const end = bars[i + 1] ?? s.height;
    // A text line is a band of ≥ 3 rows with ≥ 12 lit pixels each (the body of the letters);
    // descenders and ascenders light only a few pixels in the rows between two lines.
    let lines = 0;
    let run = 0;
    for (let y = top + 14; y <= end; y++) {
      const body = y < end && rowLit(y, x0 + 16, x1 - 16) >= 12;
      if (body) run++;
      else {
        if (run >= 3) lines++;
        run = 0;
      }
    }
    return { top, textLines: lines };
  });
}
