// A keySecretRef the operator may not read. The operator runs as a real process with exactly the
// chart's RBAC (its ServiceAccount impersonated): no Secret read anywhere. An OberonKube naming a
// user's key Secret then says what is wrong and the two commands that fix it; nothing is deleted,
// its machines are still made (the kubelet reads the key for them), and no key reaches status,
// Events or the log. Running those very commands lets the operator read the key and judge the air.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { resourcePath } from '../../operator/src/runtime/client.ts';
import { installChartRbac, run } from './chart-rbac.ts';
import { freshNamespace, kubeconfigPath, serviceAccountKubeConfig, testBins } from './harness.ts';
import {
  CORE,
  condition,
  OBERONAIR,
  type OperatorProcess,
  publishRelayEndpoint,
  spawnOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const KEY = 'a1b2c3d4e5f60718';
describe('an OberonKube whose keySecretRef the operator may not read', () => {
  it('says what is wrong and which Role/RoleBinding to create, loses nothing, shows no key; converges once granted', async () => {
    const ns = await freshNamespace('kube-keyaccess');
    const k = testClient();
    const saName = await installChartRbac(k, ns);
    const work = mkdtempSync(join(tmpdir(), 'rk-keyaccess-'));
    const kubeconfig = join(work, 'operator.kubeconfig');
    writeFileSync(kubeconfig, serviceAccountKubeConfig(ns, saName).exportConfig());
    let op: OperatorProcess | undefined;
    try {
      op = spawnOperator({ kubeconfig, namespace: ns });

      // The user's key, in a Secret of their own; the operator's ServiceAccount may not read it.
      await k.create(CORE.secret, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'team-key', namespace: ns },
        stringData: { key: KEY },
      });
      await k.create(OBERONKUBE, {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonKube',
        metadata: { name: 'locked', namespace: ns },
        spec: { nodes: 1, deployments: 'web 1 Ticker', keySecretRef: { name: 'team-key' } },
      });
      // A lone machine naming the same Secret: the operator never needs to read it (its relay is up).
      await publishRelayEndpoint(k, ns, 'locked-air');
      await k.create(OBERONMACHINE, {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonMachine',
        metadata: { name: 'solo', namespace: ns },
        spec: { air: 'locked-air', role: 'node', nodeName: 'solo', keySecretRef: { name: 'team-key' } },
      });

      const refused: Deep = await waitFor(
        'the refusal in status',
        async () => {
          const o = await k.get(OBERONKUBE, ns, 'locked');
          return /may not read Secret team-key/.test(condition(o, 'Ready')?.message ?? '') && o;
        },
        60_000,
      );
      const ready = condition(refused, 'Ready');
      expect(ready).toMatchObject({ status: 'Unknown', reason: 'AirNotJudged' });
      const message = ready?.message ?? '';
      expect(message).toContain(
        `the operator (system:serviceaccount:${ns}:${saName}) may not read Secret team-key`,
      );
      const role = 'retrokube-read-team-key';
      expect(message).toContain(
        `kubectl -n ${ns} create role ${role} --verb=get --resource=secrets --resource-name=team-key && ` +
          `kubectl -n ${ns} create rolebinding ${role} --role=${role} --serviceaccount=${ns}:${saName}`,
      );

      // Nothing deleted or lost: the Secret as it was, the air and the node machine made anyway.
      const secret: Deep = await k.get(CORE.secret, ns, 'team-key');
      expect(Buffer.from(secret.data.key, 'base64').toString()).toBe(KEY);
      await waitFor('the air', () => k.getOrUndefined(OBERONAIR, ns, 'locked-air'));
      const node: Deep = await waitFor('the node machine', () =>
        k.getOrUndefined(OBERONMACHINE, ns, 'locked-node-a'),
      );
      expect(node.spec.keySecretRef).toEqual({ name: 'team-key', key: 'key' });
      const solo: Deep = await waitFor('the lone machine StatefulSet', () =>
        k.getOrUndefined(KINDS_OWNED.statefulSet, ns, 'rk-m-solo'),
      );
      expect(solo.spec.replicas).toBe(1);
      expect(solo.spec.template.spec.containers[0].env).toEqual([
        { name: 'RK_KEY', valueFrom: { secretKeyRef: { name: 'team-key', key: 'key' } } },
      ]);

      // The fix, exactly as the message gives it (kubectl as an admin).
      const commands = message.slice(message.indexOf('kubectl')).split(' && ');
      expect(commands).toHaveLength(2);
      for (const c of commands) {
        const args = c.trim().split(/\s+/).slice(1);
        const r = await run(testBins().kubectl, ['--kubeconfig', kubeconfigPath(), ...args]);
        expect(r.code, `${c}: ${r.stderr}`).toBe(0);
      }

      // Granted: the operator reads the key, and now waits only for the relay before it listens (no
      // relay runs here: no kubelet makes its Deployment Ready).
      const judged: Deep = await waitFor(
        'the key problem gone',
        async () => {
          const o = await k.get(OBERONKUBE, ns, 'locked');
          const r = condition(o, 'Ready');
          return r && !/Secret team-key/.test(r.message ?? '') && o;
        },
        30_000,
      );
      expect(condition(judged, 'Ready')).toMatchObject({
        status: 'Unknown',
        reason: 'AirNotJudged',
        message: 'waiting for OberonAir locked-air to be Ready (its relay) before listening to the air',
      });
      expect(await k.getOrUndefined(OBERONMACHINE, ns, 'locked-node-a')).toBeDefined();

      // No key anywhere it could leak: statuses, Events, the operator's log at trace level.
      await new Promise((r) => setTimeout(r, 1500));
      expect(op.output()).toMatch(/"component":"controller"/); // the log was captured at all
      expect(op.output()).not.toContain(KEY);
      const seen = JSON.stringify([
        await k.get(OBERONKUBE, ns, 'locked'),
        await k.list(OBERONMACHINE, ns),
        await k.list(KINDS_OWNED.statefulSet, ns),
        await k.list(CORE.event, ns),
      ]);
      expect(seen).not.toContain(KEY);

      // A Secret whose entry is not a key: readable now, but the cluster cannot work — Degraded.
      expect(condition(await k.get(OBERONKUBE, ns, 'locked'), 'Degraded')?.status).toBe('False');
      await k.request('PATCH', resourcePath(CORE.secret, ns, 'team-key'), {
        body: { stringData: { key: 'not-a-key' } },
        contentType: 'application/merge-patch+json',
      });
      const bad: Deep = await waitFor(
        'Degraded for a key that is not hex',
        async () => {
          const o = await k.get(OBERONKUBE, ns, 'locked');
          return condition(o, 'Degraded')?.status === 'True' && o;
        },
        30_000,
      );
      expect(condition(bad, 'Degraded')).toMatchObject({
        reason: 'KeyInvalid',
        message: expect.stringMatching(/team-key entry key is not 0–16 hex digits/),
      });
    } finally {
      await op?.stop();
      rmSync(work, { recursive: true, force: true });
    }
  }, 120_000);
});
