// What the Rollout controller needs from a kind of target, and nothing more: which targets the
// selector picks, what each looks like now (the planner's Observation), how to make one run a
// version, and how to move "traffic" to a blue/green group. One driver per selector.kind
// (rollout-oberon.ts, rollout-sheets.ts); the walk itself is the planner's (rollout/plan.ts).
import type { RolloutSpecT, RolloutStatusT, TargetKind } from '../api/rollout.ts';
import type { Observation, Target, Version } from '../rollout/plan.ts';
import type { KubeObject, ResourceType } from '../runtime/client.ts';
import type { ReconcileContext } from '../runtime/controller.ts';

export interface Rollout extends KubeObject {
  spec?: RolloutSpecT;
  status?: RolloutStatusT;
}

/** A Rollout whose spec is known (the controller never hands a driver one without). */
export type RolloutWithSpec = Rollout & { spec: RolloutSpecT };

export interface RolloutDriver {
  kind: TargetKind;
  /** The targets the selector picks now (from the informer caches), with the labels the strategies read. */
  select(ctx: ReconcileContext, r: RolloutWithSpec): Target[];
  /** Labels of a target named in status that the selector no longer picks (relabelled); {} when gone. */
  labelsOf(ctx: ReconcileContext, r: RolloutWithSpec, name: string): Record<string, string>;
  /**
   * What every target looks like now. `judge` names the targets whose health the planner reads this
   * time (those changing): a driver may skip costly checks for the others.
   */
  observe(
    ctx: ReconcileContext,
    r: RolloutWithSpec,
    targets: Target[],
    judge: ReadonlySet<string>,
  ): Promise<Map<string, Observation>>;
  /** Make the target run `version` of the deployment; idempotent (writes desired fields, never adds). */
  apply(ctx: ReconcileContext, r: RolloutWithSpec, target: string, version: Version): Promise<void>;
  /** Blue/green: the targets whose `label` is `group` now serve; idempotent. */
  serve(
    ctx: ReconcileContext,
    r: RolloutWithSpec,
    targets: Target[],
    label: string,
    group: string,
  ): Promise<void>;
}

/** Every label of `want` is on `labels`. */
export function matches(labels: Record<string, string> | undefined, want: Record<string, string>): boolean {
  return Object.entries(want).every(([l, v]) => labels?.[l] === v);
}

/** A watched object from the informer cache (a driver's targets are watched, not owned). */
export function watchedObject<T extends KubeObject>(
  ctx: ReconcileContext,
  type: ResourceType,
  namespace: string,
  name: string,
): T | undefined {
  return ctx.watched(type).get(namespace, name) as T | undefined;
}
