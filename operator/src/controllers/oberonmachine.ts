// OberonMachine controller: one Oberon machine as a pod running our emulator (StatefulSet of one
// plus a VNC Service) or as a KubeVirt VirtualMachine on the RISC5 launcher (hook ConfigMap, disk
// PVC, fill Job, VM — Halted until the Job has seeded the disk). Reads top to bottom: watch setup,
// reconcile, status. Renders live in oberonmachine-render.ts, the status it computes in
// oberonmachine-status.ts (both pure), LauncherReady in oberonmachine-launcher.ts.

import { createHash } from 'node:crypto';
import { CORE, type KubeObject, type ResourceType } from '../runtime/client.ts';
import { type Condition, isTrue } from '../runtime/conditions.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import { CHILD_VERBS, type PolicyRule } from '../runtime/rbac.ts';
import { CheckedRecently } from './checked-recently.ts';
import { defaultImage } from './oberonair.ts';
import { KUBEVIRT, LAUNCHER_LIMITS, LauncherCheck } from './oberonmachine-launcher.ts';
import { LIVE_ACCESS_RBAC, RBAC_TYPES, renderLiveAccess } from './oberonmachine-live.ts';
import {
  bootFromEvents,
  CORE_EVENT,
  ENDPOINT_SLICE,
  EVENT_FILTER,
  eventMachine,
  machineEvents,
  OBSERVE_LIMITS,
  OBSERVE_RBAC,
  relayEndpointReady,
  SLICE_FILTER,
  type StatusEvent,
  sliceAir,
} from './oberonmachine-observe.ts';
import {
  bootText,
  DESCRIPTOR_ANNOTATION,
  KEY_PLACEHOLDER_POD,
  type MachineSettings,
  machineChild,
  machineSettings,
  type OberonMachine,
  renderKubeVirt,
  renderPod,
} from './oberonmachine-render.ts';
import { computeMachineStatus, type Observed, type World } from './oberonmachine-status.ts';
import { applyOwned, ourKind, primaryRules } from './owned.ts';

export const LIMITS = {
  conflictRecheckMs: 60_000, // a name taken by someone else is re-checked every minute
  seedingRecheckMs: 5_000, // while the fill Job runs, look again soon (its events also wake us)
  kubevirtRecheckMs: 15_000, // KubeVirt missing: look again (its CRD appearing wakes no machine)
} as const;

const T = (group: string, version: string, plural: string, kind: string): ResourceType => ({
  group,
  version,
  plural,
  kind,
  namespaced: true,
});
export const OBERONMACHINE = ourKind('oberonmachines', 'OberonMachine');
export const KINDS_OWNED = {
  statefulSet: T('apps', 'v1', 'statefulsets', 'StatefulSet'),
  pvc: T('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim'),
  job: T('batch', 'v1', 'jobs', 'Job'),
  vm: T('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
  kubevirt: KUBEVIRT,
} as const;

/** What this controller needs. No Secrets: keys reach machines through the kubelet, never the operator. */
export const OBERONMACHINE_RBAC: PolicyRule[] = [
  ...primaryRules('oberonmachines'),
  { apiGroups: ['apps'], resources: ['statefulsets'], verbs: CHILD_VERBS },
  { apiGroups: [''], resources: ['services', 'configmaps', 'persistentvolumeclaims'], verbs: CHILD_VERBS },
  { apiGroups: ['batch'], resources: ['jobs'], verbs: CHILD_VERBS },
  { apiGroups: ['kubevirt.io'], resources: ['virtualmachines'], verbs: CHILD_VERBS },
  { apiGroups: ['subresources.kubevirt.io'], resources: ['virtualmachines/restart'], verbs: ['update'] },
  // LauncherReady: read (never patch) the KubeVirt CR, virt-controller and the launcher's status.
  { apiGroups: ['kubevirt.io'], resources: ['kubevirts'], verbs: ['get', 'list'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
  { apiGroups: [''], resources: ['configmaps'], verbs: ['get'] },
  // A plane's live channel: a ServiceAccount bound to a Role reading its one ConfigMap.
  ...LIVE_ACCESS_RBAC,
  // Status: the machine's Pod/VM events and its relay's endpoints (read-only, oberonmachine-observe.ts).
  ...OBSERVE_RBAC,
];

export interface MachineControllerOptions {
  image?: string;
  /** Watch KubeVirt VirtualMachines (their CRD must exist); off → runtime kubevirt is reported unavailable. */
  kubevirt?: boolean;
}

// --- watch setup ---------------------------------------------------------------------------------

export function oberonMachineController(opts: MachineControllerOptions = {}): ControllerDefinition {
  const image = opts.image ?? defaultImage();
  const launcher = new LauncherCheck();
  const owns = [KINDS_OWNED.statefulSet, CORE.service, CORE.configMap, KINDS_OWNED.pvc, KINDS_OWNED.job];
  const eventWrites = new Map<string, number>(); // machine key → when events last changed its status
  const liveChecked = new CheckedRecently(); // a plane's live access, not watched: read once in a while
  return {
    name: 'oberonmachine',
    primary: OBERONMACHINE,
    owns,
    // The VirtualMachine CRD may be missing (KubeVirt not installed): pod machines and every other
    // controller work meanwhile, and kubevirt machines say what is missing (reconcile below).
    optionalOwns: opts.kubevirt ? [KINDS_OWNED.vm] : [],
    watches: [
      {
        type: CORE_EVENT,
        filter: EVENT_FILTER,
        map: (e) => {
          const who = eventMachine(e);
          return who ? [`${who.namespace}/${who.name}`] : [];
        },
      },
      {
        type: ENDPOINT_SLICE,
        filter: SLICE_FILTER,
        map: (slice, machines) => {
          const air = sliceAir(slice);
          const ns = slice.metadata.namespace;
          return machines
            .list(ns)
            .filter((m) => (m as OberonMachine).spec?.air === air)
            .map((m) => `${ns}/${m.metadata.name}`);
        },
      },
    ],
    reconcile: (ctx, key) =>
      reconcile(ctx, key, image, !!opts.kubevirt, launcher, { eventWrites, liveChecked }),
  };
}

// --- reconcile -----------------------------------------------------------------------------------

/** applyOwned, with a name taken by someone else added to `conflicts` and a Created event. */
async function applyChild(
  ctx: ReconcileContext,
  owner: KubeObject,
  type: ResourceType,
  desired: KubeObject,
  conflicts: string[],
): Promise<KubeObject | undefined> {
  const r = await applyOwned(ctx, owner, type, desired);
  if ('conflict' in r) {
    conflicts.push(r.conflict);
    return undefined; // never take over an object we do not control
  }
  if (r.created)
    void ctx.recorder.record(
      owner,
      'Normal',
      'Created',
      `Created ${type.kind} ${desired.metadata.name}`,
      'Create',
    );
  return r.object;
}

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  image: string,
  kubevirt: boolean,
  launcher: LauncherCheck,
  memo: { eventWrites: Map<string, number>; liveChecked: CheckedRecently },
): Promise<ReconcileResult | undefined> {
  const { eventWrites, liveChecked } = memo;
  const id = `${key.namespace}/${key.name}`;
  const m = ctx.cached<OberonMachine>(OBERONMACHINE, key.namespace, key.name);
  if (!m || m.metadata.deletionTimestamp) {
    eventWrites.delete(id);
    liveChecked.forget(id);
    return undefined;
  }
  const s = machineSettings(m);
  const world = observeWorld(ctx, m, s);
  const conflicts: string[] = [];
  let observed: Observed;
  try {
    bootText(s, KEY_PLACEHOLDER_POD); // refuses commands that do not fit Boot
  } catch (err) {
    observed = { kind: 'invalid', message: (err as Error).message };
    const wait = await writeStatus(ctx, m, s, observed, world, eventWrites);
    return wait > 0 ? { requeueAfterMs: wait } : undefined;
  }
  // Held: a machine that is not running yet does not start before its relay has a ready endpoint.
  // One already running keeps running when the relay restarts (its chardev re-resolves the name).
  const relayReady = !s.air || relayEndpointReady(ctx.watched(ENDPOINT_SLICE).list(s.namespace), s.air);
  if (s.runtime === 'pod') {
    const current = ctx.cached<KubeObject & { spec?: { replicas?: number } }>(
      KINDS_OWNED.statefulSet,
      s.namespace,
      machineChild(s.name),
    );
    const held = !relayReady && !((current?.spec?.replicas ?? 0) >= 1);
    world.relay = s.air ? { ready: relayReady, held: held && s.running } : undefined;
    const d = renderPod(m, s, image, { held });
    // A plane's live channel: its ServiceAccount and narrow Role before the pod that runs as it.
    const access = renderLiveAccess(m, s);
    // Not watched (no cluster-wide informer of accounts and Roles for three small objects): read
    // from the API server, but not again on every resync while nothing changed (checked-recently.ts).
    const desired = access && liveDigest(m, access);
    if (access && desired && !liveChecked.fresh(id, desired)) {
      const before = conflicts.length;
      for (const [type, obj] of [
        [RBAC_TYPES.serviceAccount, access.serviceAccount],
        [RBAC_TYPES.role, access.role],
        [RBAC_TYPES.roleBinding, access.roleBinding],
      ] as const) {
        const r = await applyOwned(ctx, m, type, obj, { uncached: true });
        if ('conflict' in r) conflicts.push(r.conflict);
      }
      if (conflicts.length === before) liveChecked.verified(id, desired);
      else liveChecked.forget(id);
    }
    const [sts] = await Promise.all([
      applyChild(ctx, m, KINDS_OWNED.statefulSet, d.statefulSet, conflicts),
      applyChild(ctx, m, CORE.service, d.service, conflicts),
    ]);
    observed = { kind: 'pod', statefulSet: sts, conflicts };
  } else if (!kubevirt) {
    observed = { kind: 'no-kubevirt' };
  } else if (!ctx.owned(KINDS_OWNED.vm).hasSynced) {
    // Nothing is created before KubeVirt serves VirtualMachines: a fill Job then would only wait.
    observed = { kind: 'kubevirt-absent', served: !ctx.owned(KINDS_OWNED.vm).absent };
  } else {
    const seededBefore = isTrue(
      (m.status as { conditions?: Condition[] } | undefined)?.conditions,
      'DiskSeeded',
    );
    const first = renderKubeVirt(m, s, image, { seeded: seededBefore });
    const [, , job] = await Promise.all([
      applyChild(ctx, m, CORE.configMap, first.configMap, conflicts),
      applyChild(ctx, m, KINDS_OWNED.pvc, first.pvc, conflicts),
      applyChild(ctx, m, KINDS_OWNED.job, first.job, conflicts),
    ]);
    const jobStatus = (job?.status ?? {}) as {
      succeeded?: number;
      failed?: number;
      conditions?: Array<{ type: string; status: string; message?: string }>;
    };
    const seeded = seededBefore || (jobStatus.succeeded ?? 0) >= 1;
    const jobFailed = jobStatus.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
    const before = ctx.cached(KINDS_OWNED.vm, s.namespace, machineChild(s.name));
    const held =
      !relayReady && (before?.spec as { runStrategy?: string } | undefined)?.runStrategy !== 'Always';
    world.relay = s.air ? { ready: relayReady, held: held && s.running && seeded } : undefined;
    const desiredVm = renderKubeVirt(m, s, image, { seeded, held }).vm;
    const vm = conflicts.length ? undefined : await applyChild(ctx, m, KINDS_OWNED.vm, desiredVm, conflicts);
    // Boot commands run at boot only: a changed descriptor of a running VM means a deliberate restart.
    if (
      vm &&
      before &&
      descriptorOf(before) !== descriptorOf(desiredVm) &&
      (before.spec as { runStrategy?: string })?.runStrategy === 'Always'
    )
      await restartVm(ctx, m, vm);
    observed = {
      kind: 'kubevirt',
      vm,
      seeded,
      jobFailed: jobFailed?.message ?? (jobFailed ? 'fill Job failed' : undefined),
      conflicts,
      launcher: await launcher.get(ctx.client),
    };
  }
  const wait = await writeStatus(ctx, m, s, observed, world, eventWrites);
  const after = [
    conflicts.length ? LIMITS.conflictRecheckMs : undefined,
    observed.kind === 'kubevirt-absent' ? LIMITS.kubevirtRecheckMs : undefined,
    observed.kind === 'kubevirt'
      ? observed.seeded
        ? LAUNCHER_LIMITS.launcherCheckMs
        : LIMITS.seedingRecheckMs
      : undefined,
    wait > 0 ? wait : undefined,
  ].filter((x): x is number => x !== undefined);
  return after.length ? { requeueAfterMs: Math.min(...after) } : undefined;
}

/** What the live access is checked against: a digest, not the objects (1,000 planes, RSS-bound). */
function liveDigest(m: OberonMachine, access: object): string {
  return createHash('sha256')
    .update(`${m.metadata.generation}|${JSON.stringify(access)}`)
    .digest('base64');
}

/** The machine's events and last observed boot, from the watched Events (no API call). */
function observeWorld(ctx: ReconcileContext, m: OberonMachine, s: MachineSettings): World {
  const events = ctx.watched(CORE_EVENT).list(s.namespace);
  const who = { namespace: s.namespace, name: s.name, createdAt: m.metadata.creationTimestamp };
  return { events: machineEvents(events, who), bootSeen: bootFromEvents(events, who) };
}

/**
 * Writes the status if it changed. A change made only of events is written at most once per
 * OBSERVE_LIMITS.eventWriteIntervalMs per machine (a crash loop's BackOff count would otherwise
 * write on every kubelet update); returns how long until the held-back events may be written.
 */
async function writeStatus(
  ctx: ReconcileContext,
  m: OberonMachine,
  s: MachineSettings,
  o: Observed,
  world: World,
  eventWrites: Map<string, number>,
  nowMs: number = Date.now(),
): Promise<number> {
  const status = computeMachineStatus(m, s, o, world);
  const id = `${s.namespace}/${s.name}`;
  const prevEvents = (m.status as { events?: StatusEvent[] } | undefined)?.events;
  const eventsChanged = JSON.stringify(prevEvents ?? null) !== JSON.stringify(status.events);
  let wait = 0;
  if (eventsChanged && prevEvents) {
    wait = (eventWrites.get(id) ?? 0) + OBSERVE_LIMITS.eventWriteIntervalMs - nowMs;
    if (wait > 0) status.events = prevEvents; // later; everything else goes now
  }
  const prevPhase = (m.status as { phase?: string } | undefined)?.phase;
  const prevConds = (m.status as { conditions?: Condition[] } | undefined)?.conditions ?? [];
  const changed = await ctx.applyStatusIfChanged(OBERONMACHINE, m, status);
  // What keeps a machine from running on KubeVirt, said once per new reason as a Warning Event.
  for (const type of WARNED_CONDITIONS) {
    const now = (status.conditions as Condition[]).find((c) => c.type === type);
    const before = prevConds.find((c) => c.type === type);
    if (changed && now?.status === 'False' && WARNED_REASONS.has(now.reason) && before?.reason !== now.reason)
      void ctx.recorder.record(m, 'Warning', now.reason, now.message);
  }
  if (changed && eventsChanged && wait <= 0) eventWrites.set(id, nowMs);
  if (changed && prevPhase !== status.phase && (status.phase === 'Failed' || status.phase === 'Running')) {
    void ctx.recorder.record(
      m,
      status.phase === 'Failed' ? 'Warning' : 'Normal',
      status.phase,
      String(status.message ?? ''),
    );
  }
  return wait;
}

const WARNED_CONDITIONS = ['LauncherReady', 'DiskSeeded'] as const;
/** Reasons a user must act on (not the passing states such as Filling or Rolling). */
const WARNED_REASONS = new Set([
  'KubeVirtMissing',
  'KubeVirtUnreadable',
  'KubeVirtDeleting',
  'SidecarGateMissing',
  'StockLauncher',
  'Unsupported',
  'Conflict',
  'NeedsConsent',
  'Doubt',
  'FillCannotStart',
  'FillFailed',
]);

const descriptorOf = (vm: KubeObject): string | undefined =>
  (vm.spec as { template?: { metadata?: { annotations?: Record<string, string> } } } | undefined)?.template
    ?.metadata?.annotations?.[DESCRIPTOR_ANNOTATION];

/** KubeVirt's restart subresource: the VMI is replaced and boots with the new commands. */
async function restartVm(ctx: ReconcileContext, m: OberonMachine, vm: KubeObject): Promise<void> {
  const path = `/apis/subresources.kubevirt.io/v1/namespaces/${vm.metadata.namespace}/virtualmachines/${vm.metadata.name}/restart`;
  try {
    await ctx.client.request('PUT', path, { body: {} });
    void ctx.recorder.record(
      m,
      'Normal',
      'Restarting',
      `Restarting VirtualMachine ${vm.metadata.name}: its boot commands changed`,
    );
  } catch (err) {
    void ctx.recorder.record(
      m,
      'Warning',
      'RestartFailed',
      `VirtualMachine ${vm.metadata.name} needs a restart for its new boot commands (virtctl restart): ${(err as Error).message}`,
    );
  }
}
