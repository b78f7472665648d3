// A SheetCluster on the real node: the operator (the chart, scoped to a namespace of its own)
// renders the apiserver and three agents; their pods run the product image; a WASM sample runs on
// the agents and shows in the sheet; the SheetCluster turns Ready from the sheet. Then the two
// failures the issue names: the apiserver pod deleted → its replacement opens the same workbook on
// the PVC with every acknowledged write; an agent silent past the TTL → its pods fail over, and its
// replacement pod rejoins under the same name.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import {
  apply,
  type Chart,
  type Deep,
  deleteNamespace,
  freshNamespace,
  getJson,
  installChart,
  kubectl,
  localNode,
  pods,
  portForward,
  skipReason,
  waitFor,
} from './harness.ts';

const LIMITS = {
  readyMs: 300_000, // pods start from the imported image; the node may be loaded by other suites
  failoverSeconds: 15, // the TTL: short enough to see failover, long enough for a node loaded by other suites
} as const;

const NAME = 'demo';
const condition = (o: Deep, type: string) => (o.status?.conditions ?? []).find((c: Deep) => c.type === type);

/** The agent process of `node` in this namespace, as the host sees it (the node of hack/node-up.sh). */
function agentPid(ns: string, node: string): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let env = '';
    try {
      env = readFileSync(join('/proc', d, 'environ'), 'utf8');
    } catch {
      continue;
    }
    const vars = env.split('\0');
    let args: string[] = [];
    try {
      args = readFileSync(join('/proc', d, 'cmdline'), 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!(args.includes('sheets') && args.includes('node'))) continue; // the agent itself, not a child
    if (
      vars.includes(`NODE_NAME=${node}`) &&
      vars.some((v) => v.startsWith(`WEBAPP_URL=http://rk-sheets-${NAME}.${ns}.`))
    )
      return Number(d);
  }
  return undefined;
}

describe.skipIf(skipReason())('SheetCluster on the real node', () => {
  let ns: string;
  let chart: Chart | undefined;
  beforeAll(async () => {
    ns = await freshNamespace('sheets');
    // The SheetCluster CRD (the other CRDs may belong to another release on a shared node).
    await kubectl([
      'apply',
      '--server-side',
      '--force-conflicts',
      '-f',
      join(REPO_ROOT, 'crds/sheetclusters.retrokube.io.yaml'),
    ]);
    chart = await installChart(ns, `rk-${ns}`.slice(0, 40), [
      '--set',
      'crds.install=false',
      '--set',
      `operator.extraArgs={--namespace,${ns}}`,
    ]);
  }, 400_000);
  afterAll(async () => {
    await chart?.uninstall().catch(() => undefined);
    if (ns) await deleteNamespace(ns);
  });

  it('3 nodes → pods Running → a WASM sample runs, in the sheet → Ready; apiserver and agent pod losses', async () => {
    await apply({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'SheetCluster',
      metadata: { name: NAME, namespace: ns },
      spec: {
        nodes: 3,
        failoverSeconds: LIMITS.failoverSeconds,
        store: { type: 'xlsx', xlsx: { size: '64Mi' } },
        deployments: [{ name: 'ticker', replicas: 3 }], // the long-running WASM sample
      },
    });
    const sc = () => getJson(['sheetclusters.retrokube.io', '-n', ns, NAME]);
    await waitFor(
      'apiserver and 3 agent pods Running',
      async () => {
        const api = await pods(ns, 'app.kubernetes.io/instance=demo,app.kubernetes.io/component=apiserver');
        const agents = await pods(ns, 'app.kubernetes.io/instance=demo,app.kubernetes.io/component=node');
        return (
          api.some((p: Deep) => p.status?.phase === 'Running') &&
          [0, 1, 2].every((i) =>
            agents.some(
              (p: Deep) => p.metadata.name === `rk-sheets-${NAME}-node-${i}` && p.status?.phase === 'Running',
            ),
          )
        );
      },
      LIMITS.readyMs,
    );
    const ready = await waitFor(
      'Ready from the sheet',
      async () => {
        const o = await sc();
        return condition(o, 'Ready')?.status === 'True' && o.status.nodes === '3/3' ? o : undefined;
      },
      LIMITS.readyMs,
    );
    expect(ready.status.nodeTable.map((n: Deep) => n.name)).toEqual(['node-0', 'node-1', 'node-2']);

    // Through the contract, as a person with the Secrets would: the sample WASM ticker runs on the agents.
    const secret = async (name: string, key: string) =>
      Buffer.from((await getJson(['secret', '-n', ns, name])).data[key], 'base64').toString();
    const token = await secret(`rk-sheets-${NAME}-token`, 'token');
    const key = await secret(`rk-sheets-${NAME}-signing`, 'key');
    const sheet = async () => {
      const pf = await portForward(ns, `svc/rk-sheets-${NAME}`, 8787);
      return { c: new SheetsClient({ url: `http://127.0.0.1:${pf.port}`, token, key }), close: pf.close };
    };
    let s = await sheet();
    await waitFor(
      'the ticker sample Running on the agents',
      async () => {
        const p = (await s.c.get('pods')).filter((x) => x.deployment === 'ticker');
        return p.length === 3 && p.every((x) => x.phase === 'Running' && /^node-[012]$/.test(String(x.node)))
          ? p
          : undefined;
      },
      LIMITS.readyMs,
    );
    // An acknowledged write: answered only after the workbook on the PVC was saved.
    expect(
      await s.c.post({
        action: 'apply',
        deployments: [{ name: 'ack', image: 'sicf:hello-wasm:v1', replicas: 0 }],
      }),
    ).toEqual({
      applied: ['created'],
    });
    s.close();

    // The apiserver pod is deleted: Recreate brings a new one on the same PVC, with the write.
    const oldApi = (
      await pods(ns, 'app.kubernetes.io/instance=demo,app.kubernetes.io/component=apiserver')
    ).find((p: Deep) => p.status?.phase === 'Running');
    await kubectl(['delete', 'pod', '-n', ns, oldApi.metadata.name, '--wait=true']);
    await waitFor(
      'a new apiserver pod Ready',
      async () => {
        const p = await pods(ns, 'app.kubernetes.io/instance=demo,app.kubernetes.io/component=apiserver');
        return p.some(
          (x: Deep) =>
            x.metadata.uid !== oldApi.metadata.uid && x.status?.containerStatuses?.[0]?.ready === true,
        );
      },
      LIMITS.readyMs,
    );
    s = await sheet();
    expect((await s.c.get('deployments')).find((d) => d.name === 'ack')).toMatchObject({
      replicas: 0,
      image: 'sicf:hello-wasm:v1',
    });
    s.close();
    await waitFor(
      'Ready again after the apiserver restart',
      async () => condition(await sc(), 'Ready')?.status === 'True',
      LIMITS.readyMs,
    );

    // An agent goes silent past the TTL (its process frozen): the sheet fails it over; its pod,
    // deleted, comes back under the same name and rejoins.
    if (!localNode()) return; // the agent's process is visible only on the node of hack/node-up.sh
    s = await sheet();
    // The ticker runs forever (restart_policy Always); the sample hello finishes and stays where it ran.
    const tickers = (await s.c.get('pods')).filter((x) => x.deployment === 'ticker');
    s.close();
    const victim = String(tickers[0]?.node); // a node that runs a ticker
    const onVictim = tickers.filter((x) => x.node === victim).map((x) => String(x.name));
    expect(victim).toMatch(/^node-[012]$/);
    const pid = agentPid(ns, victim);
    expect(pid, `the ${victim} agent process on this host`).toBeDefined();
    process.kill(pid as number, 'SIGSTOP');
    await waitFor(
      'the agent really stopped',
      async () => /State:\s+T/.test(readFileSync(`/proc/${pid}/status`, 'utf8')),
      5_000,
    );
    try {
      const lost = await waitFor(
        `${victim} NotReady in the sheet`,
        async () => {
          const o = await sc();
          return condition(o, 'Degraded')?.message?.includes(victim) ? o : undefined;
        },
        120_000,
      );
      expect(condition(lost, 'Degraded')?.reason).toBe('NodesNotReady');
      expect(lost.status.readyNodes).toBeLessThan(3);
      // A fresh port-forward per look: a forward through the kubelet may not outlive a busy node.
      const moved = async () => {
        const f = await sheet();
        try {
          return (await f.c.get('pods'))
            .filter((x) => onVictim.includes(String(x.name)))
            .every((x) => x.node !== victim && x.phase === 'Running');
        } finally {
          f.close();
        }
      };
      await waitFor(`${onVictim.join(', ')} running on other nodes`, moved, 90_000);
    } finally {
      await kubectl([
        'delete',
        'pod',
        '-n',
        ns,
        `rk-sheets-${NAME}-${victim}`,
        '--grace-period=1',
        '--wait=true',
      ]).catch(() => undefined);
      try {
        process.kill(pid as number, 'SIGCONT');
      } catch {
        // already gone with its pod
      }
    }
    await waitFor(
      `${victim} back, Ready`,
      async () => {
        const o = await sc();
        return condition(o, 'Ready')?.status === 'True' && o.status.nodes === '3/3';
      },
      LIMITS.readyMs,
    );
    const events = (await getJson(['events', '-n', ns])).items as Deep[];
    expect(events.some((e) => e.reason === 'NodeLost' && e.message.includes(victim))).toBe(true);
    expect(events.some((e) => e.reason === 'NodeReturned' && e.message.includes(victim))).toBe(true);
  }, 1_500_000);
});
