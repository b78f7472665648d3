import { describe, expect, it } from 'vitest';
import { kubeBootCommands, parseDeploymentList } from './oberonkube.ts';

describe('OberonKube boot commands', () => {
  it('the plane starts, serves and ensures each deployment; nodes join by name', () => {
    const c = kubeBootCommands({
      cluster: 'kube',
      key: '00c0ffee00c0ffee',
      nodes: 2,
      deployments: parseDeploymentList(' web 4 Ticker ;api  2 Ticker2; '),
    });
    expect(c.plane).toBe(
      'Kube.Start;KubeNet.Serve kube 00c0ffee00c0ffee;Kube.Ensure web 4 Ticker;Kube.Ensure api 2 Ticker2',
    );
    expect(c.nodes).toEqual([
      { name: 'node-a', commands: 'KubeNet.Join node-a kube 00c0ffee00c0ffee' },
      { name: 'node-b', commands: 'KubeNet.Join node-b kube 00c0ffee00c0ffee' },
    ]);
    expect(c.plane).not.toMatch(/Kube\.Apply/);
  });

  it('drops the trailing space when there is no key, and refuses more than 240 characters', () => {
    const c = kubeBootCommands({ cluster: 'k', key: '', nodes: 1, deployments: [] });
    expect(c.plane).toBe('Kube.Start;KubeNet.Serve k');
    expect(c.nodes[0].commands).toBe('KubeNet.Join node-a k');
    const many = parseDeploymentList(Array.from({ length: 12 }, (_, i) => `deploy${i} 10 Ticker2`).join(';'));
    expect(() => kubeBootCommands({ cluster: 'kube', key: '', nodes: 1, deployments: many })).toThrow(
      /at most 240/,
    );
    expect(() => parseDeploymentList('web four Ticker')).toThrow(/name replicas Module/);
  });
});

describe('OberonKube keySecretRef words match the behaviour (#31 item 8)', () => {
  it('the CRD and the catalog form say a missing keySecretRef generates a random key, never "the all-zero key"', async () => {
    const { readFileSync } = await import('node:fs');
    const root = new URL('../../../', import.meta.url);
    const crd = readFileSync(new URL('crds/oberonkubes.retrokube.io.yaml', root), 'utf8');
    const form = readFileSync(new URL('marketplace/forms/oberon-kube.txt', root), 'utf8');
    const { OberonKubeSpec } = await import('./oberonkube.ts');
    const words = (OberonKubeSpec.properties.keySecretRef as { description?: string }).description ?? '';
    for (const text of [words, crd, form]) {
      expect(text).not.toMatch(/all-zero key/);
      expect(text).toMatch(
        /generates a random key and keeps it in Secret rk-kube-<name>-key \(Event KeyGenerated\)/,
      );
    }
  });
});
