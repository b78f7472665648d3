// OberonMachine status from the world around its children, on a real kube-apiserver: Events the
// kubelet or KubeVirt (and our hook, through the VMI) write become status.events and lastBoot;
// a machine on an air is held until its relay Service has a ready endpoint. The harness writes
// those Events and EndpointSlices as the kubelet, virt-handler and endpointslice controller would.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KINDS_OWNED, OBERONMACHINE } from '../../operator/src/controllers/oberonmachine.ts';
import {
  CORE_EVENT,
  ENDPOINT_SLICE,
  OBSERVE_LIMITS,
} from '../../operator/src/controllers/oberonmachine-observe.ts';
import type { KubeClient } from '../../operator/src/runtime/client.ts';
import { freshNamespace } from './harness.ts';
import {
  completeJob,
  condition,
  type KubeObject,
  oberonMachine,
  publishRelayEndpoint,
  quiescent,
  startOperator,
  testClient,
  waitFor,
} from './operator-harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: tests navigate API objects freely
type Deep = any;

const seconds = (d = new Date()) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A core/v1 Event as the kubelet (source kubelet) or virt-handler writes it. */
async function emit(
  k: KubeClient,
  ns: string,
  about: { kind: string; name: string; fieldPath?: string },
  e: { reason: string; message: string; type?: string; count?: number; at?: Date; component?: string },
): Promise<KubeObject> {
  const at = seconds(e.at);
  return k.create<KubeObject>(CORE_EVENT, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${about.name}.${randomBytes(8).toString('hex')}`, namespace: ns },
    involvedObject: {
      apiVersion: about.kind.startsWith('Virtual') ? 'kubevirt.io/v1' : 'v1',
      kind: about.kind,
      name: about.name,
      namespace: ns,
      ...(about.fieldPath ? { fieldPath: about.fieldPath } : {}),
    },
    reason: e.reason,
    message: e.message,
    type: e.type ?? 'Normal',
    count: e.count ?? 1,
    firstTimestamp: at,
    lastTimestamp: at,
    source: { component: e.component ?? 'kubelet', host: 'node-1' },
    reportingComponent: e.component ?? 'kubelet',
    reportingInstance: 'node-1',
  });
}

const statusOf = async (k: KubeClient, ns: string, name: string): Promise<Deep> =>
  ((await k.get(OBERONMACHINE, ns, name)) as Deep).status ?? {};

describe('OberonMachine status from events (real API server)', () => {
  it('runtime pod: kubelet events of the machine pod become status.events (newest first, bounded), lastBoot is the machine container Started; a BackOff storm is written at most once per interval; steady state writes nothing', async () => {
    const ns = await freshNamespace('m-events');
    const k = testClient();
    const mgr = await startOperator({ namespace: ns });
    await k.create(OBERONMACHINE, oberonMachine(ns, 'm1', { role: 'standalone' }));
    await waitFor('the StatefulSet', () => k.getOrUndefined(KINDS_OWNED.statefulSet, ns, 'rk-m-m1'));
    const first = await waitFor('a status', async () => (await statusOf(k, ns, 'm1')).phase && true);
    expect(first).toBe(true);
    expect((await statusOf(k, ns, 'm1')).events).toEqual([]);
    expect((await statusOf(k, ns, 'm1')).lastBoot).toBeUndefined();

    // The kubelet starts the pod: scheduled, the seed init container, then the machine container.
    const pod = { kind: 'Pod', name: 'rk-m-m1-0' };
    const t0 = Date.now();
    await emit(k, ns, pod, { reason: 'Scheduled', message: 'assigned to node-1', at: new Date(t0) });
    await emit(
      k,
      ns,
      { ...pod, fieldPath: 'spec.initContainers{seed}' },
      { reason: 'Started', message: 'Started container seed', at: new Date(t0 + 1000) },
    );
    await emit(
      k,
      ns,
      { ...pod, fieldPath: 'spec.containers{machine}' },
      { reason: 'Pulled', message: 'Container image already present', at: new Date(t0 + 2000) },
    );
    const started = await emit(
      k,
      ns,
      { ...pod, fieldPath: 'spec.containers{machine}' },
      { reason: 'Started', message: 'Started container machine', at: new Date(t0 + 3000) },
    );
    // Someone else's pod and an event of another machine are not this machine's.
    await emit(k, ns, { kind: 'Pod', name: 'web-0' }, { reason: 'Started', message: 'not ours' });
    await emit(k, ns, { kind: 'Pod', name: 'rk-m-other-0' }, { reason: 'Killing', message: 'not m1' });

    const st: Deep = await waitFor('events and lastBoot in status', async () => {
      const s = await statusOf(k, ns, 'm1');
      return s.events?.length === 4 && s.lastBoot && s;
    });
    expect(st.lastBoot).toBe(started.lastTimestamp);
    expect(st.events.map((e: Deep) => `${e.object} ${e.reason}`)).toEqual([
      'Pod/rk-m-m1-0 Started',
      'Pod/rk-m-m1-0 Pulled',
      'Pod/rk-m-m1-0 Started',
      'Pod/rk-m-m1-0 Scheduled',
    ]);
    expect(st.events[0]).toEqual({
      object: 'Pod/rk-m-m1-0',
      type: 'Normal',
      reason: 'Started',
      message: 'Started container machine',
      count: 1,
      lastTimestamp: started.lastTimestamp,
    });

    // A crash loop: the kubelet bumps one BackOff event's count again and again.
    await new Promise((r) => setTimeout(r, 1000));
    const backoff = await emit(
      k,
      ns,
      { ...pod, fieldPath: 'spec.containers{machine}' },
      { reason: 'BackOff', message: 'Back-off restarting failed container machine', type: 'Warning' },
    );
    const shown: Deep = await waitFor('the BackOff in status', async () => {
      const s = await statusOf(k, ns, 'm1');
      return s.events?.[0]?.reason === 'BackOff' && s;
    });
    expect(shown.events).toHaveLength(OBSERVE_LIMITS.statusEvents); // bounded: the oldest fell off
    expect(shown.message).toBe(
      'Pod/rk-m-m1-0 BackOff: Back-off restarting failed container machine', // the latest word, not ready
    );
    const writesBefore = mgr.client.writes;
    const stormStart = Date.now();
    for (let i = 2; i <= 21; i++) {
      await k.mergePatch(CORE_EVENT, ns, backoff.metadata.name as string, {
        count: i,
        lastTimestamp: seconds(new Date(Date.now())),
      });
      await new Promise((r) => setTimeout(r, 100));
    }
    const stormMs = Date.now() - stormStart;
    await quiescent(mgr, 200);
    const stormWrites = mgr.client.writes - writesBefore;
    // 20 updates in ~2-3 s: at most one write per interval (plus the first) — not one per update.
    expect(stormWrites).toBeLessThanOrEqual(Math.ceil(stormMs / OBSERVE_LIMITS.eventWriteIntervalMs) + 1);
    // ... and the held-back count is written once the interval has passed (level-triggered).
    await waitFor(
      'the final count',
      async () => (await statusOf(k, ns, 'm1')).events?.[0]?.count === 21,
      OBSERVE_LIMITS.eventWriteIntervalMs + 10_000,
    );

    // Steady state: reconciling again and again writes nothing.
    await quiescent(mgr);
    const rv = ((await k.get(OBERONMACHINE, ns, 'm1')) as Deep).metadata.resourceVersion;
    const steady = mgr.client.writes;
    const controller = mgr.controllers.find((c) => c.def.name === 'oberonmachine');
    for (let i = 0; i < 3; i++) {
      controller?.queue.add(`${ns}/m1`);
      await quiescent(mgr, 100);
    }
    expect(mgr.client.writes).toBe(steady);
    expect(((await k.get(OBERONMACHINE, ns, 'm1')) as Deep).metadata.resourceVersion).toBe(rv);

    // lastBoot follows a restart (a newer Started of the machine container) and never goes back.
    const restarted = await emit(
      k,
      ns,
      { ...pod, fieldPath: 'spec.containers{machine}' },
      { reason: 'Started', message: 'Started container machine', at: new Date(Date.now() + 2000) },
    );
    await waitFor(
      'the newer lastBoot',
      async () => (await statusOf(k, ns, 'm1')).lastBoot === restarted.lastTimestamp,
    );
    await k.delete(CORE_EVENT, ns, restarted.metadata.name as string); // the API server's TTL ran out
    await waitFor(
      'the Started event gone from status.events',
      async () =>
        !(await statusOf(k, ns, 'm1')).events.some((e: Deep) => e.lastTimestamp === restarted.lastTimestamp),
      OBSERVE_LIMITS.eventWriteIntervalMs + 10_000,
    );
    expect((await statusOf(k, ns, 'm1')).lastBoot).toBe(restarted.lastTimestamp);
  }, 90_000);

  it("runtime kubevirt: the hook's refusal reaches status through the VMI's events; lastBoot from the VMI's Started", async () => {
    const ns = await freshNamespace('m-kv-events');
    const k = testClient();
    await startOperator({ namespace: ns, kubevirt: true });
    await k.create(OBERONMACHINE, oberonMachine(ns, 'v1', { runtime: 'kubevirt', role: 'standalone' }));
    const job: Deep = await waitFor('the fill Job', async () => (await k.list(KINDS_OWNED.job, ns)).items[0]);
    await completeJob(k, ns, job.metadata.name);
    await waitFor(
      'runStrategy Always',
      async () => ((await k.get(KINDS_OWNED.vm, ns, 'rk-m-v1')) as Deep).spec.runStrategy === 'Always',
    );
    const vmi = { kind: 'VirtualMachineInstance', name: 'rk-m-v1' };
    await emit(k, ns, vmi, {
      reason: 'SyncFailed',
      type: 'Warning',
      component: 'virt-handler',
      message:
        'server error. command SyncVMI failed: "LibvirtError: hook onDefineDomain: machine files are not on the volume yet"',
    });
    const refused: Deep = await waitFor('the refusal in status', async () => {
      const s = await statusOf(k, ns, 'v1');
      return s.events?.[0]?.reason === 'SyncFailed' && s;
    });
    expect(refused.events[0].object).toBe('VirtualMachineInstance/rk-m-v1');
    expect(refused.message).toMatch(/machine files are not on the volume yet/);
    expect(refused.phase).toBe('Starting');
    expect(refused.lastBoot).toBeUndefined();

    await new Promise((r) => setTimeout(r, 1100));
    const started = await emit(k, ns, vmi, {
      reason: 'Started',
      message: 'VirtualMachineInstance started.',
      component: 'virt-handler',
    });
    await waitFor(
      'lastBoot from the VMI',
      async () => (await statusOf(k, ns, 'v1')).lastBoot === started.lastTimestamp,
      OBSERVE_LIMITS.eventWriteIntervalMs + 10_000,
    );
  }, 60_000);
});

describe('OberonMachine waits for its relay (real API server)', () => {
  it('runtime pod: held at replicas 0 with AirReachable=False until the relay Service has a ready endpoint; then started, and kept running when the endpoint goes', async () => {
    const ns = await freshNamespace('m-relay');
    const k = testClient();
    await startOperator({ namespace: ns });
    await k.create(OBERONMACHINE, oberonMachine(ns, 'n1', { air: 'lab', role: 'node', nodeName: 'node-a' }));
    const held: Deep = await waitFor('held', async () => {
      const o = await k.get(OBERONMACHINE, ns, 'n1');
      return condition(o, 'AirReachable')?.reason === 'WaitingForRelayEndpoint' && o;
    });
    expect(held.status.phase).toBe('Pending');
    expect(condition(held, 'AirReachable')?.status).toBe('False');
    expect(condition(held, 'Ready')).toMatchObject({ status: 'False', reason: 'WaitingForRelayEndpoint' });
    expect(held.status.message).toMatch(/relay Service rk-air-lab/);
    const sts: Deep = await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-n1');
    expect(sts.spec.replicas).toBe(0);

    // An endpoint that is not ready does not count.
    const notReady = await publishRelayEndpoint(k, ns, 'lab', { ready: false });
    await new Promise((r) => setTimeout(r, 1000));
    expect(((await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-n1')) as Deep).spec.replicas).toBe(0);

    // The relay pod becomes ready (the endpointslice controller flips the condition).
    await k.mergePatch(ENDPOINT_SLICE, ns, notReady, {
      endpoints: [
        { addresses: ['10.244.0.7'], conditions: { ready: true, serving: true, terminating: false } },
      ],
    });
    await waitFor(
      'replicas 1',
      async () => ((await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-n1')) as Deep).spec.replicas === 1,
    );
    const reachable: Deep = await waitFor('AirReachable True', async () => {
      const o = await k.get(OBERONMACHINE, ns, 'n1');
      return condition(o, 'AirReachable')?.status === 'True' && o;
    });
    expect(reachable.status.phase).toBe('Starting');

    // The relay restarts (Recreate): no endpoint for a while. The machine keeps running.
    await k.delete(ENDPOINT_SLICE, ns, notReady);
    await waitFor(
      'AirReachable False, not held',
      async () =>
        condition(await k.get(OBERONMACHINE, ns, 'n1'), 'AirReachable')?.reason === 'RelayEndpointNotReady',
    );
    expect(((await k.get(KINDS_OWNED.statefulSet, ns, 'rk-m-n1')) as Deep).spec.replicas).toBe(1);
  });

  it('runtime kubevirt: a seeded VM stays Halted until the relay has a ready endpoint, then Always', async () => {
    const ns = await freshNamespace('m-relay-kv');
    const k = testClient();
    await startOperator({ namespace: ns, kubevirt: true });
    await k.create(OBERONMACHINE, oberonMachine(ns, 'p', { runtime: 'kubevirt', air: 'lab', role: 'plane' }));
    const job: Deep = await waitFor('the fill Job', async () => (await k.list(KINDS_OWNED.job, ns)).items[0]);
    await completeJob(k, ns, job.metadata.name);
    const held: Deep = await waitFor('seeded and held', async () => {
      const o = await k.get(OBERONMACHINE, ns, 'p');
      return condition(o, 'AirReachable')?.reason === 'WaitingForRelayEndpoint' && o;
    });
    expect(condition(held, 'DiskSeeded')?.status).toBe('True');
    expect(held.status.phase).toBe('Pending');
    expect(condition(held, 'AirReachable')?.message).toMatch(/runStrategy Halted/);
    expect(((await k.get(KINDS_OWNED.vm, ns, 'rk-m-p')) as Deep).spec.runStrategy).toBe('Halted');
    await publishRelayEndpoint(k, ns, 'lab');
    await waitFor(
      'runStrategy Always',
      async () => ((await k.get(KINDS_OWNED.vm, ns, 'rk-m-p')) as Deep).spec.runStrategy === 'Always',
    );
  });
});
