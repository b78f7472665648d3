// The Rollouts of a fleet FILE, carried out by `retrokube up` with the planner the Rollout
// controller uses (rollout/plan.ts decide()). Like the controller it keeps no memory but each
// rollout's status, written to the state folder after every step, so a restarted `up` carries on
// where it stopped and never changes a target twice. Targets are whatever the fleet runs (local
// Oberon clusters today): each observes itself from what is heard and applies a version through
// its own live channel.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RolloutSpecT, RolloutStatusT } from '../api/rollout.ts';
import { plannerSpec, SERVING_LABEL } from '../controllers/rollout.ts';
import type { RolloutLike } from '../rollout/format.ts';
import {
  type Action,
  type Change,
  decide,
  type Observation,
  type RolloutEvent,
  type RolloutStatus,
  settled,
  type Target,
  type Version,
} from '../rollout/plan.ts';
import { logger } from '../util/log.ts';
import type { LocalRollout } from './fleet-spec.ts';

const log = logger('local-rollout');

export const LIMITS = {
  pollMs: 2_000, // as the Rollout controller: a walk in progress is looked at this often
  events: 30, // the newest events kept per rollout (the control API shows them)
  heardWaitMs: 180_000, // a rollout waits this long for its targets to be heard before judging them
  statusFile: 'rollouts.json', // in the state folder: status and steering of every rollout
} as const;

/** One cluster a rollout can target. */
export interface FleetTarget {
  /** What a Rollout's selector.kind picks it as. */
  kind: 'OberonKube' | 'SheetCluster';
  name: string;
  /** metadata.labels, plus the serving label once blue/green switched (kept across restarts). */
  labels: Record<string, string>;
  /** What is heard (Oberon) or read (a sheet) now; a target that reads over the network may take a moment. */
  observe(change: Change, minRunning: number): Observation | Promise<Observation>;
  /** Sets the deployment's desired fields (idempotent; throws or rejects with a reason it cannot). */
  apply(deployment: string, version: Version): void | Promise<void>;
}

/** What a person may set on a running rollout (the CLI's promote/abort/pause/resume). */
export interface Steering {
  promote?: boolean;
  abort?: boolean;
  paused?: boolean;
}

interface Saved {
  steer: Steering;
  status?: RolloutStatusT;
  /** Serving labels set by blue/green switches: target → value. */
  serving?: Record<string, string>;
}

export interface LocalRolloutView extends RolloutLike {
  metadata: { name: string; namespace: string };
  spec: RolloutSpecT;
  status: RolloutStatusT;
  events: string[];
  /** Steps the runner has finished on this rollout since `up` started (one that changes nothing
   * counts too): a test can tell that it looked at a state and chose to do nothing. */
  steps: number;
}

export interface RunnerOptions {
  /** The state folder: rollouts.json lives there. */
  dir: string;
  rollouts: LocalRollout[];
  targets: FleetTarget[];
  /** One line per Event, for the person watching `up`. */
  say?: (line: string) => void;
  now?: () => Date;
}

export class LocalRollouts {
  private readonly saved = new Map<string, Saved>();
  private readonly events = new Map<string, string[]>();
  private readonly steps = new Map<string, number>();
  private readonly file: string;
  private readonly startedMs: number;
  private ticking: Promise<void> | null = null;

  private readonly o: RunnerOptions;

  constructor(o: RunnerOptions) {
    this.o = o;
    this.file = join(o.dir, LIMITS.statusFile);
    this.startedMs = this.now().getTime();
    const old = this.load();
    for (const r of o.rollouts) {
      const s = old[r.name] ?? { steer: {} };
      this.saved.set(r.name, s);
      this.events.set(r.name, []);
      for (const [t, v] of Object.entries(s.serving ?? {})) {
        const target = o.targets.find((x) => x.name === t);
        if (target) target.labels[SERVING_LABEL] = v;
      }
    }
  }

  private now(): Date {
    return this.o.now?.() ?? new Date();
  }

  private load(): Record<string, Saved> {
    if (!existsSync(this.file)) return {};
    try {
      return JSON.parse(readFileSync(this.file, 'utf8')) as Record<string, Saved>;
    } catch (e) {
      log.warn({ file: this.file, err: (e as Error).message }, 'rollout status unreadable; starting afresh');
      return {};
    }
  }

  private save(): void {
    mkdirSync(this.o.dir, { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(Object.fromEntries(this.saved), null, 2)}\n`);
    renameSync(tmp, this.file); // a crash mid-write leaves the last whole status
  }

  names(): string[] {
    return this.o.rollouts.map((r) => r.name);
  }

  view(name: string): LocalRolloutView | undefined {
    const r = this.o.rollouts.find((x) => x.name === name);
    const s = this.saved.get(name);
    if (!r || !s) return undefined;
    return {
      metadata: { name, namespace: 'local' },
      spec: { ...r.spec, ...s.steer },
      status: s.status ?? { phase: 'Pending', message: 'waiting for the clusters to start' },
      events: [...(this.events.get(name) ?? [])],
      steps: this.steps.get(name) ?? 0,
    };
  }

  /** A person's promote/abort/pause/resume; the next step obeys it. */
  steer(name: string, change: Steering): LocalRolloutView {
    const s = this.saved.get(name);
    if (!s) throw new Error(`no rollout "${name}" (rollouts: ${this.names().join(', ') || 'none'})`);
    Object.assign(s.steer, change);
    this.save();
    return this.view(name) as LocalRolloutView;
  }

  /** One step of every unfinished rollout (one tick at a time: a second call meanwhile waits for it). */
  tick(): Promise<void> {
    this.ticking ??= (async () => {
      let changed = false;
      for (const r of this.o.rollouts) {
        changed = (await this.step(r)) || changed;
        this.steps.set(r.name, (this.steps.get(r.name) ?? 0) + 1); // counted once the step is done
      }
      if (changed) this.save();
    })().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  private async step(r: LocalRollout): Promise<boolean> {
    const s = this.saved.get(r.name) as Saved;
    if (settled(s.status)) return false;
    const spec = plannerSpec({ ...r.spec, ...s.steer });
    const want = Object.entries(r.spec.selector.matchLabels);
    const kind = r.spec.selector.kind ?? 'OberonKube';
    const known = new Set((s.status?.targets ?? []).map((t) => t.name));
    // Targets chosen at the start stay targets (as the controller keeps them).
    const chosen = this.o.targets.filter(
      (t) => t.kind === kind && (known.has(t.name) || want.every(([l, v]) => t.labels[l] === v)),
    );
    const targets: Target[] = chosen.map((t) => ({ name: t.name, labels: { ...t.labels } }));
    const minRunning = r.spec.check?.minRunning ?? 0;
    const looks = await Promise.all(
      chosen.map((t) =>
        Promise.resolve()
          .then(() => t.observe(r.spec.change as Change, minRunning))
          .catch((e: Error): Observation => ({ converged: false, healthy: false, problem: e.message })),
      ),
    );
    const seen = new Map<string, Observation>(chosen.map((t, i) => [t.name, looks[i]]));
    const now = this.now();
    // Before its first step a rollout waits for its targets to be heard: a cluster still booting
    // is not a target that cannot be read.
    if (!s.status?.phase || s.status.phase === 'Pending') {
      const unheard = [...seen].filter(([, o]) => o.problem).map(([n]) => n);
      if (unheard.length > 0 && now.getTime() - this.startedMs < LIMITS.heardWaitMs) {
        const message = `waiting for ${unheard.join(', ')} to be heard on the air`;
        if (s.status?.message === message) return false;
        s.status = { phase: 'Pending', message, targets: [] };
        return true;
      }
    }
    const last = s.status?.phase && s.status.phase !== 'Pending' ? (s.status as RolloutStatus) : undefined;
    const d = decide(spec, last, targets, seen, now);
    const failures: string[] = [];
    for (const a of d.actions) {
      try {
        await this.carryOut(a, r, s, chosen);
      } catch (e) {
        // Tried again at the next step (applying is idempotent); the reason shows in status meanwhile.
        failures.push(`${a.kind} ${a.kind === 'apply' ? a.target : a.group}: ${(e as Error).message}`);
      }
    }
    for (const e of d.events) this.tell(r.name, e);
    const succeeded = d.status.targets.filter((t) => t.phase === 'Succeeded').length;
    const next: RolloutStatusT = {
      ...(d.status as RolloutStatusT),
      ...(failures.length
        ? { message: `${d.status.message ?? ''} (retrying: ${failures.join('; ')})`.trim() }
        : {}),
      progress: `${succeeded}/${d.status.targets.length}`,
    };
    if (JSON.stringify(next) === JSON.stringify(s.status)) return false;
    s.status = next;
    return true;
  }

  private async carryOut(a: Action, r: LocalRollout, s: Saved, chosen: FleetTarget[]): Promise<void> {
    if (a.kind === 'apply') {
      const t = chosen.find((x) => x.name === a.target);
      if (!t) throw new Error(`no cluster ${a.target} runs here`);
      await t.apply(r.spec.change.deployment, a.version);
      return;
    }
    s.serving ??= {};
    for (const t of chosen) {
      const serving = t.labels[a.label] === a.group ? 'true' : 'false';
      t.labels[SERVING_LABEL] = serving;
      s.serving[t.name] = serving;
    }
  }

  private tell(name: string, e: RolloutEvent): void {
    const line = `${this.now().toISOString()} ${e.type === 'Warning' ? 'Warning' : 'Normal'} ${e.reason}: ${e.message}`;
    const list = this.events.get(name) ?? [];
    list.push(line);
    this.events.set(name, list.slice(-LIMITS.events));
    log.info({ rollout: name, type: e.type, reason: e.reason }, e.message);
    this.o.say?.(`rollout ${name}: ${e.reason}: ${e.message}`);
  }
}
