// What an OberonMachine's status reads from the world besides its own children, as pure
// functions over cached objects:
//   - Kubernetes Events about the machine's Pod (kubelet: Started, BackOff, Killing, ...), its
//     StatefulSet, VirtualMachine or VirtualMachineInstance (KubeVirt, and our hook's refusals
//     such as "machine files are not on the volume yet") → status.events and lastBoot; for the pod
//     runtime also the emulator's own words: its readiness probe prints the first line of its
//     status file (`machine run --status-file`), so a failing probe is the kubelet's Unhealthy
//     event "Readiness probe failed: trouble: ..." (no Pod or log access needed);
//   - the EndpointSlices of the relay Service rk-air-<air> → may the machine start yet
//     (spec §7 item 8: QEMU resolves the relay's name when it opens the chardev).
// Reading core Events and EndpointSlices (list/watch) is all this needs: no Pods, no Secrets.
import type { KubeObject, ResourceType } from '../runtime/client.ts';
import { timestamp } from '../runtime/conditions.ts';
import type { InformerFilter } from '../runtime/controller.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { byCodeUnit } from '../util/compare.ts';
import { machineChild, relayHost } from './oberonmachine-render.ts';

export const OBSERVE_LIMITS = {
  statusEvents: 5, // the last few events in status: enough to see a crash loop, small enough for `kubectl get -o yaml`
  messageChars: 256, // one event message in status; the full text stays on the Event
  eventWriteIntervalMs: 10_000, // status writes caused only by events: at most one per machine this often (storms)
} as const;

/** core/v1 Events: what the kubelet and KubeVirt write (events.k8s.io ones show here too). */
export const CORE_EVENT: ResourceType = {
  group: '',
  version: 'v1',
  plural: 'events',
  kind: 'Event',
  namespaced: true,
};
export const ENDPOINT_SLICE: ResourceType = {
  group: 'discovery.k8s.io',
  version: 'v1',
  plural: 'endpointslices',
  kind: 'EndpointSlice',
  namespaced: true,
};
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** Read-only: list/watch, so the operator never gains a sensitive verb for this. */
export const OBSERVE_RBAC: PolicyRule[] = [
  { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch'] },
  { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
];

interface CoreEvent extends KubeObject {
  involvedObject?: { kind?: string; name?: string; namespace?: string; fieldPath?: string };
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  series?: { count?: number; lastObservedTime?: string };
}

const EVENT_KINDS = new Set(['Pod', 'StatefulSet', 'VirtualMachine', 'VirtualMachineInstance', 'Job']);
const PREFIX = machineChild('');
const LAUNCHER_PREFIX = `virt-launcher-${PREFIX}`; // KubeVirt's pod of a VMI: virt-launcher-<vmi>-<5>
const GENERATED = /-[a-z0-9]{5}$/; // the random suffix of a Job's or KubeVirt's pod
const FILL = /^(.+)-fill-[0-9a-f]{8}$/; // our fill Job rk-m-<machine>-fill-<hash>

/**
 * The machine an event is about, or undefined: one of our machines' StatefulSet and its pod
 * `<sts>-0`, VM, VMI and its virt-launcher pod, fill Job and its pod (the kubelet's Failed/BackOff
 * events of a pod that cannot start carry its waiting reason, e.g. ErrImagePull: no Pod access).
 */
export function eventMachine(e: KubeObject): { namespace: string; name: string } | undefined {
  const io = (e as CoreEvent).involvedObject;
  const name = io?.name ?? '';
  if (!io?.kind || !EVENT_KINDS.has(io.kind)) return undefined;
  const namespace = io.namespace ?? e.metadata.namespace ?? '';
  let machine: string | undefined;
  if (io.kind === 'Pod' && name.startsWith(LAUNCHER_PREFIX) && GENERATED.test(name)) {
    machine = name.slice(LAUNCHER_PREFIX.length).replace(GENERATED, '');
  } else if (!name.startsWith(PREFIX)) {
    return undefined;
  } else if (io.kind === 'Job') {
    machine = FILL.exec(name.slice(PREFIX.length))?.[1];
  } else if (io.kind === 'Pod') {
    const rest = name.slice(PREFIX.length);
    const fill = GENERATED.test(rest) ? FILL.exec(rest.replace(GENERATED, ''))?.[1] : undefined;
    // The StatefulSet's only pod is <statefulset>-0.
    machine = fill ?? (rest.endsWith('-0') ? rest.slice(0, -2) : undefined);
  } else {
    machine = name.slice(PREFIX.length);
  }
  return machine ? { namespace, name: machine } : undefined;
}

/** The newest event of the machine's fill Job pod when it is a Warning (it cannot start, and why). */
export function fillPodTrouble(events: readonly StatusEvent[], machine: string): StatusEvent | undefined {
  const pod = `Pod/${machineChild(machine)}-fill-`;
  const newest = events.find((e) => e.object.startsWith(pod));
  return newest?.type === 'Warning' ? newest : undefined;
}

/** Keeps only our machines' events in the operator's cache (a cluster has many others). */
export const EVENT_FILTER: InformerFilter = {
  id: 'oberonmachine-events',
  keep: (e) => eventMachine(e) !== undefined,
};

export const SLICE_FILTER: InformerFilter = {
  id: 'relay-slices',
  keep: (s) => (s.metadata.labels?.[SERVICE_NAME_LABEL] ?? '').startsWith(relayHost('')),
};

/** The air a relay EndpointSlice serves, or undefined. */
export function sliceAir(s: KubeObject): string | undefined {
  const svc = s.metadata.labels?.[SERVICE_NAME_LABEL] ?? '';
  const prefix = relayHost('');
  return svc.startsWith(prefix) && svc.length > prefix.length ? svc.slice(prefix.length) : undefined;
}

interface Slice extends KubeObject {
  endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean } }>;
}

/** True when one of the Service's slices has an address that is ready (nil ready counts as ready). */
export function relayEndpointReady(slices: readonly KubeObject[], air: string): boolean {
  const svc = relayHost(air);
  return slices.some(
    (s) =>
      s.metadata.labels?.[SERVICE_NAME_LABEL] === svc &&
      ((s as Slice).endpoints ?? []).some(
        (ep) => (ep.addresses?.length ?? 0) > 0 && ep.conditions?.ready !== false,
      ),
  );
}

export interface StatusEvent {
  object: string;
  type: string;
  reason: string;
  message: string;
  count: number;
  lastTimestamp: string;
}

function when(e: CoreEvent): string | undefined {
  const t = e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.firstTimestamp;
  const ms = t ? Date.parse(t) : Number.NaN;
  return Number.isFinite(ms) ? timestamp(new Date(ms)) : undefined;
}

/**
 * The machine's recent events, newest first: only its Pod/StatefulSet/VM/VMI, none older than the
 * machine itself (a previous machine of the same name), identical (object, type, reason, message)
 * merged into one line with the summed count.
 */
export function machineEvents(
  events: readonly KubeObject[],
  machine: { namespace: string; name: string; createdAt?: string },
): StatusEvent[] {
  const since = machine.createdAt ? Date.parse(machine.createdAt) : 0;
  const merged = new Map<string, StatusEvent>();
  for (const raw of events) {
    const e = raw as CoreEvent;
    const who = eventMachine(e);
    if (!who || who.name !== machine.name || who.namespace !== machine.namespace) continue;
    const t = when(e);
    if (!t || Date.parse(t) < since) continue;
    const line: StatusEvent = {
      object: `${e.involvedObject?.kind}/${e.involvedObject?.name}`,
      type: e.type ?? 'Normal',
      reason: e.reason ?? '',
      // Trimmed: an exec probe's output (quoted by the kubelet) ends with a newline.
      message: (e.message ?? '').trim().slice(0, OBSERVE_LIMITS.messageChars),
      count: Math.max(1, e.count ?? e.series?.count ?? 1),
      lastTimestamp: t,
    };
    const id = [line.object, line.type, line.reason, line.message].join('\u0000');
    const prev = merged.get(id);
    if (!prev) merged.set(id, line);
    else {
      prev.count += line.count;
      if (line.lastTimestamp > prev.lastTimestamp) prev.lastTimestamp = line.lastTimestamp;
    }
  }
  return [...merged.values()]
    .sort(
      (a, b) =>
        byCodeUnit(b.lastTimestamp, a.lastTimestamp) ||
        byCodeUnit(a.object, b.object) ||
        byCodeUnit(a.reason, b.reason) ||
        byCodeUnit(a.message, b.message),
    )
    .slice(0, OBSERVE_LIMITS.statusEvents);
}

/**
 * When the machine last booted, as observed: the newest `Started` of the pod's `machine` container
 * (kubelet) or of the VirtualMachineInstance (KubeVirt). Undefined when no such event is at hand.
 * For the pod runtime this is the emulator's power-on, kept on purpose: it reaches Oberon.Loop
 * about a second later, but a passing probe writes no event and the operator reads no Pods, so
 * that moment is visible only as the Ready condition turning True (its lastTransitionTime), never
 * as an event time we could trust after an operator restart.
 */
export function bootFromEvents(
  events: readonly KubeObject[],
  machine: { namespace: string; name: string; createdAt?: string },
): string | undefined {
  const since = machine.createdAt ? Date.parse(machine.createdAt) : 0;
  let best: string | undefined;
  for (const raw of events) {
    const e = raw as CoreEvent;
    const who = eventMachine(e);
    if (!who || who.name !== machine.name || who.namespace !== machine.namespace) continue;
    if (e.reason !== 'Started') continue;
    const io = e.involvedObject ?? {};
    const boot =
      (io.kind === 'Pod' && io.fieldPath === 'spec.containers{machine}') ||
      io.kind === 'VirtualMachineInstance';
    const t = when(e);
    if (!boot || !t || Date.parse(t) < since) continue;
    if (!best || t > best) best = t;
  }
  return best;
}

/** The later of two RFC 3339 times (either may be missing). */
export function later(a: string | undefined, b: string | undefined): string | undefined {
  if (!a) return b;
  if (!b) return a;
  return Date.parse(b) > Date.parse(a) ? b : a;
}
