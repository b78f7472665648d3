// OberonKube controller: one OberonAir, N node OberonMachines and one plane OberonMachine with
// the right boot commands, a generated key Secret when none is named, and a status made of what
// the operator hears on the air (never by asking the plane).
//
// Order: the air and the nodes first; the plane — whose boot commands `Kube.Ensure` the
// deployments — only once every node is heard on the air (or its machine is Ready, or a grace
// period passed), so the first pods spread over all nodes instead of landing on the first joiner.
// Deployments reach a running plane live (pod runtime): the operator keeps them as `Kube.Apply`
// lines in a ConfigMap the plane's pod mounts, and the emulator sends each new or changed line to
// the serial port — a changed `web 6 Ticker2` is a rolling update, and the plane restarts only when
// its role or key changes. The lines are the whole desired state, so a plane that restarts gets
// them again. A kubevirt plane has no kubelet volume: the operator sends it the same lines through
// KubeVirt's serial console (oberonkube-plane-console.ts), again for every new VMI.
//
// Reads top to bottom: watch setup, reconcile, the events it tells. What it renders (settings, key,
// children) is in oberonkube-render.ts, the status it computes in oberonkube-status.ts (both pure).
import { randomBytes } from 'node:crypto';
import { type ClusterView, VIEW_LIMITS } from '../air/view.ts';
import { GROUP } from '../api/group.ts';
import { AIR_DEFAULTS } from '../api/oberonair-limits.ts';
import { kubeNodeName } from '../api/oberonkube-boot.ts';
import { ApiError, CORE, type KubeObject, type ResourceType } from '../runtime/client.ts';
import { type Condition, isTrue } from '../runtime/conditions.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import { controllerRef, isControlledBy, MANAGED_BY } from '../runtime/objects.ts';
import { pollPeriod } from '../runtime/poll.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { logger } from '../util/log.ts';
import { type AirAddress, AirEars } from './air-ears.ts';
import { keyReadProblem } from './key-access.ts';
import { OBERONAIR } from './oberonair.ts';
import { PlaneConsole } from './oberonkube-plane-console.ts';
import { derivedKey, kubeAirName, kubeSettings, type OberonKube, renderKube } from './oberonkube-render.ts';
import {
  appliedCondition,
  computeKubeStatus,
  heardFullWindow,
  nodesCannotStart,
  planeSays,
} from './oberonkube-status.ts';
import { OBERONMACHINE } from './oberonmachine.ts';
import { applyOwned, ourKind, primaryRules } from './owned.ts';
import { PDB } from './placement.ts';

export const LIMITS = {
  pollMs: 2_000, // how often the heard view is turned into status (reads only; writes are rate-limited)
  // ...or this per cluster if longer (runtime/poll.ts): ~1 ms a poll, so the polls of any number
  // of clusters stay near 1/8 of a core (1,000 clusters: every 8 s).
  pollPerClusterMs: 8,
  minStatusIntervalMs: 5_000, // at most one status write per cluster this often while the air changes
  planeGraceMs: 120_000, // start the plane anyway if the nodes are not all heard by then
  forgedWindowMs: 60_000, // forged frames this recent keep the cluster Degraded
  // A new station (an operator that just started or took the lead) has heard nobody yet: until it
  // has listened for a full node TTL plus one heartbeat period, every node would look NotReady.
  // Meanwhile the last written status stands and no Event is sent.
  hearWindowMs: VIEW_LIMITS.TTL_MS + 1_000,
  // ...and long enough to hear the plane name every pod's image: it announces one bound pod's spec
  // about every second, round-robin (kube-on-oberon spec §3.5). Until every pod id heard has its
  // image (or twice that round per id passed, for a loaded machine), the last status still stands
  // — so a new leader never writes '?' where the status knew the image.
  specRoundPerPodMs: 2_000,
} as const;

const log = logger('oberonkube');

export const OBERONKUBE: ResourceType = ourKind('oberonkubes', 'OberonKube');

/**
 * Secrets: `create` only, for the generated key. The operator never reads a Secret through its
 * ClusterRole; a key named by keySecretRef is read by a namespaced GET that succeeds only where
 * the user granted it (a Role in that namespace) — otherwise status says the air cannot be judged.
 */
export const OBERONKUBE_RBAC: PolicyRule[] = [
  ...primaryRules('oberonkubes'),
  // The air goes with its cluster through the garbage collector: no delete needed (nor granted).
  {
    apiGroups: [GROUP],
    resources: ['oberonairs'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update'],
  },
  // Machines are deleted when the cluster scales down.
  {
    apiGroups: [GROUP],
    resources: ['oberonmachines'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'],
  },
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  // The node machines' disruption budget; it goes with the cluster through the garbage collector.
  {
    apiGroups: ['policy'],
    resources: ['poddisruptionbudgets'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update'],
  },
  // The plane's live deployments; they go with the cluster through the garbage collector.
  {
    apiGroups: [''],
    resources: ['configmaps'],
    verbs: ['get', 'list', 'watch', 'create', 'patch', 'update'],
  },
  // A kubevirt plane's live deployments: its VMI (which one runs now) and its serial console.
  { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['get'] },
  { apiGroups: ['subresources.kubevirt.io'], resources: ['virtualmachineinstances/console'], verbs: ['get'] },
];

export interface KubeControllerOptions {
  /** Where the relay of an air is heard: default its Service, rk-air-<air>.<ns>.svc.cluster.local. */
  airAddress?: AirAddress;
  /** Secret from which generated keys are derived (HMAC of the object's uid), so a restart recomputes them. */
  keySeed?: string;
  /** The operator's ears, shared with the OberonAir controller: one station per air. */
  ears?: AirEars;
}

// --- watch setup ---------------------------------------------------------------------------------

export function oberonKubeController(
  opts: KubeControllerOptions = {},
): ControllerDefinition & { ears: AirEars } {
  const ears = opts.ears ?? new AirEars({ address: opts.airAddress });
  const seed = opts.keySeed || randomBytes(32).toString('hex');
  const memo = new Map<string, Memo>();
  const planeConsole = new PlaneConsole();
  return {
    name: 'oberonkube',
    primary: OBERONKUBE,
    owns: [OBERONAIR, OBERONMACHINE, CORE.configMap, PDB],
    ears,
    reconcile: (ctx, key) => reconcile(ctx, key, { ears, seed, memo, planeConsole }),
  };
}

interface Memo {
  lastWriteMs: number;
  secretCreated: boolean;
  forged: number;
  forgedAtMs: number;
  ready: Map<string, boolean>;
  paused: boolean;
  /** This station has heard a full window for the cluster (status and Events from the air now). */
  heardWindow: boolean;
  /** Forged frames counted before this station listened (the last status's count): kept, not reset. */
  forgedBase: number;
  /** What status last quoted of the plane's refusal ('' = none): an Event only when it changes. */
  refused: string;
  /** The same for what the kubelets could not start. */
  cannotStart: string;
}

interface Deps {
  ears: AirEars;
  seed: string;
  memo: Map<string, Memo>;
  planeConsole: PlaneConsole;
}

// --- reconcile -----------------------------------------------------------------------------------

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  d: Deps,
): Promise<ReconcileResult | undefined> {
  const id = `${key.namespace}/${key.name}`;
  const k = ctx.cached<OberonKube>(OBERONKUBE, key.namespace, key.name);
  const airRef = { namespace: key.namespace, air: kubeAirName(key.name) };
  if (!k || k.metadata.deletionTimestamp) {
    d.ears.forget(airRef, id);
    // The air's own controller stops listening when the air goes; if it never existed, stop here.
    if (!ctx.cached(OBERONAIR, airRef.namespace, airRef.air)) d.ears.close(airRef);
    d.memo.delete(id);
    d.planeConsole.forget(id);
    return undefined;
  }
  const forgedBefore = lastForged(k);
  const memo = d.memo.get(id) ?? {
    lastWriteMs: 0,
    secretCreated: false,
    forged: forgedBefore,
    forgedBase: forgedBefore,
    forgedAtMs: 0,
    // What the last status said (another operator, or this one before a restart): a node already
    // known Ready is not announced as joined again.
    ready: new Map(lastNodeTable(k).map((r) => [r.name, r.ready] as const)),
    paused: false,
    heardWindow: false,
    refused: lastApplied(k, 'PlaneRefused'),
    cannotStart: lastApplied(k, 'NodesCannotStart'),
  };
  d.memo.set(id, memo);
  const s = kubeSettings(k);
  const uid = k.metadata.uid as string;

  // The key: derived and written once (create-only), or read from the named Secret by a namespaced GET.
  let keyHex: string | undefined;
  let keyProblem = '';
  let keyInvalid = false;
  if (s.generatedKey) {
    keyHex = derivedKey(d.seed, uid);
    if (!memo.secretCreated) {
      try {
        await ctx.client.create(CORE.secret, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            name: s.keySecretRef.name,
            namespace: s.namespace,
            labels: { 'app.kubernetes.io/instance': s.name, 'app.kubernetes.io/managed-by': MANAGED_BY },
            ownerReferences: [controllerRef(k)],
          },
          type: 'Opaque',
          stringData: { key: keyHex },
        } as KubeObject);
        void ctx.recorder.record(
          k,
          'Normal',
          'KeyGenerated',
          `Generated a random KubeNet key in Secret ${s.keySecretRef.name}`,
          'Create',
        );
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 409)) throw err;
      }
      memo.secretCreated = true;
    }
  } else {
    try {
      const sec = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(
        CORE.secret,
        s.namespace,
        s.keySecretRef.name,
      );
      const raw = Buffer.from(sec.data?.[s.keySecretRef.key] ?? '', 'base64')
        .toString('utf8')
        .trim();
      if (/^[0-9a-fA-F]{0,16}$/.test(raw)) keyHex = raw.toLowerCase();
      else {
        keyInvalid = true;
        keyProblem = `Secret ${s.keySecretRef.name} entry ${s.keySecretRef.key} is not 0–16 hex digits (0-9, a-f): put a key such as 00c0ffee00c0ffee there`;
      }
    } catch (err) {
      keyProblem = keyReadProblem(err, s.namespace, s.keySecretRef); // names the Role to grant on a 403
    }
  }

  // Listen first: the plane waits until the nodes are heard.
  const airObj = ctx.cached<KubeObject & { spec?: { port?: number }; status?: { conditions?: Condition[] } }>(
    OBERONAIR,
    s.namespace,
    kubeAirName(s.name),
  );
  const port = airObj?.spec?.port ?? AIR_DEFAULTS.port;
  // The station opens once the relay is up (its OberonAir Ready), not when the air is created
  // (AirEars.mayListen: the cluster's DNS would cache the relay's name as absent for 30 s).
  const relayUp = d.ears.mayListen(airRef, isTrue(airObj?.status?.conditions, 'Ready'));
  // The air's station (shared with the OberonAir controller); this cluster's view verified with its key.
  const heard =
    keyHex === undefined || !relayUp
      ? undefined
      : d.ears.cluster({ ...airRef, port }, id, { cluster: s.cluster, keyHex });
  if (keyHex === undefined) d.ears.forget(airRef, id);

  const nodeNames = Array.from({ length: s.nodes }, (_, i) => kubeNodeName(i));
  const existingPlane = ctx.cached(OBERONMACHINE, s.namespace, `${s.name}-plane`);
  const nodesHeard = !!heard && nodeNames.every((n) => heard.view.nodes.some((v) => v.name === n && v.ready));
  const nodesRunning = nodeNames.every((n) => {
    const m = ctx.cached<KubeObject & { status?: { ready?: boolean } }>(
      OBERONMACHINE,
      s.namespace,
      `${s.name}-${n}`,
    );
    return m?.status?.ready === true;
  });
  const age = Date.now() - Date.parse(k.metadata.creationTimestamp ?? new Date().toISOString());
  const withPlane = !!existingPlane || nodesHeard || nodesRunning || age > LIMITS.planeGraceMs;

  const desired = renderKube(k, s, withPlane, planeHoldOf(existingPlane) ?? s.nodes);
  const conflicts: string[] = [];
  for (const [type, obj] of [
    [OBERONAIR, desired.air] as const,
    ...(desired.liveCommands ? [[CORE.configMap, desired.liveCommands] as const] : []),
    ...desired.machines.map((m) => [OBERONMACHINE, m] as const),
    [PDB, desired.budget] as const,
  ]) {
    const r = await applyOwned(ctx, k, type, obj); // never takes over someone else's object
    if ('conflict' in r) conflicts.push(r.conflict);
    else if (r.created)
      void ctx.recorder.record(k, 'Normal', 'Created', `Created ${type.kind} ${obj.metadata.name}`, 'Create');
  }
  // Scaling down: our machines that are no longer desired go.
  const want = new Set(desired.machines.map((m) => m.metadata.name));
  for (const m of ctx.owned(OBERONMACHINE).controlledBy(uid)) {
    if (
      isControlledBy(m, uid) &&
      !want.has(m.metadata.name) &&
      !(m.metadata.name === `${s.name}-plane` && !withPlane)
    ) {
      await ctx.client.delete(OBERONMACHINE, s.namespace, m.metadata.name as string).catch((err) => {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      });
      void ctx.recorder.record(
        k,
        'Normal',
        'Removed',
        `Removed OberonMachine ${m.metadata.name} (nodes: ${s.nodes})`,
        'Delete',
      );
    }
  }

  if (s.planeRuntime === 'kubevirt' && existingPlane) {
    const plane = heard && {
      heard: heard.view.plane.heard,
      arrived: appliedCondition(s, heard.view).reason !== 'NotHeardRunning',
    };
    await d.planeConsole.sync(ctx, k, s, id, plane);
  }

  // Status from the air, at most one write per cluster every few seconds — but not before the
  // station has heard a full window: until then the last status stands (a new leader must not
  // flap every cluster to 0/N nodes) and no Event is sent.
  const now = Date.now();
  if (heard && !conflicts.length && k.status !== undefined && !heardFullWindow(heard, LIMITS))
    return { requeueAfterMs: pollEvery(ctx) };
  if (heard && !memo.heardWindow) {
    memo.heardWindow = true;
    log.info(
      { kube: id, listeningMs: heard.listeningMs, nodes: heard.view.readyNodes, running: heard.view.running },
      'Heard a full window of the air: status from what is heard now',
    );
  }
  const forgedFrames = memo.forgedBase + (heard?.view.counts.forged ?? 0);
  if (heard) emitAirEvents(ctx, k, memo, heard.view, nodeNames, forgedFrames, now);
  const status = computeKubeStatus(
    k,
    s,
    {
      view: heard?.view,
      keyProblem,
      keyInvalid,
      notListening: relayUp
        ? ''
        : `waiting for OberonAir ${airRef.air} to be Ready (its relay) before listening to the air`,
      conflicts,
      withPlane,
      forgedFrames,
      forgedRecent: now - memo.forgedAtMs < LIMITS.forgedWindowMs && memo.forged > 0,
    },
    new Date(now),
  );
  const wait = memo.lastWriteMs + LIMITS.minStatusIntervalMs - now;
  if (wait <= 0) {
    if (await ctx.applyStatusIfChanged(OBERONKUBE, k, status)) memo.lastWriteMs = now;
  }
  const poll = pollEvery(ctx);
  return { requeueAfterMs: wait > 0 ? Math.min(wait, poll) : poll };
}

/** The poll period of one cluster, given how many there are (runtime/poll.ts). */
const pollEvery = (ctx: ReconcileContext): number =>
  pollPeriod(LIMITS.pollMs, ctx.primary.size, LIMITS.pollPerClusterMs);

function lastForged(k: OberonKube): number {
  const n = (k.status as { forgedFrames?: unknown } | undefined)?.forgedFrames;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

function lastNodeTable(k: OberonKube): Array<{ name: string; ready: boolean }> {
  const table = (k.status as { nodeTable?: unknown } | undefined)?.nodeTable;
  if (!Array.isArray(table)) return [];
  return table
    .filter((r): r is { name: string; ready?: unknown } => typeof r?.name === 'string')
    .map((r) => ({ name: r.name, ready: r.ready === true }));
}

/** What the last status's Applied condition quoted for `reason` (PlaneRefused, NodesCannotStart), or ''. */
function lastApplied(k: OberonKube, reason: string): string {
  const conds = (k.status as { conditions?: Array<{ type?: string; reason?: string; message?: string }> })
    ?.conditions;
  const c = conds?.find((x) => x.type === 'Applied');
  return c?.reason === reason ? (c.message ?? '') : '';
}

/** The node count in an existing (kubevirt) plane's `Kube.Hold`, kept so a scale does not restart it. */
function planeHoldOf(plane: KubeObject | undefined): number | undefined {
  const commands = (plane as { spec?: { commands?: unknown } } | undefined)?.spec?.commands;
  const m = typeof commands === 'string' ? /(?:^|;)Kube\.Hold (\d+)(?:;|$)/.exec(commands) : null;
  return m ? Number(m[1]) : undefined;
}

/** Events for Ready/NotReady transitions, evictions paused/resumed and forged frames heard. */
function emitAirEvents(
  ctx: ReconcileContext,
  k: OberonKube,
  memo: Memo,
  v: ClusterView,
  expected: string[],
  forgedFrames: number,
  now: number,
): void {
  for (const n of v.nodes) {
    const was = memo.ready.get(n.name);
    if (was === true && !n.ready && !expected.includes(n.name))
      void ctx.recorder.record(
        k,
        'Normal',
        'NodeLeft',
        `Node ${n.name} left (not in spec.nodes; no heartbeat for 5 s)`,
      );
    else if (was !== undefined && was !== n.ready)
      void ctx.recorder.record(
        k,
        n.ready ? 'Normal' : 'Warning',
        n.ready ? 'NodeReady' : 'NodeNotReady',
        `Node ${n.name} is ${n.ready ? 'Ready again (heartbeats heard)' : 'NotReady (no heartbeat for 5 s)'}`,
      );
    if (was === undefined && n.ready)
      void ctx.recorder.record(k, 'Normal', 'NodeReady', `Node ${n.name} joined (heartbeats heard)`);
    memo.ready.set(n.name, n.ready);
  }
  const total = Math.max(expected.length, v.nodes.length);
  const notReady =
    v.nodes.filter((n) => !n.ready).length +
    expected.filter((e) => !v.nodes.some((n) => n.name === e) && memo.ready.has(e)).length;
  const heardAny = v.nodes.length > 0;
  const paused = heardAny && (notReady === total || (total >= 3 && notReady / total >= 0.55));
  if (paused !== memo.paused) {
    void ctx.recorder.record(
      k,
      paused ? 'Warning' : 'Normal',
      paused ? 'EvictionsPaused' : 'EvictionsResumed',
      paused
        ? `${notReady} of ${total} nodes are NotReady: the plane pauses evictions (zone disruption)`
        : 'enough nodes are Ready again: evictions resume',
    );
    memo.paused = paused;
  }
  // What the air says is refused: a Warning when the words change, a Normal Event when they stop.
  const said = [
    {
      key: 'refused',
      words: planeSays(v),
      warn: 'PlaneRefused',
      ok: 'PlaneAccepts',
      over: 'the plane no longer says it refuses anything',
    },
    {
      key: 'cannotStart',
      words: nodesCannotStart(v),
      warn: 'NodesCannotStart',
      ok: 'NodesStartAll',
      over: 'no kubelet says it cannot start a pod any more',
    },
  ] as const;
  for (const s of said) {
    if (s.words === memo[s.key]) continue;
    const message = s.words ? `${s.words} (said on the air)` : s.over;
    void ctx.recorder.record(k, s.words ? 'Warning' : 'Normal', s.words ? s.warn : s.ok, message);
    memo[s.key] = s.words;
  }
  if (forgedFrames > memo.forged) {
    void ctx.recorder.record(
      k,
      'Warning',
      'ForgedFrames',
      `${forgedFrames - memo.forged} frame(s) with cluster ${v.cluster}'s tag and a bad MAC heard on the air (${forgedFrames} in all)`,
    );
    memo.forged = forgedFrames;
    memo.forgedAtMs = now;
  }
}
