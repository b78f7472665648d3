// #25: an API server without KubeVirt's VirtualMachine CRD (a cluster with no KubeVirt, or a
// `--kubevirt` operator installed first). One missing CRD must never stall the other controllers:
// the kubevirt machines wait and say so (condition, Event, /readyz names the kind but passes),
// relays and pod machines work, and once the CRD is installed the machine goes on by itself.
// Also: a fill Job whose pod cannot start (the kubelet's ErrImagePull events) is said in status.

import { readFileSync } from 'node:fs';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { createOperatorManager } from '../../operator/src/cli/operator-run.ts';
import { OBERONAIR } from '../../operator/src/controllers/oberonair.ts';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import { CORE_EVENT } from '../../operator/src/controllers/oberonmachine-observe.ts';
import { CORE, KubeClient, type KubeObject } from '../../operator/src/runtime/client.ts';
import { crdFiles, installCrds, startControlPlane } from './control-plane.ts';
import { air, condition, oberonMachine, waitFor } from './operator-harness.ts';
import { publishRelayEndpoint } from './relay-endpoint.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const KUBEVIRT_CRD = /virtualmachines\.kubevirt\.io\.yaml$/;

describe('the VirtualMachine CRD absent', () => {
  it('stalls no controller: relays and pod machines work, kubevirt machines wait and say why, then go on once KubeVirt comes', async () => {
    const plane = await startControlPlane({ bins: inject('envtestBins'), installCrds: false });
    onTestFinished(() => plane.stop());
    const target = {
      server: plane.server,
      token: plane.adminToken,
      ca: readFileSync(`${plane.dir}/certs/apiserver.crt`),
    };
    const files = crdFiles();
    expect(files.some((f) => KUBEVIRT_CRD.test(f))).toBe(true);
    await installCrds(
      target,
      files.filter((f) => !KUBEVIRT_CRD.test(f)),
    );

    const k = KubeClient.fromDefault(plane.kubeconfigPath);
    onTestFinished(() => k.close());
    const ns = 'kv-absent';
    await k.create(CORE.namespace, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const mgr = createOperatorManager({
      client: KubeClient.fromDefault(plane.kubeconfigPath),
      namespace: ns,
      image: 'ghcr.io/retrokube/retrokube:test',
      kubevirt: true,
      resyncMs: 0,
      health: { host: '127.0.0.1', port: 0 },
    });
    onTestFinished(() => mgr.stop());
    await mgr.start();

    // The other kinds work: a relay, and a pod machine on it.
    await k.create(OBERONAIR, air(ns, 'lab'));
    await waitFor('the relay Deployment', () => k.getOrUndefined(CORE.deployment, ns, 'rk-air-lab'), 60_000);
    await publishRelayEndpoint(k, ns, 'lab');
    await k.create(OBERONMACHINE, oberonMachine(ns, 'pm', { air: 'lab', role: 'node', nodeName: 'a' }));
    await waitFor(
      'the pod machine StatefulSet',
      () => k.getOrUndefined(KINDS_OWNED.statefulSet, ns, 'rk-m-pm'),
      60_000,
    );

    // The kubevirt machine waits, says what is missing and how to fix it, and creates nothing.
    await k.create(
      OBERONMACHINE,
      oberonMachine(ns, 'vm', { runtime: 'kubevirt', air: 'lab', role: 'plane' }),
    );
    const waiting: Deep = await waitFor(
      'the kubevirt machine to say KubeVirt is missing',
      async () => {
        const o: Deep = await k.get(OBERONMACHINE, ns, 'vm');
        return condition(o, 'LauncherReady')?.reason === 'KubeVirtMissing' && o;
      },
      60_000,
    );
    expect(waiting.status.phase).toBe('Pending');
    expect(waiting.status.message).toMatch(
      /KubeVirt is not installed.*virtualmachines\.kubevirt\.io.*Install KubeVirt.*or use runtime pod/,
    );
    const warned: Deep = await waitFor('a Warning Event on the machine', async () =>
      ((await k.list(CORE_EVENT, ns)).items as Deep[]).find(
        (e) => e.involvedObject?.name === 'vm' && e.reason === 'KubeVirtMissing' && e.type === 'Warning',
      ),
    );
    expect(warned.message ?? warned.note).toMatch(/Install KubeVirt/);
    expect((await k.list(KINDS_OWNED.job, ns)).items).toEqual([]);

    // /readyz passes (the relays and pod machines are served) and names the kind it waits for.
    const port = (mgr.httpServers[0] as { address(): unknown }).address() as { port: number };
    const ready = await fetch(`http://127.0.0.1:${port.port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toMatch(/virtualmachines\.kubevirt\.io \(not served: CRD not installed\)/);

    // KubeVirt's CRD arrives: the machine goes on by itself (hook ConfigMap, PVC, fill Job, VM).
    await installCrds(
      target,
      files.filter((f) => KUBEVIRT_CRD.test(f)),
    );
    const job: Deep = await waitFor(
      'the fill Job',
      async () => (await k.list(KINDS_OWNED.job, ns)).items[0],
      90_000,
    );
    await waitFor('the VirtualMachine', () => k.getOrUndefined(KINDS_OWNED.vm, ns, 'rk-m-vm'), 60_000);
    expect(await (await fetch(`http://127.0.0.1:${port.port}/readyz`)).text()).toBe('ok\n');

    // The fill Job's pod cannot pull its image: the kubelet says so in Events (the operator reads
    // no Pods); the harness plays the kubelet, as the other envtests do.
    const pod = `${job.metadata.name}-x7k2p`;
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    const kubeletEvent = (reason: string, message: string): KubeObject =>
      ({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { namespace: ns, generateName: `${pod}.` },
        involvedObject: { kind: 'Pod', name: pod, namespace: ns, fieldPath: 'spec.containers{fill}' },
        reason,
        message,
        type: 'Warning',
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: 'kubelet' },
      }) as KubeObject;
    await k.create(CORE_EVENT, kubeletEvent('Failed', 'Error: ErrImagePull'));
    const stuck: Deep = await waitFor(
      'DiskSeeded FillCannotStart',
      async () => {
        const o: Deep = await k.get(OBERONMACHINE, ns, 'vm');
        return condition(o, 'DiskSeeded')?.reason === 'FillCannotStart' && o;
      },
      60_000,
    );
    expect(stuck.status.message).toBe("the fill Job's pod cannot start: Failed: Error: ErrImagePull");
    expect(condition(stuck, 'DiskSeeded')?.message).toMatch(/ErrImagePull/);
    await waitFor('a FillCannotStart Warning Event', async () =>
      ((await k.list(CORE_EVENT, ns)).items as Deep[]).find(
        (e) => e.involvedObject?.name === 'vm' && e.reason === 'FillCannotStart',
      ),
    );
  }, 300_000);
});
