// The generated OberonKube key never reaches the operator's log, even at trace level: the
// operator runs as a real process (`retrokube operator`) and its whole output is searched.
import { describe, expect, it } from 'vitest';
import { OBERONKUBE } from '../../operator/src/controllers/oberonkube.ts';
import { freshNamespace, kubeconfigPath } from './harness.ts';
import { CORE, type KubeObject, spawnOperator, testClient, waitFor } from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

describe('the generated key of an OberonKube', () => {
  it('is in its Secret and in no log line of the operator (trace level), no status and no Event', async () => {
    const ns = await freshNamespace('kube-key');
    const k = testClient();
    const op = spawnOperator({
      kubeconfig: kubeconfigPath(),
      namespace: ns,
      env: { RETROKUBE_KEY_SEED: 'log-test-seed' },
    });
    try {
      const obj: KubeObject = {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonKube',
        metadata: { name: 'quiet', namespace: ns },
        spec: { nodes: 1, deployments: 'web 1 Ticker' },
      };
      await k.create(OBERONKUBE, obj);
      const secret: Deep = await waitFor(
        'the key Secret',
        () => k.getOrUndefined(CORE.secret, ns, 'rk-kube-quiet-key'),
        30_000,
      );
      const key = Buffer.from(secret.data.key, 'base64').toString();
      await waitFor(
        'a status',
        async () => ((await k.get(OBERONKUBE, ns, 'quiet')) as Deep).status?.nodes,
        30_000,
      );
      await new Promise((r) => setTimeout(r, 1500));
      expect(op.output()).toMatch(/"component":"controller"/); // the log was captured at all
      expect(op.output()).not.toContain(key);
      const seen = JSON.stringify([await k.get(OBERONKUBE, ns, 'quiet'), await k.list(CORE.event, ns)]);
      expect(seen).not.toContain(key);
    } finally {
      await op.stop();
    }
  }, 60_000);
});
