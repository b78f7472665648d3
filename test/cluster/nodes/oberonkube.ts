// On the several nodes: an OberonKube of 5 node machines spread over the three workers with its
// plane, budgeted one machine at a time; `kubectl drain` keeps to that budget, and a whole node's
// power cut (its machines NotReady on the air, their pods moved, the cluster converged, the node
// back and Ready).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  apply,
  type Chart,
  type Deep,
  getJson,
  installChart,
  kubeconfigPath,
  kubectl,
  podReady,
  pods,
  run,
  waitFor,
} from '../harness.ts';
import {
  cond,
  endGroup,
  LIMITS,
  moveOff,
  NODE_MACHINES,
  nodeOf,
  OPERATOR,
  powerCut,
  WORKERS,
  workerNodes,
} from './common.ts';

const KUBE = 'k';

/** Its describe block, registered inside the several-node file's (the cluster is up). */
export function oberonKubeOnNodes(): void {
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
          kubeconfigPath(),
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
     * operator or the relay when there is one (their own losses are other cases), then the one
     * holding the most.
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
        // about the machines, so it spares those (busiestHost, spareOperatorAndRelay).
        const victim = await busiestHost(perHost(await pods(kns, NODE_MACHINES)));
        await spareOperatorAndRelay(victim);
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

    /**
     * Moves the operator and the relay off `host` when either runs there. After the drain two hosts
     * hold every machine, and those two may hold the operator and the relay between them (seen in
     * a CI rehearsal): cut with the operator, the air goes unheard.
     */
    async function spareOperatorAndRelay(host: string): Promise<void> {
      await moveOff(host, kns, [OPERATOR, 'app.kubernetes.io/component=air-relay']);
      await waitFor('converged with the operator and the relay moved', allUp, LIMITS.convergeMs);
    }

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
}
