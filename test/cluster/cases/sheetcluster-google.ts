// A SheetCluster on the Google backend, end to end on a real cluster (#26): Google cannot be
// reached from here, so our Google Sheets v4 emulator (quotas and limits like Google's) runs in
// the cluster as a Deployment and a Service of the product image, and the SheetCluster names it
// as its `store.google.rootUrl`. The apiserver pod talks to it through the real googleapis client;
// the test reads the spreadsheet itself (the emulator's Sheets API, through the API server's
// Service proxy) — the sheet is the truth the operator's status must agree with.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  waitFor,
} from '../harness.ts';

const LIMITS = {
  readyMs: 300_000, // pods from the imported image; the store starts within Google's write quota
  scaleMs: 240_000, // a new agent pod, its registration, the store's next batched write
  // The test reads the sheet as a user of its own (an API key): Google's 60 reads per minute per user
  // and 300 per project, the apiserver's user included. waitFor polls every 100 ms, which spent the
  // test's own quota in seconds (a 429 where it read once) and a fifth of the project's each minute.
  sheetReadGapMs: 2_000, // 30 reads per minute at most
} as const;

const NAME = 'gdemo';
const SPREADSHEET = 'retrokube-cluster-test'; // fixed: the SheetCluster names it before the emulator runs
const APISERVER = `app.kubernetes.io/instance=${NAME},app.kubernetes.io/component=apiserver`;

/**
 * Its describe block: on the single node (test/cluster/sheetcluster-google.test.ts) or on the several nodes
 * (test/cluster/nodes.test.ts, in npm test), wherever the harness points.
 */
export function googleSheetClusterGroup(): void {
  describe('SheetCluster on the Google backend (our Sheets emulator as a Service)', () => {
    let ns: string;
    let chart: Chart | undefined;
    let proxy: { url: string; close(): void } | undefined;
    let valuesUrl: ((proxy: string, tab: string) => string) | undefined;

    beforeAll(async () => {
      ns = await freshNamespace('gsheets');
      chart = await installChart(ns, `rk-${ns.split('-').pop()}`);
      proxy = await apiProxy();
    }, 400_000);
    afterAll(async () => {
      proxy?.close();
      await chart?.uninstall().catch(() => undefined);
      if (ns) await deleteNamespace(ns);
    });

    /** A tab of the spreadsheet as Google's API returns it: one read per LIMITS.sheetReadGapMs at most. */
    let nextReadAt = 0;
    const tab = async (title: string): Promise<string[][]> => {
      if (!proxy) throw new Error('no kubectl proxy');
      if (!valuesUrl) throw new Error('no emulator');
      await sleep(Math.max(0, nextReadAt - Date.now()));
      nextReadAt = Date.now() + LIMITS.sheetReadGapMs;
      return readTab(valuesUrl(proxy.url, title));
    };
    /** The Nodes tab as records by its header row. */
    const nodesInSheet = async (): Promise<Record<string, string>[]> => {
      const [header, ...rows] = await tab('Nodes').catch(() => [] as string[][]);
      return header ? rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? '']))) : [];
    };
    const readyNames = async (): Promise<string[]> =>
      (await nodesInSheet())
        .filter((n) => n.status === 'Ready')
        .map((n) => n.name)
        .sort();
    const sheetCluster = (): Promise<Deep> => getJson(['sheetclusters.retrokube.io', '-n', ns, NAME]);
    const readyStatus = async (n: number): Promise<Deep> => {
      const o = await sheetCluster();
      return condition(o, 'Ready')?.status === 'True' && o.status?.nodes === `${n}/${n}` ? o : undefined;
    };

    it('the emulator runs as a Service; a SheetCluster with store google converges: 2 agents Ready in the spreadsheet, status 2/2 from it', async () => {
      const emulator = await startGoogleEmulator(ns, SPREADSHEET);
      valuesUrl = emulator.valuesUrl;
      await apply({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetCluster',
        metadata: { name: NAME, namespace: ns },
        spec: {
          nodes: 2,
          store: emulator.store,
          deployments: [{ name: 'ticker', replicas: 2 }],
        },
      });
      const [api] = await waitFor(
        'the apiserver pod Ready',
        async () => {
          const p = (await pods(ns, APISERVER)).filter(podReady);
          return p.length === 1 && p;
        },
        LIMITS.readyMs,
      );
      // No workbook volume: the spreadsheet is the store.
      expect(api.spec.volumes.some((v: Deep) => v.persistentVolumeClaim)).toBe(false);
      expect(api.spec.containers[0].args).toContain(`google:${SPREADSHEET}`);
      expect(
        await waitFor(
          'node-0, node-1 Ready in the spreadsheet',
          async () => {
            const names = await readyNames();
            return names.join() === 'node-0,node-1' && names;
          },
          LIMITS.readyMs,
        ),
      ).toEqual(['node-0', 'node-1']);
      const o = await waitFor('the SheetCluster Ready 2/2', () => readyStatus(2), LIMITS.readyMs);
      expect(condition(o, 'Degraded')?.status).toBe('False');
      expect(o.status.nodeTable.map((n: Deep) => n.name).sort()).toEqual(['node-0', 'node-1']);
      // The deployments the SheetCluster asked for are rows of the spreadsheet's Deployments tab.
      const [header, ...deployments] = await tab('Deployments');
      const ticker = deployments.find((r) => r[header.indexOf('name')] === 'ticker');
      expect(ticker?.[header.indexOf('replicas')]).toBe('2');
    });

    it('scaled to 3 nodes: node-2 registers in the spreadsheet and the status says 3/3', async () => {
      await kubectl([
        'patch',
        'sheetcluster',
        '-n',
        ns,
        NAME,
        '--type',
        'merge',
        '-p',
        '{"spec":{"nodes":3}}',
      ]);
      await waitFor(
        'node-0..2 Ready in the spreadsheet',
        async () => (await readyNames()).join() === 'node-0,node-1,node-2',
        LIMITS.scaleMs,
      );
      const o = await waitFor('the SheetCluster Ready 3/3', () => readyStatus(3), LIMITS.scaleMs);
      expect(o.status.nodeTable.map((n: Deep) => n.name).sort()).toEqual(['node-0', 'node-1', 'node-2']);
    });
  });
}
