// The fleet rollout planner: one pure function that, given a rollout's spec, the status it wrote
// last time and what is observed on each target now, says what the status is now and which few
// actions to take (apply a version to a target, switch traffic, tell an Event). The Rollout
// controller and `retrokube rollout` for local clusters both drive it; neither keeps any other
// memory, so a restarted driver resumes from the status alone, and repeating an action is harmless
// (applying a version is writing the desired fields, not adding to them).
//
// The pattern is the seed's orchestrator: walk the hosts, ask each to do the job, poll without
// blocking, retry, roll a failed host back and stop the walk, update part first (canary), update
// the idle half and switch (blue/green), walk in an order derived from attributes.

import { ROLLOUT_DEFAULTS, ROLLOUT_LIMITS } from '../api/rollout-limits.ts';

export type StrategyType = 'rolling' | 'retry' | 'canary' | 'blueGreen' | 'ordered';
export type TargetPhase =
  | 'Pending'
  | 'Updating'
  | 'Checking'
  | 'Succeeded'
  | 'Failed'
  | 'RollingBack' // its previous version is written back; not yet seen running it
  | 'RolledBack' // seen running its previous version again
  | 'Skipped';
export type RolloutPhase =
  | 'Pending'
  | 'Progressing'
  | 'Paused'
  | 'WaitingForPromotion'
  | 'Succeeded'
  | 'Failed'
  | 'Aborted';

/** The fields of one deployment a rollout changes; what a rollback restores. */
export interface Version {
  image?: string;
  replicas?: number;
}

export interface Change extends Version {
  deployment: string;
}

export interface Strategy {
  type: StrategyType;
  maxParallel?: number;
  /** After rolling a failed target back: stop the walk (abort) or go on with the rest (continue). */
  onFailure?: 'abort' | 'continue';
  stepDeadlineSeconds?: number;
  checkSeconds?: number;
  retry?: { attempts: number; delaySeconds?: number; backoffFactor?: number };
  canary?: { count?: number; percent?: number; promotion?: 'auto' | 'manual'; analysisSeconds?: number };
  blueGreen?: { groupLabel: string; activeGroup: string };
  ordered?: { label: string; order: string[] };
}

export interface RolloutSpec {
  change: Change;
  strategy: Strategy;
  paused?: boolean;
  abort?: boolean;
  /** A person's go-ahead for a manual canary (the CLI's `promote` and an annotation set it). */
  promote?: boolean;
}

export interface Target {
  name: string;
  labels: Record<string, string>;
}

/** What a driver sees on one target now. */
export interface Observation {
  /** The deployment's desired fields on the target; undefined when the target has no such deployment. */
  current?: Version;
  /** The target runs `current` everywhere (heard on the air, read from the sheet). */
  converged: boolean;
  /** The check passes now (pods running at least the minimum; optional HTTP probe). */
  healthy: boolean;
  /** Why the target cannot be judged (unreachable, 401, ...); counts against the deadline. */
  problem?: string;
}

export interface TargetStatus {
  name: string;
  phase: TargetPhase;
  attempts: number;
  previous?: Version;
  startedAt?: string;
  checkingSince?: string;
  /** Since when the check has been failing (it fails the attempt once it lasts the check window). */
  troubleSince?: string;
  nextAttemptAt?: string;
  /** Since when its previous version has been written back (RollingBack). */
  rollbackSince?: string;
  finishedAt?: string;
  message?: string;
}

export interface RolloutStatus {
  phase: RolloutPhase;
  message?: string;
  targets: TargetStatus[];
  canaryPromotedAt?: string;
  canaryDoneAt?: string;
  activeGroup?: string;
}

export type Action =
  | { kind: 'apply'; target: string; version: Version; why: 'update' | 'rollback' }
  | { kind: 'switch'; group: string; label: string };

export interface RolloutEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface Decision {
  status: RolloutStatus;
  actions: Action[];
  events: RolloutEvent[];
}

const IN_FLIGHT: ReadonlySet<TargetPhase> = new Set(['Updating', 'Checking']);
const DONE: ReadonlySet<TargetPhase> = new Set(['Succeeded', 'Failed', 'RolledBack', 'Skipped']);
/** Target phases that are over: decide() never looks at such a target again. */
export const TARGET_DONE: ReadonlySet<string> = DONE;
/** Target phases whose observation decide() judges (health, convergence): changing, or rolling back. */
export const TARGET_JUDGED: ReadonlySet<string> = new Set([...IN_FLIGHT, 'RollingBack']);
const FINAL_ROLLOUT: ReadonlySet<RolloutPhase> = new Set(['Succeeded', 'Failed', 'Aborted']);

/**
 * Nothing left to do or to see: the rollout has ended and no target is still rolling back. (A
 * rollout ends — Failed, Aborted — the moment it decides to; its targets say RolledBack only once
 * they are seen running their previous version, so the driver keeps looking until then.)
 */
export function settled(status: { phase?: string; targets?: { phase: string }[] } | undefined): boolean {
  return (
    FINAL_ROLLOUT.has(status?.phase as RolloutPhase) &&
    !(status?.targets ?? []).some((t) => t.phase === 'RollingBack')
  );
}

/** Problems that make a rollout impossible before anything is touched (null when there are none). */
export function preflight(
  spec: RolloutSpec,
  targets: Target[],
  seen: Map<string, Observation>,
): string | null {
  const s = spec.strategy;
  if (targets.length === 0) return 'the selector matches no target; check the labels in spec.selector';
  if (targets.length > ROLLOUT_LIMITS.maxTargets)
    return `the selector matches ${targets.length} targets; at most ${ROLLOUT_LIMITS.maxTargets} per rollout`;
  if (spec.change.image === undefined && spec.change.replicas === undefined)
    return 'spec.change names neither an image nor replicas: there is nothing to change';
  const missing = targets.filter(
    (t) => seen.get(t.name)?.current === undefined && !seen.get(t.name)?.problem,
  );
  if (missing.length > 0)
    return `deployment ${spec.change.deployment} does not exist on ${missing.map((t) => t.name).join(', ')}; create it there or narrow the selector`;
  const unreachable = targets.filter((t) => seen.get(t.name)?.problem);
  if (unreachable.length > 0)
    return `cannot read ${unreachable.map((t) => `${t.name} (${seen.get(t.name)?.problem})`).join(', ')}; nothing was changed`;
  if (s.type === 'retry' && !s.retry) return 'strategy retry needs strategy.retry.attempts';
  if (s.type === 'canary') {
    if (!s.canary || (s.canary.count === undefined && s.canary.percent === undefined))
      return 'strategy canary needs strategy.canary.count or strategy.canary.percent';
    if (canarySize(s, targets.length) >= targets.length)
      return `the canary (${canarySize(s, targets.length)}) is not smaller than the ${targets.length} targets; lower strategy.canary`;
  }
  if (s.type === 'blueGreen') {
    if (!s.blueGreen) return 'strategy blueGreen needs strategy.blueGreen.groupLabel and activeGroup';
    const groups = [...new Set(targets.map((t) => t.labels[s.blueGreen!.groupLabel] ?? ''))];
    if (groups.length !== 2 || groups.includes(''))
      return `blue/green needs every target labelled ${s.blueGreen.groupLabel} with one of exactly two values; found ${groups.map((g) => g || '(none)').join(', ')}`;
    if (!groups.includes(s.blueGreen.activeGroup))
      return `activeGroup ${s.blueGreen.activeGroup} is not one of the groups ${groups.join(', ')}`;
  }
  if (s.type === 'ordered' && (!s.ordered || s.ordered.order.length === 0))
    return 'strategy ordered needs strategy.ordered.label and a non-empty order';
  return null;
}

export function canarySize(s: Strategy, n: number): number {
  const c = s.canary;
  if (!c) return 0;
  if (c.count !== undefined) return c.count;
  return Math.max(1, Math.ceil(((c.percent ?? 0) * n) / 100));
}

/** The desired version on a target: the change applied over what it had. */
export function desiredVersion(change: Change, previous: Version | undefined): Version {
  return {
    ...previous,
    ...(change.image !== undefined ? { image: change.image } : {}),
    ...(change.replicas !== undefined ? { replicas: change.replicas } : {}),
  };
}

export function sameVersion(a: Version | undefined, b: Version | undefined): boolean {
  return a?.image === b?.image && a?.replicas === b?.replicas;
}

/** Targets in walk order: by name, or by the ordered label's stage then name. */
function walkOrder(spec: RolloutSpec, targets: Target[]): Target[] {
  const byName = [...targets].sort((a, b) => a.name.localeCompare(b.name));
  const o = spec.strategy.ordered;
  if (spec.strategy.type !== 'ordered' || !o) return byName;
  return byName.sort((a, b) => stage(o, a) - stage(o, b));
}

function stage(o: NonNullable<Strategy['ordered']>, t: Target): number {
  const i = o.order.indexOf(t.labels[o.label] ?? '');
  return i < 0 ? Number.MAX_SAFE_INTEGER : i;
}

/** The one step of the planner. Pure: the same inputs give the same decision. */
export function decide(
  spec: RolloutSpec,
  last: RolloutStatus | undefined,
  targets: Target[],
  seen: Map<string, Observation>,
  now: Date,
): Decision {
  const iso = now.toISOString();
  const actions: Action[] = [];
  const events: RolloutEvent[] = [];
  const s = spec.strategy;
  const say = (type: RolloutEvent['type'], reason: string, message: string) =>
    events.push({ type, reason, message });

  // Start: check everything before touching anything; the target list is fixed from here on.
  if (!last || last.phase === 'Pending') {
    const why = preflight(spec, targets, seen);
    if (why) {
      say('Warning', 'Refused', why);
      return { status: { phase: 'Failed', message: why, targets: [] }, actions, events };
    }
    last = {
      phase: 'Progressing',
      targets: walkOrder(spec, targets).map((t) => ({ name: t.name, phase: 'Pending', attempts: 0 })),
      ...(s.type === 'blueGreen' ? { activeGroup: s.blueGreen!.activeGroup } : {}),
    };
    say('Normal', 'Started', `${last.targets.length} targets, strategy ${s.type}`);
  }
  const status: RolloutStatus = structuredClone(last);
  const rows = status.targets;
  const deadlineMs = 1000 * (s.stepDeadlineSeconds ?? ROLLOUT_DEFAULTS.stepDeadlineSeconds);
  followRollbacks(rows, seen, now, deadlineMs, actions, say);
  if (FINAL_ROLLOUT.has(status.phase)) return { status, actions, events };

  const byName = new Map(targets.map((t) => [t.name, t]));
  const checkMs = 1000 * (s.checkSeconds ?? ROLLOUT_DEFAULTS.checkSeconds);
  const canaryN = s.type === 'canary' ? canarySize(s, rows.length) : 0;

  const rollBack = (row: TargetStatus, why: string) => {
    delete row.nextAttemptAt;
    delete row.checkingSince;
    delete row.troubleSince;
    row.message = why;
    if (row.previous) {
      actions.push({ kind: 'apply', target: row.name, version: row.previous, why: 'rollback' });
      row.phase = 'RollingBack';
      row.rollbackSince = iso;
      say('Warning', 'RollingBack', `${row.name}: ${why}; back to ${describe(row.previous)}`);
    } else {
      row.phase = 'Failed';
      row.finishedAt = iso;
      say('Warning', 'Failed', `${row.name}: ${why}`);
    }
  };

  // Blue/green: the serving group is never touched; it is the way back.
  if (s.type === 'blueGreen') {
    for (const row of rows) {
      const group = byName.get(row.name)?.labels[s.blueGreen!.groupLabel];
      if (row.phase === 'Pending' && group === status.activeGroup) {
        row.phase = 'Skipped';
        row.message = `serves traffic (${s.blueGreen!.groupLabel}=${group}); keeps its version for a switch back`;
      }
    }
  }
  if (s.type === 'ordered') {
    for (const row of rows) {
      const t = byName.get(row.name);
      if (row.phase === 'Pending' && t && stage(s.ordered!, t) === Number.MAX_SAFE_INTEGER) {
        row.phase = 'Skipped';
        row.message = `${s.ordered!.label}=${t.labels[s.ordered!.label] ?? '(none)'} is not in the order ${s.ordered!.order.join(', ')}`;
      }
    }
  }

  // An abort (a field a person sets) rolls back every target caught mid-change, and the canaries
  // that have not been promoted: nothing is left half-changed.
  if (spec.abort) {
    for (const row of rows) {
      const midChange = IN_FLIGHT.has(row.phase) || (row.phase === 'Pending' && row.attempts > 0);
      const unpromotedCanary = s.type === 'canary' && !status.canaryPromotedAt && row.phase === 'Succeeded';
      if (midChange || unpromotedCanary) rollBack(row, 'rolled back: the rollout was aborted');
      else if (row.phase === 'Pending') {
        row.phase = 'Skipped';
        row.message = 'not started: the rollout was aborted';
      }
    }
    status.phase = 'Aborted';
    status.message = 'aborted by spec.abort';
    say('Warning', 'Aborted', 'the rollout was aborted; targets caught mid-change were rolled back');
    return { status, actions, events };
  }

  // Observe the targets that are changing.
  let failedNow = false;
  for (const row of rows) {
    if (!IN_FLIGHT.has(row.phase)) continue;
    const o = seen.get(row.name);
    const want = desiredVersion(spec.change, row.previous);
    const started = Date.parse(row.startedAt ?? iso);
    let failure: string | undefined;
    // A target that cannot be judged (unreachable, not heard yet) makes no progress; only the
    // deadline turns that into a failure.
    if (!o || o.problem) {
      // nothing to do until it can be judged
    } else if (o.current === undefined) failure = `deployment ${spec.change.deployment} disappeared`;
    else if (!sameVersion(o.current, want)) {
      // Someone else changed it, or our write was lost: write it again (level-triggered).
      actions.push({ kind: 'apply', target: row.name, version: want, why: 'update' });
    } else {
      // The check is judged over the check window: one bad look (a listener that has just
      // started hears fewer pods) is not a failure, trouble that lasts the window is.
      const trouble = !o.healthy
        ? row.phase === 'Updating'
          ? 'fewer pods running than the check allows during the update'
          : 'the check failed after convergence'
        : row.phase === 'Checking' && !o.converged
          ? 'no longer converged during the check'
          : undefined;
      if (trouble) {
        row.troubleSince ??= iso;
        if (now.getTime() - Date.parse(row.troubleSince) >= checkMs)
          failure = `${trouble} for ${checkMs / 1000} s`;
      } else {
        delete row.troubleSince;
        if (row.phase === 'Updating' && o.converged) {
          row.phase = 'Checking';
          row.checkingSince = iso;
          say('Normal', 'Converged', `${row.name} runs ${describe(want)}; checking for ${checkMs / 1000} s`);
        } else if (
          row.phase === 'Checking' &&
          now.getTime() - Date.parse(row.checkingSince ?? iso) >= checkMs
        ) {
          row.phase = 'Succeeded';
          row.finishedAt = iso;
          row.message = `runs ${describe(want)}`;
          delete row.checkingSince;
          say('Normal', 'Succeeded', `${row.name} runs ${describe(want)}`);
        }
      }
    }
    if (!failure && IN_FLIGHT.has(row.phase) && now.getTime() - started > deadlineMs)
      failure = `did not converge within ${deadlineMs / 1000} s${o?.problem ? ` (${o.problem})` : o ? '' : ' (not observed)'}`;
    if (!failure) continue;
    const maxAttempts = s.retry?.attempts ?? 1;
    if (row.attempts < maxAttempts) {
      const delay =
        (s.retry?.delaySeconds ?? ROLLOUT_DEFAULTS.retryDelaySeconds) *
        (s.retry?.backoffFactor ?? ROLLOUT_DEFAULTS.backoffFactor) ** (row.attempts - 1);
      row.phase = 'Pending';
      row.nextAttemptAt = new Date(now.getTime() + delay * 1000).toISOString();
      row.message = `attempt ${row.attempts} of ${maxAttempts} failed: ${failure}; next attempt in ${delay} s`;
      delete row.checkingSince;
      delete row.troubleSince;
      say('Warning', 'AttemptFailed', `${row.name}: ${row.message}`);
    } else {
      rollBack(row, `failed after ${row.attempts} attempt(s): ${failure}`);
      failedNow = true;
    }
  }

  if (failedNow && (s.onFailure ?? ROLLOUT_DEFAULTS.onFailure) === 'abort') {
    for (const row of rows) {
      if (IN_FLIGHT.has(row.phase) || (row.phase === 'Pending' && row.attempts > 0))
        rollBack(row, 'rolled back: another target failed and the rollout stops');
      else if (row.phase === 'Pending') {
        row.phase = 'Skipped';
        row.message = 'not started: another target failed and the rollout stops (onFailure: abort)';
      }
    }
    return finish(status, 'Failed', failedSummary(rows), events, actions);
  }

  // Canary: promotion after every canary succeeded (and the analysis window), by itself or by a person.
  if (s.type === 'canary' && !status.canaryPromotedAt) {
    const canaries = rows.slice(0, canaryN);
    if (canaries.every((r) => DONE.has(r.phase))) {
      if (canaries.some((r) => r.phase !== 'Succeeded' && r.phase !== 'Skipped')) {
        for (const row of rows.slice(canaryN)) {
          if (row.phase === 'Pending') {
            row.phase = 'Skipped';
            row.message = 'not started: a canary failed';
          }
        }
        return finish(status, 'Failed', failedSummary(rows), events, actions);
      }
      status.canaryDoneAt ??= iso;
      const analysisMs = 1000 * (s.canary?.analysisSeconds ?? 0);
      const manual = s.canary?.promotion === 'manual';
      if (manual && !spec.promote) {
        if (status.phase !== 'WaitingForPromotion')
          say(
            'Normal',
            'WaitingForPromotion',
            `${canaryN} canaries succeeded; promote to go on, or abort to roll them back`,
          );
        status.phase = 'WaitingForPromotion';
        status.message = `${canaryN} canaries succeeded; waiting for promotion (retrokube rollout promote, or set spec.promote)`;
        return { status, actions, events };
      }
      if (!manual && now.getTime() - Date.parse(status.canaryDoneAt) < analysisMs) {
        status.message = `canaries succeeded; watching them for ${analysisMs / 1000} s before promotion`;
        return { status, actions, events };
      }
      status.canaryPromotedAt = iso;
      say('Normal', 'Promoted', manual ? 'promoted by a person' : 'promoted after the analysis window');
    }
  }

  // Start new targets while the strategy allows.
  if (spec.paused) {
    if (status.phase !== 'Paused') say('Normal', 'Paused', 'no new target starts until spec.paused is false');
    status.phase = 'Paused';
    status.message = 'paused: targets already changing finish, no new one starts';
  } else {
    status.phase = 'Progressing';
    delete status.message;
    const maxParallel = Math.min(s.maxParallel ?? ROLLOUT_DEFAULTS.maxParallel, ROLLOUT_LIMITS.maxParallel);
    const changing = () => rows.filter((r) => IN_FLIGHT.has(r.phase)).length;
    for (const [i, row] of rows.entries()) {
      if (changing() >= maxParallel) break;
      if (row.phase !== 'Pending') continue;
      if (row.nextAttemptAt && now.getTime() < Date.parse(row.nextAttemptAt)) continue;
      if (s.type === 'canary' && !status.canaryPromotedAt && i >= canaryN) break;
      if (s.type === 'ordered' && !earlierStagesDone(spec, rows, byName, row)) break;
      const o = seen.get(row.name);
      if (!o || o.problem || o.current === undefined) {
        // Its version now is what a rollback would restore: a target that cannot be read waits, and says why.
        if (o?.problem) row.message = `waiting to start: ${o.problem}`;
        if (row.attempts === 0 && o?.current === undefined && !o?.problem) {
          row.phase = 'Failed';
          row.finishedAt = iso;
          row.message = `deployment ${spec.change.deployment} is gone from this target; nothing was changed`;
          say('Warning', 'Failed', `${row.name}: ${row.message}`);
        }
        continue;
      }
      row.previous ??= o.current;
      const want = desiredVersion(spec.change, row.previous);
      row.phase = 'Updating';
      row.attempts += 1;
      row.startedAt = iso;
      delete row.nextAttemptAt;
      row.message = `attempt ${row.attempts}: ${describe(row.previous)} → ${describe(want)}`;
      actions.push({ kind: 'apply', target: row.name, version: want, why: 'update' });
      say('Normal', 'Updating', `${row.name}: ${row.message}`);
    }
  }

  if (!rows.every((r) => DONE.has(r.phase))) return { status, actions, events };
  if (rows.some((r) => r.phase === 'Failed' || r.phase === 'RolledBack'))
    return finish(status, 'Failed', failedSummary(rows), events, actions);
  if (s.type === 'blueGreen' && status.activeGroup === s.blueGreen!.activeGroup) {
    const idle = rows
      .map((r) => byName.get(r.name)?.labels[s.blueGreen!.groupLabel])
      .find((g) => g !== undefined && g !== status.activeGroup);
    if (idle) {
      actions.push({ kind: 'switch', group: idle, label: s.blueGreen!.groupLabel });
      say(
        'Normal',
        'Switched',
        `traffic moves from ${s.blueGreen!.groupLabel}=${status.activeGroup} to ${idle}`,
      );
      status.activeGroup = idle;
    }
  }
  const changed = rows.filter((r) => r.phase === 'Succeeded').length;
  return finish(status, 'Succeeded', `${changed} of ${rows.length} targets changed`, events, actions);
}

/**
 * Targets rolling back: written back again while they run something else (level-triggered),
 * RolledBack once seen running their previous version, Failed if that is not seen within the step
 * deadline (the target's own trouble is then for a person to see, not hidden behind RolledBack).
 */
function followRollbacks(
  rows: TargetStatus[],
  seen: Map<string, Observation>,
  now: Date,
  deadlineMs: number,
  actions: Action[],
  say: (type: RolloutEvent['type'], reason: string, message: string) => void,
): void {
  const iso = now.toISOString();
  for (const row of rows) {
    if (row.phase !== 'RollingBack' || !row.previous) continue;
    const o = seen.get(row.name);
    if (o && !o.problem && o.current !== undefined) {
      if (!sameVersion(o.current, row.previous)) {
        actions.push({ kind: 'apply', target: row.name, version: row.previous, why: 'rollback' });
      } else if (o.converged) {
        row.phase = 'RolledBack';
        row.finishedAt = iso;
        delete row.rollbackSince;
        say('Normal', 'RolledBack', `${row.name} runs ${describe(row.previous)} again`);
        continue;
      }
    }
    if (now.getTime() - Date.parse(row.rollbackSince ?? iso) > deadlineMs) {
      row.phase = 'Failed';
      row.finishedAt = iso;
      row.message = `${row.message ?? 'rolled back'}; not seen running ${describe(row.previous)} again within ${deadlineMs / 1000} s${o?.problem ? ` (${o.problem})` : ''}`;
      delete row.rollbackSince;
      say('Warning', 'Failed', `${row.name}: ${row.message}`);
    }
  }
}

function earlierStagesDone(
  spec: RolloutSpec,
  rows: TargetStatus[],
  byName: Map<string, Target>,
  row: TargetStatus,
): boolean {
  const o = spec.strategy.ordered!;
  const mine = stage(o, byName.get(row.name)!);
  return rows.every((r) => {
    const t = byName.get(r.name);
    return !t || stage(o, t) >= mine || r.phase === 'Succeeded' || r.phase === 'Skipped';
  });
}

function failedSummary(rows: TargetStatus[]): string {
  const bad = rows.filter(
    (r) => r.phase === 'Failed' || r.phase === 'RollingBack' || r.phase === 'RolledBack',
  );
  return `${bad.length} target(s) failed: ${bad.map((r) => `${r.name} (${r.message ?? r.phase})`).join('; ')}`;
}

function finish(
  status: RolloutStatus,
  phase: RolloutPhase,
  message: string,
  events: RolloutEvent[],
  actions: Action[],
): Decision {
  status.phase = phase;
  status.message = message;
  events.push({ type: phase === 'Succeeded' ? 'Normal' : 'Warning', reason: phase, message });
  return { status, actions, events };
}

export function describe(v: Version | undefined): string {
  if (!v) return '(nothing)';
  return [v.image, v.replicas !== undefined ? `×${v.replicas}` : undefined].filter(Boolean).join(' ');
}
