// computeMachineStatus for runtime kubevirt where the cluster cannot run the machine yet (#25):
// every case says what is missing and how to fix it, never a silent Pending.
import { describe, expect, it } from 'vitest';
import type { StatusEvent } from './oberonmachine-observe.ts';
import { machineSettings, type OberonMachine } from './oberonmachine-render.ts';
import { computeMachineStatus, type Observed } from './oberonmachine-status.ts';

const m: OberonMachine = {
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonMachine',
  metadata: { name: 'vm', namespace: 'lab', uid: 'u1', generation: 2 },
  spec: { runtime: 'kubevirt', role: 'plane' },
};
const s = machineSettings(m);
const noLauncher = { ready: false, reason: 'SidecarGateMissing', message: 'add "Sidecar" to the gates' };
const cond = (st: Record<string, unknown>, type: string) =>
  (st.conditions as Array<{ type: string; status: string; reason: string; message: string }>).find(
    (c) => c.type === type,
  );
const kv = (o: Partial<Extract<Observed, { kind: 'kubevirt' }>>): Observed => ({
  kind: 'kubevirt',
  vm: undefined,
  seeded: false,
  conflicts: [],
  launcher: { ready: true, reason: 'LauncherReady', message: 'ok' },
  ...o,
});
const event = (object: string, type: string, reason: string, message: string): StatusEvent => ({
  object,
  type,
  reason,
  message,
  count: 1,
  lastTimestamp: '2026-01-01T00:00:00Z',
});

describe('OberonMachine status on runtime kubevirt', () => {
  it('KubeVirt not served: Pending, LauncherReady KubeVirtMissing, how to fix it', () => {
    const st = computeMachineStatus(m, s, { kind: 'kubevirt-absent', served: false });
    expect(st.phase).toBe('Pending');
    expect(st.message).toMatch(/KubeVirt is not installed.*Install KubeVirt.*or use runtime pod/);
    expect(cond(st, 'LauncherReady')).toMatchObject({ status: 'False', reason: 'KubeVirtMissing' });
    expect(cond(st, 'Ready')?.status).toBe('False');
  });

  it('KubeVirt served but not cached yet: Pending, and no LauncherReady claim either way', () => {
    const st = computeMachineStatus(m, s, { kind: 'kubevirt-absent', served: true });
    expect(st.phase).toBe('Pending');
    expect(st.message).toMatch(/waiting for the operator to cache VirtualMachines/);
    expect(cond(st, 'LauncherReady')).toBeUndefined();
  });

  it('operator without --kubevirt: Failed, naming the chart value', () => {
    const st = computeMachineStatus(m, s, { kind: 'no-kubevirt' });
    expect(st.phase).toBe('Failed');
    expect(st.message).toMatch(/kubevirt\.enabled=true/);
  });

  it("a fill pod that cannot start: DiskSeeded FillCannotStart with the kubelet's words", () => {
    const events = [event('Pod/rk-m-vm-fill-0a1b2c3d-x7k2p', 'Warning', 'Failed', 'Error: ErrImagePull')];
    const st = computeMachineStatus(m, s, kv({}), { events });
    expect(st.phase).toBe('Seeding');
    expect(st.message).toBe("the fill Job's pod cannot start: Failed: Error: ErrImagePull");
    expect(cond(st, 'DiskSeeded')).toMatchObject({ status: 'False', reason: 'FillCannotStart' });
    // Without such an event it is simply filling.
    const filling = computeMachineStatus(m, s, kv({}), { events: [] });
    expect(cond(filling, 'DiskSeeded')).toMatchObject({
      reason: 'Filling',
      message: 'the fill Job is running',
    });
  });

  it('seeded but the launcher cannot run it: the message says what KubeVirt lacks', () => {
    const st = computeMachineStatus(m, s, kv({ seeded: true, launcher: noLauncher }), { events: [] });
    expect(st.phase).toBe('Starting');
    expect(st.message).toBe('KubeVirt cannot run this machine: add "Sidecar" to the gates');
    expect(cond(st, 'LauncherReady')).toMatchObject({ status: 'False', reason: 'SidecarGateMissing' });
  });
});
