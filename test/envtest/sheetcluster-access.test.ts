// A SheetCluster the operator cannot serve, with the operator acting as the chart's ServiceAccount
// (impersonated, exactly the chart's RBAC): it may read no Secret anywhere, yet it renders the
// cluster and generates Secrets. A token Secret it may not read and a workbook PVC that never binds
// become Degraded with what to do; nothing is deleted meanwhile; granting exactly what the message
// says, and the PVC binding, clear each problem in turn.
import { describe, expect, it } from 'vitest';
import { SHEETCLUSTER } from '../../operator/src/controllers/sheetcluster.ts';
import { ApiError, KubeClient } from '../../operator/src/runtime/client.ts';
import { installChartRbac, run } from './chart-rbac.ts';
import { freshNamespace, kubeconfigPath, serviceAccountKubeConfig, testBins } from './harness.ts';
import { CORE, condition, startOperator, testClient, waitFor } from './operator-harness.ts';
import { PVC, STS, sheetCluster } from './sheetcluster-kit.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const TOKEN = 'team-token-4f1c2a9e7b';

describe('a SheetCluster the operator cannot serve, as the chart ServiceAccount', () => {
  it('no Secret reads; unreadable token Secret and unbound PVC → Degraded with the fix; nothing deleted', async () => {
    const ns = await freshNamespace('sheet-access');
    const k = testClient();
    const sa = await installChartRbac(k, ns);
    const asOperator = new KubeClient(serviceAccountKubeConfig(ns, sa));
    // Least privilege, proven by impersonation: no get or list of Secrets, create only.
    await k.create(CORE.secret, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'team-token', namespace: ns },
      stringData: { token: TOKEN },
    });
    for (const attempt of [
      () => asOperator.get(CORE.secret, ns, 'team-token'),
      () => asOperator.list(CORE.secret, ns),
    ]) {
      const err = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).status).toBe(403);
    }

    await startOperator({
      namespace: ns,
      kubeConfig: serviceAccountKubeConfig(ns, sa),
      keySeed: 'envtest-access-seed',
      sheetsAddress: () => 'http://127.0.0.1:9',
      sheetTiming: { pollMs: 1_000, startGraceMs: 1_000, claimGraceMs: 2_000, secretRecheckMs: 1_000 },
    });
    await k.create(
      SHEETCLUSTER,
      sheetCluster(ns, 'locked', {
        nodes: 2,
        tokenSecretRef: { name: 'team-token' },
        store: { type: 'xlsx', xlsx: { storageClass: 'no-such-class' } },
      }),
    );
    // Rendered anyway (the kubelet reads the Secret for the pods), the signing key generated (create-only).
    const sts: Deep = await waitFor('agents', () => k.getOrUndefined(STS, ns, 'rk-sheets-locked-node'));
    expect(sts.spec.template.spec.containers[0].env).toContainEqual({
      name: 'TOKEN',
      valueFrom: { secretKeyRef: { name: 'team-token', key: 'token' } },
    });
    await waitFor('generated signing key', () =>
      k.getOrUndefined(CORE.secret, ns, 'rk-sheets-locked-signing'),
    );
    expect(await k.getOrUndefined(CORE.secret, ns, 'rk-sheets-locked-token')).toBeUndefined();

    const refused: Deep = await waitFor(
      'both problems in Degraded',
      async () => {
        const o = await k.get<Deep>(SHEETCLUSTER, ns, 'locked');
        const m = condition(o, 'Degraded')?.message ?? '';
        return /may not read Secret team-token/.test(m) && /PersistentVolumeClaim/.test(m) && o;
      },
      30_000,
    );
    expect(condition(refused, 'Ready')).toMatchObject({ status: 'False', reason: 'SecretUnreadable' });
    const message = condition(refused, 'Degraded')?.message ?? '';
    const role = 'retrokube-read-team-token';
    expect(message).toContain(
      `kubectl -n ${ns} create role ${role} --verb=get --resource=secrets --resource-name=team-token && ` +
        `kubectl -n ${ns} create rolebinding ${role} --role=${role} --serviceaccount=${ns}:${sa}`,
    );
    expect(message).toContain(
      'PersistentVolumeClaim rk-sheets-locked-workbook is Pending (not bound), so the apiserver cannot start: check that StorageClass no-such-class exists',
    );

    // Nothing deleted while it waits.
    await new Promise((r) => setTimeout(r, 3_000));
    for (const [t, name] of [
      [CORE.deployment, 'rk-sheets-locked'],
      [CORE.service, 'rk-sheets-locked'],
      [STS, 'rk-sheets-locked-node'],
      [PVC, 'rk-sheets-locked-workbook'],
      [CORE.secret, 'team-token'],
    ] as const)
      expect(await k.getOrUndefined(t, ns, name), `${t.kind} ${name}`).toBeDefined();

    // The fix for the token, exactly as the message gives it.
    const commands = message
      .slice(
        message.indexOf('kubectl'),
        message.indexOf(`--serviceaccount=${ns}:${sa}`) + `--serviceaccount=${ns}:${sa}`.length,
      )
      .split(' && ');
    expect(commands).toHaveLength(2);
    for (const c of commands) {
      const r = await run(testBins().kubectl, [
        '--kubeconfig',
        kubeconfigPath(),
        ...c.trim().split(/\s+/).slice(1),
      ]);
      expect(r.code, `${c}: ${r.stderr}`).toBe(0);
    }
    const granted: Deep = await waitFor(
      'the token problem gone',
      async () => {
        const o = await k.get<Deep>(SHEETCLUSTER, ns, 'locked');
        const m = condition(o, 'Degraded')?.message ?? '';
        return !/team-token/.test(m) && /PersistentVolumeClaim/.test(m) && o;
      },
      30_000,
    );
    expect(condition(granted, 'Ready')?.reason).toBe('WorkbookClaimPending');

    // The volume binds (the test API server runs no PV controller: we write its status).
    await k.request(
      'PATCH',
      `/api/v1/namespaces/${ns}/persistentvolumeclaims/rk-sheets-locked-workbook/status`,
      {
        body: { status: { phase: 'Bound' } },
        contentType: 'application/merge-patch+json',
      },
    );
    const bound: Deep = await waitFor(
      'only the apiserver left to answer',
      async () => {
        const o = await k.get<Deep>(SHEETCLUSTER, ns, 'locked');
        return condition(o, 'Degraded')?.reason === 'ApiserverNotAnswering' && o;
      },
      30_000,
    );
    expect(JSON.stringify(bound.status)).not.toContain(TOKEN);
    const events = await k.list<Deep>(
      { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
      ns,
    );
    expect(JSON.stringify(events.items)).not.toContain(TOKEN);
  });
});
