// SheetFederation controller: observe every member (reachable? nodes, pods, free CPU), publish the
// merged service list, run the union sync on its interval, and keep stretched deployments split
// over the members by the stretch rule — growing members first, shrinking others only once the
// grown ones run their share (nothing drained that is not running elsewhere).
import type { SheetFederationSpecT, SheetFederationStatusT } from '../api/sheetfederation.ts';
import { FEDERATION_DEFAULTS } from '../api/sheetfederation-limits.ts';
import { activeMember } from '../rollout/sheet-target.ts';
import type { KubeObject, ResourceType } from '../runtime/client.ts';
import { type ConditionInput, setConditions } from '../runtime/conditions.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { BridgeError, type Member } from '../sheets/bridge/client.ts';
import {
  cpuReqOf,
  federatedView,
  findDeployment,
  type MemberView,
  planStretch,
  planSync,
  replicasOf,
  runningPods,
  stretchMemberOf,
  stretchSteps,
  summarize,
} from '../sheets/bridge/plan.ts';
import type { Row } from '../sheets/store/types.ts';
import { ourKind, primaryRules } from './owned.ts';
import { MemberConfigError, resolveMember, SHEET_MEMBER_RBAC, type SheetsAddress } from './sheet-members.ts';

export const LIMITS = {
  maxServices: 500, // status stays small; the list is sorted by name
} as const;

export const SHEETFEDERATION: ResourceType = ourKind('sheetfederations', 'SheetFederation');
export const SHEETFEDERATION_RBAC: PolicyRule[] = [...primaryRules('sheetfederations'), ...SHEET_MEMBER_RBAC];

export interface SheetFederation extends KubeObject {
  spec: SheetFederationSpecT;
  status?: SheetFederationStatusT;
}

export function sheetFederationController(
  o: { sheetsAddress?: SheetsAddress; keySeed?: string; memberHosts?: readonly string[] } = {},
): ControllerDefinition {
  return {
    name: 'sheetfederation',
    primary: SHEETFEDERATION,
    owns: [],
    reconcile: (ctx, key) => reconcile(ctx, key, o.sheetsAddress, o.keySeed, o.memberHosts ?? []),
  };
}

type Reached = { member: Member; view: MemberView } | { name: string; error: string };

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  address: SheetsAddress | undefined,
  seed: string | undefined,
  memberHosts: readonly string[],
): Promise<ReconcileResult | undefined> {
  const fed = ctx.cached<SheetFederation>(SHEETFEDERATION, key.namespace, key.name);
  if (!fed || fed.metadata.deletionTimestamp) return undefined;
  const now = Date.now();
  const reached: Reached[] = await Promise.all(
    fed.spec.members.map(async (m): Promise<Reached> => {
      try {
        const member = await resolveMember(ctx, key.namespace, m, address, seed, memberHosts);
        return { member, view: await member.observe() };
      } catch (e) {
        if (!(e instanceof BridgeError) && !(e instanceof MemberConfigError)) throw e;
        return { name: m.name, error: e.message };
      }
    }),
  );
  const up = reached.filter((r): r is { member: Member; view: MemberView } => 'view' in r);
  const down = reached.filter((r): r is { name: string; error: string } => 'error' in r);
  const views = up.map((r) => r.view);
  const events: [string, string][] = [];

  // Union sync on its interval, and only with every member in view (a missing member would be
  // "missing everything" and receive copies it may already have).
  let lastSync = fed.status?.lastSync;
  const interval = (fed.spec.sync?.intervalSeconds ?? FEDERATION_DEFAULTS.syncIntervalSeconds) * 1000;
  const syncDue = fed.spec.sync?.enabled && (!lastSync || now - Date.parse(lastSync) >= interval);
  const plan = planSync(views);
  if (syncDue && down.length === 0) {
    try {
      for (const r of up) {
        const rows = plan.apply.get(r.member.name) ?? [];
        if (rows.length) {
          await r.member.apply(rows);
          r.view.deployments.push(...rows);
          events.push(['Synced', `copied ${rows.map((x) => x.name).join(', ')} to ${r.member.name}`]);
        }
      }
      lastSync = new Date(now).toISOString();
    } catch (e) {
      if (!(e instanceof BridgeError)) throw e;
      events.push(['SyncFailed', e.message]);
    }
  }

  const stretched = [];
  for (const s of fed.spec.stretched ?? []) {
    stretched.push(await reconcileStretch(s, up, down.length > 0, events));
  }

  const conditions: ConditionInput[] = down.length
    ? [
        {
          type: 'Ready',
          status: 'False',
          reason: 'MemberUnreachable',
          message: down.map((d) => d.error).join('; '),
        },
      ]
    : [{ type: 'Ready', status: 'True', reason: 'AllMembersReachable', message: `${up.length} members` }];
  const status: Record<string, unknown> = {
    observedGeneration: fed.metadata.generation,
    members: reached.map((r) =>
      'view' in r
        ? { ...summarize(r.view), reachable: true }
        : { name: r.name, reachable: false, message: r.error.slice(0, 1024) },
    ),
    // The active member of each service: what consumers route to (blue/green switches it).
    services: federatedView(views)
      .slice(0, LIMITS.maxServices)
      .map((x) => ({ ...x, active: activeMember(fed.spec.active, x.name, x.members) })),
    conflicts: plan.conflicts.map((c) => c.name).slice(0, 100),
    stretched,
    conditions: setConditions(fed.status?.conditions, conditions, fed.metadata.generation),
  };
  if (lastSync) status.lastSync = lastSync;
  await ctx.applyStatusIfChanged(SHEETFEDERATION, fed, status);
  for (const [reason, message] of events)
    void ctx.recorder.record(fed, reason.endsWith('Failed') ? 'Warning' : 'Normal', reason, message);
  const next = Math.min(
    FEDERATION_DEFAULTS.observeSeconds * 1000,
    fed.spec.sync?.enabled ? interval : Infinity,
  );
  return { requeueAfterMs: next };
}

async function reconcileStretch(
  s: NonNullable<SheetFederationSpecT['stretched']>[number],
  up: { member: Member; view: MemberView }[],
  someDown: boolean,
  events: [string, string][],
) {
  const running = up.map((r) => ({ member: r.member.name, replicas: runningPods(r.view, s.deployment) }));
  const holder = up.find((r) => findDeployment(r.view, s.deployment));
  if (!holder)
    return {
      deployment: s.deployment,
      planned: [],
      running,
      unplaced: s.replicas,
      message: 'not found on any member',
    };
  const spec = findDeployment(holder.view, s.deployment) as Row;
  const members = up.map((r) => ({ ...stretchMemberOf(r.view, s.deployment), name: r.member.name }));
  const plan = planStretch(s.deployment, s.replicas, s.cpu ?? cpuReqOf(spec), members);
  const planned = plan.shares.map((x) => ({ member: x.member, replicas: x.replicas }));
  const base = { deployment: s.deployment, planned, running, unplaced: plan.unplaced };
  if (someDown) return { ...base, message: 'a member is unreachable: nothing changed' };
  if (plan.unplaced > 0)
    return { ...base, message: `${plan.unplaced} replicas fit nowhere: nothing changed` };
  const current = new Map(
    up.map((r) => [
      r.member.name,
      findDeployment(r.view, s.deployment) ? replicasOf(findDeployment(r.view, s.deployment)) : undefined,
    ]),
  );
  const { grow, shrink } = stretchSteps(plan, { ...spec, cpu_req: plan.cpu }, current);
  const byName = new Map(up.map((r) => [r.member.name, r.member]));
  try {
    for (const g of grow) if (g.op === 'apply') await (byName.get(g.member) as Member).apply([g.row]);
    if (grow.length)
      events.push([
        'StretchGrow',
        `${s.deployment}: ${grow.map((g) => g.member).join(', ')} grow to the plan`,
      ]);
    // Shrink only once every member runs at least its planned share (checked on this observation).
    const allRunning = plan.shares.every(
      (x) =>
        runningPods(up.find((r) => r.member.name === x.member)?.view ?? { pods: [] }, s.deployment) >=
        x.replicas,
    );
    if (shrink.length && grow.length === 0 && allRunning) {
      for (const x of shrink) {
        const m = byName.get(x.member) as Member;
        if (x.op === 'apply') await m.apply([x.row]);
        else await m.delete(x.name);
      }
      events.push([
        'StretchShrink',
        `${s.deployment}: ${shrink.map((x) => x.member).join(', ')} shrink to the plan`,
      ]);
    }
    const waiting = shrink.length && !(grow.length === 0 && allRunning);
    return {
      ...base,
      ...(waiting ? { message: 'waiting for the grown members to run their share before shrinking' } : {}),
    };
  } catch (e) {
    if (!(e instanceof BridgeError)) throw e;
    return { ...base, message: e.message.slice(0, 1024) };
  }
}
