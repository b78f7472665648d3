// The first pods of a new OberonKube spread over every node (issue #31 item 1): the plane holds
// them until it has heard all its nodes (`Kube.Hold`). 10 nodes on the real node, `web 20 Ticker`:
// 2 pods on each. And what the plane would refuse is said before it gets there: `web 999 Ticker` is
// refused at admission in words, a key that is not hex makes the cluster Degraded.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  apply,
  type Chart,
  condition,
  type Deep,
  deleteNamespace,
  freshNamespace,
  getJson,
  installChart,
  kubeconfigPath,
  kubectl,
  run,
  skipReason,
  waitFor,
} from './harness.ts';

const LIMITS = {
  convergeMs: 900_000, // 11 machine pods booting on one shared node (each seeds its disk first)
  statusMs: 120_000,
} as const;

describe.skipIf(skipReason())('OberonKube on the real node: spread from the first pod, refusals said', () => {
  let ns: string;
  let chart: Chart | undefined;

  beforeAll(async () => {
    ns = await freshNamespace('spread');
    chart = await installChart(ns, `rk-${ns.split('-').pop()}`);
  });
  afterAll(async () => {
    await chart?.uninstall().catch(() => undefined);
    if (ns) await deleteNamespace(ns);
  });

  it('10 nodes, web 20 Ticker: Ready 10/10, 20/20, and 2 pods running on every node', async () => {
    await apply({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonKube',
      metadata: { name: 'ten', namespace: ns },
      spec: { nodes: 10, runtime: 'pod', deployments: 'web 20 Ticker' },
    });
    const o = await waitFor(
      'the OberonKube Ready 10/10 with 20/20 pods heard',
      async () => {
        const k = await getJson(['oberonkube', '-n', ns, 'ten']);
        return (
          condition(k, 'Ready')?.status === 'True' && k.status?.converged && k.status.pods === '20/20' && k
        );
      },
      LIMITS.convergeMs,
    );
    const perNode = (o.status.nodeTable as Deep[]).map((r) => [r.name, r.running.length]);
    expect(perNode).toEqual(Array.from({ length: 10 }, (_, i) => [`node-${String.fromCharCode(97 + i)}`, 2]));
    await kubectl(['delete', 'oberonkube', '-n', ns, 'ten', '--wait=true', '--timeout=300s']);
  });

  it('web 999 Ticker is refused at admission, saying what a line must look like', async () => {
    const r = await run(
      inject('clusterTools').kubectl,
      ['--kubeconfig', kubeconfigPath(), 'apply', '-f', '-'],
      {
        input: `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata: {name: big, namespace: ${ns}}
spec: {nodes: 1, deployments: "web 999 Ticker"}
`,
        allowFail: true,
      },
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /spec\.deployments: .*replicas: 0 to 250.*Example: "web 4 Ticker; api 2 Ticker2"/,
    );
    expect(r.stderr).not.toContain('[a-z]');
  });

  it('a keySecretRef whose entry is not hex: Degraded=True KeyInvalid once the operator may read it', async () => {
    await kubectl(['create', 'secret', 'generic', 'bad-key', '-n', ns, '--from-literal=key=not-a-key']);
    await apply({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonKube',
      metadata: { name: 'badkey', namespace: ns },
      spec: { nodes: 1, runtime: 'pod', keySecretRef: { name: 'bad-key' } },
    });
    // The operator may not read Secrets until granted: its message gives the two commands.
    const refused = await waitFor(
      'the access problem in status',
      async () => {
        const k = await getJson(['oberonkube', '-n', ns, 'badkey']);
        return /kubectl/.test(condition(k, 'Ready')?.message ?? '') && k;
      },
      LIMITS.statusMs,
    );
    const message: string = condition(refused, 'Ready').message;
    for (const c of message.slice(message.indexOf('kubectl')).split(' && '))
      await kubectl(c.trim().split(/\s+/).slice(1));
    const bad = await waitFor(
      'Degraded KeyInvalid',
      async () => {
        const k = await getJson(['oberonkube', '-n', ns, 'badkey']);
        return condition(k, 'Degraded')?.status === 'True' && k;
      },
      LIMITS.statusMs,
    );
    expect(condition(bad, 'Degraded')).toMatchObject({
      reason: 'KeyInvalid',
      message: expect.stringMatching(/not 0–16 hex digits/),
    });
  });
});
