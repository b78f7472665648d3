import { describe, expect, it } from 'vitest';
import { kubeSettings, type OberonKube } from './oberonkube-render.ts';
import { computeKubeStatus, planeRefusal } from './oberonkube-status.ts';

const kube = (spec: Record<string, unknown>): OberonKube => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonKube',
  metadata: { name: 'farm', namespace: 'ns', generation: 1, uid: 'u' },
  spec,
});
const degraded = (status: Record<string, unknown>) =>
  (status.conditions as Array<{ type: string; status: string; reason: string; message: string }>).find(
    (c) => c.type === 'Degraded',
  );

describe('OberonKube status: what the plane will refuse is said in status', () => {
  it('more pods than the nodes can hold (10 per node) or than the store holds is named', () => {
    expect(planeRefusal(kubeSettings(kube({ nodes: 3, deployments: 'web 30 Ticker' })))).toBe('');
    expect(planeRefusal(kubeSettings(kube({ nodes: 3, deployments: 'web 31 Ticker' })))).toMatch(
      /^31 pods wanted but 3 node\(s\) hold at most 30 .* 1 stay Pending: add nodes or lower the replicas$/,
    );
    expect(
      planeRefusal(kubeSettings(kube({ nodes: 20, deployments: 'web 200 Ticker; api 50 Ticker2' }))),
    ).toMatch(/need 274 objects; the plane's store holds 256/);
    const k = kube({ nodes: 1, deployments: 'web 11 Ticker' });
    const st = computeKubeStatus(k, kubeSettings(k), {
      keyProblem: '',
      conflicts: [],
      withPlane: true,
      forgedRecent: false,
    });
    expect(degraded(st)).toMatchObject({ status: 'True', reason: 'PlaneCannotPlace' });
  });

  it('a key that is not hex is Degraded, not only a message', () => {
    const k = kube({ nodes: 1, keySecretRef: { name: 's' } });
    const st = computeKubeStatus(k, kubeSettings(k), {
      keyProblem: 'Secret s entry key is not 0–16 hex digits',
      keyInvalid: true,
      conflicts: [],
      withPlane: false,
      forgedRecent: false,
    });
    expect(degraded(st)).toMatchObject({
      status: 'True',
      reason: 'KeyInvalid',
      message: expect.stringMatching(/hex/),
    });
  });
});
