// OberonAir controller: one relay Deployment and one ClusterIP Service per air, and the operator's
// passive station on it: status.heard says what the air sounds like (senders, clusters, frames/s).
// Reads top to bottom: watch setup, reconcile, render (pure), status (pure).
import type { OberonAirSpecT, OberonAirStatusT } from '../api/oberonair.ts';
import { AIR_DEFAULTS } from '../api/oberonair-limits.ts';
import { CORE, type KubeObject, type ResourceType } from '../runtime/client.ts';
import { type ConditionInput, setConditions } from '../runtime/conditions.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import { controllerRef, isSubset, MANAGED_BY } from '../runtime/objects.ts';
import { pollPeriod } from '../runtime/poll.ts';
import { CHILD_VERBS, type PolicyRule } from '../runtime/rbac.ts';
import { VERSION as RETROKUBE_VERSION } from '../version.ts';
import { type AirHeard, steadyRate } from './air-census.ts';
import { type AirAddress, AirEars } from './air-ears.ts';
import { applyOwned, ourKind, primaryRules } from './owned.ts';
import { restrictedContainerSecurity, restrictedPodSecurity } from './pod-security.ts';

export const LIMITS = {
  relayUid: 65534, // "nobody": the relay needs no identity and no file system
  conflictRecheckMs: 60_000, // a name taken by someone else is re-checked every minute
  relayMetricsPort: 9524, // the relay's HTTP /metrics (TCP), also its readiness probe
  hearPollMs: 5_000, // how often what is heard is looked at (cache reads; writes only on change)
  hearPollPerAirMs: 10, // ...or this per air if longer (runtime/poll.ts): 1,000 airs every 10 s
  minHeardWriteMs: 5_000, // at most one status write per air this often for a change in what is heard
  hearWindowMs: 10_000, // a new station's census counts over ten heartbeat periods (its rate window)
} as const;

export const OBERONAIR: ResourceType = ourKind('oberonairs', 'OberonAir');

/** What this controller needs from the API server (merged into the chart's ClusterRole). */
export const OBERONAIR_RBAC: PolicyRule[] = [
  ...primaryRules('oberonairs'),
  { apiGroups: ['apps'], resources: ['deployments'], verbs: CHILD_VERBS },
  { apiGroups: [''], resources: ['services'], verbs: CHILD_VERBS },
];

export interface OberonAir extends KubeObject {
  spec?: Partial<OberonAirSpecT>;
  status?: OberonAirStatusT;
}

interface DeploymentStatus {
  observedGeneration?: number;
  replicas?: number;
  updatedReplicas?: number;
  readyReplicas?: number;
  availableReplicas?: number;
  conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
}

/** The image the relay runs when the spec names none: the operator's own (one image, every role). */
export function defaultImage(): string {
  return process.env.RETROKUBE_IMAGE || `ghcr.io/retrokube/retrokube:${RETROKUBE_VERSION}`;
}

// --- watch setup -------------------------------------------------------------------------------

export interface AirControllerOptions {
  image?: string;
  /** The operator's ears (shared with the OberonKube controller): one passive station per air. */
  ears?: AirEars;
  /** Where an air is heard when `ears` is not given: default its Service. */
  airAddress?: AirAddress;
}

export function oberonAirController(
  opts: AirControllerOptions = {},
): ControllerDefinition & { ears: AirEars } {
  const image = opts.image ?? defaultImage();
  const ears = opts.ears ?? new AirEars({ address: opts.airAddress });
  const lastHeardWrite = new Map<string, number>();
  return {
    name: 'oberonair',
    primary: OBERONAIR,
    owns: [CORE.deployment, CORE.service],
    ears,
    reconcile: (ctx, key) => reconcile(ctx, key, { image, ears, lastHeardWrite }),
  };
}

interface Deps {
  image: string;
  ears: AirEars;
  /** Per air: when a change in what is heard was last written (the rate limit). */
  lastHeardWrite: Map<string, number>;
}

// --- reconcile ---------------------------------------------------------------------------------

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  d: Deps,
): Promise<ReconcileResult | undefined> {
  const id = `${key.namespace}/${key.name}`;
  const air = ctx.cached<OberonAir>(OBERONAIR, key.namespace, key.name);
  // Gone, or going: the garbage collector removes the children through their ownerReferences.
  if (!air || air.metadata.deletionTimestamp) {
    d.ears.close({ namespace: key.namespace, air: key.name });
    d.lastHeardWrite.delete(id);
    return undefined;
  }
  const image = d.image;

  const spec = withDefaults(air.spec, image);
  const desired = render(air, spec);
  const observed: Record<'deployment' | 'service', KubeObject | undefined> = {
    deployment: undefined,
    service: undefined,
  };
  const conflicts: string[] = [];
  const created: string[] = [];

  // The two children are independent: converge them side by side.
  const children = [
    ['deployment', CORE.deployment, desired.deployment],
    ['service', CORE.service, desired.service],
  ] as const;
  await Promise.all(
    children.map(async ([which, type, obj]) => {
      const r = await applyOwned(ctx, air, type, obj);
      if ('conflict' in r) return void conflicts.push(r.conflict); // never take over someone else's
      observed[which] = r.object;
      if (r.created) created.push(`${type.kind} ${obj.metadata.name}`);
    }),
  );
  conflicts.sort();
  created.sort();
  if (created.length)
    void ctx.recorder.record(air, 'Normal', 'Created', `Created ${created.join(' and ')}`, 'Create');

  // Listen to the air (not to someone else's Service): its census goes into status.heard.
  const ref = { namespace: key.namespace, air: key.name, port: spec.port };
  let heard: AirHeard | undefined;
  if (conflicts.length) d.ears.close(ref);
  else {
    // A station that just opened (a new leader) has heard nobody yet: keep what the status says
    // until it has listened for a full window, so the air does not seem to go silent.
    // The station opens once the relay is ready, not with the Service (AirEars.mayListen).
    const last = (air.status as { heard?: AirHeard } | undefined)?.heard;
    if (d.ears.mayListen(ref, relayReady(observed.deployment))) {
      const h = d.ears.hear(ref);
      heard = h.listeningMs < LIMITS.hearWindowMs && last ? last : h.heard;
    } else heard = last;
  }

  const now = Date.now();
  const status = computeStatus(air, spec, observed.deployment, conflicts, new Date(now), heard);
  // A change in what is heard alone is written at most every few seconds; anything else at once.
  const sinceHeardWrite = now - (d.lastHeardWrite.get(id) ?? 0);
  const onlyHeard = isSubset({ ...status, heard: air.status?.heard }, air.status ?? {});
  if (onlyHeard && sinceHeardWrite < LIMITS.minHeardWriteMs)
    return { requeueAfterMs: LIMITS.minHeardWriteMs - sinceHeardWrite };
  const changed = await ctx.applyStatusIfChanged(
    OBERONAIR,
    air,
    status as unknown as Record<string, unknown>,
  );
  if (changed && onlyHeard) d.lastHeardWrite.set(id, now);
  if (changed && conflicts.length) {
    void ctx.recorder.record(air, 'Warning', 'NameConflict', conflictMessage(conflicts));
  }
  const failing = status.conditions?.find(
    (c) => c.type === 'Degraded' && c.status === 'True' && c.reason === 'RelayFailing',
  );
  if (changed && failing) void ctx.recorder.record(air, 'Warning', 'RelayFailing', failing.message);
  return {
    requeueAfterMs: conflicts.length
      ? LIMITS.conflictRecheckMs
      : pollPeriod(LIMITS.hearPollMs, ctx.primary.size, LIMITS.hearPollPerAirMs),
  };
}

// --- render (pure) -----------------------------------------------------------------------------

export interface AirSettings {
  loss: number;
  port: number;
  image: string;
  resources: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
}

export function withDefaults(spec: Partial<OberonAirSpecT> | undefined, image: string): AirSettings {
  return {
    loss: spec?.loss ?? AIR_DEFAULTS.loss,
    port: spec?.port ?? AIR_DEFAULTS.port,
    image: spec?.image || image,
    resources: spec?.resources ?? structuredClone(AIR_DEFAULTS.resources),
  };
}

export function childName(air: KubeObject): string {
  return `rk-air-${air.metadata.name}`;
}

export function airLabels(air: KubeObject): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'retrokube-air',
    'app.kubernetes.io/instance': air.metadata.name as string,
  };
}

/** The relay's arguments to the image's `retrokube` entrypoint: `retrokube air relay --port P --loss L`. */
export function relayArgs(s: AirSettings): string[] {
  return [
    'air',
    'relay',
    '--port',
    String(s.port),
    '--loss',
    String(s.loss),
    '--metrics-port',
    String(LIMITS.relayMetricsPort),
  ];
}

export function render(air: OberonAir, s: AirSettings): { deployment: KubeObject; service: KubeObject } {
  const name = childName(air);
  const namespace = air.metadata.namespace;
  const selector = airLabels(air);
  const metadata = {
    name,
    namespace,
    labels: {
      ...selector,
      'app.kubernetes.io/component': 'air-relay',
      'app.kubernetes.io/managed-by': MANAGED_BY,
    },
    ownerReferences: [controllerRef(air)],
  };
  const deployment: KubeObject = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      // One relay, replaced not rolled: the peer list lives in memory, two relays would split the air.
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: selector },
      template: {
        metadata: { labels: { ...selector, 'app.kubernetes.io/component': 'air-relay' } },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: restrictedPodSecurity({ user: LIMITS.relayUid, group: LIMITS.relayUid }),
          containers: [
            {
              name: 'relay',
              image: s.image,
              // The image's entrypoint is the retrokube CLI: the arguments pick the verb.
              args: relayArgs(s),
              ports: [
                { name: 'air', containerPort: s.port, protocol: 'UDP' },
                { name: 'metrics', containerPort: LIMITS.relayMetricsPort, protocol: 'TCP' },
              ],
              // UDP cannot be probed; the relay's /metrics answers once its socket is bound.
              readinessProbe: { httpGet: { path: '/metrics', port: 'metrics' }, periodSeconds: 10 },
              resources: s.resources,
              securityContext: restrictedContainerSecurity({ readOnlyRoot: true }),
            },
          ],
        },
      },
    },
  };
  const service: KubeObject = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'ClusterIP',
      selector,
      ports: [{ name: 'air', port: s.port, targetPort: 'air', protocol: 'UDP' }],
    },
  };
  return { deployment, service };
}

// --- status (pure) -----------------------------------------------------------------------------

function conflictMessage(conflicts: string[]): string {
  return `${conflicts.join(' and ')} already exist${conflicts.length === 1 ? 's' : ''} and belong${conflicts.length === 1 ? 's' : ''} to someone else; rename this OberonAir or remove them`;
}

/** Whether the relay Deployment has a ready pod. */
function relayReady(deployment: KubeObject | undefined): boolean {
  return (((deployment?.status ?? {}) as DeploymentStatus).readyReplicas ?? 0) >= 1;
}

export function computeStatus(
  air: OberonAir,
  s: AirSettings,
  deployment: KubeObject | undefined,
  conflicts: string[],
  now: Date = new Date(),
  heard?: AirHeard,
): OberonAirStatusT {
  const generation = air.metadata.generation;
  const ds = (deployment?.status ?? {}) as DeploymentStatus;
  const readyReplicas = ds.readyReplicas ?? 0;
  const depGen = deployment?.metadata.generation ?? 0;
  const rolledOut = !!deployment && (ds.observedGeneration ?? 0) >= depGen && (ds.updatedReplicas ?? 0) >= 1;
  const failed = ds.conditions?.find(
    (c) =>
      (c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded') ||
      (c.type === 'ReplicaFailure' && c.status === 'True'),
  );
  const ready = !conflicts.length && rolledOut && readyReplicas >= 1;

  let conds: ConditionInput[];
  if (conflicts.length) {
    const message = conflictMessage(conflicts);
    conds = [
      { type: 'Ready', status: 'False', reason: 'NameConflict', message },
      { type: 'Progressing', status: 'False', reason: 'NameConflict', message },
      { type: 'Degraded', status: 'True', reason: 'NameConflict', message },
    ];
  } else {
    const failMsg = failed
      ? `relay Deployment: ${failed.reason ?? failed.type}: ${failed.message ?? ''}`.trim()
      : '';
    conds = [
      ready
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'RelayReady',
            message: `the air is up at ${address(air, s)}`,
          }
        : {
            type: 'Ready',
            status: 'False',
            reason: failed ? 'RelayFailing' : 'RelayNotReady',
            message: failed ? failMsg : 'waiting for the relay pod to become ready',
          },
      ready || failed
        ? { type: 'Progressing', status: 'False', reason: ready ? 'RolledOut' : 'RelayFailing', message: '' }
        : {
            type: 'Progressing',
            status: 'True',
            reason: rolledOut ? 'WaitingForRelay' : 'RollingOut',
            message: rolledOut ? 'relay pod is starting' : 'relay Deployment is being rolled out',
          },
      failed
        ? { type: 'Degraded', status: 'True', reason: 'RelayFailing', message: failMsg }
        : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' },
    ];
  }
  return {
    observedGeneration: generation,
    address: address(air, s),
    readyReplicas,
    // The rate already reported stands while the air only jitters: a steady air writes nothing.
    ...(heard
      ? {
          heard: {
            ...heard,
            framesPerSecond: steadyRate(air.status?.heard?.framesPerSecond, heard.framesPerSecond),
          },
        }
      : {}),
    conditions: setConditions(air.status?.conditions, conds, generation, now),
  };
}

export function address(air: KubeObject, s: AirSettings): string {
  return `${childName(air)}.${air.metadata.namespace}.svc.cluster.local:${s.port}`;
}
