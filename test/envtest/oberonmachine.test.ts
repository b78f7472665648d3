// OberonMachine against a real kube-apiserver: the object graphs of both runtimes (StatefulSet +
// Service; ConfigMap + PVC + Job + VirtualMachine), ownership, managed fields, the key kept out
// of every child, Halted until the fill Job succeeds, and LauncherReady reported, not patched.
import { describe, expect, it } from 'vitest';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { resourcePath } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import {
  CORE,
  completeJob,
  condition,
  markStatefulSetReady,
  oberonMachine,
  publishRelayEndpoint,
  quiescent,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

function expectOwnedByRetrokube(child: Deep, owner: Deep): void {
  expect(child.metadata.ownerReferences).toEqual([
    {
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonMachine',
      name: owner.metadata.name,
      uid: owner.metadata.uid,
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  expect(child.metadata.managedFields.map((m: Deep) => `${m.manager}/${m.operation}`)).toEqual([
    'retrokube/Apply',
  ]);
  expect(child.metadata.labels['app.kubernetes.io/managed-by']).toBe('retrokube');
}

describe('OberonMachine on a real API server', () => {
  it('runtime pod: a StatefulSet of one running the emulator on its PVC disk, on the air, with a VNC Service; the key only by reference', async () => {
    const ns = await freshNamespace('m-pod');
    const k = testClient();
    const mgr = await startOperator({ namespace: ns });
    await publishRelayEndpoint(k, ns, 'lab'); // machines on an air wait for its relay's endpoint
    const m = await k.create(
      OBERONMACHINE,
      oberonMachine(ns, 'n1', {
        air: 'lab',
        role: 'node',
        nodeName: 'node-a',
        cluster: 'farm',
        keySecretRef: { name: 'farm-key' },
        disk: { storageClass: 'standard' },
      }),
    );
    const sts: Deep = await waitFor('the StatefulSet', () =>
      k.getOrUndefined(KINDS_OWNED.statefulSet, ns, 'rk-m-n1'),
    );
    const svc: Deep = await waitFor('the VNC Service', () => k.getOrUndefined(CORE.service, ns, 'rk-m-n1'));
    expectOwnedByRetrokube(sts, m);
    expectOwnedByRetrokube(svc, m);
    expect(sts.spec.replicas).toBe(1);
    expect(sts.spec.persistentVolumeClaimRetentionPolicy).toEqual({
      whenDeleted: 'Delete',
      whenScaled: 'Retain',
    });
    expect(sts.spec.volumeClaimTemplates[0].spec.storageClassName).toBe('standard');
    const pod = sts.spec.template.spec;
    const c = pod.containers[0];
    expect(c.args).toEqual([
      'machine',
      'run',
      '/disk/oberon.dsk',
      '--in-place',
      '--vnc',
      '5900',
      '--vnc-host',
      '127.0.0.1', // #17.4: loopback unless spec.vnc.expose; reached with kubectl port-forward
      '--status-file',
      '/run/retrokube/status',
      '--vnc-no-password', // #28.2: no password Secret, so the screen stays on the pod's loopback
      '--commands',
      'KubeNet.Join node-a farm $$(RK_KEY)',
      '--air',
      'rk-air-lab:7524',
    ]);
    expect(c.env).toEqual([
      { name: 'RK_KEY', valueFrom: { secretKeyRef: { name: 'farm-key', key: 'key' } } },
    ]);
    expect(pod.initContainers[0].name).toBe('seed');
    // Placement (docs/operator.md): the plane and node machines of one air spread softly over the hosts.
    expect(pod.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: {
          matchLabels: { 'retrokube.io/air': 'lab' },
          matchExpressions: [{ key: 'retrokube.io/role', operator: 'In', values: ['plane', 'node'] }],
        },
      },
    ]);
    expect(sts.spec.template.metadata.labels['retrokube.io/role']).toBe('node');
    expect(svc.spec.ports).toEqual([{ name: 'vnc', port: 5900, targetPort: 'vnc', protocol: 'TCP' }]);
    const st: Deep = await waitFor('status Starting', async () => {
      const o: Deep = await k.get(OBERONMACHINE, ns, 'n1');
      return o.status?.phase === 'Starting' && o;
    });
    expect(condition(st, 'Ready')?.status).toBe('False');

    // The harness plays the StatefulSet controller: one ready replica → Running.
    await markStatefulSetReady(k, ns, 'rk-m-n1', 1);
    await waitFor(
      'status Running',
      async () => ((await k.get(OBERONMACHINE, ns, 'n1')) as Deep).status?.phase === 'Running',
    );

    // A hand edit of a child is put back; an edit of what the operator does not render wakes it
    // and it writes nothing: the caches hold children trimmed of what the API server defaults
    // (cache-trim.ts), never of what the operator renders (a field dropped wrongly is a write per
    // reconcile, which an apply that changes nothing would hide from resourceVersions).
    await k.mergePatch(KINDS_OWNED.statefulSet, ns, 'rk-m-n1', {
      spec: { template: { spec: { terminationGracePeriodSeconds: 30 } } },
    });
    await k.mergePatch(CORE.service, ns, 'rk-m-n1', {
      spec: { ports: [{ name: 'vnc', port: 5900, targetPort: 5999, protocol: 'TCP' }] },
    });
    await waitFor('the grace period put back', async () => {
      const o: Deep = await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-n1');
      return o.spec.template.spec.terminationGracePeriodSeconds === 0;
    });
    await waitFor('the VNC target port put back', async () => {
      const o: Deep = await k.get(CORE.service, ns, 'rk-m-n1');
      return o.spec.ports[0].targetPort === 'vnc';
    });
    await quiescent(mgr, 1_000);
    const writes = async () =>
      (await mgr.metrics.restRequests.get()).values
        .filter((v) => v.labels.method !== 'GET')
        .reduce((n, v) => n + v.value, 0);
    const before = await writes();
    const reconciles = (await mgr.metrics.reconcileTotal.get()).values.reduce((n, v) => n + v.value, 0);
    for (const t of [KINDS_OWNED.statefulSet, CORE.service])
      await k.mergePatch(t, ns, 'rk-m-n1', { metadata: { annotations: { 'example.org/note': 'by hand' } } });
    await waitFor(
      'the edits seen',
      async () =>
        (await mgr.metrics.reconcileTotal.get()).values.reduce((n, v) => n + v.value, 0) > reconciles,
    );
    await quiescent(mgr, 1_000);
    expect(await writes()).toBe(before);

    // running: false halts the machine and keeps its disk.
    await k.request('PATCH', resourcePath(OBERONMACHINE, ns, 'n1'), {
      body: { spec: { running: false } },
      contentType: 'application/merge-patch+json',
    });
    await waitFor(
      'replicas 0',
      async () => ((await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-n1')) as Deep).spec.replicas === 0,
    );
  });

  it('runtime kubevirt: hook ConfigMap, disk PVC, fill Job and a VirtualMachine Halted until the disk is seeded, then Always', async () => {
    const ns = await freshNamespace('m-kv');
    const k = testClient();
    const mgr = await startOperator({ namespace: ns, kubevirt: true });
    await publishRelayEndpoint(k, ns, 'lab'); // machines on an air wait for its relay's endpoint
    const m = await k.create(
      OBERONMACHINE,
      oberonMachine(ns, 'plane', {
        runtime: 'kubevirt',
        air: 'lab',
        role: 'plane',
        keySecretRef: { name: 'lab-key', key: 'hex' },
        commands: 'Kube.Ensure web 4 Ticker',
        memory: '256Mi',
        disk: {
          image:
            'example.org/retrokube@sha256:0000000000000000000000000000000000000000000000000000000000000000',
        },
      }),
    );
    const vm: Deep = await waitFor('the VirtualMachine', () =>
      k.getOrUndefined(KINDS_OWNED.vm, ns, 'rk-m-plane'),
    );
    const cm: Deep = await k.get(CORE.configMap, ns, 'rk-m-plane-hook');
    const pvc: Deep = await k.get(KINDS_OWNED.pvc, ns, 'rk-m-plane-disk');
    const jobs: Deep = await k.list(KINDS_OWNED.job, ns);
    expect(jobs.items).toHaveLength(1);
    const job = jobs.items[0];
    expect(job.metadata.name).toMatch(/^rk-m-plane-fill-[0-9a-f]{8}$/);
    for (const child of [vm, cm, pvc, { ...job, apiVersion: 'batch/v1' }]) expectOwnedByRetrokube(child, m);

    expect(cm.data.onDefineDomain).toMatch(/^#!\/usr\/bin\/env python3/);
    expect(pvc.spec.accessModes).toEqual(['ReadWriteOnce']);
    const jp = job.spec.template.spec;
    expect(jp.securityContext).toMatchObject({ fsGroup: 107, runAsGroup: 107, runAsNonRoot: true });
    expect(jp.containers[0].image).toMatch(/@sha256:/);
    expect(jp.containers[0].args).toEqual(['machine', 'payload', '/payload', '--key-file', '/key/key']);
    expect(jp.volumes[1]).toEqual({
      name: 'key',
      secret: { secretName: 'lab-key', defaultMode: 0o440, items: [{ key: 'hex', path: 'key' }] },
    });

    expect(vm.spec.runStrategy).toBe('Halted');
    const t = vm.spec.template;
    expect(t.spec.evictionStrategy).toBe('None');
    expect(t.spec.terminationGracePeriodSeconds).toBe(0);
    expect(t.spec.domain.resources.requests.memory).toBe('256Mi');
    expect(t.spec.domain.devices.autoattachPodInterface).toBe(false);
    expect(t.spec.domain.machine.type).toBe('oberon'); // scheduled to nodes whose launcher has the RISC5 board
    expect(JSON.parse(t.metadata.annotations['hooks.kubevirt.io/hookSidecars'])).toEqual([
      {
        args: ['--version', 'v1alpha3'],
        configMap: { name: 'rk-m-plane-hook', key: 'onDefineDomain', hookPath: '/usr/bin/onDefineDomain' },
        pvc: { name: 'rk-m-plane-disk', volumePath: '/payload', sharedComputePath: '/payload' },
      },
    ]);
    const desc = JSON.parse(t.metadata.annotations['paleocomputing.io/machine']);
    expect(desc.commands.text).toBe('Kube.Start;KubeNet.Serve kube $(KEY);Kube.Ensure web 4 Ticker');
    expect(desc.air).toEqual({ host: 'rk-air-lab', port: 7524 });
    expect(desc.image).toBeUndefined();

    const st: Deep = await waitFor('LauncherReady reported', async () => {
      const o: Deep = await k.get(OBERONMACHINE, ns, 'plane');
      return condition(o, 'LauncherReady') && o;
    });
    expect(st.status.phase).toBe('Seeding');
    expect(condition(st, 'LauncherReady')).toMatchObject({ status: 'False', reason: 'KubeVirtMissing' });

    // The harness plays the Job controller: the fill succeeded → the VM may run.
    await completeJob(k, ns, job.metadata.name);
    await waitFor(
      'runStrategy Always',
      async () => ((await k.get(KINDS_OWNED.vm, ns, 'rk-m-plane')) as Deep).spec.runStrategy === 'Always',
    );
    const seeded: Deep = await waitFor('DiskSeeded', async () => {
      const o: Deep = await k.get(OBERONMACHINE, ns, 'plane');
      return condition(o, 'DiskSeeded')?.status === 'True' && o;
    });
    expect(seeded.status.phase).toBe('Starting');
    await quiescent(mgr);

    // New boot commands for a running VM: the descriptor changes and a restart is asked of KubeVirt
    // (this API server serves no subresources.kubevirt.io, so the attempt is reported as failed).
    await k.request('PATCH', resourcePath(OBERONMACHINE, ns, 'plane'), {
      body: { spec: { commands: 'Kube.Ensure web 5 Ticker' } },
      contentType: 'application/merge-patch+json',
    });
    await waitFor('the new descriptor', async () => {
      const v: Deep = await k.get(KINDS_OWNED.vm, ns, 'rk-m-plane');
      return JSON.parse(
        v.spec.template.metadata.annotations['paleocomputing.io/machine'],
      ).commands.text.endsWith('web 5 Ticker');
    });
    const ev: Deep = await waitFor('a restart attempt', async () =>
      ((await k.list(CORE.event, ns)).items as Deep[]).find(
        (e) => e.reason === 'RestartFailed' || e.reason === 'Restarting',
      ),
    );
    expect(ev.note ?? ev.message).toMatch(/rk-m-plane/);
  });
});
