// A SheetMigration on a real cluster (issue #31 item 4): the chart's operator moves the sample
// deployment "ticker" from one SheetCluster to another, both real pods of the product image, and
// its status.message and Events say what each phase is doing — never "ScalingTarget (x2)" after
// the target was scaled (the words the step machine once carried through every phase and Event).
// The members are named by SheetCluster; the sheets are read through their own contract (signed,
// through the API server's Service proxy), never through pod phases alone. Then a move across
// backends (#26): on to a SheetCluster on the Google backend (our Sheets emulator as a Service),
// the operator pod killed mid-move; the new pod resumes from status, and nothing is duplicated.
// Last, a SheetFederation of the xlsx and the Google-backed member: status, sync and stretch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SheetsClient } from '../../../operator/src/sheets/ctl/client.ts';
import { readTab, startGoogleEmulator } from '../google-emulator.ts';
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
  waitFor,
} from '../harness.ts';

const LIMITS = {
  readyMs: 300_000, // pods start from the imported image; the node may be loaded by other sessions
  moveMs: 300_000, // scale the target, wait for its pods, drain the source, watch the window
  watchSeconds: 10, // the rollback window the migration watches the target through
} as const;

const TICKERS = 2; // the sample "ticker" a new workbook gets
const GOOGLE_SHEET = 'retrokube-migration-test'; // the Google-backed member's spreadsheet (our emulator)
type Row = Record<string, unknown>;

/**
 * Its describe block: on the single node (test/cluster/sheetmigration.test.ts) or on the several nodes
 * (test/cluster/nodes.test.ts, in npm test), wherever the harness points.
 */
export function sheetMigrationGroup(): void {
  describe('SheetMigration (two SheetClusters, the sheets as the truth)', () => {
    let ns: string;
    let chart: Chart | undefined;
    let proxy: { url: string; close(): void } | undefined;
    /** The Google member's spreadsheet (our emulator as a Service), made by the third case. */
    let emulator: Awaited<ReturnType<typeof startGoogleEmulator>> | undefined;
    const sheets = new Map<string, SheetsClient>();

    beforeAll(async () => {
      ns = await freshNamespace('sheetmig');
      chart = await installChart(ns, `rk-${ns.split('-').pop()}`);
      proxy = await apiProxy();
    }, 400_000);
    afterAll(async () => {
      proxy?.close();
      await chart?.uninstall().catch(() => undefined);
      if (ns) await deleteNamespace(ns);
    });

    const tickers = async (member: string): Promise<Row[] | undefined> =>
      (
        await sheets
          .get(member)
          ?.get('pods')
          .catch(() => undefined)
      )?.filter((p) => p.deployment === 'ticker');
    /** A SheetMigration of ticker between two SheetClusters of this namespace, polled each second. */
    const migrateTicker = (name: string, from: string, to: string) =>
      apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetMigration',
        metadata: { name, namespace: ns },
        spec: {
          deployment: 'ticker',
          from: { name: from, sheetCluster: from },
          to: { name: to, sheetCluster: to },
          pollSeconds: 1,
          waitSeconds: 240,
          rollbackWindowSeconds: LIMITS.watchSeconds,
        },
      });
    /** A member's sheet through its contract (signed, through the API server's Service proxy). */
    const connect = async (name: string): Promise<void> => {
      if (!proxy) throw new Error('no kubectl proxy');
      const child = `rk-sheets-${name}`;
      sheets.set(
        name,
        new SheetsClient({
          url: `${proxy.url}/api/v1/namespaces/${ns}/services/${child}:http/proxy/`,
          token: await secretValue(ns, `${child}-token`, 'token'),
          key: await secretValue(ns, `${child}-signing`, 'key'),
          timeoutMs: 10_000,
        }),
      );
    };
    const hasTicker = async (member: string): Promise<boolean | undefined> => {
      const d = await sheets
        .get(member)
        ?.get('deployments')
        .catch(() => undefined);
      return d?.some((r) => r.name === 'ticker');
    };

    it('two SheetClusters Ready; the target starts without "ticker" (its image stays in its Images tab)', async () => {
      for (const name of ['src', 'dst'])
        await apply({
          apiVersion: 'retrokube.io/v1alpha1',
          kind: 'SheetCluster',
          metadata: { name, namespace: ns },
          spec: { nodes: 1, store: { type: 'xlsx', xlsx: { size: '64Mi' } } },
        });
      for (const name of ['src', 'dst']) {
        await waitFor(
          `SheetCluster ${name} Ready`,
          async () => condition(await getJson(['sheetcluster', '-n', ns, name]), 'Ready')?.status === 'True',
          LIMITS.readyMs,
        );
        await connect(name);
      }
      await sheets.get('dst')?.post({ action: 'delete', name: 'ticker' });
      await waitFor(
        'no ticker on dst',
        async () => (await hasTicker('dst')) === false && (await tickers('dst'))?.length === 0,
        120_000,
      );
      await waitFor(
        `${TICKERS} tickers Running on src`,
        async () => (await tickers('src'))?.filter((p) => p.phase === 'Running').length === TICKERS,
        LIMITS.readyMs,
      );
    }, 700_000);

    it("moves ticker make-before-break; status.message and every phase's Event speak of that phase, not of ScalingTarget", async () => {
      await migrateTicker('move', 'src', 'dst');
      // Every (phase, message) status showed, read twice a second until the end.
      const seen: Array<{ phase: string; message: string }> = [];
      const done: Deep = await waitFor(
        'the migration Succeeded',
        async () => {
          const o = await getJson(['sheetmigration', '-n', ns, 'move']);
          const last = seen[seen.length - 1];
          const now = { phase: String(o.status?.phase ?? ''), message: String(o.status?.message ?? '') };
          if (now.phase && (last?.phase !== now.phase || last.message !== now.message)) seen.push(now);
          if (o.status?.phase === 'Failed' || o.status?.phase === 'RolledBack')
            throw new Error(`the migration ended ${o.status.phase}: ${o.status.message}`);
          return o.status?.phase === 'Succeeded' && o;
        },
        LIMITS.moveMs,
      );
      const phases = [...new Set(seen.map((s) => s.phase))];
      expect(phases).toEqual(expect.arrayContaining(['Watching', 'Succeeded'])); // Watching lasts 10 s
      // Once the target was scaled, no later phase says "ScalingTarget" (the stuck message).
      const after = seen.filter((s) => s.phase !== 'Pending' && s.phase !== 'ScalingTarget');
      expect(after.length).toBeGreaterThan(0);
      for (const s of after)
        expect([s.phase, s.message]).toEqual([s.phase, expect.not.stringMatching(/ScalingTarget/)]);
      expect(done.status.message).not.toMatch(/ScalingTarget|WaitingTarget|DrainingSource/);
      expect(condition(done, 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
      // The Events, one per phase: "A → B: words" where the words are B's.
      const events: Deep[] = (await getJson(['events', '-n', ns])).items.filter(
        (e: Deep) => e.involvedObject?.name === 'move' && e.involvedObject?.kind === 'SheetMigration',
      );
      const reasons = events.map((e) => e.reason);
      expect(reasons).toEqual(expect.arrayContaining(['ScalingTarget', 'WaitingTarget', 'Succeeded']));
      for (const e of events.filter((x) => x.reason !== 'ScalingTarget'))
        expect([e.reason, e.message]).toEqual([e.reason, expect.not.stringMatching(/: ScalingTarget/)]);
      // And the move itself, from the sheets: ticker runs on dst, and src has none.
      await waitFor(
        `${TICKERS} tickers Running on dst`,
        async () => (await tickers('dst'))?.filter((p) => p.phase === 'Running').length === TICKERS,
        60_000,
      );
      expect(await hasTicker('src')).toBe(false);
    }, 400_000);

    it('moves ticker on to a SheetCluster on the Google backend while the operator pod is killed mid-move: it resumes, nothing duplicated', async () => {
      emulator = await startGoogleEmulator(ns, GOOGLE_SHEET);
      await apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetCluster',
        metadata: { name: 'gdst', namespace: ns },
        spec: { nodes: 1, store: emulator.store },
      });
      await waitFor(
        'SheetCluster gdst Ready',
        async () => condition(await getJson(['sheetcluster', '-n', ns, 'gdst']), 'Ready')?.status === 'True',
        LIMITS.readyMs,
      );
      await connect('gdst');
      await sheets.get('gdst')?.post({ action: 'delete', name: 'ticker' });
      await waitFor('no ticker on gdst', async () => (await hasTicker('gdst')) === false, 120_000);
      await migrateTicker('to-google', 'dst', 'gdst');
      // The most ticker rows either sheet ever held at once, and on both together: a move that
      // scaled the target twice, or ran the deployment on both past the window, shows here.
      let most = 0;
      const count = async (member: string) => (await tickers(member))?.length ?? 0;
      const phase = async () =>
        String((await getJson(['sheetmigration', '-n', ns, 'to-google'])).status?.phase ?? '');
      await waitFor(
        'the move past ScalingTarget',
        async () => {
          most = Math.max(most, await count('gdst'));
          return ['WaitingTarget', 'DrainingSource', 'Watching'].includes(await phase());
        },
        LIMITS.moveMs,
      );
      const [operator] = (await pods(ns, 'app.kubernetes.io/name=retrokube')).filter(podReady);
      const killedIn = await phase();
      await kubectl(['delete', 'pod', '-n', ns, operator.metadata.name, '--grace-period=0', '--force']);
      const done: Deep = await waitFor(
        'the migration Succeeded under the new operator pod',
        async () => {
          most = Math.max(most, await count('gdst'));
          const o = await getJson(['sheetmigration', '-n', ns, 'to-google']);
          if (o.status?.phase === 'Failed' || o.status?.phase === 'RolledBack')
            throw new Error(`the migration ended ${o.status.phase}: ${o.status.message}`);
          return o.status?.phase === 'Succeeded' && o;
        },
        LIMITS.moveMs,
      );
      expect(condition(done, 'Ready')).toMatchObject({ status: 'True', reason: 'Succeeded' });
      const now = (await pods(ns, 'app.kubernetes.io/name=retrokube')).filter(podReady);
      expect(now.map((p) => p.metadata.name)).not.toContain(operator.metadata.name);
      await waitFor(
        `${TICKERS} tickers Running on gdst`,
        async () => (await tickers('gdst'))?.filter((p) => p.phase === 'Running').length === TICKERS,
        60_000,
      );
      expect(most, `ticker rows on gdst (operator killed in ${killedIn})`).toBe(TICKERS);
      const rows = (await sheets.get('gdst')?.get('deployments'))?.filter((r) => r.name === 'ticker') ?? [];
      expect(rows.map((r) => Number(r.replicas))).toEqual([TICKERS]);
      expect(await hasTicker('dst')).toBe(false);
      // The spreadsheet itself, not only the apiserver's answer: the deployment is a row of the
      // Google spreadsheet's Deployments tab.
      if (!proxy) throw new Error('no kubectl proxy');
      const [header = [], ...values] = await readTab(emulator.valuesUrl(proxy.url, 'Deployments'));
      expect(values.filter((r) => r[header.indexOf('name')] === 'ticker')).toHaveLength(1);
    }, 900_000);

    it('federates the xlsx and the Google-backed SheetCluster: status from both sheets, sync, stretch', async () => {
      // "beat" exists on dst alone: the sync copies it to gdst (and ticker, now on gdst alone, back
      // to dst); the stretch then splits 4 beat replicas over both by free CPU.
      await sheets.get('dst')?.post({
        action: 'apply',
        deployments: [
          {
            name: 'beat',
            image: 'sicf:ticker-wasm:v1',
            replicas: 1,
            cpu_req: 50,
            mem_req: 16,
            restart_policy: 'Always',
          },
        ],
      });
      await apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetFederation',
        metadata: { name: 'fed', namespace: ns },
        spec: {
          members: [
            { name: 'dst', sheetCluster: 'dst' },
            { name: 'gdst', sheetCluster: 'gdst' },
          ],
          sync: { enabled: true, intervalSeconds: 5 },
          // 300m each: the home member (dst, 1000m, ticker and hello on it) has room for 2 or 3,
          // so the plan must order the rest from gdst.
          stretched: [{ deployment: 'beat', replicas: 4, cpu: 300 }],
        },
      });
      const beats = async (member: string) =>
        ((await sheets.get(member)?.get('pods')) ?? []).filter(
          (p) => p.deployment === 'beat' && p.phase === 'Running',
        ).length;
      const beatRow = async (member: string) =>
        Number(
          ((await sheets.get(member)?.get('deployments')) ?? []).find((r) => r.name === 'beat')?.replicas,
        );
      // The stretch grows a member before it shrinks another (make-before-break), so 4 running can
      // be 3 + 1 on the way to the planned split: wait for the split itself, in rows and in pods.
      const st: Deep = await waitFor(
        'both members reachable, synced, beat stretched as planned and running so on both',
        async () => {
          const f = await getJson(['sheetfederation', '-n', ns, 'fed']);
          const s = f.status;
          const planned: Deep[] = s?.stretched?.[0]?.planned ?? [];
          if (
            !(
              s?.members?.length === 2 &&
              s.members.every((m: Deep) => m.reachable && m.nodesReady === 1) &&
              planned.length === 2 &&
              planned.reduce((n: number, p: Deep) => n + p.replicas, 0) === 4 &&
              planned.every((p: Deep) => p.replicas > 0) &&
              (await hasTicker('dst')) === true
            )
          )
            return false;
          for (const p of planned)
            if ((await beatRow(p.member)) !== p.replicas || (await beats(p.member)) !== p.replicas)
              return false;
          return s;
        },
        LIMITS.moveMs,
      );
      expect(condition({ status: st }, 'Ready')?.status).toBe('True');
      // The service list merges both sheets: every service on both members, the first one home.
      const byName = new Map<string, Deep>(st.services.map((x: Deep) => [x.name, x]));
      for (const name of ['beat', 'ticker'])
        expect(byName.get(name)).toMatchObject({ home: 'dst', members: ['dst', 'gdst'] });
      // Each member's counts are its own sheet's, read through its own contract.
      for (const m of st.members) {
        const deployments = (await sheets.get(m.name)?.get('deployments')) ?? [];
        expect([m.name, m.deployments]).toEqual([m.name, deployments.length]);
      }
      // The Google member's share is in the spreadsheet itself, not only in its apiserver's answer.
      if (!proxy) throw new Error('no kubectl proxy');
      if (!emulator) throw new Error('the Google member was not made (the case before failed)');
      const [header = [], ...values] = await readTab(emulator.valuesUrl(proxy.url, 'Deployments'));
      const googleRow = values.find((r) => r[header.indexOf('name')] === 'beat');
      expect(Number(googleRow?.[header.indexOf('replicas')])).toBe(
        st.stretched[0].planned.find((p: Deep) => p.member === 'gdst').replicas,
      );
      const events: Deep[] = (await getJson(['events', '-n', ns])).items.filter(
        (e: Deep) => e.involvedObject?.name === 'fed' && e.involvedObject?.kind === 'SheetFederation',
      );
      expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Synced', 'StretchGrow']));
    }, 600_000);
  });
}
