// Make-before-break migration of one deployment between two members, as a pure step machine.
//
//   Pending → ScalingTarget → WaitingTarget → DrainingSource → (Watching →) Succeeded
//                                   │                               │
//                                   └→ Failed (target restored)     └→ RollingBack → RolledBack
//
// `stepMigration(spec, status, observed)` returns the next status and the writes to make. The
// driver (the CLI, the SheetMigration controller) performs the writes and THEN stores the status.
// Every write is absolute and idempotent (apply = upsert of the whole row with its replica count;
// delete of a missing row is a no-op), so a driver that crashes between the writes and storing the
// status simply runs the same step again: nothing is scaled twice. The status alone is enough to
// resume (it carries the source row and what the target held before).
//
// Better than the reference (spec §7.3):
//   - a timeout on the target REMOVES what we put there (the reference leaves the applied spec, so
//     the deployment ends up declared on both members);
//   - draining re-checks that the target still runs every replica (a resumed migration does not
//     drain on a stale observation);
//   - rollback keeps the degraded target until the source runs every replica again, then deletes
//     it (the reference deletes the target at once: break-before-make on the way back);
//   - a target without the CPU for the replicas fails up front, before anything is written.

import type { Row } from '../store/types.ts';
import { cpuReqOf, replicasOf, sameSpec } from './plan.ts';

export type MigrationPhase =
  | 'Pending'
  | 'ScalingTarget'
  | 'WaitingTarget'
  | 'DrainingSource'
  | 'Watching'
  | 'Succeeded'
  | 'RollingBack'
  | 'RolledBack'
  | 'Failed';

export const TERMINAL: readonly MigrationPhase[] = ['Succeeded', 'RolledBack', 'Failed'];

export interface MigrationSpec {
  deploy: string;
  waitSec: number; // how long the target (or, on rollback, the source) may take to run every replica
  rollbackWindowSec: number; // after draining, watch the target this long; 0 = no watch
  skipWait: boolean; // apply and drain without waiting (the reference's demo mode without kubelets)
  checkCapacity: boolean; // refuse a target whose free CPU cannot hold the replicas
}

export interface MigrationStatus {
  phase: MigrationPhase;
  phaseSinceMs: number; // when this phase began (deadlines count from here)
  waitSinceMs?: number; // when waiting for the target first began (a flapping target cannot extend it)
  replicas?: number;
  sourceRow?: Row; // the deployment as found on the source (re-applied on rollback)
  targetBefore?: Row | null; // the target's row before we wrote (null: it had none)
  message?: string;
  degraded?: { running: number; replicas: number };
}

export interface MemberObservation {
  deployment: Row | undefined; // the row named spec.deploy, if any
  running: number; // its pods in phase Running
  freeCpu: number;
}

export interface MigrationObservation {
  source: MemberObservation;
  target: MemberObservation;
  nowMs: number;
}

export type MigrationWrite =
  | { op: 'apply'; on: 'source' | 'target'; row: Row }
  | { op: 'delete'; on: 'source' | 'target'; name: string };

export interface MigrationStep {
  status: MigrationStatus;
  writes: MigrationWrite[];
  log: string[]; // the reference's [migrate] lines, for people
}

export function initialStatus(nowMs: number): MigrationStatus {
  return { phase: 'Pending', phaseSinceMs: nowMs };
}

/** The reference's result JSON for a finished migration. */
export function migrationResult(spec: MigrationSpec, s: MigrationStatus): Record<string, unknown> {
  if (s.phase === 'Succeeded') return { ok: true, deploy: spec.deploy, replicas: s.replicas ?? 0 };
  if (s.phase === 'RolledBack')
    return { ok: false, rolled_back: true, deploy: spec.deploy, error: s.message };
  return { ok: false, error: s.message };
}

const enter = (
  prev: MigrationStatus,
  phase: MigrationPhase,
  nowMs: number,
  extra: Partial<MigrationStatus> = {},
): MigrationStatus => ({ ...prev, ...extra, phase, phaseSinceMs: nowMs });

function restoreTarget(spec: MigrationSpec, before: Row | null | undefined): MigrationWrite {
  return before
    ? { op: 'apply', on: 'target', row: before }
    : { op: 'delete', on: 'target', name: spec.deploy };
}

/** The target declares the deployment as we copied it (not an older same-named spec). */
function holdsOurs(s: MigrationStatus, o: MigrationObservation): boolean {
  return o.target.deployment !== undefined && sameSpec(o.target.deployment, s.sourceRow as Row);
}

function timedOut(spec: MigrationSpec, s: MigrationStatus, o: MigrationObservation): MigrationStep {
  const d = spec.deploy;
  if (!o.source.deployment)
    // Someone removed it from the source meanwhile: the target's copy is now the only one; keep it.
    return {
      status: enter(s, 'Failed', o.nowMs, {
        message: `timeout: '${d}' not Ready on target within ${spec.waitSec}s, and it is gone from the source; the target's copy was kept`,
      }),
      writes: [],
      log: [],
    };
  return {
    status: enter(s, 'Failed', o.nowMs, {
      message: `timeout: '${d}' not Ready on target within ${spec.waitSec}s; source left intact (no downtime)`,
    }),
    writes: [restoreTarget(spec, s.targetBefore)],
    log: [`target not Ready (${o.target.running}/${s.replicas ?? 0}) — undoing the target's copy`],
  };
}

export function stepMigration(
  spec: MigrationSpec,
  s: MigrationStatus,
  o: MigrationObservation,
): MigrationStep {
  const d = spec.deploy;
  const now = o.nowMs;
  const elapsedSec = (now - s.phaseSinceMs) / 1000;
  const n = s.replicas ?? 0;
  switch (s.phase) {
    case 'Pending': {
      const row = o.source.deployment;
      if (!row)
        return {
          status: enter(s, 'Failed', now, { message: `deployment '${d}' not found on source` }),
          writes: [],
          log: [],
        };
      const replicas = replicasOf(row);
      const need = replicas * cpuReqOf(row);
      // CPU the target already gives this deployment is released to it when the row is replaced.
      const held = o.target.deployment ? replicasOf(o.target.deployment) * cpuReqOf(o.target.deployment) : 0;
      if (spec.checkCapacity && !spec.skipWait && need > o.target.freeCpu + held)
        return {
          status: enter(s, 'Failed', now, {
            message: `target has ${o.target.freeCpu + held}m CPU free for '${d}' but ${replicas} x ${cpuReqOf(row)}m = ${need}m are needed; nothing was written (add nodes to the target or lower replicas)`,
          }),
          writes: [],
          log: [],
        };
      return {
        status: enter(s, 'ScalingTarget', now, {
          replicas,
          sourceRow: row,
          targetBefore: o.target.deployment ?? null,
        }),
        writes: [],
        log: [],
      };
    }
    case 'ScalingTarget': {
      const next = spec.skipWait || n === 0 ? 'DrainingSource' : 'WaitingTarget';
      const log = [`${d} (x${n}): applying on target…`];
      if (next === 'WaitingTarget')
        log.push(`waiting for ${d} to become Ready on target (≤${spec.waitSec}s)…`);
      return {
        status: enter(s, next, now, { waitSinceMs: now }),
        writes: [{ op: 'apply', on: 'target', row: s.sourceRow as Row }],
        log,
      };
    }
    case 'WaitingTarget': {
      const ours = holdsOurs(s, o);
      if (ours && o.target.running >= n)
        return {
          status: enter(s, 'DrainingSource', now),
          writes: [],
          log: [`target Ready — draining ${d} from source`],
        };
      if ((now - (s.waitSinceMs ?? s.phaseSinceMs)) / 1000 >= spec.waitSec) return timedOut(spec, s, o);
      // Someone (or a driver that died mid-timeout) replaced our copy on the target: put it back.
      return {
        status: s,
        writes: ours ? [] : [{ op: 'apply', on: 'target', row: s.sourceRow as Row }],
        log: [],
      };
    }
    case 'DrainingSource': {
      const watch = spec.rollbackWindowSec > 0 && n > 0 && !spec.skipWait;
      // The source is already drained: a driver died after the delete and before storing the phase.
      if (!o.source.deployment)
        return { status: enter(s, watch ? 'Watching' : 'Succeeded', now), writes: [], log: [] };
      // Never drain what is not running elsewhere: re-check (a resumed driver may hold an old view).
      if (!spec.skipWait && n > 0 && (o.target.running < n || !holdsOurs(s, o))) {
        if ((now - (s.waitSinceMs ?? s.phaseSinceMs)) / 1000 >= spec.waitSec) return timedOut(spec, s, o);
        return {
          status: enter(s, 'WaitingTarget', now),
          writes: [],
          log: [`target dropped to ${o.target.running}/${n} before draining — waiting again`],
        };
      }
      const log = spec.skipWait ? [`draining ${d} from source (no wait)`] : [];
      if (watch) log.push(`watching target for ${spec.rollbackWindowSec}s (rollback armed)…`);
      return {
        status: enter(s, watch ? 'Watching' : 'Succeeded', now),
        writes: [{ op: 'delete', on: 'source', name: d }],
        log,
      };
    }
    case 'Watching': {
      // The source declaring it again means a rollback had begun (the driver died after re-applying
      // it and before storing RollingBack): finish that rollback rather than leave it on both.
      if (o.target.running < n || o.source.deployment)
        return {
          status: enter(s, 'RollingBack', now, {
            degraded: { running: o.target.running, replicas: n },
            message: `target degraded to ${o.target.running}/${n}; restored on source`,
          }),
          writes: [{ op: 'apply', on: 'source', row: s.sourceRow as Row }],
          log: [`target degraded (${o.target.running}/${n}) — rolling back to source`],
        };
      if (elapsedSec >= spec.rollbackWindowSec)
        return { status: enter(s, 'Succeeded', now), writes: [], log: [] };
      return { status: s, writes: [], log: [] };
    }
    case 'RollingBack': {
      // The source row is re-applied whenever the source does not declare it (a driver that died
      // right after entering this phase, or a person who deleted it again): idempotent, and no
      // write at all while the source is merely starting.
      const sourceOk = o.source.deployment !== undefined && replicasOf(o.source.deployment) === n;
      const reapply: MigrationWrite[] = sourceOk
        ? []
        : [{ op: 'apply', on: 'source', row: s.sourceRow as Row }];
      // The target no longer holds our copy: a previous run already finished the rollback.
      if (sourceOk && (o.source.running >= n || !holdsOurs(s, o)))
        return {
          status: enter(s, 'RolledBack', now),
          writes: [restoreTarget(spec, s.targetBefore)],
          log: [`source Ready again — removing ${d} from target`],
        };
      if (elapsedSec >= spec.waitSec)
        return {
          status: enter(s, 'Failed', now, {
            message: `rollback: '${d}' not Ready on source within ${spec.waitSec}s; kept on both members (target ${o.target.running}/${n} running) — decide by hand`,
          }),
          writes: reapply,
          log: [],
        };
      return { status: s, writes: reapply, log: [] };
    }
    default:
      return { status: s, writes: [], log: [] };
  }
}
