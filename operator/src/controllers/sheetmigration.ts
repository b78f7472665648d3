// SheetMigration controller: one step of the make-before-break state machine per reconcile
// (sheets/bridge/migrate.ts). Each reconcile observes both members, performs the step's writes
// (absolute and idempotent), then stores the new phase in status. The status is the only memory:
// an operator killed anywhere re-runs at most the last step, which writes the same rows again —
// nothing is ever scaled twice. Every phase change is an Event.
import type { SheetMigrationSpecT, SheetMigrationStatusT } from '../api/sheetmigration.ts';
import { MIGRATION_DEFAULTS } from '../api/sheetmigration-limits.ts';
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
  initialStatus,
  type MigrationSpec,
  type MigrationStatus,
  migrationResult,
  stepMigration,
  TERMINAL,
} from '../sheets/bridge/migrate.ts';
import { observeMigration } from '../sheets/bridge/run.ts';
import type { Row } from '../sheets/store/types.ts';
import { ourKind, primaryRules } from './owned.ts';
import { MemberConfigError, resolveMember, SHEET_MEMBER_RBAC, type SheetsAddress } from './sheet-members.ts';

export const LIMITS = {
  unreachableRetryMs: 10_000, // a member that cannot be reached (or a missing Secret) is retried this often
} as const;

export const SHEETMIGRATION: ResourceType = ourKind('sheetmigrations', 'SheetMigration');

export const SHEETMIGRATION_RBAC: PolicyRule[] = [...primaryRules('sheetmigrations'), ...SHEET_MEMBER_RBAC];

export interface SheetMigration extends KubeObject {
  spec: SheetMigrationSpecT;
  status?: SheetMigrationStatusT;
}

// --- watch setup -------------------------------------------------------------------------------

export interface MigrationControllerOptions {
  /** Called after a step's writes and before its status is stored (tests kill the operator here). */
  afterWrites?: (key: ObjectKeyRef, next: MigrationStatus) => Promise<void>;
  /** Where SheetCluster members are reached (default their status.url). */
  sheetsAddress?: SheetsAddress;
  /** The operator's key seed (a member SheetCluster's generated token and key are derived from it). */
  keySeed?: string;
  /** Hosts a member `url` may name besides its namespace's Services (memberUrlProblem). */
  memberHosts?: readonly string[];
}

export function sheetMigrationController(o: MigrationControllerOptions = {}): ControllerDefinition {
  return {
    name: 'sheetmigration',
    primary: SHEETMIGRATION,
    owns: [],
    reconcile: (ctx, key) => reconcile(ctx, key, o),
  };
}

// --- reconcile ---------------------------------------------------------------------------------

async function reconcile(
  ctx: ReconcileContext,
  key: ObjectKeyRef,
  o: MigrationControllerOptions,
): Promise<ReconcileResult | undefined> {
  const mig = ctx.cached<SheetMigration>(SHEETMIGRATION, key.namespace, key.name);
  if (!mig || mig.metadata.deletionTimestamp) return undefined;
  const now = Date.now();
  const current = fromStatus(mig.status, now);
  if (TERMINAL.includes(current.phase)) return undefined; // finished: nothing to do, ever
  const spec = toSpec(mig.spec);
  const pollMs = (mig.spec.pollSeconds ?? MIGRATION_DEFAULTS.pollSeconds) * 1000;

  let src: Member;
  let dst: Member;
  let obs: Awaited<ReturnType<typeof observeMigration>>;
  try {
    [src, dst] = await Promise.all([
      resolveMember(ctx, key.namespace, mig.spec.from, o.sheetsAddress, o.keySeed, o.memberHosts),
      resolveMember(ctx, key.namespace, mig.spec.to, o.sheetsAddress, o.keySeed, o.memberHosts),
    ]);
    obs = await observeMigration(src, dst, spec.deploy, current.phase === 'Pending');
  } catch (e) {
    if (!(e instanceof BridgeError) && !(e instanceof MemberConfigError)) throw e;
    // Nothing was written; the phase stays, the reason is shown, and it is tried again.
    const status = toStatus(mig, current, undefined, e.message, [
      { type: 'Ready', status: 'False', reason: 'MemberUnavailable', message: e.message },
    ]);
    if (await ctx.applyStatusIfChanged(SHEETMIGRATION, mig, status))
      void ctx.recorder.record(mig, 'Warning', 'MemberUnavailable', e.message);
    return { requeueAfterMs: LIMITS.unreachableRetryMs };
  }

  const step = stepMigration(spec, current, obs);
  const members = { source: src, target: dst };
  try {
    for (const w of step.writes) {
      if (w.op === 'apply') await members[w.on].apply([w.row]);
      else await members[w.on].delete(w.name);
    }
  } catch (e) {
    if (!(e instanceof BridgeError)) throw e;
    // A write failed halfway: the phase is NOT advanced, so the whole step runs again later.
    const status = toStatus(mig, current, obs, e.message, [
      { type: 'Ready', status: 'False', reason: 'MemberUnavailable', message: e.message },
    ]);
    await ctx.applyStatusIfChanged(SHEETMIGRATION, mig, status);
    void ctx.recorder.record(mig, 'Warning', 'WriteFailed', e.message);
    return { requeueAfterMs: LIMITS.unreachableRetryMs };
  }
  await o.afterWrites?.(key, step.status);

  const next = step.status;
  const moved = next.phase !== current.phase;
  const result = TERMINAL.includes(next.phase) ? migrationResult(spec, next) : undefined;
  const message = stepMessage(mig.status?.message, current, next, step.log);
  const status = toStatus(mig, next, obs, message, conditionsFor(next, result));
  await ctx.applyStatusIfChanged(SHEETMIGRATION, mig, status);
  if (moved) {
    const warn = next.phase === 'Failed' || next.phase === 'RollingBack' || next.phase === 'RolledBack';
    void ctx.recorder.record(
      mig,
      warn ? 'Warning' : 'Normal',
      next.phase,
      `${current.phase} → ${next.phase}: ${message}`,
    );
  }
  if (TERMINAL.includes(next.phase)) return undefined;
  return { requeueAfterMs: moved ? 1 : pollMs };
}

// --- status (pure) -----------------------------------------------------------------------------

export function toSpec(s: SheetMigrationSpecT): MigrationSpec {
  return {
    deploy: s.deployment,
    waitSec: s.waitSeconds ?? MIGRATION_DEFAULTS.waitSeconds,
    rollbackWindowSec: s.rollbackWindowSeconds ?? MIGRATION_DEFAULTS.rollbackWindowSeconds,
    skipWait: false,
    checkCapacity: true,
  };
}

const ms = (t: string | undefined) => (t ? Date.parse(t) : Number.NaN);

/** The step machine's status from the resource's status (the only state there is). */
export function fromStatus(s: SheetMigrationStatusT | undefined, nowMs: number): MigrationStatus {
  if (!s?.phase) return initialStatus(nowMs);
  const since = ms(s.phaseSince);
  const out: MigrationStatus = { phase: s.phase, phaseSinceMs: Number.isFinite(since) ? since : nowMs };
  if (s.waitSince) out.waitSinceMs = ms(s.waitSince);
  if (s.replicas !== undefined) out.replicas = s.replicas;
  if (s.sourceRow) out.sourceRow = JSON.parse(s.sourceRow) as Row;
  if (s.targetBefore !== undefined) out.targetBefore = JSON.parse(s.targetBefore) as Row | null;
  if (s.message) out.message = s.message;
  return out;
}

function toStatus(
  mig: SheetMigration,
  m: MigrationStatus,
  obs: Awaited<ReturnType<typeof observeMigration>> | undefined,
  message: string,
  conditions: ConditionInput[],
): Record<string, unknown> {
  const iso = (n: number) => new Date(n).toISOString();
  const out: Record<string, unknown> = {
    observedGeneration: mig.metadata.generation,
    phase: m.phase,
    phaseSince: iso(m.phaseSinceMs),
    message: message.slice(0, 4096),
    conditions: setConditions(mig.status?.conditions, conditions, mig.metadata.generation),
  };
  if (m.waitSinceMs !== undefined) out.waitSince = iso(m.waitSinceMs);
  if (m.replicas !== undefined) out.replicas = m.replicas;
  if (m.sourceRow) out.sourceRow = JSON.stringify(m.sourceRow);
  if (m.targetBefore !== undefined) out.targetBefore = JSON.stringify(m.targetBefore);
  const prevS = mig.status?.sourceRunning;
  const prevT = mig.status?.targetRunning;
  if (obs) {
    out.sourceRunning = obs.source.running;
    out.targetRunning = obs.target.running;
  } else {
    if (prevS !== undefined) out.sourceRunning = prevS;
    if (prevT !== undefined) out.targetRunning = prevT;
  }
  return out;
}

/**
 * What status.message says after a step: the step's own words (a failure's reason, or its log
 * lines); else, when the phase moved, the new phase; else what it said before. Never the words of
 * an earlier phase (the step machine carries its last message along from status).
 */
export function stepMessage(
  previous: string | undefined,
  current: MigrationStatus,
  next: MigrationStatus,
  log: readonly string[],
): string {
  if (next.message !== undefined && next.message !== current.message) return next.message;
  // A finished rollback says why it rolled back, not what its last step did.
  if (next.phase === 'RolledBack' && next.message !== undefined) return next.message;
  if (log.length) return log.join('; ');
  if (next.phase !== current.phase || previous === undefined) return phaseWords(next);
  return previous;
}

function phaseWords(m: MigrationStatus): string {
  return `${m.phase}${m.replicas !== undefined ? ` (x${m.replicas})` : ''}`;
}

function conditionsFor(m: MigrationStatus, result: Record<string, unknown> | undefined): ConditionInput[] {
  if (m.phase === 'Succeeded')
    return [{ type: 'Ready', status: 'True', reason: 'Succeeded', message: 'moved' }];
  if (result)
    return [{ type: 'Ready', status: 'False', reason: m.phase, message: String(result.error ?? m.phase) }];
  return [{ type: 'Ready', status: 'False', reason: 'InProgress', message: m.phase }];
}
