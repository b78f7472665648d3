// OberonMachine controller: one Oberon machine as a pod running our emulator (StatefulSet of one
// plus a VNC Service) or as a KubeVirt VirtualMachine on the RISC5 launcher (hook ConfigMap, disk
// PVC, fill Job, VM — Halted until the Job has seeded the disk). Reads top to bottom: watch setup,
// reconcile, status. Renders live in oberonmachine-render.ts (pure).
import { CORE, type KubeClient, type KubeObject, type ResourceType } from '../runtime/client.ts';
import { type Condition, type ConditionInput, isTrue, setConditions } from '../runtime/conditions.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import { CHILD_VERBS, type PolicyRule } from '../runtime/rbac.ts';
import { defaultImage } from './oberonair.ts';
import {
  bootFromEvents,
  CORE_EVENT,
  ENDPOINT_SLICE,
  EVENT_FILTER,
  eventMachine,
  later,
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
  RENDER_LIMITS,
  relayHost,
  renderKubeVirt,
  renderPod,
} from './oberonmachine-render.ts';
import { applyOwned, ourKind, primaryRules } from './owned.ts';

export const LIMITS = {
  conflictRecheckMs: 60_000, // a name taken by someone else is re-checked every minute
  launcherCheckMs: 60_000, // the cluster's launcher changes rarely: look once a minute, not per reconcile
  seedingRecheckMs: 5_000, // while the fill Job runs, look again soon (its events also wake us)
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
  kubevirt: T('kubevirt.io', 'v1', 'kubevirts', 'KubeVirt'),
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
  if (opts.kubevirt) owns.push(KINDS_OWNED.vm);
  const eventWrites = new Map<string, number>(); // machine key → when events last changed its status
  return {
    name: 'oberonmachine',
    primary: OBERONMACHINE,
    owns,
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
    reconcile: (ctx, key) => reconcile(ctx, key, image, !!opts.kubevirt, launcher, eventWrites),
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
  eventWrites: Map<string, number>,
): Promise<ReconcileResult | undefined> {
  const id = `${key.namespace}/${key.name}`;
  const m = ctx.cached<OberonMachine>(OBERONMACHINE, key.namespace, key.name);
  if (!m || m.metadata.deletionTimestamp) {
    eventWrites.delete(id);
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
    const [sts] = await Promise.all([
      applyChild(ctx, m, KINDS_OWNED.statefulSet, d.statefulSet, conflicts),
      applyChild(ctx, m, CORE.service, d.service, conflicts),
    ]);
    observed = { kind: 'pod', statefulSet: sts, conflicts };
  } else if (!kubevirt) {
    observed = { kind: 'no-kubevirt' };
  } else {
    const seededBefore = isTrue(
      (m.status as { conditions?: Condition[] } | undefined)?.conditions,
      'DiskSeeded',
    );
    const first = renderKubeVirt(m, s, { seeded: seededBefore });
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
    const desiredVm = renderKubeVirt(m, s, { seeded, held }).vm;
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
    observed.kind === 'kubevirt'
      ? observed.seeded
        ? LIMITS.launcherCheckMs
        : LIMITS.seedingRecheckMs
      : undefined,
    wait > 0 ? wait : undefined,
  ].filter((x): x is number => x !== undefined);
  return after.length ? { requeueAfterMs: Math.min(...after) } : undefined;
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
  const changed = await ctx.applyStatusIfChanged(OBERONMACHINE, m, status);
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

// --- LauncherReady (report, never patch) -----------------------------------------------------------

export interface LauncherState {
  ready: boolean;
  reason: string;
  message: string;
}

/** Reads the KubeVirt CR, virt-controller and the launcher component's status ConfigMap (spec §7.1). */
export async function checkLauncher(client: KubeClient): Promise<LauncherState> {
  let kvs: KubeObject[];
  try {
    kvs = (await client.list<KubeObject>(KINDS_OWNED.kubevirt)).items ?? [];
  } catch (err) {
    const status = (err as { status?: number }).status;
    if (status === 404)
      return {
        ready: false,
        reason: 'KubeVirtMissing',
        message: 'KubeVirt is not installed (no kubevirts.kubevirt.io)',
      };
    return {
      ready: false,
      reason: 'KubeVirtUnreadable',
      message: `cannot read the KubeVirt CR: ${(err as Error).message}`,
    };
  }
  const kv = kvs[0] as
    | (KubeObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> })
    | undefined;
  if (!kv) return { ready: false, reason: 'KubeVirtMissing', message: 'no KubeVirt CR in the cluster' };
  if (kv.metadata.deletionTimestamp)
    return {
      ready: false,
      reason: 'KubeVirtDeleting',
      message: `the KubeVirt CR ${kv.metadata.namespace}/${kv.metadata.name} is being deleted`,
    };
  const gates =
    (kv.spec?.configuration as { developerConfiguration?: { featureGates?: string[] } } | undefined)
      ?.developerConfiguration?.featureGates ?? [];
  if (!gates.includes('Sidecar'))
    return {
      ready: false,
      reason: 'SidecarGateMissing',
      message:
        'the KubeVirt CR lacks the Sidecar feature gate (spec.configuration.developerConfiguration.featureGates)',
    };
  const ns = kv.metadata.namespace as string;
  const version = String(kv.status?.observedKubeVirtVersion ?? '');
  const ctrl = await client.getOrUndefined<
    KubeObject & { spec?: { template?: { spec?: { containers?: Array<{ args?: string[] }> } } } }
  >(CORE.deployment, ns, 'virt-controller');
  const args = ctrl?.spec?.template?.spec?.containers?.[0]?.args ?? [];
  const tag = imageTag(args[1] ?? '');
  if (
    args[0] !== '--launcher-image' ||
    !/-(paleo|risc5)-/.test(tag) ||
    (version && !tag.startsWith(`${version}-`))
  )
    return {
      ready: false,
      reason: 'StockLauncher',
      message: `virt-controller runs launcher ${args[1] ?? '(unknown)'}, not a RISC5-capable ${version || '<version>'}-paleo-* image`,
    };
  const cm = await client.getOrUndefined<KubeObject & { data?: Record<string, string> }>(
    CORE.configMap,
    ns,
    'kubevirt-paleo-launcher-status',
  );
  const state = cm?.data?.state;
  if (state && state !== 'Applied')
    return {
      ready: false,
      reason: /^[A-Za-z]+$/.test(state) ? state : 'LauncherNotApplied',
      message: `kubevirt-paleo-launcher reports ${state}: ${cm?.data?.reason ?? ''}`.trim(),
    };
  return { ready: true, reason: 'LauncherReady', message: `RISC5 launcher ${args[1]} with the Sidecar gate` };
}

/** An image reference's tag (`repo:5000/x:TAG@sha256:…` → TAG); '' when it has none (digest only). */
export function imageTag(ref: string): string {
  const name = ref.split('@')[0] ?? '';
  const last = name.slice(name.lastIndexOf('/') + 1);
  const colon = last.lastIndexOf(':');
  return colon < 0 ? '' : last.slice(colon + 1);
}

class LauncherCheck {
  private last: { at: number; state: LauncherState } | undefined;
  async get(client: KubeClient): Promise<LauncherState> {
    if (this.last && Date.now() - this.last.at < LIMITS.launcherCheckMs) return this.last.state;
    const state = await checkLauncher(client);
    this.last = { at: Date.now(), state };
    return state;
  }
}

// --- status (pure) ---------------------------------------------------------------------------------

export type Observed =
  | { kind: 'invalid'; message: string }
  | { kind: 'no-kubevirt' }
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
    message = 'runtime kubevirt is not enabled in this operator (start it with --kubevirt); use runtime pod';
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
    message =
      o.jobFailed ??
      failure?.message ??
      (!o.seeded
        ? 'seeding the disk (fill Job)'
        : held
          ? relayWait
          : ((ready ? undefined : latestWarning(world.events)) ??
            vs.printableStatus ??
            'VirtualMachine created'));
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
            reason: o.jobFailed ? 'FillFailed' : 'Filling',
            message: o.jobFailed ?? 'the fill Job is running',
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
