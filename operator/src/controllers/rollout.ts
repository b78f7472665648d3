// Rollout controller: walks a version change across clusters with the planner of
// operator/src/rollout/plan.ts. It keeps no memory of its own — the walk is the Rollout's status —
// so a restarted operator resumes where the last status write left it, and every action it takes
// (write a deployment's desired fields, switch what serves) is idempotent.
//
// What a target is, how it is changed and judged, belongs to one driver per selector.kind
// (rollout-driver.ts): OberonKubes heard on the air (rollout-oberon.ts), SheetClusters and
// federation members read from their sheets (rollout-sheets.ts). This file only walks.

import { GROUP } from '../api/group.ts';
import type { RolloutSpecT, RolloutStatusT, TargetKind } from '../api/rollout.ts';
import {
  type Change,
  decide,
  type RolloutSpec,
  type RolloutStatus,
  settled,
  TARGET_DONE,
  TARGET_JUDGED,
  type Target,
} from '../rollout/plan.ts';
import type { KubeObject, ResourceType } from '../runtime/client.ts';
import type {
  ControllerDefinition,
  ObjectKeyRef,
  ReconcileContext,
  ReconcileResult,
} from '../runtime/controller.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { OBERONKUBE } from './oberonkube.ts';
import { ourKind, primaryRules } from './owned.ts';
import type { Rollout, RolloutDriver, RolloutWithSpec } from './rollout-driver.ts';
import { oberonDriver } from './rollout-oberon.ts';
import { type SheetDriverOptions, sheetDrivers } from './rollout-sheets.ts';
import { SHEETCLUSTER } from './sheetcluster.ts';
import { SHEETFEDERATION } from './sheetfederation.ts';

export { observeKube, SERVING_LABEL, withVersion } from './rollout-oberon.ts';

export const LIMITS = {
  pollMs: 2_000, // a walk in progress is looked at this often (OberonKube status changes at most every 5 s)
} as const;

export const ROLLOUT: ResourceType = ourKind('rollouts', 'Rollout');

/**
 * Reads its targets; writes OberonKubes' deployments (spec) and serving label (metadata), and a
 * SheetFederation's spec.active (blue/green). SheetClusters are read only: their sheets are changed
 * through the apiserver's contract, with keys derived from the seed. No Secret is read through this
 * role (a Secret a spec names is read only where its owner granted get on it).
 */
export const ROLLOUT_RBAC: PolicyRule[] = [
  ...primaryRules('rollouts'),
  { apiGroups: [GROUP], resources: ['oberonkubes'], verbs: ['get', 'list', 'watch', 'patch'] },
  { apiGroups: [GROUP], resources: ['sheetclusters'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [GROUP], resources: ['sheetfederations'], verbs: ['get', 'list', 'watch', 'patch'] },
];

export interface RolloutControllerOptions extends Partial<SheetDriverOptions> {}

export function rolloutController(o: RolloutControllerOptions = {}): ControllerDefinition {
  const sheets = sheetDrivers({
    // Without the seed the SheetCluster controller shares, generated keys cannot be derived: such
    // targets then say so (their Secrets cannot be read either) and nothing is touched.
    keySeed: o.keySeed ?? '',
    sheetsAddress: o.sheetsAddress,
  });
  const drivers: Record<TargetKind, RolloutDriver> = {
    OberonKube: oberonDriver,
    SheetCluster: sheets.cluster,
    SheetFederation: sheets.federation,
  };
  // A target's change wakes every unfinished rollout of its namespace.
  const wake = (obj: KubeObject, primary: { list(ns?: string): KubeObject[] }) =>
    primary
      .list(obj.metadata.namespace)
      .filter((r) => !settled((r as Rollout).status))
      .map((r) => `${r.metadata.namespace}/${r.metadata.name}`);
  return {
    name: 'rollout',
    primary: ROLLOUT,
    owns: [],
    watches: [OBERONKUBE, SHEETCLUSTER, SHEETFEDERATION].map((type) => ({ type, map: wake })),
    reconcile: (ctx, key) => reconcile(ctx, key, drivers),
  };
}

/** The planner's view of a Rollout's spec. */
export function plannerSpec(spec: RolloutSpecT): RolloutSpec {
  return {
    change: spec.change as Change,
    strategy: spec.strategy as RolloutSpec['strategy'],
    paused: spec.paused,
    abort: spec.abort,
    promote: spec.promote,
  };
}

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  drivers: Record<TargetKind, RolloutDriver>,
): Promise<ReconcileResult | undefined> {
  const found = ctx.cached<Rollout>(ROLLOUT, key.namespace, key.name);
  if (!found?.spec || found.metadata.deletionTimestamp) return undefined;
  if (settled(found.status as RolloutStatus | undefined)) return undefined;
  const r = found as RolloutWithSpec;
  const driver = drivers[r.spec.selector.kind ?? 'OberonKube'];
  const spec = plannerSpec(r.spec);
  const targets: Target[] = driver.select(ctx, r);
  // Targets chosen at the start stay targets (a relabelled cluster is still judged, and is missing if deleted).
  const known = new Set(targets.map((t) => t.name));
  for (const row of r.status?.targets ?? [])
    if (!known.has(row.name)) targets.push({ name: row.name, labels: driver.labelsOf(ctx, r, row.name) });
  const rows = r.status?.targets ?? [];
  const judge = new Set(rows.filter((t) => TARGET_JUDGED.has(t.phase)).map((t) => t.name));
  // A finished target is never looked at again by the planner: no reads of its cluster.
  const done = new Set(rows.filter((t) => TARGET_DONE.has(t.phase)).map((t) => t.name));
  const seen = await driver.observe(
    ctx,
    r,
    targets.filter((t) => !done.has(t.name)),
    judge,
  );
  const last = r.status?.phase ? (r.status as RolloutStatus) : undefined;
  const d = decide(spec, last, targets, seen, new Date());

  const failures: string[] = [];
  for (const a of d.actions) {
    try {
      if (a.kind === 'apply') await driver.apply(ctx, r, a.target, a.version);
      else await driver.serve(ctx, r, targets, a.label, a.group);
    } catch (e) {
      // Retried at the next poll (applying is idempotent); the reason shows in status meanwhile.
      failures.push(`${a.kind} ${a.kind === 'apply' ? a.target : a.group}: ${(e as Error).message}`);
    }
  }
  for (const e of d.events) void ctx.recorder.record(r, e.type, e.reason, e.message);
  const succeeded = d.status.targets.filter((t) => t.phase === 'Succeeded').length;
  const status: RolloutStatusT = {
    ...(d.status as RolloutStatusT),
    ...(failures.length
      ? { message: `${d.status.message ?? ''} (retrying: ${failures.join('; ')})`.trim().slice(0, 4096) }
      : {}),
    progress: `${succeeded}/${d.status.targets.length}`,
    observedGeneration: r.metadata.generation,
  };
  await ctx.applyStatusIfChanged(ROLLOUT, r, status as unknown as Record<string, unknown>);
  return settled(d.status) ? undefined : { requeueAfterMs: LIMITS.pollMs };
}
