// SheetCluster controller: renders the apiserver (Deployment + Service, the workbook's PVC), the
// node agents (a StatefulSet) and the generated token/signing Secrets; applies spec.deployments
// through the apiserver's contract; and writes a status read from the sheet (never from the pods).
// Reads top to bottom: watch setup, reconcile, the edges it calls; what it renders is in
// sheetcluster-render.ts, what it reads of the sheet in sheetcluster-observe.ts, its status (pure) in
// sheetcluster-status.ts.
//
// Secrets: the operator never reads a Secret through its ClusterRole. Generated values are derived
// from its seed and the object's uid (it recomputes them); a Secret the spec names is read by a
// namespaced GET that works only where the user granted it — otherwise status says what to grant.
// Nothing is ever deleted for bad input: a missing Secret, a PVC that never binds or an apiserver
// that does not answer become Degraded with what to do, and the children stay as they are.
import { randomBytes } from 'node:crypto';
import type { SheetDeploymentT } from '../api/sheetcluster.ts';
import { ApiError, CORE, type KubeObject, type ResourceType } from '../runtime/client.ts';
import type {
  ControllerDefinition,
  InformerFilter,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import { hashOf } from '../runtime/objects.ts';
import { CHILD_VERBS, type PolicyRule } from '../runtime/rbac.ts';
import { secretReadProblem, secretText } from './key-access.ts';
import { defaultImage } from './oberonair.ts';
import { KINDS_OWNED } from './oberonmachine.ts';
import { CORE_EVENT } from './oberonmachine-observe.ts';
import { applyOwned, ourKind, primaryRules } from './owned.ts';
import { PDB } from './placement.ts';
import {
  applyDeployments,
  deploymentsToApply,
  readSheet,
  type SheetRead,
  type SheetSummary,
  summarize,
} from './sheetcluster-observe.ts';
import {
  derivedSecret,
  renderSheetCluster,
  type SecretRef,
  type SheetClusterObject,
  type SheetSettings,
  serviceUrl,
  sheetChild,
  sheetNodeName,
  sheetSettings,
} from './sheetcluster-render.ts';
import { computeSheetStatus } from './sheetcluster-status.ts';

export const LIMITS = {
  pollMs: 5_000, // the sheet is read this often per cluster (five GETs; one while it does not answer)
  minStatusIntervalMs: 5_000, // at most one status write per cluster this often
  startGraceMs: 90_000, // an apiserver that has never answered is Starting, not Degraded, this long
  claimGraceMs: 60_000, // a workbook PVC Pending longer than this is reported (it may never bind)
  recentEventMs: 300_000, // pod events this recent explain an apiserver that does not answer
  // A failing probe while a pod starts is normal for a few seconds: it is a problem only when it
  // has gone on this long (a crash loop's BackOff or a missing Secret is one at once).
  probeGraceMs: 60_000,
  secretRecheckMs: 60_000, // a Secret the spec names is read again this often (one GET)
} as const;

export const SHEETCLUSTER: ResourceType = ourKind('sheetclusters', 'SheetCluster');

/**
 * Secrets: `create` only (the generated token and signing key). Children: Deployments, Services,
 * StatefulSets, PVCs (never deleted by this controller: scale-down of nodes is the StatefulSet's).
 */
export const SHEETCLUSTER_RBAC: PolicyRule[] = [
  ...primaryRules('sheetclusters'),
  { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: CHILD_VERBS },
  { apiGroups: [''], resources: ['services', 'persistentvolumeclaims'], verbs: CHILD_VERBS },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: CHILD_VERBS },
  { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  { apiGroups: [''], resources: ['events'], verbs: ['list', 'watch'] },
];

/** Docker's socket, where Docker puts it: the only host paths `dockerSocket` may name by default. */
export const DOCKER_SOCKETS: readonly string[] = ['/var/run/docker.sock', '/run/docker.sock'];

export interface SheetControllerOptions {
  image?: string;
  /** Seed of generated tokens and signing keys (as for OberonKube keys); random per process if absent. */
  keySeed?: string;
  /** Where the operator reaches a cluster's apiserver: default its Service. Tests point it at a local process. */
  sheetsAddress?: (namespace: string, cluster: string) => string;
  /**
   * Host paths `spec.dockerSocket` may name (#28.10): default only Docker's own socket. Any host
   * path becomes a hostPath mount in the agent pods (the containerd socket would hand them the node),
   * so others need the operator's opt-in `--docker-sockets PATH,...`.
   */
  dockerSockets?: readonly string[];
  /** Shorter waits for tests (a PVC that never binds is reported after claimGraceMs). */
  timing?: { pollMs?: number; startGraceMs?: number; claimGraceMs?: number; secretRecheckMs?: number };
}

interface Memo {
  lastWriteMs: number;
  secretsCreated: string; // hash of the generated Secrets last created
  lastReadMs: number;
  inflight?: Promise<void>; // the read (and apply) under way
  read?: SheetRead;
  everAnswered: boolean;
  nodeStatus: Map<string, string>;
  userSecrets: Map<string, { atMs: number; value?: string; problem?: string }>;
  refusedHash: string; // deployments the apiserver refused as they are now: not sent again
  applyProblem: string;
}

// --- watch setup ---------------------------------------------------------------------------------

const POD_PREFIX = sheetChild('');

/** Keeps Pod events of our apiserver and agent pods (why a pod cannot start). */
export const SHEET_EVENT_FILTER: InformerFilter = {
  id: 'sheetcluster-pod-events',
  keep: (e) => {
    const io = (e as PodEvent).involvedObject;
    return io?.kind === 'Pod' && (io.name ?? '').startsWith(POD_PREFIX);
  },
};

interface PodEvent extends KubeObject {
  involvedObject?: { kind?: string; name?: string; namespace?: string };
  reason?: string;
  message?: string;
  type?: string;
  lastTimestamp?: string;
  eventTime?: string;
  firstTimestamp?: string;
}

export function sheetClusterController(opts: SheetControllerOptions = {}): ControllerDefinition {
  const image = opts.image ?? defaultImage();
  const seed = opts.keySeed || randomBytes(32).toString('hex');
  const memo = new Map<string, Memo>();
  return {
    name: 'sheetcluster',
    primary: SHEETCLUSTER,
    owns: [CORE.deployment, CORE.service, KINDS_OWNED.statefulSet, KINDS_OWNED.pvc, PDB],
    watches: [
      {
        type: CORE_EVENT,
        filter: SHEET_EVENT_FILTER,
        map: (e, clusters) => {
          const name = (e as PodEvent).involvedObject?.name ?? '';
          const ns = e.metadata.namespace ?? '';
          const owner = clusters
            .list(ns)
            .map((c) => c.metadata.name as string)
            .filter((c) => name.startsWith(`${sheetChild(c)}-`))
            .sort((a, b) => b.length - a.length)[0];
          return owner ? [`${ns}/${owner}`] : [];
        },
      },
    ],
    reconcile: (ctx, key) =>
      reconcile(ctx, key, {
        image,
        seed,
        memo,
        address: opts.sheetsAddress,
        dockerSockets: opts.dockerSockets ?? DOCKER_SOCKETS,
        t: {
          pollMs: LIMITS.pollMs,
          startGraceMs: LIMITS.startGraceMs,
          claimGraceMs: LIMITS.claimGraceMs,
          secretRecheckMs: LIMITS.secretRecheckMs,
          ...opts.timing,
        },
      }),
  };
}

interface Deps {
  image: string;
  seed: string;
  memo: Map<string, Memo>;
  address?: (namespace: string, cluster: string) => string;
  dockerSockets: readonly string[];
  t: { pollMs: number; startGraceMs: number; claimGraceMs: number; secretRecheckMs: number };
}

// --- reconcile -----------------------------------------------------------------------------------

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  d: Deps,
): Promise<ReconcileResult | undefined> {
  const id = `${key.namespace}/${key.name}`;
  const c = ctx.cached<SheetClusterObject>(SHEETCLUSTER, key.namespace, key.name);
  if (!c || c.metadata.deletionTimestamp) {
    d.memo.delete(id); // the garbage collector removes the children through their ownerReferences
    return undefined;
  }
  const memo: Memo = d.memo.get(id) ?? {
    lastWriteMs: 0,
    secretsCreated: '',
    lastReadMs: 0,
    everAnswered: false,
    nodeStatus: new Map(),
    userSecrets: new Map(),
    refusedHash: '',
    applyProblem: '',
  };
  d.memo.set(id, memo);
  const problems: string[] = [];
  const { s, refused } = allowedDockerSocket(sheetSettings(c, d.image), d.dockerSockets);
  const uid = c.metadata.uid as string;
  const now = Date.now();

  // The token and the signing key: derived (generated Secrets), or read from the Secrets named.
  const secretValue = async (ref: SecretRef, generated: boolean, purpose: 'token' | 'signing') => {
    if (generated) return derivedSecret(d.seed, purpose, uid);
    const r = await readUserSecret(ctx, memo, s.namespace, ref, purpose, now, d.t.secretRecheckMs);
    if (r.problem) problems.push(r.problem);
    return r.value;
  };
  const token = await secretValue(s.token, s.tokenGenerated, 'token');
  const signingKey = await secretValue(s.signingKey, s.signingKeyGenerated, 'signing');

  const desired = renderSheetCluster(c, s, { token: token ?? '', signingKey: signingKey ?? '' });
  // Generated Secrets: create-only (the operator may not read or patch Secrets), once per content.
  const secretsHash = hashOf(desired.secrets.map((x) => x.metadata.name));
  if (desired.secrets.length && memo.secretsCreated !== secretsHash) {
    for (const sec of desired.secrets) {
      try {
        await ctx.client.create(CORE.secret, sec);
        void ctx.recorder.record(
          c,
          'Normal',
          'SecretGenerated',
          `Generated Secret ${sec.metadata.name}`,
          'Create',
        );
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 409)) throw err;
      }
    }
    memo.secretsCreated = secretsHash;
  }

  const conflicts: string[] = [];
  const children: Array<[ResourceType, KubeObject | undefined]> = [
    [KINDS_OWNED.pvc, desired.pvc],
    [CORE.service, desired.service],
    [CORE.deployment, desired.deployment],
    [KINDS_OWNED.statefulSet, desired.agents],
    [PDB, desired.budget],
  ];
  let pvc: KubeObject | undefined;
  for (const [type, obj] of children) {
    if (!obj) continue;
    const r = await applyOwned(ctx, c, type, obj); // never takes over someone else's object
    if ('conflict' in r) conflicts.push(r.conflict);
    else {
      if (type === KINDS_OWNED.pvc) pvc = r.object;
      if (r.created)
        void ctx.recorder.record(
          c,
          'Normal',
          'Created',
          `Created ${type.kind} ${obj.metadata.name}`,
          'Create',
        );
    }
  }

  // The sheet, through the contract, at most every pollMs — in the background, so an apiserver that
  // hangs never holds a reconcile worker; the next reconcile (≤ pollMs later) uses what was read.
  const url = d.address ? d.address(s.namespace, s.name) : serviceUrl(s);
  if (token !== undefined && !memo.inflight && now - memo.lastReadMs >= d.t.pollMs) {
    memo.lastReadMs = now;
    const key = signingKey;
    memo.inflight = (async () => {
      const read = await readSheet(url, token);
      memo.read = read;
      if (read.ok) {
        memo.everAnswered = true;
        if (key !== undefined) await applySpecDeployments(ctx, c, s, memo, url, token, key);
      }
    })()
      .catch((err: unknown) => ctx.log.warn({ err: (err as Error).message }, 'Reading the sheet failed'))
      .finally(() => {
        memo.inflight = undefined;
      });
  }
  if (token === undefined) memo.read = undefined;
  const summary =
    memo.read?.ok === true
      ? summarize(
          memo.read.rows,
          Array.from({ length: s.nodes }, (_, i) => sheetNodeName(i)),
        )
      : undefined;
  if (summary) nodeEvents(ctx, c, memo, summary, s);

  const age = now - Date.parse(c.metadata.creationTimestamp ?? new Date(now).toISOString());
  const status = computeSheetStatus(
    c,
    s,
    {
      conflicts,
      secretProblems: problems,
      notAllowed: refused,
      summary,
      readProblem: memo.read && !memo.read.ok ? memo.read.problem : undefined,
      starting: !memo.everAnswered && age < d.t.startGraceMs,
      // An apiserver that answers has its workbook: a Pending claim matters only while it does not.
      claimPending: memo.read?.ok ? undefined : claimPending(pvc, now, d.t.claimGraceMs),
      podProblems: memo.read?.ok ? [] : podProblems(ctx, s, now),
      applyProblem: memo.applyProblem,
      url: serviceUrl(s),
    },
    new Date(now),
  );
  const wait = memo.lastWriteMs + LIMITS.minStatusIntervalMs - now;
  if (wait <= 0) {
    if (await ctx.applyStatusIfChanged(SHEETCLUSTER, c, status as unknown as Record<string, unknown>))
      memo.lastWriteMs = now;
  }
  return { requeueAfterMs: wait > 0 ? Math.min(wait, d.t.pollMs) : d.t.pollMs };
}

async function readUserSecret(
  ctx: ReconcileContext,
  memo: Memo,
  namespace: string,
  ref: SecretRef,
  purpose: 'token' | 'signing',
  now: number,
  recheckMs: number,
): Promise<{ value?: string; problem?: string }> {
  const k = `${ref.name}/${ref.key}`;
  const known = memo.userSecrets.get(k);
  if (known && now - known.atMs < recheckMs) return known;
  const field = purpose === 'token' ? 'tokenSecretRef' : 'signingKeySecretRef';
  let r: { value?: string; problem?: string };
  try {
    const raw = await secretText(ctx.client, namespace, ref);
    r = raw
      ? { value: raw }
      : {
          problem: `Secret ${ref.name} (${field}) has no entry "${ref.key}"; put the ${purpose === 'token' ? 'token' : 'signing key'} there`,
        };
  } catch (err) {
    r = {
      problem: secretReadProblem(err, namespace, ref, {
        field,
        content: purpose === 'token' ? 'the shared token' : 'the HMAC signing key',
        consequence:
          purpose === 'token'
            ? 'so it cannot read this cluster from its sheet (the apiserver and agents still run: the kubelet reads the Secret for them)'
            : 'so it cannot apply spec.deployments (signed POSTs); the cluster still runs',
      }),
    };
  }
  const entry = { atMs: now, ...r };
  memo.userSecrets.set(k, entry);
  return entry;
}

/** spec.deployments → the sheet, by the ownership rule (sheetcluster-observe.ts deploymentsToApply). */
async function applySpecDeployments(
  ctx: ReconcileContext,
  c: KubeObject,
  s: SheetSettings,
  memo: Memo,
  url: string,
  token: string,
  key: string,
): Promise<void> {
  if (!memo.read?.ok) return;
  const toApply = await deploymentsToApply(s.deployments, memo.read.rows.deployments);
  if (!toApply.length) {
    memo.applyProblem = '';
    return;
  }
  const batch: SheetDeploymentT[] = toApply.map((t) => t.deployment);
  const h = hashOf(batch);
  if (h === memo.refusedHash) return; // refused as it is; the spec must change first
  try {
    const r = await applyDeployments(url, token, key, batch);
    for (const t of toApply) {
      const line = r.applied.find((l) => l.startsWith(`${t.deployment.name}:`));
      if (!line) continue;
      void ctx.recorder.record(
        c,
        'Normal',
        t.created ? 'DeploymentCreated' : 'DeploymentRestored',
        t.created
          ? `Applied deployment ${t.deployment.name} to the sheet`
          : `Put back ${t.fields.join(', ')} of deployment ${t.deployment.name} in the sheet (spec.deployments owns the fields it sets)`,
        'Apply',
      );
    }
    memo.applyProblem = r.refused.length
      ? `the apiserver refused spec.deployments: ${r.refused.join('; ').slice(0, 400)}`
      : '';
    if (r.refused.length) {
      memo.refusedHash = h;
      void ctx.recorder.record(c, 'Warning', 'DeploymentRefused', memo.applyProblem, 'Apply');
    }
    // Read again next time at once: the sheet changed.
    memo.lastReadMs = 0;
  } catch (err) {
    memo.applyProblem = `applying spec.deployments failed: ${(err as Error).message.slice(0, 300)}`;
  }
}

function nodeEvents(
  ctx: ReconcileContext,
  c: KubeObject,
  memo: Memo,
  sum: SheetSummary,
  s: SheetSettings,
): void {
  for (const n of sum.nodeTable) {
    if (!sum.expected.includes(n.name)) continue;
    const was = memo.nodeStatus.get(n.name);
    const ready = n.status === 'Ready' || n.status === 'SchedulingDisabled';
    if (was === undefined) {
      if (ready) void ctx.recorder.record(c, 'Normal', 'NodeJoined', `Node ${n.name} is Ready in the sheet`);
    } else if (was !== n.status) {
      const wasReady = was === 'Ready' || was === 'SchedulingDisabled';
      if (wasReady && n.status === 'NotReady')
        void ctx.recorder.record(
          c,
          'Warning',
          'NodeLost',
          `Node ${n.name} is NotReady in the sheet (no heartbeat for ${s.failoverSeconds} s); its pods move to other nodes`,
        );
      else if (!wasReady && ready)
        void ctx.recorder.record(c, 'Normal', 'NodeReturned', `Node ${n.name} is Ready again in the sheet`);
    }
    memo.nodeStatus.set(n.name, n.status);
  }
}

/** A workbook PVC Pending past the grace: why, stably worded (no counters, so no status churn). */
function claimPending(pvc: KubeObject | undefined, now: number, graceMs: number): string | undefined {
  if (!pvc) return undefined;
  const phase = (pvc.status as { phase?: string } | undefined)?.phase;
  const created = Date.parse(pvc.metadata.creationTimestamp ?? '');
  if (phase === 'Bound' || !Number.isFinite(created) || now - created < graceMs) return undefined;
  const sc = (pvc.spec as { storageClassName?: string } | undefined)?.storageClassName;
  return (
    `PersistentVolumeClaim ${pvc.metadata.name} is ${phase ?? 'Pending'} (not bound), so the apiserver cannot start: ` +
    (sc
      ? `check that StorageClass ${sc} exists and can provision (kubectl get storageclass ${sc}), or set spec.store.xlsx.storageClass to one that can`
      : 'the cluster has no default StorageClass that provisions; set spec.store.xlsx.storageClass') +
    ` (kubectl -n ${pvc.metadata.namespace} describe pvc ${pvc.metadata.name})`
  );
}

const eventTime = (e: PodEvent): number =>
  Date.parse(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '');

/**
 * Warnings about our pods that hold now (a Secret that does not exist, a volume that cannot mount,
 * a crash loop): not one the pod has got past (a Normal event of that pod came later), nor a
 * readiness probe failing for the first seconds of a normal start.
 */
function podProblems(ctx: ReconcileContext, s: SheetSettings, now: number): string[] {
  const prefix = `${sheetChild(s.name)}-`;
  const out = new Map<string, string>();
  const events = ctx.watched(CORE_EVENT).list(s.namespace) as PodEvent[];
  const lastNormal = new Map<string, number>();
  for (const e of events) {
    const pod = e.involvedObject?.name ?? '';
    if (e.type === 'Normal' && pod.startsWith(prefix))
      lastNormal.set(pod, Math.max(lastNormal.get(pod) ?? 0, eventTime(e) || 0));
  }
  for (const e of events) {
    const pod = e.involvedObject?.name ?? '';
    if (e.type !== 'Warning' || !pod.startsWith(prefix)) continue;
    const t = eventTime(e);
    if (!Number.isFinite(t) || now - t > LIMITS.recentEventMs) continue;
    // The pod went on after it (a crash loop's BackOff alternates with Started: it stays a problem).
    if (e.reason !== 'BackOff' && (lastNormal.get(pod) ?? 0) > t) continue;
    const first = Date.parse(e.firstTimestamp ?? e.eventTime ?? '');
    if (e.reason === 'Unhealthy' && (!Number.isFinite(first) || t - first < LIMITS.probeGraceMs)) continue;
    const msg = e.message ?? '';
    const secret = /secret "([^"]+)" not found/.exec(msg)?.[1];
    const component = pod.startsWith(`${prefix}node-`) ? 'node agent pods' : 'apiserver pod';
    if (secret && s.store.type === 'google' && secret === s.store.credentials.name)
      out.set(
        `missing:${secret}`,
        `Secret ${secret} (store.google.credentialsSecretRef) does not exist in namespace ${s.namespace}, so the apiserver cannot start: create it with the service account's JSON key in entry "${s.store.credentials.key}" (kubectl -n ${s.namespace} create secret generic ${secret} --from-file=${s.store.credentials.key}=KEY.json)`,
      );
    else if (secret)
      out.set(
        `missing:${secret}`,
        `Secret ${secret} does not exist in namespace ${s.namespace}, so the ${component} cannot start: create it (its name is in spec.tokenSecretRef or spec.signingKeySecretRef)`,
      );
    else if (!out.has(`reason:${e.reason}`))
      out.set(`reason:${e.reason}`, `${component}: ${e.reason}: ${msg.slice(0, 200)}`);
  }
  return [...out.values()].sort();
}

/**
 * A dockerSocket the operator does not allow is not mounted, and the agents run without the docker
 * runtime until it is (#28.10); `refused` says why and how to allow it (pure).
 */
export function allowedDockerSocket(
  s: SheetSettings,
  allowed: readonly string[],
): { s: SheetSettings; refused: string[] } {
  if (s.dockerSocket === undefined || allowed.includes(s.dockerSocket)) return { s, refused: [] };
  return {
    s: { ...s, dockerSocket: undefined, runtimes: s.runtimes.filter((r) => r !== 'docker') },
    refused: [
      `dockerSocket ${s.dockerSocket} is not allowed: the operator mounts only ${allowed.join(', ')} (a cluster admin may allow more with retrokube operator --docker-sockets PATH,...)`,
    ],
  };
}
