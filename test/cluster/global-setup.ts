// vitest globalSetup of the `cluster` project: a real cluster for the whole run.
//   RETROKUBE_CLUSTER_KUBECONFIG set: use that cluster (any kubeconfig: kind, the node of
//     hack/node-up.sh started by hand, a real cluster); the product image must already be there
//     under RETROKUBE_CLUSTER_IMAGE (hack/kind-e2e.sh loads it), else the image is built and its
//     name taken from the archive (a node of hack/node-up.sh gets it imported).
//   otherwise: hack/build-image.sh here, hack/node-up.sh in the background (the files wait for it:
//     node-ready.ts), hack/node-down.sh afterwards
//     (RETROKUBE_NODE_KEEP=1 leaves the node running for a post-mortem).
// A node that cannot start fails the suite under CI=true; elsewhere (not root, no binaries) the
// suite prints one line saying why it did not run and how to start the node, and every test
// reports itself skipped.
// Provides (read through test/cluster/harness.ts): clusterKubeconfig, clusterImage, clusterSkip,
// clusterTools, clusterNode.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { locateTestBins, REPO_ROOT } from '../envtest/control-plane.ts';

export interface ClusterTools {
  kubectl: string;
  helm: string;
}

/** Facts about a node of hack/node-up.sh (undefined for any other cluster). */
export interface ClusterNodeInfo {
  dir: string;
  containerdSocket: string;
}

/** What the background node start came to (the file clusterReadyFile names; kubevirtReadyFile's too). */
export type NodeOutcome = { ok: true; seconds: number } | { ok: false; reason: string };

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the outcome of the background node start appears ('' when nothing starts). */
    clusterReadyFile: string;
    /**
     * Where the outcome of KubeVirt's install on that node appears, also started in the background
     * ('' when the suite does not install it: kubevirt.test.ts then installs it itself).
     */
    kubevirtReadyFile: string;
    clusterKubeconfig: string;
    clusterImage: string;
    clusterSkip: string;
    clusterTools: ClusterTools;
    clusterNode: ClusterNodeInfo | undefined;
  }
}

const HACK = join(REPO_ROOT, 'hack');
const NODE_DIR = process.env.RETROKUBE_NODE_DIR ?? '/tmp/retrokube-node';
// One node per machine (the bridge, the pod cgroups and kube-proxy's chains are machine-wide), so
// two runs of this project take turns: node-up.sh would otherwise clean the other run's node away.
const NODE_LOCK = '/tmp/retrokube-node.lock';
/** Likewise the several nodes of hack/nodes-up.sh (their own names, addresses and cgroups). */
export const NODES_LOCK = '/tmp/retrokube-nodes.lock';
const LIMITS = {
  lockWaitMs: 90 * 60_000, // a whole cold run of the other holder, then give up with its pid
  lockPollMs: 2_000,
  lockReportMs: 30_000, // a progress line while waiting
  kubevirtWaitS: 1_200, // KubeVirt Deployed on the node (images, virt-operator, then its components), loaded 2 cores
  kubevirtNice: 10, // the install's own commands (image imports) yield to the tests running meanwhile
};

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits until this process holds a lock of the machine's nodes (a file holding the owner's pid). */
export async function takeNodeLock(lock = NODE_LOCK): Promise<() => void> {
  const t0 = Date.now();
  let reported = t0;
  for (;;) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
      const release = () => {
        if (readFileSync(lock, 'utf8').trim() === String(process.pid)) rmSync(lock, { force: true });
      };
      return release;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const owner = Number(readFileSync(lock, 'utf8').trim());
    if (!Number.isInteger(owner) || owner <= 0 || !alive(owner)) {
      rmSync(lock, { force: true }); // left by a run that died
      continue;
    }
    const waited = Date.now() - t0;
    if (waited > LIMITS.lockWaitMs) {
      throw new Error(
        `cluster: the real node is held by pid ${owner} (${lock}) for over ${(waited / 60_000) | 0} min; stop that run or remove the file if it is not a test run`,
      );
    }
    if (Date.now() - reported >= LIMITS.lockReportMs) {
      reported = Date.now();
      console.log(
        `[cluster] waiting for the real node: pid ${owner} holds ${lock} (${Math.round(waited / 1000)} s so far)`,
      );
    }
    await new Promise((r) => setTimeout(r, LIMITS.lockPollMs));
  }
}

const KUBEVIRT_TEST = join(REPO_ROOT, 'test/cluster/kubevirt.test.ts');

/**
 * Whether this run installs KubeVirt for kubevirt.test.ts: unless RETROKUBE_KUBEVIRT=0 leaves that
 * file out (vitest.config.ts) or the command line's file filters do, and only when KubeVirt is built
 * (the file itself says how otherwise).
 */
function wantsKubevirt(project: TestProject): boolean {
  if (process.env.RETROKUBE_KUBEVIRT === '0') return false;
  // vitest's file filters (substrings of a file's path; undefined when none were given). The field
  // is marked internal in vitest 4.1; were it ever gone, KubeVirt would be installed every run.
  const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern;
  if (filters && !filters.some((f) => KUBEVIRT_TEST.includes(f))) return false;
  try {
    execFileSync('bash', [join(HACK, 'build-kubevirt.sh'), '--check'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The image name inside an OCI archive of hack/build-image.sh. */
export function imageNameOf(archive: string): string {
  const index = execFileSync('tar', ['-xOf', archive, 'index.json'], { encoding: 'utf8' });
  const name = JSON.parse(index).manifests?.[0]?.annotations?.['io.containerd.image.name'];
  if (typeof name !== 'string') throw new Error(`${archive}: no image name in index.json`);
  return name;
}

/**
 * Runs hack/NAME; its progress goes to the terminal (stderr inherited), its answer (a path) is the
 * last line of stdout. Asynchronous: vitest's main process keeps serving the workers meanwhile.
 */
export function script(name: string, env: NodeJS.ProcessEnv = process.env, niceness = 0): Promise<string> {
  return new Promise((resolve, reject) => {
    const [cmd, args] =
      niceness > 0
        ? ['nice', ['-n', String(niceness), 'bash', join(HACK, name)]]
        : ['bash', [join(HACK, name)]];
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out.trim().split('\n').pop() ?? '')
        : reject(new Error(`${name} exited with ${code}`)),
    );
  });
}

function importImage(node: ClusterNodeInfo, archive: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'ctr',
      ['-a', node.containerdSocket, '-n', 'k8s.io', 'images', 'import', archive],
      { maxBuffer: 16 * 1024 * 1024 },
      (err, _out, stderr) => (err ? reject(new Error(`ctr images import ${archive}: ${stderr}`)) : resolve()),
    );
  });
}

export function skipOrFail(project: TestProject, reason: string): void {
  if (process.env.CI === 'true') throw new Error(`cluster: ${reason}`);
  console.log(`[cluster] not run: ${reason}`);
  project.provide('clusterSkip', reason);
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const bins = locateTestBins();
  project.provide('clusterTools', { kubectl: bins.kubectl, helm: bins.helm });
  project.provide('clusterSkip', '');
  project.provide('clusterNode', undefined);
  project.provide('clusterReadyFile', '');
  project.provide('kubevirtReadyFile', '');
  const given = process.env.RETROKUBE_CLUSTER_KUBECONFIG;
  if (given) {
    if (!existsSync(given)) {
      throw new Error(`cluster: RETROKUBE_CLUSTER_KUBECONFIG=${given} does not exist`);
    }
    project.provide('clusterKubeconfig', given);
    const node = existsSync(join(NODE_DIR, 'kubeconfig'))
      ? { dir: NODE_DIR, containerdSocket: join(NODE_DIR, 'containerd.sock') }
      : undefined;
    let image = process.env.RETROKUBE_CLUSTER_IMAGE;
    if (!image) {
      const archive = await script('build-image.sh');
      image = imageNameOf(archive);
      if (node && readFileSync(given, 'utf8') === readFileSync(join(NODE_DIR, 'kubeconfig'), 'utf8'))
        await importImage(node, archive);
    }
    project.provide('clusterImage', image);
    project.provide('clusterNode', node);
    console.log(`[cluster] using ${given}, image ${image}`);
    return undefined;
  }

  if (process.getuid?.() !== 0) {
    skipOrFail(
      project,
      'the real node needs root (containerd, mounts, a bridge); start it with `sudo bash hack/node-up.sh` and run with RETROKUBE_CLUSTER_KUBECONFIG=/tmp/retrokube-node/kubeconfig',
    );
    return undefined;
  }
  const releaseLock = await takeNodeLock();
  const t0 = Date.now();
  let archive: string;
  try {
    archive = await script('build-image.sh');
  } catch (err) {
    releaseLock();
    skipOrFail(
      project,
      `the product image was not built (${(err as Error).message.split('\n')[0]}); see the lines above, fix, then run bash hack/build-image.sh`,
    );
    return undefined;
  }
  const node = { dir: NODE_DIR, containerdSocket: join(NODE_DIR, 'containerd.sock') };
  const image = imageNameOf(archive);
  const kubeconfig = join(NODE_DIR, 'kubeconfig'); // where node-up.sh writes it
  project.provide('clusterKubeconfig', kubeconfig);
  project.provide('clusterImage', image);
  project.provide('clusterNode', node);
  // The node starts in the background: the cluster project runs last, so the minute node-up takes
  // overlaps the other projects instead of delaying every test. Each cluster file waits for the
  // outcome (node-ready.ts, a setup file of the project); a node that did not start fails them
  // under CI and makes them skip, saying why, elsewhere.
  const readyFile = join(tmpdir(), `retrokube-cluster-node-${process.pid}.json`);
  rmSync(readyFile, { force: true });
  project.provide('clusterReadyFile', readyFile);
  // KubeVirt (kubevirt.test.ts) right after the node, in the background too: its install (~2 min of
  // mostly waiting for its pods) overlaps the projects before the cluster's, where it once delayed
  // the cluster project. Only when that file will run and KubeVirt is built; otherwise the file
  // says why itself. Every later file of the project sees KubeVirt installed, as on a Cozystack.
  const kubevirtFile = wantsKubevirt(project)
    ? join(tmpdir(), `retrokube-cluster-kubevirt-${process.pid}.json`)
    : '';
  if (kubevirtFile) rmSync(kubevirtFile, { force: true });
  project.provide('kubevirtReadyFile', kubevirtFile);
  const up = (async () => {
    try {
      // In a PID namespace of its own: KubeVirt's virt-handler enters PID 1's mount namespace,
      // which this machine's own PID 1 refuses (hack/node-up.sh); the other files do not mind.
      const said = await script('node-up.sh', { RETROKUBE_NODE_PIDNS: '1', ...process.env });
      if (said !== kubeconfig)
        throw new Error(`node-up.sh wrote its kubeconfig to ${said}, not ${kubeconfig}`);
      await importImage(node, archive);
      const seconds = Math.round((Date.now() - t0) / 1000);
      console.log(`[cluster] node up with image ${image} in ${seconds} s`);
      writeFileSync(readyFile, JSON.stringify({ ok: true, seconds } satisfies NodeOutcome));
    } catch (err) {
      const reason = `the node did not start (${(err as Error).message.split('\n')[0]}); see the lines above, fix, then run bash hack/node-up.sh`;
      writeFileSync(readyFile, JSON.stringify({ ok: false, reason } satisfies NodeOutcome));
      if (kubevirtFile)
        writeFileSync(kubevirtFile, JSON.stringify({ ok: false, reason } satisfies NodeOutcome));
      return;
    }
    if (!kubevirtFile) return;
    const k0 = Date.now();
    try {
      // Niced: its image imports run while the unit tests still use both cores.
      const env = { ...process.env, RETROKUBE_KUBEVIRT_WAIT_S: String(LIMITS.kubevirtWaitS) };
      await script('kubevirt-up.sh', env, LIMITS.kubevirtNice);
      const seconds = Math.round((Date.now() - k0) / 1000);
      console.log(`[cluster] KubeVirt installed on the node in ${seconds} s`);
      writeFileSync(kubevirtFile, JSON.stringify({ ok: true, seconds } satisfies NodeOutcome));
    } catch (err) {
      const reason = `KubeVirt was not installed (${(err as Error).message.split('\n')[0]}); see the [kubevirt-up] lines above, fix, then run bash hack/kubevirt-up.sh`;
      writeFileSync(kubevirtFile, JSON.stringify({ ok: false, reason } satisfies NodeOutcome));
    }
  })();
  return async () => {
    await up;
    if (process.env.RETROKUBE_NODE_KEEP) {
      console.log(`[cluster] node left running (RETROKUBE_NODE_KEEP): ${kubeconfig}`);
    } else {
      await script('node-down.sh');
    }
    rmSync(readyFile, { force: true });
    if (kubevirtFile) rmSync(kubevirtFile, { force: true });
    releaseLock();
  };
}
