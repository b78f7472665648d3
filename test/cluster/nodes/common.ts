// What the groups of the several-node file (test/cluster/nodes.test.ts) share: the cluster's size
// and waits, the node scripts, a worker's power cut, and the end of a group.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../envtest/control-plane.ts';
import {
  type Chart,
  condition,
  type Deep,
  deleteNamespace,
  getJson,
  kubectl,
  podReady,
  pods,
  waitFor,
} from '../harness.ts';

export const WORKERS = 3;
export const LIMITS = {
  upMs: 600_000, // nodes-up: ~1-2 min quiet; images imported into every worker
  convergeMs: 600_000, // 6 machines booted and heard on a loaded 2-core machine
  recoverMs: 600_000, // a node's machines moved, seeded, booted and heard again
  nodeNotReadyMs: 120_000, // node-monitor grace 20 s (hack/nodes-up.sh) plus a loaded controller
} as const;
export const NODE_MACHINES = 'retrokube.io/role=node';
const HACK = join(REPO_ROOT, 'hack');

/** Runs hack/NAME; its progress goes to the terminal, its answer is the last line of stdout. */
export function hack(name: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
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
 * a case may have set, powers the worker on again (the script waits until it is Ready), and waits
 * until the node lifecycle controller has lifted its own taints too: Ready comes first, and pods
 * placed in between avoid the node (seen: the next group's agents spread over two nodes only).
 */
export function powerCut(name: string): { restore(): Promise<void> } {
  const index = name.replace('rk-w', '');
  hack('nodes-worker.sh', ['off', index]);
  return {
    async restore() {
      await kubectl(['taint', 'node', name, 'node.kubernetes.io/out-of-service-']).catch(() => '');
      hack('nodes-worker.sh', ['on', index]);
      await waitFor(
        `${name} Ready with no taint left`,
        async () => {
          const n = await getJson(['node', name]);
          return cond(n, 'Ready') === 'True' && (n.spec?.taints ?? []).length === 0;
        },
        LIMITS.nodeNotReadyMs,
      );
    },
  };
}

/**
 * Moves the pods of `ns` matching any of `selectors` off `host` when some run there (cordon,
 * delete, Ready elsewhere, uncordon), before a case cuts that host's power. A case about one kind
 * of loss spares the parts whose loss Kubernetes heals only after its 300-s eviction toleration,
 * longer than the case waits (seen in CI: a cut with the operator on it left the air unheard, and
 * the SheetCluster's status unwritten).
 */
export async function moveOff(host: string, ns: string, selectors: string[]): Promise<void> {
  const there = (await Promise.all(selectors.map((s) => pods(ns, s))))
    .flat()
    .filter((p) => nodeOf(p) === host);
  if (there.length === 0) return;
  console.log(
    `[nodes] moving ${there.map((p) => p.metadata.name).join(', ')} off ${host} before its power cut`,
  );
  await kubectl(['cordon', host]);
  try {
    for (const p of there) await kubectl(['delete', 'pod', '-n', ns, p.metadata.name, '--wait=false']);
    await waitFor(
      `${selectors.join(' and ')} Ready off ${host}`,
      async () => {
        const each = await Promise.all(selectors.map((s) => pods(ns, s)));
        return each.every((ps) => ps.length > 0 && ps.every((p) => podReady(p) && nodeOf(p) !== host));
      },
      LIMITS.convergeMs,
    );
  } finally {
    await kubectl(['uncordon', host]);
  }
}

/** The operator's pods (a group's own chart). */
export const OPERATOR = 'app.kubernetes.io/name=retrokube';

/** The status of an object's condition `type`. */
export const cond = (o: Deep, type: string) => condition(o, type)?.status;
export const nodeOf = (p: Deep): string => p.spec?.nodeName ?? '';

/**
 * Each group installs a cluster-wide operator of its own; left running, it reconciles the next
 * group's objects too, with another key (seen: the Rollout group's OberonKubes heard thousands of
 * "forged frames" and never got Ready). So a group ends its operator, then its namespace.
 */
export async function endGroup(chart: Chart | undefined, ns: string | undefined): Promise<void> {
  if (process.env.RETROKUBE_NODE_KEEP) return;
  await chart?.uninstall();
  if (ns) await deleteNamespace(ns);
}

/** Every worker node name, and its InternalIP. */
export async function workerNodes(): Promise<{ name: string; ip: string; ready: boolean }[]> {
  return (await getJson(['nodes'])).items.map((n: Deep) => ({
    name: n.metadata.name,
    ip: n.status.addresses.find((a: Deep) => a.type === 'InternalIP')?.address,
    ready: cond(n, 'Ready') === 'True',
  }));
}
