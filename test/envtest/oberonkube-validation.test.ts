// OberonMachine and OberonKube admission on a real kube-apiserver: the CRDs' CEL rules and
// patterns refuse bad names, keys, commands and deployment lists with messages naming the field.
import { describe, expect, it } from 'vitest';
import { ApiError, type KubeObject, type ResourceType } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import { testClient } from './operator-harness.ts';

const T = (kind: string, plural: string): ResourceType => ({
  group: 'retrokube.io',
  version: 'v1alpha1',
  plural,
  kind,
  namespaced: true,
});
const MACHINE = T('OberonMachine', 'oberonmachines');
const KUBE = T('OberonKube', 'oberonkubes');
const obj = (kind: string, ns: string, name: string, spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind,
  metadata: { name, namespace: ns },
  spec,
});

describe('OberonMachine and OberonKube validation on a real API server', () => {
  it('refuses bad node names, clusters, keys, commands and deployment lists, naming the field', async () => {
    const ns = await freshNamespace('kube-valid');
    const k = testClient();
    let n = 0;
    const refused = async (
      t: ResourceType,
      kind: string,
      spec: Record<string, unknown>,
      name = `x${n++}`,
    ) => {
      try {
        await k.create(t, obj(kind, ns, name, spec));
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).status).toBe(422);
        return (err as ApiError).message;
      }
      throw new Error(`the API server accepted ${kind} ${JSON.stringify(spec)}`);
    };
    const m = (spec: Record<string, unknown>, name?: string) => refused(MACHINE, 'OberonMachine', spec, name);
    const kb = (spec: Record<string, unknown>, name?: string) => refused(KUBE, 'OberonKube', spec, name);

    expect(await m({ air: 'a', role: 'node', nodeName: 'toolong' })).toMatch(/spec\.nodeName/);
    expect(await m({ air: 'a', role: 'node' })).toMatch(/role node needs nodeName/);
    expect(await m({ role: 'plane' })).toMatch(/role plane or node needs air/);
    expect(await m({ air: 'a', role: 'plane', cluster: 'ninechars' })).toMatch(/spec\.cluster/);
    expect(await m({ keySecretRef: { name: 'Bad_Name' } })).toMatch(/spec\.keySecretRef\.name/);
    expect(await m({ commands: 'System.Directory\u0007' })).toMatch(/spec\.commands/);
    expect(await m({ commands: 'x'.repeat(241) })).toMatch(/spec\.commands/);
    expect(await m({ air: 'a', role: 'plane', commands: `Kube.Ensure ${'w'.repeat(190)} 1 Ticker` })).toMatch(
      /exceed 240 characters/,
    );
    expect(await m({ memory: '64Mi' })).toMatch(/memory must be 128Mi to 1Gi/);
    expect(await m({ runtime: 'docker' })).toMatch(/spec\.runtime/);
    expect(await m({}, 'Upper')).toMatch(/metadata\.name/);
    // #28.11: a screen that takes input is not served beyond the pod without a password.
    expect(await m({ vnc: { expose: true } })).toMatch(
      /vnc\.expose needs vnc\.passwordSecretRef: anyone who reaches the pod address could type into the machine/,
    );
    await k.create(
      MACHINE,
      obj('OberonMachine', ns, 'exposed', { vnc: { expose: true, passwordSecretRef: { name: 'vnc' } } }),
    );
    await k.create(MACHINE, obj('OberonMachine', ns, 'private', { vnc: { expose: false } }));

    expect(await kb({ nodes: 0 })).toMatch(/spec\.nodes/);
    expect(await kb({ nodes: 21 })).toMatch(/spec\.nodes/);
    expect(await kb({ cluster: 'ninechars' })).toMatch(/spec\.cluster/);
    expect(await kb({ deployments: 'web four Ticker' })).toMatch(/spec\.deployments/);
    expect(await kb({ deployments: 'web 4' })).toMatch(/spec\.deployments/);
    expect(await kb({ deployments: 'Web 4 Ticker' })).toMatch(/spec\.deployments/);
    expect(await kb({ deployments: 'web 4 Tick-er' })).toMatch(/spec\.deployments/);
    // The refusal says what a line must look like, with an example — not the regular expression.
    const words = await kb({ deployments: 'web four Ticker' });
    expect(words).toMatch(
      /each deployment is "name replicas Module".*replicas: 0 to 250.*Example: "web 4 Ticker; api 2 Ticker2"/,
    );
    expect(words).not.toContain('[a-z]');
    // Replicas and names bounded to what the plane accepts (it refuses more on its screen only).
    expect(await kb({ deployments: 'web 999 Ticker' })).toMatch(/spec\.deployments: .*replicas: 0 to 250/);
    expect(await kb({ deployments: 'web 251 Ticker' })).toMatch(/spec\.deployments/);
    expect(await kb({ deployments: `${'w'.repeat(16)} 1 Ticker` })).toMatch(/spec\.deployments/);
    const many = Array.from({ length: 9 }, (_, i) => `dep${i} 1 Ticker2`).join('; ');
    expect(await kb({ deployments: many })).toMatch(/exceed 240 characters/);
    expect(await kb({}, 'a'.repeat(31))).toMatch(/metadata\.name must be at most 30/);

    // Good ones pass, with the defaults filled in.
    const good = await k.create(
      KUBE,
      obj('OberonKube', ns, 'farm', { nodes: 3, deployments: 'web 4 Ticker; api 2 Ticker2' }),
    );
    await k.create(KUBE, obj('OberonKube', ns, 'edge', { deployments: `${'w'.repeat(15)} 250 Ticker` }));
    expect(good.spec).toMatchObject({ nodes: 3, cluster: 'kube', runtime: 'pod', loss: 0 });
    const gm = await k.create(
      MACHINE,
      obj('OberonMachine', ns, 'n1', {
        air: 'a',
        role: 'node',
        nodeName: 'node-a',
        keySecretRef: { name: 'k' },
      }),
    );
    expect(gm.spec).toMatchObject({
      cluster: 'kube',
      runtime: 'pod',
      memory: '128Mi',
      running: true,
      keySecretRef: { key: 'key' },
    });
  });
});
