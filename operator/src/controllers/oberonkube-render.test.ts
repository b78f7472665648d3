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

  it('mixed runtimes: planeRuntime sets the plane alone; the live path follows the plane', () => {
    const mixed = (runtime: 'pod' | 'kubevirt', planeRuntime: 'pod' | 'kubevirt') => {
      const k = { ...kube(runtime), spec: { ...kube(runtime).spec, planeRuntime } } as OberonKube;
      const out = renderKube(k, kubeSettings(k), true);
      const runtimes = out.machines.map(
        (m) => `${m.metadata.name}=${(m.spec as { runtime: string }).runtime}`,
      );
      return { runtimes, live: !!out.liveCommands };
    };
    expect(mixed('pod', 'kubevirt')).toEqual({
      runtimes: ['farm-node-a=pod', 'farm-node-b=pod', 'farm-node-c=pod', 'farm-plane=kubevirt'],
      live: false, // through the VM's console
    });
    expect(mixed('kubevirt', 'pod')).toEqual({
      runtimes: ['farm-node-a=kubevirt', 'farm-node-b=kubevirt', 'farm-node-c=kubevirt', 'farm-plane=pod'],
      live: true, // the ConfigMap the plane pod follows
    });
  });
});
