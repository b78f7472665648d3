import { describe, expect, it } from 'vitest';
import { kubeSettings, type OberonKube, renderKube } from './oberonkube-render.ts';

const kube = (runtime: 'pod' | 'kubevirt'): OberonKube =>
  ({
    apiVersion: 'retrokube.io/v1alpha1',
    kind: 'OberonKube',
    metadata: { name: 'farm', namespace: 'lab', uid: 'u1' },
    spec: { nodes: 3, runtime, deployments: 'web 6 Ticker; api 2 Ticker2' },
  }) as OberonKube;

describe('renderKube: where the deployments go', () => {
  it('kubevirt: the plane boots with Kube.Hold only; its deployments go live through the console, so a change never restarts it', () => {
    const out = renderKube(kube('kubevirt'), kubeSettings(kube('kubevirt')), true);
    const plane = out.machines.find((m) => m.metadata.name === 'farm-plane');
    expect((plane?.spec as { commands?: string } | undefined)?.commands).toBe('Kube.Hold 3');
    expect(out.liveCommands).toBeUndefined();
    const changed = {
      ...kube('kubevirt'),
      spec: { ...kube('kubevirt').spec, deployments: 'web 9 Ticker' },
    } as OberonKube;
    const again = renderKube(changed, kubeSettings(changed), true).machines.find(
      (m) => m.metadata.name === 'farm-plane',
    );
    expect(again?.spec).toEqual(plane?.spec);
  });

  it('pod: the same lines in the live ConfigMap the plane pod follows', () => {
    const out = renderKube(kube('pod'), kubeSettings(kube('pod')), true);
    expect(out.liveCommands?.data).toEqual({
      deployments: 'Kube.Hold 3\nKube.Apply web 6 Ticker\nKube.Apply api 2 Ticker2\n',
    });
  });
});
