// OberonAir against a real kube-apiserver: children, ownership, status, validation, idempotence.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import {
  air,
  CORE,
  condition,
  type KubeObject,
  OBERONAIR,
  type OberonAir,
  quiescent,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

describe('OberonAir on a real API server', () => {
  it('creating an OberonAir yields the relay Deployment and Service, owned and applied by retrokube', async () => {
    const ns = await freshNamespace('air-create');
    const k = testClient();
    await startOperator({ namespace: ns });
    const created = await k.create<OberonAir>(OBERONAIR, air(ns, 'lab', { loss: 0.1 }));

    const dep: Deep = await waitFor('the relay Deployment', () =>
      k.getOrUndefined(CORE.deployment, ns, 'rk-air-lab'),
    );
    const svc: Deep = await waitFor('the relay Service', () =>
      k.getOrUndefined(CORE.service, ns, 'rk-air-lab'),
    );

    for (const child of [dep, svc]) {
      expect(child.metadata.ownerReferences).toEqual([
        {
          apiVersion: 'retrokube.io/v1alpha1',
          kind: 'OberonAir',
          name: 'lab',
          uid: created.metadata.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
      const managers = child.metadata.managedFields.map((m: Deep) => `${m.manager}/${m.operation}`);
      expect(managers).toEqual(['retrokube/Apply']);
      expect(child.metadata.labels['app.kubernetes.io/managed-by']).toBe('retrokube');
    }
    expect(dep.spec.replicas).toBe(1);
    expect(dep.spec.strategy.type).toBe('Recreate');
    const pod = dep.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const c = pod.containers[0];
    expect(c.args).toEqual(['air', 'relay', '--port', '7524', '--loss', '0.1', '--metrics-port', '9524']);
    expect(c.ports).toEqual([
      { name: 'air', containerPort: 7524, protocol: 'UDP' },
      { name: 'metrics', containerPort: 9524, protocol: 'TCP' },
    ]);
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(c.resources).toEqual({
      requests: { cpu: '10m', memory: '32Mi' },
      limits: { cpu: '200m', memory: '64Mi' },
    });
    expect(svc.spec.type).toBe('ClusterIP');
    expect(svc.spec.ports).toEqual([{ name: 'air', port: 7524, targetPort: 'air', protocol: 'UDP' }]);

    const withStatus: Deep = await waitFor('a status for generation 1', async () => {
      const a = await k.get<OberonAir>(OBERONAIR, ns, 'lab');
      return a.status?.observedGeneration === a.metadata.generation && a;
    });
    expect(withStatus.status.address).toBe(`rk-air-lab.${ns}.svc.cluster.local:7524`);
    expect(withStatus.status.readyReplicas).toBe(0);
    expect(withStatus.status.conditions.map((x: Deep) => x.type).sort()).toEqual([
      'Degraded',
      'Progressing',
      'Ready',
    ]);
    for (const cond of withStatus.status.conditions) expect(cond.observedGeneration).toBe(1);
    expect(condition(withStatus, 'Ready')?.status).toBe('False');
    expect(condition(withStatus, 'Progressing')?.status).toBe('True');
    const statusManagers = withStatus.metadata.managedFields
      .filter((m: Deep) => m.subresource === 'status')
      .map((m: Deep) => m.manager);
    expect(statusManagers).toEqual(['retrokube']);
  });

  it('editing spec.loss changes the relay arguments and the status follows the new generation', async () => {
    const ns = await freshNamespace('air-edit');
    const k = testClient();
    await startOperator({ namespace: ns });
    await k.create(OBERONAIR, air(ns, 'edit', { loss: 0 }));
    await waitFor('the relay Deployment', () => k.getOrUndefined(CORE.deployment, ns, 'rk-air-edit'));

    await k.mergePatch(OBERONAIR, ns, 'edit', { spec: { loss: 0.5, port: 9000 } });
    const dep: Deep = await waitFor('new relay arguments', async () => {
      const d: Deep = await k.get(CORE.deployment, ns, 'rk-air-edit');
      return d.spec.template.spec.containers[0].args.includes('0.5') && d;
    });
    expect(dep.spec.template.spec.containers[0].args).toEqual([
      'air',
      'relay',
      '--port',
      '9000',
      '--loss',
      '0.5',
      '--metrics-port',
      '9524',
    ]);
    const svc: Deep = await waitFor('the new Service port', async () => {
      const s: Deep = await k.get(CORE.service, ns, 'rk-air-edit');
      return s.spec.ports[0].port === 9000 && s;
    });
    expect(svc.spec.ports).toEqual([{ name: 'air', port: 9000, targetPort: 'air', protocol: 'UDP' }]);
    const a: Deep = await waitFor('status of generation 2', async () => {
      const o = await k.get<OberonAir>(OBERONAIR, ns, 'edit');
      return o.status?.observedGeneration === 2 && o;
    });
    expect(a.status.address).toBe(`rk-air-edit.${ns}.svc.cluster.local:9000`);
    for (const cond of a.status.conditions) expect(cond.observedGeneration).toBe(2);
  });

  it('becomes Ready when the relay pod is ready, and lastTransitionTime moves only on the flip', async () => {
    const ns = await freshNamespace('air-ready');
    const k = testClient();
    await startOperator({ namespace: ns });
    await k.create(OBERONAIR, air(ns, 'up'));
    const dep = await waitFor('the relay Deployment', () =>
      k.getOrUndefined(CORE.deployment, ns, 'rk-air-up'),
    );
    const before: Deep = await waitFor('a first status', async () => {
      const o = await k.get<OberonAir>(OBERONAIR, ns, 'up');
      return o.status?.conditions && o;
    });
    // No controller-manager here: play the Deployment controller and report one ready replica.
    await k.mergePatch(
      CORE.deployment,
      ns,
      'rk-air-up',
      {
        status: {
          observedGeneration: dep.metadata.generation,
          replicas: 1,
          updatedReplicas: 1,
          readyReplicas: 1,
          availableReplicas: 1,
        },
      },
      'status',
    );
    const after: Deep = await waitFor('Ready=True', async () => {
      const o = await k.get<OberonAir>(OBERONAIR, ns, 'up');
      return condition(o, 'Ready')?.status === 'True' && o;
    });
    expect(after.status.readyReplicas).toBe(1);
    expect(condition(after, 'Progressing')?.status).toBe('False');
    const ltt = (o: Deep, t: string) =>
      o.status.conditions.find((c: Deep) => c.type === t).lastTransitionTime;
    expect(ltt(after, 'Degraded')).toBe(ltt(before, 'Degraded')); // unchanged status, unchanged time
  });

  it('refuses invalid specs with a message that names the field', async () => {
    const ns = await freshNamespace('air-invalid');
    const k = testClient();
    const refused = async (obj: OberonAir): Promise<string> => {
      try {
        await k.create(OBERONAIR, obj);
      } catch (err) {
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).status).toBe(422);
        return (err as ApiError).message;
      }
      throw new Error(`the API server accepted ${JSON.stringify(obj.spec)}`);
    };
    expect(await refused(air(ns, 'a', { loss: 1.5 }))).toMatch(
      /spec\.loss: Invalid value: 1\.5: .*less than or equal to 1/,
    );
    expect(await refused(air(ns, 'b', { port: 70000 }))).toMatch(
      /spec\.port: Invalid value: 70000: .*less than or equal to 65535/,
    );
    expect(await refused(air(ns, 'c', { loss: -0.1 }))).toMatch(/spec\.loss/);
    expect(
      await refused(
        air(ns, 'd', { resources: { requests: { memory: '64Mi' }, limits: { memory: '32Mi' } } }),
      ),
    ).toMatch(/spec\.resources\.limits\[memory\]: .*limits\.memory must be at least requests\.memory/);
    expect(await refused(air(ns, 'x'.repeat(57), {}))).toMatch(
      /metadata\.name must be at most 56 characters/,
    );
    expect(await refused(air(ns, 'dotted.name', {}))).toMatch(/metadata\.name may contain only .*no dots/);
  });

  it('a second reconcile of an unchanged object makes zero writes', async () => {
    const ns = await freshNamespace('air-idem');
    const k = testClient();
    const mgr = await startOperator({ namespace: ns });
    await k.create(
      OBERONAIR,
      air(ns, 'calm', { loss: 0.2, resources: { requests: { cpu: '0.01', memory: '32Mi' } } }),
    );
    await waitFor('a status for generation 1', async () => {
      const a = await k.get<OberonAir>(OBERONAIR, ns, 'calm');
      return a.status?.observedGeneration === 1;
    });
    await quiescent(mgr);
    const versions = async () =>
      Promise.all([
        k.get(OBERONAIR, ns, 'calm'),
        k.get(CORE.deployment, ns, 'rk-air-calm'),
        k.get(CORE.service, ns, 'rk-air-calm'),
      ]).then((objs) => objs.map((o: KubeObject) => o.metadata.resourceVersion));
    const rvBefore = await versions();
    const writesBefore = mgr.client.writes;
    const reconciles = async () =>
      (await mgr.metrics.reconcileTotal.get()).values.reduce((n, v) => n + v.value, 0);
    const countBefore = await reconciles();

    const controller = mgr.controllers[0];
    for (let i = 0; i < 3; i++) {
      controller.queue.add(`${ns}/calm`);
      await quiescent(mgr, 100);
    }
    expect(await reconciles()).toBeGreaterThanOrEqual(countBefore + 3); // it did reconcile
    expect(mgr.client.writes).toBe(writesBefore); // ... and wrote nothing
    expect(await versions()).toEqual(rvBefore);
  });

  it('recreates a child someone deleted, and puts back a field someone changed', async () => {
    const ns = await freshNamespace('air-heal');
    const k = testClient();
    await startOperator({ namespace: ns });
    await k.create(OBERONAIR, air(ns, 'heal'));
    const svc = await waitFor('the relay Service', () => k.getOrUndefined(CORE.service, ns, 'rk-air-heal'));
    await k.delete(CORE.service, ns, 'rk-air-heal');
    await waitFor('a new Service', async () => {
      const s = await k.getOrUndefined(CORE.service, ns, 'rk-air-heal');
      return s && s.metadata.uid !== svc.metadata.uid;
    });
    await k.mergePatch(CORE.deployment, ns, 'rk-air-heal', { spec: { replicas: 3 } });
    await waitFor('one replica again', async () => {
      const d: Deep = await k.get(CORE.deployment, ns, 'rk-air-heal');
      return d.spec.replicas === 1;
    });
  });

  it('a name taken by someone else becomes Degraded with a Warning event, and the object is left alone', async () => {
    const ns = await freshNamespace('air-conflict');
    const k = testClient();
    await k.create(CORE.service, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'rk-air-taken', namespace: ns, labels: { team: 'other' } },
      spec: { ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
    });
    await startOperator({ namespace: ns });
    await k.create(OBERONAIR, air(ns, 'taken'));
    const a: Deep = await waitFor('Degraded=True', async () => {
      const o = await k.get<OberonAir>(OBERONAIR, ns, 'taken');
      return condition(o, 'Degraded')?.status === 'True' && o;
    });
    expect(condition(a, 'Degraded')?.reason).toBe('NameConflict');
    expect(condition(a, 'Ready')?.status).toBe('False');
    const events: Deep = await waitFor('a NameConflict event', async () => {
      const list: Deep = await k.list(CORE.event, ns);
      return list.items.some((e: Deep) => e.reason === 'NameConflict') && list;
    });
    const ev = events.items.find((e: Deep) => e.reason === 'NameConflict');
    expect(ev.type).toBe('Warning');
    expect(ev.regarding.name).toBe('taken');
    const foreign: Deep = await k.get(CORE.service, ns, 'rk-air-taken');
    expect(foreign.metadata.ownerReferences).toBeUndefined();
    expect(foreign.spec.ports[0].port).toBe(80);
  });
});
