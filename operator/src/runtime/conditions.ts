// metav1.Condition semantics: one entry per type; lastTransitionTime changes only when the status
// flips; every condition carries the generation it was computed from.

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

/** The summary and detail conditions every retrokube kind reports. */
export const CONDITION = {
  ready: 'Ready',
  progressing: 'Progressing',
  degraded: 'Degraded',
} as const;

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string;
}

const REASON_RE = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;

/** RFC 3339 in seconds, as metav1.Time serialises. */
export function timestamp(d: Date = new Date()): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Returns the new condition list: `next` merged into `existing`, keeping lastTransitionTime when
 * the status did not change. Order of `existing` is kept; new types are appended. Pure.
 */
export function setConditions(
  existing: readonly Condition[] | undefined,
  next: readonly ConditionInput[],
  generation: number | undefined,
  now: Date = new Date(),
): Condition[] {
  const out = (existing ?? []).map((c) => ({ ...c }));
  for (const n of next) {
    if (!REASON_RE.test(n.reason)) throw new Error(`condition reason "${n.reason}" must be CamelCase`);
    const i = out.findIndex((c) => c.type === n.type);
    const prev = i >= 0 ? out[i] : undefined;
    const cond: Condition = {
      type: n.type,
      status: n.status,
      observedGeneration: generation,
      lastTransitionTime: prev && prev.status === n.status ? prev.lastTransitionTime : timestamp(now),
      reason: n.reason,
      message: (n.message ?? '').slice(0, 32768),
    };
    if (generation === undefined) delete cond.observedGeneration;
    if (i >= 0) out[i] = cond;
    else out.push(cond);
  }
  return out;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}
