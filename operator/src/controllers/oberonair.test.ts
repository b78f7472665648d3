import { describe, expect, it } from 'vitest';
import { computeStatus, type OberonAir, relayArgs, render, withDefaults } from './oberonair.ts';

const air: OberonAir = {
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonAir',
  metadata: { name: 'lab', namespace: 'class', uid: 'uid-1', generation: 2 },
  spec: { loss: 0.25 },
};

// biome-ignore lint/suspicious/noExplicitAny: tests navigate rendered objects freely
type Deep = Record<string, any>;

describe('OberonAir rendering', () => {
  it('renders a single non-root relay Deployment, replaced not rolled, without a service account token', () => {
    const { deployment } = render(air, withDefaults(air.spec, 'img:1'));
    const d = deployment as Deep;
    expect(d.metadata.name).toBe('rk-air-lab');
    expect(d.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonAir',
        name: 'lab',
        uid: 'uid-1',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(d.metadata.labels['app.kubernetes.io/managed-by']).toBe('retrokube');
    expect(d.spec.replicas).toBe(1);
    expect(d.spec.strategy).toEqual({ type: 'Recreate' });
    const pod = d.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const c = pod.containers[0];
    expect(c.image).toBe('img:1');
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.ports).toEqual([
      { name: 'air', containerPort: 7524, protocol: 'UDP' },
      { name: 'metrics', containerPort: 9524, protocol: 'TCP' },
    ]);
    expect(c.args).toEqual(['air', 'relay', '--port', '7524', '--loss', '0.25', '--metrics-port', '9524']);
    const selector = { 'app.kubernetes.io/name': 'retrokube-air', 'app.kubernetes.io/instance': 'lab' };
    expect(d.spec.selector.matchLabels).toEqual(selector);
    expect(d.spec.template.metadata.labels).toMatchObject(selector);
  });

  it('renders a ClusterIP Service from the UDP port to the container port named air', () => {
    const { service } = render(air, withDefaults({ port: 9000 }, 'img'));
    expect((service as Deep).spec).toEqual({
      type: 'ClusterIP',
      selector: { 'app.kubernetes.io/name': 'retrokube-air', 'app.kubernetes.io/instance': 'lab' },
      ports: [{ name: 'air', port: 9000, targetPort: 'air', protocol: 'UDP' }],
    });
  });

  it('the spec image wins over the operator image; loss and port reach the relay arguments', () => {
    expect(withDefaults({ image: 'mine' }, 'op').image).toBe('mine');
    expect(relayArgs(withDefaults({ loss: 1, port: 1 }, 'op'))).toEqual([
      'air',
      'relay',
      '--port',
      '1',
      '--loss',
      '1',
      '--metrics-port',
      '9524',
    ]);
  });
});

describe('OberonAir status', () => {
  const s = withDefaults(air.spec, 'img');
  const now = new Date('2026-11-29T10:00:00Z');

  it('a fresh relay is progressing, not ready, not degraded, and the status names its generation', () => {
    const st = computeStatus(air, s, { metadata: { name: 'rk-air-lab', generation: 1 } }, [], now);
    expect(st.observedGeneration).toBe(2);
    expect(st.address).toBe('rk-air-lab.class.svc.cluster.local:7524');
    expect(st.readyReplicas).toBe(0);
    const by = Object.fromEntries((st.conditions ?? []).map((c) => [c.type, c]));
    expect(by.Ready.status).toBe('False');
    expect(by.Progressing.status).toBe('True');
    expect(by.Degraded.status).toBe('False');
    expect(st.conditions?.every((c) => c.observedGeneration === 2)).toBe(true);
  });

  it('a rolled-out relay with a ready pod is Ready', () => {
    const dep = {
      metadata: { name: 'rk-air-lab', generation: 3 },
      status: { observedGeneration: 3, updatedReplicas: 1, readyReplicas: 1 },
    };
    const st = computeStatus(air, s, dep, [], now);
    expect(st.readyReplicas).toBe(1);
    expect(st.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(st.conditions?.find((c) => c.type === 'Progressing')?.status).toBe('False');
  });

  it('a relay past its progress deadline is Degraded with the reason the Deployment gives', () => {
    const dep = {
      metadata: { name: 'rk-air-lab', generation: 1 },
      status: {
        observedGeneration: 1,
        conditions: [
          { type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'too slow' },
        ],
      },
    };
    const d = computeStatus(air, s, dep, [], now).conditions?.find((c) => c.type === 'Degraded');
    expect(d?.status).toBe('True');
    expect(d?.message).toContain('ProgressDeadlineExceeded');
  });

  it('a name taken by someone else makes the air Degraded (NameConflict), not a crash', () => {
    const st = computeStatus(air, s, undefined, ['Service rk-air-lab'], now);
    const d = st.conditions?.find((c) => c.type === 'Degraded');
    expect(d?.status).toBe('True');
    expect(d?.reason).toBe('NameConflict');
    expect(d?.message).toContain('Service rk-air-lab');
  });
});
