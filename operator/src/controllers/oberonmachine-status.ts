// The status of an OberonMachine from what was observed (pure): phase, message, conditions
// (DiskSeeded, LauncherReady, AirReachable, Ready), the last boot and the machine's events.
import type { KubeObject } from '../runtime/client.ts';
import { type Condition, type ConditionInput, setConditions } from '../runtime/conditions.ts';
import type { LauncherState } from './oberonmachine-launcher.ts';
import { fillPodTrouble, later, type StatusEvent } from './oberonmachine-observe.ts';
import {
  type MachineSettings,
  machineChild,
  type OberonMachine,
  RENDER_LIMITS,
  relayHost,
} from './oberonmachine-render.ts';

export type Observed =
  | { kind: 'invalid'; message: string }
  | { kind: 'no-kubevirt' }
  /** runtime kubevirt, but the API server does not serve VirtualMachines (yet). */
  | { kind: 'kubevirt-absent'; served: boolean }
  | { kind: 'pod'; statefulSet: KubeObject | undefined; conflicts: string[] }
  | {
      kind: 'kubevirt';
      vm: KubeObject | undefined;
      seeded: boolean;
      jobFailed?: string;
      conflicts: string[];
      launcher: LauncherState;
    };

/** What the machine's status reads besides its children (oberonmachine-observe.ts). */
export interface World {
  events: StatusEvent[];
  /** Newest boot seen in events (kubelet's Started of the machine container, KubeVirt's of the VMI). */
  bootSeen?: string;
  /** Machines naming an air: does its relay Service have a ready endpoint, and is the machine held for it. */
  relay?: { ready: boolean; held: boolean };
}

export function computeMachineStatus(
  m: OberonMachine,
  s: MachineSettings,
  o: Observed,
  world: World = { events: [] },
  now: Date = new Date(),
): Record<string, unknown> & { events: StatusEvent[] } {
  const gen = m.metadata.generation;
  const conds: ConditionInput[] = [];
  let phase: string;
  let ready = false;
  let message = '';
  let lastBoot: string | undefined;
  const held = !!world.relay?.held;
  const relayWait = `waiting for a ready endpoint of the relay Service ${s.air ? relayHost(s.air) : ''} (OberonAir ${s.air}) before starting`;
  if (o.kind === 'invalid') {
    phase = 'Failed';
    message = o.message;
  } else if (o.kind === 'no-kubevirt') {
    phase = 'Failed';
    message =
      'runtime kubevirt is not enabled in this operator: set the chart value kubevirt.enabled=true (operator flag --kubevirt), or use runtime pod';
  } else if (o.kind === 'kubevirt-absent') {
    phase = 'Pending';
    message = o.served
      ? 'waiting for the operator to cache VirtualMachines'
      : 'KubeVirt is not installed: the API server does not serve VirtualMachines (virtualmachines.kubevirt.io). Install KubeVirt (virt-operator and a KubeVirt CR with the Sidecar feature gate; docs/qemu.md) or use runtime pod; this machine starts by itself once KubeVirt is there';
    // Served but not cached yet: KubeVirt is there, whether its launcher is ready is not known yet
    // (a condition saying "missing" would be untrue for those seconds).
    if (!o.served) conds.push({ type: 'LauncherReady', status: 'False', reason: 'KubeVirtMissing', message });
  } else if (o.conflicts.length) {
    phase = 'Failed';
    message = `${o.conflicts.join(' and ')} already exist and belong to someone else; rename this OberonMachine`;
  } else if (o.kind === 'pod') {
    const st = (o.statefulSet?.status ?? {}) as { readyReplicas?: number };
    ready = s.running && !held && (st.readyReplicas ?? 0) >= 1;
    phase = !s.running ? 'Halted' : held ? 'Pending' : ready ? 'Running' : 'Starting';
    message = ready
      ? `screen at ${machineChild(s.name)}:${RENDER_LIMITS.vncPort} (VNC)`
      : !s.running
        ? 'halted (disk kept)'
        : held
          ? relayWait
          : (latestWarning(world.events) ?? 'waiting for the machine pod');
  } else {
    const vs = (o.vm?.status ?? {}) as {
      ready?: boolean;
      printableStatus?: string;
      conditions?: Array<{ type: string; status: string; message?: string; lastTransitionTime?: string }>;
    };
    ready = s.running && o.seeded && !held && vs.ready === true;
    const fillTrouble = o.seeded || o.jobFailed ? undefined : fillPodTrouble(world.events, s.name);
    const fillStuck = fillTrouble
      ? `the fill Job's pod cannot start: ${fillTrouble.reason}: ${fillTrouble.message}`
      : undefined;
    // Not ready on a KubeVirt that cannot run RISC5 machines: say what is missing, not "Starting".
    const launcherWhy =
      !ready && o.seeded && s.running && !held && !o.launcher.ready
        ? `KubeVirt cannot run this machine: ${o.launcher.message}`
        : undefined;
    const failure = vs.conditions?.find(
      (c) => (c.type === 'Failure' || c.type === 'Synchronized') && c.status === 'False' && c.message,
    );
    phase = o.jobFailed
      ? 'Failed'
      : !o.seeded
        ? 'Seeding'
        : !s.running
          ? 'Halted'
          : held
            ? 'Pending'
            : ready
              ? 'Running'
              : 'Starting';
    // What this machine's own objects reported (a hook's refusal in the VMI's events) is a fact and
    // comes before launcherWhy, which infers from the cluster's KubeVirt what may be missing.
    const observed = ready || !o.seeded || held ? undefined : latestWarning(world.events);
    message =
      o.jobFailed ??
      fillStuck ??
      failure?.message ??
      observed ??
      launcherWhy ??
      (!o.seeded
        ? 'seeding the disk (fill Job)'
        : held
          ? relayWait
          : (vs.printableStatus ?? 'VirtualMachine created'));
    lastBoot = vs.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime;
    conds.push(
      o.seeded
        ? {
            type: 'DiskSeeded',
            status: 'True',
            reason: 'FillSucceeded',
            message: 'the fill Job put the ROM and the disk on the volume',
          }
        : {
            type: 'DiskSeeded',
            status: 'False',
            reason: o.jobFailed ? 'FillFailed' : fillStuck ? 'FillCannotStart' : 'Filling',
            message: o.jobFailed ?? fillStuck ?? 'the fill Job is running',
          },
      {
        type: 'LauncherReady',
        status: o.launcher.ready ? 'True' : 'False',
        reason: o.launcher.reason,
        message: o.launcher.message,
      },
    );
  }
  if (world.relay && s.air) {
    const svc = relayHost(s.air);
    conds.push(
      world.relay.ready
        ? {
            type: 'AirReachable',
            status: 'True',
            reason: 'RelayEndpointReady',
            message: `the relay Service ${svc} has a ready endpoint`,
          }
        : {
            type: 'AirReachable',
            status: 'False',
            reason: world.relay.held ? 'WaitingForRelayEndpoint' : 'RelayEndpointNotReady',
            message: world.relay.held
              ? `${relayWait}: the machine is held (${s.runtime === 'pod' ? 'StatefulSet replicas 0' : 'VirtualMachine runStrategy Halted'}); check OberonAir ${s.air} and its relay pod`
              : `the relay Service ${svc} has no ready endpoint; a running machine keeps running and reaches the relay again when it is back`,
          },
    );
  }
  conds.push(
    ready
      ? { type: 'Ready', status: 'True', reason: 'Running', message }
      : {
          type: 'Ready',
          status: 'False',
          reason: phase === 'Failed' ? 'Failed' : held ? 'WaitingForRelayEndpoint' : phase,
          message,
        },
  );
  // Monotonic: a boot once seen stays the last boot when its Event expires (the API server keeps Events an hour).
  lastBoot = later(
    later((m.status as { lastBoot?: string } | undefined)?.lastBoot, lastBoot),
    world.bootSeen,
  );
  return {
    observedGeneration: gen,
    phase,
    ready,
    ...(lastBoot ? { lastBoot } : {}),
    events: world.events,
    ...(s.runtime === 'pod'
      ? { vnc: `${machineChild(s.name)}.${s.namespace}.svc:${RENDER_LIMITS.vncPort}` }
      : {}),
    message,
    conditions: setConditions(
      (m.status as { conditions?: Condition[] } | undefined)?.conditions,
      conds,
      gen,
      now,
    ),
  };
}

/** The newest Warning event as one line (what the kubelet, KubeVirt or our hook said went wrong). */
function latestWarning(events: readonly StatusEvent[]): string | undefined {
  const w = events.find((e) => e.type === 'Warning');
  return w ? `${w.object} ${w.reason}: ${w.message}` : undefined;
}
