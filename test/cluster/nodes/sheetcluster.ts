// On the several nodes: a SheetCluster whose agents spread over the workers; a node's power cut
// moves its tickers to the other agents through the sheet's own scheduler, nothing twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SheetsClient } from '../../../operator/src/sheets/ctl/client.ts';
import {
  apiProxy,
  apply,
  type Chart,
  type Deep,
  freshNamespace,
  getJson,
  installChart,
  podReady,
  pods,
  secretValue,
  waitFor,
} from '../harness.ts';
import { cond, endGroup, LIMITS, moveOff, nodeOf, OPERATOR, powerCut, WORKERS } from './common.ts';

/** Its describe block, registered inside the several-node file's (the cluster is up). */
export function sheetClusterOnNodes(): void {
  describe('a SheetCluster of 3 agents', () => {
    const NAME = 'farm';
    const CHILD = `rk-sheets-${NAME}`;
    const AGENTS = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=node`;
    const APISERVER = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=apiserver`;
    const AGENT_NAMES = ['node-0', 'node-1', 'node-2'];
    const TICKERS = 6;
    const TTL_S = 15; // the sheet's failover TTL under test: long enough for a loaded 2-core machine
    type Row = Record<string, unknown>;
    let sns: string;
    let schart: Chart | undefined;
    let proxy: { url: string; close(): void } | undefined;
    let sheet: SheetsClient;
    const rows = (kind: string): Promise<Row[] | undefined> => sheet.get(kind).catch(() => undefined);
    /** Every ticker Running on an agent of `on`, exactly TICKERS of them, no name twice. */
    const tickersOn = async (on: string[]): Promise<Row[] | undefined> => {
      const t = (await rows('pods'))?.filter((p) => p.deployment === 'ticker');
      return t &&
        t.length === TICKERS &&
        new Set(t.map((p) => p.name)).size === TICKERS &&
        t.every((p) => p.phase === 'Running' && on.includes(String(p.node)))
        ? t
        : undefined;
    };
    const nodesInSheet = async (want: Record<string, string>): Promise<boolean> => {
      const n = await rows('nodes');
      return (
        !!n && Object.entries(want).every(([name, st]) => n.some((r) => r.name === name && r.status === st))
      );
    };

    beforeAll(async () => {
      sns = await freshNamespace('nodes-sheets');
      schart = await installChart(sns, `rk-${sns.split('-').pop()}`);
      proxy = await apiProxy();
    }, LIMITS.upMs);
    afterAll(async () => {
      proxy?.close();
      await endGroup(schart, sns);
    }, LIMITS.upMs);

    const sheetCluster = (tickers: number) =>
      apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetCluster',
        metadata: { name: NAME, namespace: sns },
        spec: {
          nodes: 3,
          failoverSeconds: TTL_S,
          // Required, not the default soft spread: the scheduler may weigh a soft spread below its
          // other scores (a CI rehearsal put two agents on one node), and this case needs one agent
          // per node to cut one.
          placement: { spread: 'required' },
          store: { type: 'xlsx', xlsx: { size: '64Mi' } },
          deployments: [{ name: 'ticker', replicas: tickers }],
        },
      });

    it(
      'its agents spread over the three nodes; the tickers run on all of them, as the sheet says',
      async () => {
        // No tickers until the three agents are heard: the scheduler gives each replica to the
        // agent with the most room (FreeHeap), so they spread, and the power cut below can take an
        // agent with tickers whose node is not the apiserver's.
        await sheetCluster(0);
        await waitFor(
          'the apiserver and 3 agents Ready',
          async () =>
            (await pods(sns, APISERVER)).filter(podReady).length === 1 &&
            (await pods(sns, AGENTS)).filter(podReady).length === 3,
          LIMITS.convergeMs,
        );
        // One agent on each node (the apiserver shares one of them: four pods, three hosts).
        expect(new Set((await pods(sns, AGENTS)).map(nodeOf)).size).toBe(WORKERS);
        if (!proxy) throw new Error('no kubectl proxy');
        sheet = new SheetsClient({
          url: `${proxy.url}/api/v1/namespaces/${sns}/services/${CHILD}:http/proxy/`,
          token: await secretValue(sns, `${CHILD}-token`, 'token'),
          key: await secretValue(sns, `${CHILD}-signing`, 'key'),
          timeoutMs: 10_000,
        });
        await waitFor(
          'the 3 agents Ready in the sheet',
          () => nodesInSheet(Object.fromEntries(AGENT_NAMES.map((n) => [n, 'Ready']))),
          LIMITS.convergeMs,
        );
        await sheetCluster(TICKERS);
        const t = await waitFor(
          '6 tickers Running on the agents',
          () => tickersOn(AGENT_NAMES),
          LIMITS.convergeMs,
        );
        const per = AGENT_NAMES.map((a) => t.filter((p) => p.node === a).length);
        console.log(
          `[nodes] sheet: tickers per agent ${AGENT_NAMES.map((a, i) => `${a}=${per[i]}`).join(' ')}`,
        );
        expect(per.every((n) => n > 0)).toBe(true);
      },
      2 * LIMITS.convergeMs,
    );

    it(
      'a node’s power cut: its agent NotReady in the sheet after the TTL, its tickers rescheduled on the others, nothing twice; the node back, the agent rejoins',
      async () => {
        const agentHost = new Map(
          (await pods(sns, AGENTS)).map((p) => [
            (p.metadata.name as string).replace(`${CHILD}-`, ''),
            nodeOf(p),
          ]),
        );
        const apiHost = nodeOf((await pods(sns, APISERVER))[0]);
        const running = (await tickersOn(AGENT_NAMES)) ?? [];
        // An agent that runs tickers; where one can, not on the apiserver's node: an agent's node is
        // the loss a Sheeternetes cluster heals by itself, while the apiserver's pod waits for
        // Kubernetes' eviction before it opens the workbook elsewhere (docs/operator.md).
        const withTickers = AGENT_NAMES.filter((a) => running.some((p) => p.node === a));
        const victim = withTickers.find((a) => agentHost.get(a) !== apiHost);
        if (!victim)
          throw new Error(`every agent with tickers shares ${apiHost} with the apiserver: nothing to cut`);
        const host = agentHost.get(victim) ?? '';
        const moving = running.filter((p) => p.node === victim).map((p) => p.name);
        // The operator writes the status this case reads; its own loss is another story.
        await moveOff(host, sns, [OPERATOR]);
        const t0 = Date.now();
        const cut = powerCut(host);
        try {
          await agentLost(victim, moving, t0);
        } finally {
          await cut.restore();
        }
        await waitFor(
          `${victim} Ready again in the sheet`,
          () => nodesInSheet({ [victim]: 'Ready' }),
          LIMITS.recoverMs,
        );
        await waitFor(
          'the SheetCluster Ready 3/3 again',
          async () => {
            const c = await getJson(['sheetcluster', '-n', sns, NAME]);
            return cond(c, 'Ready') === 'True' && c.status?.nodes === '3/3';
          },
          LIMITS.recoverMs,
        );
        expect(await tickersOn(AGENT_NAMES)).toBeTruthy();
      },
      4 * LIMITS.recoverMs,
    );

    /** The agent `victim` of a dead node: NotReady in the sheet, its tickers on the others, status says so. */
    async function agentLost(victim: string, moving: unknown[], t0: number): Promise<void> {
      const survivors = AGENT_NAMES.filter((n) => n !== victim);
      await waitFor(
        `${victim} NotReady in the sheet`,
        () => nodesInSheet({ [victim]: 'NotReady' }),
        LIMITS.recoverMs,
      );
      const lostS = (Date.now() - t0) / 1000;
      const moved = await waitFor(
        `${moving.join(', ')} Running on ${survivors.join(' or ')}`,
        () => tickersOn(survivors),
        LIMITS.recoverMs,
      );
      console.log(
        `[nodes] sheet: ${victim} NotReady ${lostS.toFixed(1)} s after its node's power cut (TTL ${TTL_S} s); its tickers on the survivors after ${((Date.now() - t0) / 1000).toFixed(1)} s`,
      );
      expect(lostS).toBeGreaterThanOrEqual(TTL_S - 5 - 2); // not before the TTL (a heartbeat, slack)
      for (const m of moving) expect(moved.some((p) => p.name === m)).toBe(true);
      const o = await waitFor(
        'the SheetCluster Degraded naming the lost agent',
        async () => {
          const c = await getJson(['sheetcluster', '-n', sns, NAME]);
          const d = (c.status?.conditions ?? []).find((x: Deep) => x.type === 'Degraded');
          return d?.reason === 'NodesNotReady' && d;
        },
        LIMITS.recoverMs,
      );
      expect(o.message).toContain(victim);
    }
  });
}
