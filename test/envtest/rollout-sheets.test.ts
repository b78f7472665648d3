// Rollouts over Sheeternetes targets: two SheetClusters, each a real apiserver process with a real
// node agent (the test plays kubelet with the operator's own rendered pods, sheetcluster-kit.ts),
// and a SheetFederation of the two. The operator runs as the chart's ServiceAccount (impersonated,
// exactly the chart's RBAC: no Secret read anywhere): it reaches the sheets with keys derived from
// its seed, changes them through the signed contract and judges them from their Pods tabs.
// Proves: a rolling image change Running in both sheets, with the operator restarted mid-way (it
// resumes from status; no target changed twice); a change that fails on the second
// target rolls back both (exactly the previous replicas); blue/green switching the federation's
// active member; bad input refused by the schema or shown in status with no sheet touched.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ROLLOUT } from '../../operator/src/controllers/rollout.ts';
import { MEMBER_LABEL } from '../../operator/src/controllers/rollout-sheets.ts';
import { SHEETCLUSTER } from '../../operator/src/controllers/sheetcluster.ts';
import { SHEETFEDERATION } from '../../operator/src/controllers/sheetfederation.ts';
import type { LocalProcess } from '../../operator/src/local/pods.ts';
import { settled } from '../../operator/src/rollout/plan.ts';
import { ApiError, KubeClient } from '../../operator/src/runtime/client.ts';
import { SheetsClient } from '../../operator/src/sheets/ctl/client.ts';
import { installChartRbac } from './chart-rbac.ts';
import { freshNamespace, serviceAccountKubeConfig } from './harness.ts';
import { CORE, startOperator, testClient, waitFor } from './operator-harness.ts';
import { runAgentPod, runApiserverPod, sheetCluster } from './sheetcluster-kit.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const HELLO = 'sicf:hello-wasm:v1'; // prints and ends
const TICKER = 'sicf:ticker-wasm:v1'; // runs for good

const rollout = (ns: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'Rollout',
  metadata: { name, namespace: ns },
  spec,
});

describe('Rollout over Sheeternetes targets (real apiservers and agents; the operator as the chart ServiceAccount)', () => {
  it('rolling succeeds across an operator restart; a failure on the second target is rolled back, and its partner if still checking; blue/green switches the active member; bad input touches nothing', async () => {
    const ns = await freshNamespace('rollout-sheets');
    const k = testClient();
    const sa = await installChartRbac(k, ns);
    const asOperator = new KubeClient(serviceAccountKubeConfig(ns, sa));
    const urls = new Map<string, string>();
    // The same seed after a restart: the new operator derives the same keys (it never stored them).
    const operator = () =>
      startOperator({
        namespace: ns,
        kubeConfig: serviceAccountKubeConfig(ns, sa),
        keySeed: 'envtest-rollout-sheets',
        sheetsAddress: (_ns, name) => urls.get(name) ?? 'http://127.0.0.1:9',
        sheetTiming: { pollMs: 1_000, startGraceMs: 1_000 },
      });
    let mgr = await operator();
    const pods: LocalProcess[] = [];
    onTestFinished(async () => {
      await Promise.all(pods.map((p) => p.stop('SIGKILL')));
    });

    // Two clusters, one node agent each; `web` is the sheet's own deployment (not in the spec), on
    // sb with a CPU request that lets two replicas fit on its node and not three.
    const person = new Map<string, SheetsClient>();
    for (const [name, cpu] of [
      ['sa', 50],
      ['sb', 400],
    ] as const) {
      await k.create(SHEETCLUSTER, {
        ...sheetCluster(ns, name, {
          nodes: 1,
          failoverSeconds: 10,
          // The spec owns hello.replicas (the ownership rule): a rollout of that field is refused below.
          deployments: [{ name: 'hello', replicas: 1 }],
        }),
        metadata: { name, namespace: ns, labels: { fleet: 'sheets' } },
      });
      await waitFor(
        `${name}: apiserver and generated Secrets`,
        async () =>
          (await k.getOrUndefined(CORE.deployment, ns, `rk-sheets-${name}`)) &&
          (await k.getOrUndefined(CORE.secret, ns, `rk-sheets-${name}-signing`)) &&
          (await k.getOrUndefined(CORE.secret, ns, `rk-sheets-${name}-token`)),
      );
      await k.request(
        'PATCH',
        `/api/v1/namespaces/${ns}/persistentvolumeclaims/rk-sheets-${name}-workbook/status`,
        {
          body: { status: { phase: 'Bound' } },
          contentType: 'application/merge-patch+json',
        },
      );
      const api = await runApiserverPod(k, ns, name, mkdtempSync(join(tmpdir(), `rk-rollsheet-${name}-`)));
      pods.push(api.pod);
      urls.set(name, api.url);
      pods.push(await runAgentPod(k, ns, name, 0, api.url));
      const secret = async (s: string, key: string) =>
        Buffer.from(
          (await k.get<Deep>(CORE.secret, ns, `rk-sheets-${name}-${s}`)).data[key],
          'base64',
        ).toString();
      const client = new SheetsClient({
        url: api.url,
        token: await secret('token', 'token'),
        key: await secret('signing', 'key'),
      });
      person.set(name, client);
      await client.post({
        action: 'apply',
        deployments: [
          { name: 'web', image: HELLO, replicas: 2, cpu_req: cpu, mem_req: 16, restart_policy: 'OnFailure' },
        ],
      });
    }
    const sheet = (name: string) => person.get(name) as SheetsClient;
    const web = async (name: string) => (await sheet(name).get('deployments')).find((r) => r.name === 'web');
    const webPods = async (name: string) =>
      (await sheet(name).get('pods')).filter((p) => p.deployment === 'web');
    for (const name of ['sa', 'sb'])
      await waitFor(
        `${name}: the node is Ready in the sheet`,
        async () => (await sheet(name).get('nodes')).some((n) => n.status === 'Ready'),
        60_000,
      );
    const finished = (name: string, timeoutMs = 240_000) =>
      waitFor(
        `rollout ${name} finished`,
        async () => {
          const r = await k.get<Deep>(ROLLOUT, ns, name);
          return settled(r.status) && r;
        },
        timeoutMs,
      );

    // The operator may read no Secret, yet it is to change these sheets: keys come from its seed.
    const denied = await asOperator.get(CORE.secret, ns, 'rk-sheets-sa-token').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((denied as ApiError).status).toBe(403);

    // --- Bad input: refused by the schema, or Failed in status with what to fix; no sheet touched.
    const refuse = async (spec: Record<string, unknown>, why: RegExp) => {
      const err = await k.create(ROLLOUT, rollout(ns, 'refused', spec)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).message).toMatch(why);
    };
    const base = {
      selector: { kind: 'SheetCluster', matchLabels: { fleet: 'sheets' } },
      change: { deployment: 'web', image: TICKER },
      strategy: { type: 'rolling' },
    };
    await refuse(
      { ...base, selector: { matchLabels: { fleet: 'sheets' } }, check: { httpGet: { path: '/' } } },
      /check.httpGet is for Sheeternetes targets/,
    );
    await refuse(
      { ...base, strategy: { type: 'blueGreen', blueGreen: { groupLabel: 'color', activeGroup: 'blue' } } },
      /select SheetFederations/,
    );
    await refuse({ ...base, selector: { ...base.selector, kind: 'Sheet' } }, /selector.kind/);
    const before = { sa: await web('sa'), sb: await web('sb') };
    const badInStatus: Array<[string, Record<string, unknown>, RegExp]> = [
      [
        'nothing',
        { ...base, selector: { kind: 'SheetCluster', matchLabels: { fleet: 'none' } } },
        /matches no target/,
      ],
      [
        'missing',
        { ...base, change: { deployment: 'nope', image: TICKER } },
        /deployment nope does not exist on sa, sb/,
      ],
      [
        'toobig',
        { ...base, strategy: { type: 'canary', canary: { count: 2 } } },
        /canary \(2\) is not smaller than the 2 targets/,
      ],
      [
        'owned',
        { ...base, change: { deployment: 'hello', replicas: 3 } },
        /SheetCluster sa sets hello.replicas in its spec.deployments/,
      ],
    ];
    for (const [name, spec] of badInStatus) await k.create(ROLLOUT, rollout(ns, name, spec));
    for (const [name, , why] of badInStatus) {
      const r = await finished(name, 60_000);
      expect(r.status.phase).toBe('Failed');
      expect(r.status.message).toMatch(why);
    }
    expect({ sa: await web('sa'), sb: await web('sb') }).toEqual(before);

    // --- Rolling, one at a time: the new image Running in both sheets (every pod on the new spec).
    await k.create(
      ROLLOUT,
      rollout(ns, 'to-ticker', {
        ...base,
        strategy: { type: 'rolling', maxParallel: 1, checkSeconds: 3, stepDeadlineSeconds: 180 },
        check: { minRunning: 2 },
      }),
    );
    // A new operator takes over mid-way from the status the old one left.
    await waitFor(
      'the first target done',
      async () => (await k.get<Deep>(ROLLOUT, ns, 'to-ticker')).status?.targets?.[0]?.phase === 'Succeeded',
      240_000,
    );
    await mgr.stop();
    mgr = await operator();
    const ok = await finished('to-ticker');
    expect(ok.status.phase, ok.status.message).toBe('Succeeded');
    expect(ok.status.targets.map((t: Deep) => [t.name, t.phase, t.attempts, t.previous])).toEqual([
      ['sa', 'Succeeded', 1, { image: HELLO, replicas: 2 }],
      ['sb', 'Succeeded', 1, { image: HELLO, replicas: 2 }],
    ]);
    // sb started only after sa had succeeded (maxParallel 1).
    expect(Date.parse(ok.status.targets[1].startedAt)).toBeGreaterThanOrEqual(
      Date.parse(ok.status.targets[0].finishedAt),
    );
    for (const name of ['sa', 'sb']) {
      expect(await web(name)).toMatchObject({
        image: TICKER,
        replicas: 2,
        cpu_req: name === 'sa' ? 50 : 400,
      });
      const p = await webPods(name);
      expect(p.map((x) => x.phase)).toEqual(['Running', 'Running']);
      expect(new Set(p.map((x) => x.spec_hash)).size).toBe(1);
    }

    // --- A change that fails on the second target: sb cannot place a third replica (CPU), so it
    // runs fewer pods than the check asks for a whole check window, and is rolled back to exactly
    // the replicas it had (sa with it, if still in its own window).
    await k.create(
      ROLLOUT,
      rollout(ns, 'grow', {
        ...base,
        change: { deployment: 'web', replicas: 3 },
        strategy: {
          type: 'rolling',
          maxParallel: 2,
          checkSeconds: 20,
          stepDeadlineSeconds: 180,
          onFailure: 'abort',
        },
        check: { minRunning: 5 }, // the sample ticker's 2 + web's 3
      }),
    );
    const bad = await finished('grow');
    expect(bad.status.phase).toBe('Failed');
    const rows = Object.fromEntries(bad.status.targets.map((t: Deep) => [t.name, t]));
    expect(rows.sb).toMatchObject({ phase: 'RolledBack', previous: { image: TICKER, replicas: 2 } });
    expect(rows.sb.message).toMatch(/fewer pods running than the check allows/);
    // sa started with sb (maxParallel 2): rolled back with it while still in its check window, or
    // Succeeded (whole) if its window ended first — which comes first is a race of two 20 s windows
    // on a busy machine, decided exactly by the planner's own tests (plan.test.ts). Here each target
    // must run what its row says.
    expect(['RolledBack', 'Succeeded']).toContain(rows.sa.phase);
    expect(rows.sa.previous).toEqual({ image: TICKER, replicas: 2 });
    const saReplicas = rows.sa.phase === 'RolledBack' ? 2 : 3;
    for (const [name, replicas] of [
      ['sa', saReplicas],
      ['sb', 2],
    ] as const) {
      await waitFor(
        `${name}: ${replicas} web pods Running, as its row says`,
        async () => {
          const p = await webPods(name);
          return p.length === replicas && p.every((x) => x.phase === 'Running');
        },
        60_000,
      );
      expect(await web(name)).toMatchObject({ image: TICKER, replicas });
    }

    // --- Blue/green over a federation of the two: green (sb) is changed and checked, then the
    // federated service `web` is served by green; blue (sa) keeps its version as the way back.
    await k.create(SHEETFEDERATION, {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'SheetFederation',
      metadata: { name: 'fed', namespace: ns, labels: { app: 'web' } },
      spec: {
        members: [
          { name: 'blue', sheetCluster: 'sa' },
          { name: 'green', sheetCluster: 'sb' },
        ],
        active: [{ service: 'web', member: 'blue' }],
      },
    });
    // The federation controller (as the chart ServiceAccount, keys derived) serves web from blue.
    const activeOfWeb = async () =>
      (await k.get<Deep>(SHEETFEDERATION, ns, 'fed')).status?.services?.find((x: Deep) => x.name === 'web')
        ?.active;
    await waitFor('web served by blue', async () => (await activeOfWeb()) === 'blue', 60_000);
    await k.create(
      ROLLOUT,
      rollout(ns, 'switch', {
        selector: { kind: 'SheetFederation', matchLabels: { app: 'web' } },
        change: { deployment: 'web', replicas: 1 },
        strategy: {
          type: 'blueGreen',
          blueGreen: { groupLabel: MEMBER_LABEL, activeGroup: 'blue' },
          checkSeconds: 3,
          stepDeadlineSeconds: 180,
        },
        check: { minRunning: 3 },
      }),
    );
    const bg = await finished('switch');
    expect(bg.status.phase, bg.status.message).toBe('Succeeded');
    expect(bg.status.activeGroup).toBe('green');
    expect(bg.status.targets.map((t: Deep) => [t.name, t.phase])).toEqual([
      ['fed/blue', 'Skipped'],
      ['fed/green', 'Succeeded'],
    ]);
    const fed = await k.get<Deep>(SHEETFEDERATION, ns, 'fed');
    expect(fed.spec.active).toEqual([{ service: 'web', member: 'green' }]);
    await waitFor('web served by green', async () => (await activeOfWeb()) === 'green', 60_000);
    expect(await web('sb')).toMatchObject({ replicas: 1 });
    expect(await web('sa')).toMatchObject({ replicas: saReplicas, image: TICKER });
  }, 900_000);
});
