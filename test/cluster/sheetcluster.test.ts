// A SheetCluster on the real node (issue #12, item 6): the chart's operator renders the spreadsheet
// apiserver and three node agents into real pods of the product image; the cluster is then judged
// the way the operator judges it — by reading its sheet through the apiserver's own contract (GETs
// with the token, POSTs signed with the cluster's key), here through the API server's Service proxy
// — never by pod phases alone. Then the two losses the issue names: the apiserver pod deleted (the
// new pod opens the workbook on the same PVC, with every acknowledged write), and an agent pod
// deleted (its node goes NotReady after the TTL, its pods move, and its replacement rejoins under
// the same name). The steps share one release and one SheetCluster and run in order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { cellTime } from '../../operator/src/sheets/ctl/table.ts';
import {
  apiProxy,
  apply,
  type Chart,
  condition,
  type Deep,
  deleteNamespace,
  freshNamespace,
  getJson,
  installChart,
  kubectl,
  podReady,
  pods,
  secretValue,
  skipReason,
  waitFor,
} from './harness.ts';

const LIMITS = {
  readyMs: 300_000, // pods start from the imported image; the node may be loaded by other sessions
  failoverSeconds: 15, // the TTL under test: short enough to watch, long for a loaded 2-core node
  heartbeatSeconds: 5, // what the render gives agents for that TTL (a third of it)
  moveMs: 120_000, // TTL + the survivors' next heartbeats + their reports of the moved pods
} as const;

const NAME = 'demo';
const CHILD = `rk-sheets-${NAME}`;
const APISERVER = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=apiserver`;
const AGENTS = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=node`;
const NODES = ['node-0', 'node-1', 'node-2'];
const TICKERS = 3; // spec.deployments scales the long-running WASM sample "ticker" to 3

type Row = Record<string, unknown>;

describe.skipIf(skipReason())('SheetCluster on the real node (chart, image, the sheet as the truth)', () => {
  let ns: string;
  let chart: Chart | undefined;
  let proxy: { url: string; close(): void } | undefined;
  let sheet: SheetsClient;
  let token = '';
  let key = '';

  beforeAll(async () => {
    ns = await freshNamespace('sheets');
    chart = await installChart(ns, `rk-${ns.split('-').pop()}`);
    proxy = await apiProxy();
  }, 400_000);
  afterAll(async () => {
    proxy?.close();
    await chart?.uninstall().catch(() => undefined);
    if (ns) await deleteNamespace(ns);
  });

  const sheetCluster = (): Promise<Deep> => getJson(['sheetclusters.retrokube.io', '-n', ns, NAME]);
  /** A tab through the contract, or undefined while the apiserver does not answer (a poll's "not yet"). */
  const rows = (kind: string): Promise<Row[] | undefined> => sheet.get(kind).catch(() => undefined);
  /** Every node of `names` Ready in the sheet, heartbeating since `sinceMs` when given (whole seconds). */
  const readyInSheet = async (names: string[], sinceMs?: number): Promise<Row[] | undefined> => {
    const n = await rows('nodes');
    const since = sinceMs === undefined ? 0 : Math.floor(sinceMs / 1000) * 1000;
    const fresh = (r: Row) => r.status === 'Ready' && (cellTime(r.last_heartbeat) ?? 0) >= since;
    return n && names.every((x) => n.some((r) => r.name === x && fresh(r))) ? n : undefined;
  };
  const tickers = async (): Promise<Row[] | undefined> =>
    (await rows('pods'))?.filter((p) => p.deployment === 'ticker');
  /** All tickers Running, each on a node of `on`, as the agents report them. */
  const tickersRunning = async (on: string[]): Promise<Row[] | undefined> => {
    const t = await tickers();
    return t && t.length === TICKERS && t.every((p) => p.phase === 'Running' && on.includes(String(p.node)))
      ? t
      : undefined;
  };
  const readyFromSheet = async (): Promise<Deep> => {
    const o = await sheetCluster();
    return condition(o, 'Ready')?.status === 'True' && o.status?.nodes === '3/3' ? o : undefined;
  };
  /** Runs `fn` with the (only) node cordoned: a pod deleted meanwhile has its replacement Pending. */
  const whileCordoned = async (fn: () => Promise<void>): Promise<void> => {
    const [node] = (await getJson(['nodes'])).items.map((n: Deep) => n.metadata.name);
    await kubectl(['cordon', node]);
    try {
      await fn();
    } finally {
      await kubectl(['uncordon', node]);
    }
  };

  // Every Degraded condition the SheetCluster showed while it started (read once a second).
  const startConditions: Deep[] = [];
  let watchingStart = false;

  it('a SheetCluster of 3 nodes: the apiserver pod and the agents node-0..2 Ready, the workbook PVC Bound', async () => {
    watchingStart = true;
    void (async () => {
      while (watchingStart) {
        const o = await getJson(['sheetcluster', '-n', ns, NAME]).catch(() => undefined);
        const d = o && condition(o, 'Degraded');
        if (d) startConditions.push(d);
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    await apply({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'SheetCluster',
      metadata: { name: NAME, namespace: ns },
      spec: {
        nodes: 3,
        failoverSeconds: LIMITS.failoverSeconds,
        store: { type: 'xlsx', xlsx: { size: '64Mi' } },
        deployments: [{ name: 'ticker', replicas: TICKERS }],
      },
    });
    const agentPods = NODES.map((n) => `${CHILD}-${n}`);
    await waitFor(
      'the apiserver pod and 3 agent pods Ready',
      async () => {
        const api = (await pods(ns, APISERVER)).filter(podReady);
        const agents = (await pods(ns, AGENTS)).filter(podReady).map((p) => p.metadata.name);
        return api.length === 1 && agentPods.every((a) => agents.includes(a));
      },
      LIMITS.readyMs,
    );
    const pvc = await getJson(['pvc', '-n', ns, `${CHILD}-workbook`]);
    expect(pvc.status.phase).toBe('Bound');
    const [api] = await pods(ns, APISERVER);
    expect(api.spec.volumes).toContainEqual({
      name: 'workbook',
      persistentVolumeClaim: { claimName: `${CHILD}-workbook` },
    });
    for (const p of [api, ...(await pods(ns, AGENTS))]) {
      expect(p.spec.securityContext.runAsNonRoot).toBe(true);
      expect(p.spec.automountServiceAccountToken).toBe(false);
    }
  });

  it('through the signed contract: 3 nodes Ready, the WASM sample "ticker" Running on the agents (its output in their work dirs); the SheetCluster Ready 3/3 from the sheet', async () => {
    token = await secretValue(ns, `${CHILD}-token`, 'token');
    key = await secretValue(ns, `${CHILD}-signing`, 'key');
    if (!proxy) throw new Error('no kubectl proxy');
    sheet = new SheetsClient({
      url: `${proxy.url}/api/v1/namespaces/${ns}/services/${CHILD}:http/proxy/`,
      token,
      key,
      timeoutMs: 10_000,
    });
    const nodes = await waitFor('node-0..2 Ready in the sheet', () => readyInSheet(NODES), LIMITS.readyMs);
    // Each row is the agent pod that registered it: the address it reports is that pod's IP.
    for (const n of NODES) {
      const pod = await getJson(['pod', '-n', ns, `${CHILD}-${n}`]);
      expect(nodes.find((r) => r.name === n)?.ip).toBe(pod.status.podIP);
    }
    const running = await waitFor(
      `${TICKERS} ticker pods Running on the agents`,
      () => tickersRunning(NODES),
      LIMITS.readyMs,
    );
    // The agent that runs a ticker has its output: the module from the sheet's Images tab really runs.
    const one = running[0];
    const log = await waitFor(
      `${one.name}'s output in ${one.node}'s work dir`,
      async () => {
        const text = await kubectl([
          'exec',
          '-n',
          ns,
          `${CHILD}-${one.node}`,
          '-c',
          'agent',
          '--',
          'node',
          '-e',
          // The agent's private folder inside its volume (root owns the emptyDir: #28.6).
          `const fs=require('fs');const d=fs.readdirSync('/work').find((n)=>n.startsWith('sk-node-'));process.stdout.write(fs.readFileSync('/work/'+d+'/logs/${one.name}.log','utf8'))`,
        ]).catch(() => '');
        return text.includes('ticker: still running') && text;
      },
      60_000,
    );
    expect(log).toContain('ticker: still running');

    const o = await waitFor('the SheetCluster Ready, NODES 3/3', readyFromSheet, LIMITS.readyMs);
    watchingStart = false;
    expect(condition(o, 'Degraded')?.status).toBe('False');
    // A normal start is never Degraded (a readiness probe failing for its first seconds is normal),
    // and once the tickers run, no start-up "Unschedulable" is shown as the last warning.
    expect(startConditions.length).toBeGreaterThan(0);
    expect(startConditions.filter((c) => c.status === 'True')).toEqual([]);
    if (o.status.runningPods === o.status.desiredPods)
      expect(o.status.lastWarning ?? '').not.toMatch(/Unschedulable/);
    expect(o.status.nodeTable.map((n: Deep) => n.name).sort()).toEqual(NODES);
    expect(o.status.desiredPods).toBeGreaterThanOrEqual(TICKERS);
    const table = await kubectl(['get', 'rksheets', '-n', ns, NAME]);
    expect(table).toMatch(/NODES\s+PODS\s+READY\s+AGE/);
    expect(table).toMatch(new RegExp(`${NAME}\\s+3/3\\s+\\d+/\\d+\\s+True`));
    // The generated Secrets never reach status or any log of the operator, the apiserver or the agents.
    expect(JSON.stringify(o)).not.toContain(token);
    expect(JSON.stringify(o)).not.toContain(key);
    const everyPod = [
      ...(await pods(ns, 'app.kubernetes.io/name=retrokube')),
      ...(await pods(ns, 'app.kubernetes.io/name=retrokube-sheets')),
    ];
    expect(everyPod.length).toBe(5);
    for (const p of everyPod) {
      const text = await kubectl(['logs', '-n', ns, p.metadata.name]);
      expect(text).not.toContain(token);
      expect(text).not.toContain(key);
    }
  });

  it('the apiserver pod deleted: the new pod opens the workbook on the same PVC with every acknowledged write, and no node is failed over for its downtime', async () => {
    // Acknowledged writes: the apiserver answers a change only after the workbook holding it was saved.
    const acks: [string, unknown, unknown][] = [
      [
        'apply ack-a',
        await sheet.post({
          action: 'apply',
          deployments: [{ name: 'ack-a', image: 'sicf:hello-wasm:v1', replicas: 0 }],
        }),
        { applied: ['created'] },
      ],
      [
        'apply ack-b',
        await sheet.post({
          action: 'apply',
          deployments: [{ name: 'ack-b', image: 'sicf:ticker-wasm:v1', replicas: 0 }],
        }),
        { applied: ['created'] },
      ],
      [
        'scale ack-b 1',
        await sheet.post({ action: 'scale', name: 'ack-b', replicas: 1 }),
        { result: 'scaled' },
      ],
      [
        'label node-1',
        await sheet.post({ action: 'label', name: 'node-1', spec: 'ack=kept' }),
        { result: 'ok' },
      ],
      // The last write right before the pod goes: nothing may sit in a buffer.
      [
        'scale ack-a 0',
        await sheet.post({ action: 'scale', name: 'ack-a', replicas: 0 }),
        { result: 'scaled' },
      ],
    ];
    for (const [what, got, want] of acks) expect(got, what).toEqual(want);
    const volumeBefore = (await getJson(['pvc', '-n', ns, `${CHILD}-workbook`])).spec.volumeName;
    const [old] = (await pods(ns, APISERVER)).filter(podReady);
    const deletedAt = Date.now();
    // The replacement is held back (cordon) until the apiserver has been away longer than the TTL:
    // every heartbeat in the workbook is then older than the TTL when the new pod opens it.
    await whileCordoned(async () => {
      await kubectl(['delete', 'pod', '-n', ns, old.metadata.name, '--wait=false']);
      await waitFor(
        'the old apiserver pod gone, its replacement Pending',
        async () => {
          const p = await pods(ns, APISERVER);
          return p.length === 1 && p[0].metadata.uid !== old.metadata.uid && p[0].status.phase === 'Pending';
        },
        LIMITS.readyMs,
      );
      const away = (LIMITS.failoverSeconds + LIMITS.heartbeatSeconds) * 1000 - (Date.now() - deletedAt);
      await new Promise((r) => setTimeout(r, Math.max(0, away)));
    });
    const fresh = await waitFor(
      'a new apiserver pod Ready',
      async () => (await pods(ns, APISERVER)).find((p) => podReady(p) && p.metadata.uid !== old.metadata.uid),
      LIMITS.readyMs,
    );
    expect(fresh.spec.volumes).toContainEqual({
      name: 'workbook',
      persistentVolumeClaim: { claimName: `${CHILD}-workbook` },
    });
    expect((await getJson(['pvc', '-n', ns, `${CHILD}-workbook`])).spec.volumeName).toBe(volumeBefore);
    const deployments = await waitFor(
      'the new apiserver answering',
      () => rows('deployments'),
      LIMITS.readyMs,
    );
    const answeredAt = Date.now();
    console.log(
      `[sheetcluster] the apiserver answered again ${Math.round((answeredAt - deletedAt) / 1000)} s after its pod was deleted`,
    );
    const byName = new Map(deployments.map((d) => [String(d.name), d]));
    expect(byName.get('ack-a')).toMatchObject({ image: 'sicf:hello-wasm:v1' });
    expect(Number(byName.get('ack-a')?.replicas)).toBe(0);
    expect(byName.get('ack-b')).toMatchObject({ image: 'sicf:ticker-wasm:v1' });
    expect(Number(byName.get('ack-b')?.replicas)).toBe(1);
    const node1 = ((await rows('nodes')) ?? []).find((n) => n.name === 'node-1');
    expect(String(node1?.labels)).toContain('ack=kept');
    const events = ((await rows('events')) ?? []).map((e) => `${e.kind} ${e.object} ${e.message}`);
    expect(events).toContain('Deployment ack-b scaled to 1');
    expect(events).toContain('Deployment ack-a scaled to 0');
    expect(events).toContain('Node node-1 label ack=kept');

    // The agents reach the new pod through the Service and are all Ready again: each heard since the
    // new pod answered (their rows say Ready from the workbook before any agent has reported).
    await waitFor(
      'node-0..2 heartbeating to the new apiserver',
      () => readyInSheet(NODES, answeredAt),
      LIMITS.readyMs,
    );
    console.log(
      `[sheetcluster] every agent heartbeating to the new apiserver ${((Date.now() - answeredAt) / 1000).toFixed(1)} s after it answered`,
    );
    await waitFor('the tickers Running', () => tickersRunning(NODES), LIMITS.readyMs);
    await waitFor('the SheetCluster Ready 3/3 again', readyFromSheet, LIMITS.readyMs);
    // The apiserver's own downtime is not the nodes' silence: none was declared NotReady for it.
    const since = ((await rows('events')) ?? []).filter(
      (e) => e.kind === 'Node' && Date.parse(String(e.ts)) >= deletedAt - 1000,
    );
    expect(since.filter((e) => String(e.message).startsWith('NotReady'))).toEqual([]);
  });

  it('an agent pod deleted (its replacement held Pending by a cordon): NotReady after the TTL, its tickers move; uncordoned, it rejoins under its name', async () => {
    const before = await waitFor('the tickers Running', () => tickersRunning(NODES), LIMITS.readyMs);
    // Placement is the sheet's business: the victim is whichever node runs the first ticker.
    const victim = String(before[0].node);
    const moving = before.filter((p) => p.node === victim).map((p) => String(p.name));
    const survivors = NODES.filter((n) => n !== victim);
    const oldPod = await getJson(['pod', '-n', ns, `${CHILD}-${victim}`]);
    // The StatefulSet would bring the pod back within seconds, often inside the TTL; cordoning the
    // (only) node keeps the replacement Pending, so the node stays silent as long as the test says.
    let lostAfterMs = 0;
    let silentSec = 0; // from the victim's last heartbeat to the NotReady the apiserver declared
    await whileCordoned(async () => {
      const t0 = Date.now();
      await kubectl(['delete', 'pod', '-n', ns, oldPod.metadata.name, '--wait=false']);
      const row = await waitFor(
        `${victim} NotReady in the sheet`,
        async () => ((await rows('nodes')) ?? []).find((r) => r.name === victim && r.status === 'NotReady'),
        LIMITS.moveMs,
      );
      lostAfterMs = Date.now() - t0;
      // Both clocks are the apiserver's, in whole seconds: the row keeps the last heartbeat it
      // heard, the event the second it declared the node lost.
      const declared = ((await rows('events')) ?? []).find(
        (e) =>
          e.kind === 'Node' &&
          e.object === victim &&
          String(e.message).startsWith('NotReady') &&
          Date.parse(String(e.ts)) >= t0 - 1000,
      );
      expect(declared, `a NotReady event for ${victim} in the Events tab`).toBeDefined();
      silentSec = (Date.parse(String(declared?.ts)) - (cellTime(row.last_heartbeat) ?? Number.NaN)) / 1000;
      console.log(
        `[sheetcluster] ${victim} NotReady in the sheet ${(lostAfterMs / 1000).toFixed(1)} s after its pod was deleted, ${silentSec} s after its last heartbeat (TTL ${LIMITS.failoverSeconds} s)`,
      );
      await waitFor(
        `${moving.join(', ')} Running on ${survivors.join(' or ')}`,
        async () => {
          const t = await tickersRunning(survivors);
          return t && moving.every((m) => t.some((p) => p.name === m));
        },
        LIMITS.moveMs,
      );
      console.log(
        `[sheetcluster] ${moving.join(', ')} Running on the survivors ${((Date.now() - t0) / 1000).toFixed(1)} s after the deletion`,
      );
      const lost = await waitFor(
        'the SheetCluster Degraded: NodesNotReady naming the victim',
        async () => {
          const o = await sheetCluster();
          return condition(o, 'Degraded')?.reason === 'NodesNotReady' && o;
        },
        LIMITS.moveMs,
      );
      expect(condition(lost, 'Degraded').message).toContain(victim);
      expect(condition(lost, 'Ready').status).toBe('False');
      expect(lost.status.nodes).toBe('2/3');
      // The replacement exists but waits: what kept the node silent was the deletion, nothing else.
      const held = await getJson(['pod', '-n', ns, `${CHILD}-${victim}`]);
      expect(held.metadata.uid).not.toBe(oldPod.metadata.uid);
      expect(held.status.phase).toBe('Pending');
    });
    const uncordonedAt = Date.now();
    // Not before the TTL, counted from the last heartbeat the apiserver heard (not from the
    // deletion: a loaded agent's round is its interval plus the round's own time, so its last beat
    // may be several seconds before the deletion), and soon after it: the apiserver's timer aims at
    // the TTL's second (10 s of slack for a loaded node's event loop). The step before waited for a
    // heartbeat to this apiserver, so its start's grace (a full TTL for every node) is behind us.
    expect(silentSec).toBeGreaterThanOrEqual(LIMITS.failoverSeconds);
    expect(silentSec).toBeLessThanOrEqual(LIMITS.failoverSeconds + 10);
    await waitFor(
      `the new ${CHILD}-${victim} pod Ready`,
      async () =>
        (await pods(ns, AGENTS)).some(
          (p) =>
            p.metadata.name === `${CHILD}-${victim}` && p.metadata.uid !== oldPod.metadata.uid && podReady(p),
        ),
      LIMITS.readyMs,
    );
    await waitFor(`${victim} Ready again in the sheet`, () => readyInSheet(NODES), LIMITS.readyMs);
    console.log(
      `[sheetcluster] ${victim} rejoined ${((Date.now() - uncordonedAt) / 1000).toFixed(1)} s after the uncordon let its replacement pod start`,
    );
    await waitFor('the SheetCluster Ready 3/3 again', readyFromSheet, LIMITS.readyMs);
    await waitFor('the tickers Running', () => tickersRunning(NODES), LIMITS.readyMs);
    const events = (
      await getJson(['events', '-n', ns, '--field-selector', `involvedObject.name=${NAME}`])
    ).items.map((e: Deep) => `${e.reason}: ${e.message}`);
    expect(events).toContainEqual(expect.stringMatching(new RegExp(`^NodeLost: Node ${victim} is NotReady`)));
    expect(events).toContainEqual(`NodeReturned: Node ${victim} is Ready again in the sheet`);
  });

  it('a deployment whose image is not in the Images tab: its pod Pending with the reason in the Pods tab, the SheetCluster Degraded saying so', async () => {
    const o = await getJson(['sheetcluster', '-n', ns, NAME]);
    await kubectl([
      'patch',
      'sheetcluster',
      '-n',
      ns,
      NAME,
      '--type=merge',
      '-p',
      JSON.stringify({
        spec: { deployments: [...o.spec.deployments, { name: 'ghost', image: 'sicf:nope', replicas: 1 }] },
      }),
    ]);
    if (!sheet) throw new Error('no sheet client');
    const s = sheet;
    const row = await waitFor(
      'the ghost pod Pending with a reason in the Pods tab',
      async () =>
        (await s.get('pods')).find(
          // the agent's reason, after the scheduler's own "waiting for …'s agent" words
          (r) =>
            String(r.deployment) === 'ghost' &&
            r.phase === 'Pending' &&
            /Images tab/.test(String(r.message ?? '')),
        ),
      LIMITS.readyMs,
    );
    expect(String(row.message)).toMatch(/nope is not in the Images tab/);
    const degraded = await waitFor(
      'the SheetCluster Degraded: PodsCannotStart',
      async () => {
        const c = await getJson(['sheetcluster', '-n', ns, NAME]);
        return condition(c, 'Degraded')?.reason === 'PodsCannotStart' && c;
      },
      LIMITS.readyMs,
    );
    expect(condition(degraded, 'Degraded').message).toMatch(/ghost-\d+: .*nope is not in the Images tab/);
  });

  it('the SheetCluster deleted: the garbage collector removes every child, the workbook PVC too', async () => {
    await kubectl(['delete', 'sheetclusters.retrokube.io', '-n', ns, NAME, '--wait=false']);
    await waitFor(
      'no child left',
      async () => {
        const left = await getJson(['deployments,statefulsets,services,pvc,secrets,pods', '-n', ns]);
        return (
          left.items.filter((i: Deep) => String(i.metadata.name).startsWith(CHILD)).length === 0 || undefined
        );
      },
      LIMITS.readyMs,
    );
  });
});
