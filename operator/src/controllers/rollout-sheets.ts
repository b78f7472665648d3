// The Sheeternetes rollout drivers: SheetClusters, and the members of SheetFederations. A target is
// changed and judged through its apiserver's own contract — a signed `apply` POST of the
// deployment's image/replicas, and GET kind=deployments|pods — exactly as the SheetCluster
// controller reaches its clusters (rollout/sheet-target.ts holds the rules, pure).
//
// Secrets: a SheetCluster's generated token and signing key are derived from the operator's seed
// and the cluster's uid, as the SheetCluster controller does; the operator never reads them. A
// Secret a spec names (a SheetCluster's own refs, a federation member's) is read by a namespaced GET
// that works only where its owner granted it — otherwise the target cannot be judged and the status
// gives the two kubectl commands that grant it (nothing is touched meanwhile).
import type { SheetFederationSpecT } from '../api/sheetfederation.ts';
import type { SheetMemberT } from '../api/sheetmember.ts';
import type { Observation, Target } from '../rollout/plan.ts';
import {
  applyRefusal,
  applyRequest,
  httpCheckUrls,
  observeSheet,
  SHEET_TARGET_LIMITS,
  specOwnership,
  switchActive,
} from '../rollout/sheet-target.ts';
import type { KubeObject } from '../runtime/client.ts';
import type { ReconcileContext } from '../runtime/controller.ts';
import { SheetsClient } from '../sheets/ctl/client.ts';
import { secretReadProblem, secretText } from './key-access.ts';
import { matches, type RolloutDriver, type RolloutWithSpec, watchedObject } from './rollout-driver.ts';
import { SHEETCLUSTER } from './sheetcluster.ts';
import {
  derivedSecret,
  type SecretRef,
  type SheetClusterObject,
  serviceUrl,
  sheetSettings,
} from './sheetcluster-render.ts';
import { SHEETFEDERATION } from './sheetfederation.ts';

export const LIMITS = {
  requestTimeoutMs: 4_000, // one GET or POST to a target's apiserver (as the SheetCluster controller's reads)
  secretRecheckMs: 60_000, // a Secret a spec names is read again this often (one GET), as SheetCluster does
} as const;

/** Labels every federation member target carries (blue/green groups and ordered walks may use them). */
export const MEMBER_LABEL = 'rollout.retrokube.io/member';
export const FEDERATION_LABEL = 'rollout.retrokube.io/federation';

export interface SheetDriverOptions {
  /** The operator's seed of generated SheetCluster tokens and signing keys (the SheetCluster controller's). */
  keySeed: string;
  /** Where a SheetCluster's apiserver answers when not at its Service (tests: a local process). */
  sheetsAddress?: (namespace: string, cluster: string) => string;
}

interface SheetFederation extends KubeObject {
  spec: SheetFederationSpecT;
}

/** How to reach one target's apiserver, and what its SheetCluster spec owns. */
interface Access {
  url: string;
  token: string;
  key?: string;
  ownedBySpec?: string;
}

type Reached = Access | { problem: string };
type Value = { value?: string; problem?: string };

export function sheetDrivers(o: SheetDriverOptions): { cluster: RolloutDriver; federation: RolloutDriver } {
  const secrets = new Map<string, { atMs: number; value?: string; problem?: string }>();

  async function secret(ctx: ReconcileContext, ns: string, ref: SecretRef, field: string): Promise<Value> {
    const id = `${ns}/${ref.name}/${ref.key}`;
    const known = secrets.get(id);
    if (known && Date.now() - known.atMs < LIMITS.secretRecheckMs) return known;
    let r: { value?: string; problem?: string };
    try {
      const value = await secretText(ctx.client, ns, ref);
      r = value ? { value } : { problem: `Secret ${ref.name} (${field}) has no entry "${ref.key}"` };
    } catch (err) {
      r = {
        problem: secretReadProblem(err, ns, ref, {
          field,
          content: 'the value',
          consequence: 'so it cannot read or change this rollout target',
        }),
      };
    }
    const entry = { atMs: Date.now(), ...r };
    secrets.set(id, entry);
    return entry;
  }

  /** A SheetCluster's apiserver: its Service (or the test address), derived or named token and key. */
  async function clusterAccess(
    ctx: ReconcileContext,
    r: RolloutWithSpec,
    sc: SheetClusterObject,
    refs: { token?: SecretRef; signingKey?: SecretRef } = {},
  ): Promise<Reached> {
    const ns = sc.metadata.namespace as string;
    const s = sheetSettings(sc, '');
    const uid = sc.metadata.uid as string;
    const value = async (
      ref: SecretRef | undefined,
      fallback: SecretRef,
      generated: boolean,
      purpose: 'token' | 'signing',
      field: string,
    ): Promise<Value> =>
      ref === undefined && generated
        ? o.keySeed
          ? { value: derivedSecret(o.keySeed, purpose, uid) }
          : { problem: 'the Rollout controller has no key seed to derive the generated token and key from' }
        : secret(ctx, ns, ref ?? fallback, field);
    const token = await value(refs.token, s.token, s.tokenGenerated, 'token', 'tokenSecretRef');
    if (token.problem || !token.value) return { problem: token.problem ?? 'no token' };
    const key = await value(
      refs.signingKey,
      s.signingKey,
      s.signingKeyGenerated,
      'signing',
      'signingKeySecretRef',
    );
    if (key.problem) return { problem: key.problem };
    return {
      url: o.sheetsAddress ? o.sheetsAddress(ns, s.name) : serviceUrl(s),
      token: token.value,
      key: key.value,
      ownedBySpec: specOwnership(s.name, s.deployments, r.spec.change),
    };
  }

  /** A federation member: its SheetCluster (as above, refs may override), or its URL and Secrets. */
  async function memberAccess(ctx: ReconcileContext, r: RolloutWithSpec, m: SheetMemberT): Promise<Reached> {
    const ns = r.metadata.namespace as string;
    if (m.sheetCluster) {
      const sc = watchedObject<SheetClusterObject>(ctx, SHEETCLUSTER, ns, m.sheetCluster);
      if (!sc) return { problem: `SheetCluster ${m.sheetCluster} (member ${m.name}) does not exist` };
      return clusterAccess(ctx, r, sc, { token: m.tokenSecretRef, signingKey: m.signingKeySecretRef });
    }
    if (!m.url || !m.tokenSecretRef) return { problem: `member ${m.name} has neither sheetCluster nor url` };
    const token = await secret(ctx, ns, m.tokenSecretRef, `member ${m.name} tokenSecretRef`);
    if (token.problem || !token.value) return { problem: token.problem ?? 'no token' };
    const key: Value = m.signingKeySecretRef
      ? await secret(ctx, ns, m.signingKeySecretRef, `member ${m.name} signingKeySecretRef`)
      : {};
    if (key.problem) return { problem: key.problem };
    return { url: m.url, token: token.value, key: key.value };
  }

  const clusterOf = (ctx: ReconcileContext, r: RolloutWithSpec, name: string) =>
    watchedObject<SheetClusterObject>(ctx, SHEETCLUSTER, r.metadata.namespace as string, name);

  const cluster: RolloutDriver = {
    kind: 'SheetCluster',
    select: (ctx, r) =>
      (ctx.watched(SHEETCLUSTER).list(r.metadata.namespace) as SheetClusterObject[])
        .filter((c) => matches(c.metadata.labels, r.spec.selector.matchLabels))
        .map((c) => ({ name: c.metadata.name as string, labels: { ...(c.metadata.labels ?? {}) } })),
    labelsOf: (ctx, r, name) => ({ ...(clusterOf(ctx, r, name)?.metadata.labels ?? {}) }),
    observe: (ctx, r, targets, judge) =>
      observeAll(r, targets, judge, async (name) => {
        const sc = clusterOf(ctx, r, name);
        return sc ? clusterAccess(ctx, r, sc) : { problem: `SheetCluster ${name} does not exist` };
      }),
    apply: async (ctx, r, target, version) => {
      const sc = clusterOf(ctx, r, target);
      if (!sc) throw new Error(`SheetCluster ${target} does not exist`);
      await applyVersion(await clusterAccess(ctx, r, sc), r, version);
    },
    serve: async () => {
      // The schema refuses blue/green over SheetClusters; said here too for a spec that slipped by.
      throw new Error(
        'blue/green over Sheeternetes switches a federation member: use selector.kind SheetFederation',
      );
    },
  };

  /** federation/member → the member of the cached federation. */
  const memberOf = (ctx: ReconcileContext, r: RolloutWithSpec, target: string) => {
    const [fed, member] = target.split('/');
    const f = watchedObject<SheetFederation>(ctx, SHEETFEDERATION, r.metadata.namespace as string, fed);
    return { fed: f, member: f?.spec.members.find((m) => m.name === member) };
  };
  const memberLabels = (ctx: ReconcileContext, r: RolloutWithSpec, fed: string, m: SheetMemberT) => ({
    ...((m.sheetCluster ? clusterOf(ctx, r, m.sheetCluster)?.metadata.labels : undefined) ?? {}),
    [FEDERATION_LABEL]: fed,
    [MEMBER_LABEL]: m.name,
  });

  const federation: RolloutDriver = {
    kind: 'SheetFederation',
    select: (ctx, r) =>
      (ctx.watched(SHEETFEDERATION).list(r.metadata.namespace) as SheetFederation[])
        .filter((f) => matches(f.metadata.labels, r.spec.selector.matchLabels))
        .flatMap((f) =>
          f.spec.members.map((m) => ({
            name: `${f.metadata.name}/${m.name}`,
            labels: memberLabels(ctx, r, f.metadata.name as string, m),
          })),
        ),
    labelsOf: (ctx, r, name) => {
      const { fed, member } = memberOf(ctx, r, name);
      return fed && member ? memberLabels(ctx, r, fed.metadata.name as string, member) : {};
    },
    observe: (ctx, r, targets, judge) =>
      observeAll(r, targets, judge, async (name) => {
        const { member } = memberOf(ctx, r, name);
        return member
          ? memberAccess(ctx, r, member)
          : { problem: `federation member ${name} does not exist` };
      }),
    apply: async (ctx, r, target, version) => {
      const { member } = memberOf(ctx, r, target);
      if (!member) throw new Error(`federation member ${target} does not exist`);
      await applyVersion(await memberAccess(ctx, r, member), r, version);
    },
    // The federated service (the deployment) is served by one member of each federation: the first
    // member of the new group, in the federation's member order (sheet-target.ts switchActive).
    serve: async (ctx, r, targets, label, group) => {
      const ns = r.metadata.namespace as string;
      const feds = [...new Set(targets.map((t) => t.name.split('/')[0]))];
      for (const name of feds) {
        const f = watchedObject<SheetFederation>(ctx, SHEETFEDERATION, ns, name);
        if (!f) continue;
        const groups = f.spec.members.map((m) => ({
          member: m.name,
          group: targets.find((t) => t.name === `${name}/${m.name}`)?.labels[label],
        }));
        const active = switchActive(f.spec.active, r.spec.change.deployment, groups, group);
        if (active) await ctx.client.mergePatch(SHEETFEDERATION, ns, name, { spec: { active } });
      }
    },
  };

  return { cluster, federation };
}

async function observeAll(
  r: RolloutWithSpec,
  targets: Target[],
  judge: ReadonlySet<string>,
  reach: (name: string) => Promise<Reached>,
): Promise<Map<string, Observation>> {
  const minRunning = r.spec.check?.minRunning ?? 0;
  const httpGet = r.spec.check?.httpGet;
  const out = await Promise.all(
    targets.map(async (t): Promise<[string, Observation]> => {
      const a = await reach(t.name);
      if ('problem' in a) return [t.name, { converged: false, healthy: false, problem: a.problem }];
      const client = new SheetsClient({ url: a.url, token: a.token, timeoutMs: LIMITS.requestTimeoutMs });
      let rows: {
        deployments: Record<string, unknown>[];
        pods: Record<string, unknown>[];
        nodes?: Record<string, unknown>[];
      };
      try {
        const [deployments, pods, nodes] = await Promise.all([
          client.get('deployments'),
          client.get('pods'),
          httpGet ? client.get('nodes') : Promise.resolve(undefined),
        ]);
        rows = { deployments, pods, nodes };
      } catch (e) {
        return [
          t.name,
          { converged: false, healthy: false, problem: `its apiserver at ${a.url}: ${(e as Error).message}` },
        ];
      }
      const o = observeSheet(rows, r.spec.change.deployment, minRunning, a.ownedBySpec);
      if (httpGet && judge.has(t.name) && o.current && o.healthy)
        o.healthy = await httpHealthy(
          httpCheckUrls(rows.pods, r.spec.change.deployment, httpGet, rows.nodes ?? []),
        );
      return [t.name, o];
    }),
  );
  return new Map(out);
}

/** Every probed endpoint answers 2xx/3xx within the timeout; a running pod without one fails. */
export async function httpHealthy(p: { urls: string[]; missing: string[] }): Promise<boolean> {
  if (p.missing.length > 0) return false;
  const answers = await Promise.all(
    p.urls.map((url) =>
      fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(SHEET_TARGET_LIMITS.httpTimeoutMs) })
        .then(async (res) => {
          await res.body?.cancel();
          return res.status < 400;
        })
        .catch(() => false),
    ),
  );
  return answers.every(Boolean);
}

async function applyVersion(a: Reached, r: RolloutWithSpec, version: Parameters<typeof applyRequest>[1]) {
  if ('problem' in a) throw new Error(a.problem);
  if (a.ownedBySpec) throw new Error(a.ownedBySpec);
  const client = new SheetsClient({
    url: a.url,
    token: a.token,
    key: a.key,
    timeoutMs: LIMITS.requestTimeoutMs,
  });
  const refused = applyRefusal(await client.post(applyRequest(r.spec.change.deployment, version)));
  if (refused) throw new Error(refused);
}
