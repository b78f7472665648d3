import { describe, expect, it } from 'vitest';
import { ApiError, type KubeObject } from '../runtime/client.ts';
import { forbiddenUser, keyReadProblem } from './key-access.ts';
import {
  bootFromEvents,
  EVENT_FILTER,
  eventMachine,
  fillPodTrouble,
  machineEvents,
  OBSERVE_LIMITS,
  relayEndpointReady,
  SLICE_FILTER,
  sliceAir,
} from './oberonmachine-observe.ts';

const ev = (
  kind: string,
  name: string,
  reason: string,
  at: string,
  extra: Record<string, unknown> = {},
): KubeObject => ({
  metadata: { name: `${name}.${reason}.${at}`, namespace: 'ns' },
  involvedObject: { kind, name, namespace: 'ns', ...((extra.involved as object) ?? {}) },
  reason,
  message: (extra.message as string) ?? reason,
  type: (extra.type as string) ?? 'Normal',
  count: extra.count,
  lastTimestamp: at,
});
const m1 = { namespace: 'ns', name: 'm1', createdAt: '2026-01-01T00:00:00Z' };

describe('which machine an event is about', () => {
  it("maps the machine's pod, StatefulSet, VM and VMI; nothing else", () => {
    expect(eventMachine(ev('Pod', 'rk-m-m1-0', 'Started', 'x'))).toEqual({ namespace: 'ns', name: 'm1' });
    expect(eventMachine(ev('Pod', 'rk-m-web-0-0', 'Started', 'x'))?.name).toBe('web-0');
    for (const kind of ['StatefulSet', 'VirtualMachine', 'VirtualMachineInstance'])
      expect(eventMachine(ev(kind, 'rk-m-m1', 'X', 'x'))?.name).toBe('m1');
    expect(eventMachine(ev('Pod', 'rk-m-m1', 'Started', 'x'))).toBeUndefined(); // not <sts>-0
    expect(eventMachine(ev('Pod', 'web-0', 'Started', 'x'))).toBeUndefined();
    expect(eventMachine(ev('OberonMachine', 'rk-m-m1', 'X', 'x'))).toBeUndefined();
    expect(EVENT_FILTER.keep(ev('Deployment', 'rk-m-m1', 'X', 'x'))).toBe(false);
  });

  it('maps the fill Job and its pod, and the virt-launcher pod of the VMI (their kubelet events say why they cannot start)', () => {
    expect(eventMachine(ev('Job', 'rk-m-m1-fill-0a1b2c3d', 'BackoffLimitExceeded', 'x'))?.name).toBe('m1');
    expect(eventMachine(ev('Pod', 'rk-m-m1-fill-0a1b2c3d-x7k2p', 'Failed', 'x'))?.name).toBe('m1');
    expect(eventMachine(ev('Pod', 'rk-m-a-fill-b-fill-0a1b2c3d-x7k2p', 'Failed', 'x'))?.name).toBe(
      'a-fill-b',
    );
    expect(eventMachine(ev('Pod', 'virt-launcher-rk-m-m1-x7k2p', 'Failed', 'x'))?.name).toBe('m1');
    expect(eventMachine(ev('Job', 'rk-m-m1', 'X', 'x'))).toBeUndefined(); // not a fill Job
    expect(eventMachine(ev('Pod', 'rk-m-m1-fill-nothex!-x7k2p', 'Failed', 'x'))).toBeUndefined();
    expect(eventMachine(ev('Pod', 'virt-launcher-other-x7k2p', 'Failed', 'x'))).toBeUndefined();
  });

  it("fillPodTrouble: the fill pod's newest event, only when it is a Warning", () => {
    const at = (t: string) => `2026-01-01T00:0${t}:00Z`;
    const pull = ev('Pod', 'rk-m-m1-fill-0a1b2c3d-x7k2p', 'Failed', at('1'), {
      type: 'Warning',
      message: 'Error: ErrImagePull',
    });
    const started = ev('Pod', 'rk-m-m1-fill-0a1b2c3d-x7k2p', 'Started', at('2'));
    expect(fillPodTrouble(machineEvents([pull], m1), 'm1')).toMatchObject({
      reason: 'Failed',
      message: 'Error: ErrImagePull',
    });
    expect(fillPodTrouble(machineEvents([pull, started], m1), 'm1')).toBeUndefined();
    expect(fillPodTrouble(machineEvents([pull], m1), 'm2')).toBeUndefined();
  });
});

describe('status.events', () => {
  it("a failed exec probe's output is shown without the kubelet's trailing newline", () => {
    const words = 'Readiness probe failed: trouble: the disk has no Boot.rsc, KubeNet.rsc';
    const out = machineEvents(
      [
        ev('Pod', 'rk-m-m1-0', 'Unhealthy', '2026-01-01T00:00:05Z', {
          type: 'Warning',
          message: `${words}\n`,
          involved: { fieldPath: 'spec.containers{machine}' },
        }),
      ],
      m1,
    );
    expect(out.map((e) => [e.reason, e.type, e.message])).toEqual([['Unhealthy', 'Warning', words]]);
  });

  it('newest first, bounded, merged duplicates, none from before the machine, messages cut', () => {
    const events = [
      ev('Pod', 'rk-m-m1-0', 'Old', '2025-12-31T23:59:59Z'), // a previous machine of that name
      ...Array.from({ length: 7 }, (_, i) => ev('Pod', 'rk-m-m1-0', `R${i}`, `2026-01-01T00:00:0${i}Z`)),
      ev('Pod', 'rk-m-m1-0', 'BackOff', '2026-01-01T00:01:00Z', { count: 3, type: 'Warning' }),
      ev('Pod', 'rk-m-m1-0', 'BackOff', '2026-01-01T00:02:00Z', { count: 4, type: 'Warning' }),
      ev('VirtualMachineInstance', 'rk-m-m1', 'SyncFailed', '2026-01-01T00:00:30Z', {
        message: 'x'.repeat(1000),
      }),
      ev('Pod', 'rk-m-m2-0', 'Other', '2026-01-01T00:03:00Z'),
    ];
    const out = machineEvents(events, m1);
    expect(out).toHaveLength(OBSERVE_LIMITS.statusEvents);
    expect(out[0]).toEqual({
      object: 'Pod/rk-m-m1-0',
      type: 'Warning',
      reason: 'BackOff',
      message: 'BackOff',
      count: 7,
      lastTimestamp: '2026-01-01T00:02:00Z',
    });
    expect(out.map((e) => e.reason)).toEqual(['BackOff', 'SyncFailed', 'R6', 'R5', 'R4']);
    expect(out[1]?.message).toHaveLength(OBSERVE_LIMITS.messageChars);
    expect(machineEvents(events, m1)).toEqual(out); // deterministic: same input, same status
  });

  it('reads events.k8s.io-written events too (series, eventTime in microseconds)', () => {
    const e: KubeObject = {
      metadata: { name: 'e', namespace: 'ns' },
      involvedObject: { kind: 'VirtualMachineInstance', name: 'rk-m-m1', namespace: 'ns' },
      reason: 'Started',
      message: 'VirtualMachineInstance started.',
      type: 'Normal',
      eventTime: '2026-01-01T00:00:05.123456Z',
      series: { count: 2, lastObservedTime: '2026-01-01T00:00:09.000001Z' },
    };
    expect(machineEvents([e], m1)[0]).toMatchObject({ count: 2, lastTimestamp: '2026-01-01T00:00:09Z' });
    expect(bootFromEvents([e], m1)).toBe('2026-01-01T00:00:09Z');
  });
});

describe('lastBoot from events', () => {
  it("is the newest Started of the machine container, not the seed init container's", () => {
    const started = (c: string, at: string) =>
      ev('Pod', 'rk-m-m1-0', 'Started', at, { involved: { fieldPath: c } });
    expect(
      bootFromEvents(
        [
          started('spec.containers{machine}', '2026-01-01T00:00:10Z'),
          started('spec.containers{machine}', '2026-01-01T00:05:00Z'),
          started('spec.initContainers{seed}', '2026-01-01T00:09:00Z'),
          ev('Pod', 'rk-m-m1-0', 'Killing', '2026-01-01T00:10:00Z'),
        ],
        m1,
      ),
    ).toBe('2026-01-01T00:05:00Z');
    expect(
      bootFromEvents([started('spec.initContainers{seed}', '2026-01-01T00:09:00Z')], m1),
    ).toBeUndefined();
  });
});

describe('the relay endpoint', () => {
  const slice = (svc: string, endpoints: unknown[]): KubeObject => ({
    metadata: { name: `${svc}-x`, namespace: 'ns', labels: { 'kubernetes.io/service-name': svc } },
    endpoints,
  });
  it('is ready with an address whose ready condition is true or unset; not ready otherwise', () => {
    expect(relayEndpointReady([slice('rk-air-lab', [{ addresses: ['10.0.0.1'] }])], 'lab')).toBe(true);
    expect(
      relayEndpointReady(
        [slice('rk-air-lab', [{ addresses: ['10.0.0.1'], conditions: { ready: true } }])],
        'lab',
      ),
    ).toBe(true);
    expect(
      relayEndpointReady(
        [slice('rk-air-lab', [{ addresses: ['10.0.0.1'], conditions: { ready: false } }])],
        'lab',
      ),
    ).toBe(false);
    expect(relayEndpointReady([slice('rk-air-lab', [{ addresses: [] }])], 'lab')).toBe(false);
    expect(relayEndpointReady([slice('rk-air-lab', [])], 'lab')).toBe(false);
    expect(relayEndpointReady([slice('rk-air-lab2', [{ addresses: ['10.0.0.1'] }])], 'lab')).toBe(false);
    expect(sliceAir(slice('rk-air-lab', []))).toBe('lab');
    expect(SLICE_FILTER.keep(slice('web', []))).toBe(false);
  });
});

describe('a key Secret the operator may not read', () => {
  it('names the user from the 403 and the Role/RoleBinding to create; 404 says to create the Secret', () => {
    const msg =
      'secrets "team-key" is forbidden: User "system:serviceaccount:rk:retrokube" cannot get resource "secrets" in API group "" in the namespace "lab"';
    expect(forbiddenUser(msg)).toBe('system:serviceaccount:rk:retrokube');
    const p = keyReadProblem(new ApiError(403, 'Forbidden', msg, {}), 'lab', {
      name: 'team-key',
      key: 'key',
    });
    expect(p).toContain('may not read Secret team-key');
    expect(p).toContain(
      'kubectl -n lab create role retrokube-read-team-key --verb=get --resource=secrets --resource-name=team-key && kubectl -n lab create rolebinding retrokube-read-team-key --role=retrokube-read-team-key --serviceaccount=rk:retrokube',
    );
    const missing = keyReadProblem(new ApiError(404, 'NotFound', 'nope', {}), 'lab', {
      name: 'k',
      key: 'hex',
    });
    expect(missing).toMatch(
      /Secret k \(keySecretRef\) does not exist in namespace lab; create it .*entry "hex"/,
    );
  });
});
