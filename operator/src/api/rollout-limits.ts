// The limits and defaults of a Rollout: the CRD states them (api/rollout.ts) and the planner
// (rollout/plan.ts) enforces them, so they live below both.

export const ROLLOUT_LIMITS = {
  maxTargets: 100, // every target has a row in one status object; 100 rows stay far below etcd's object size
  maxParallel: 50, // more at once is not a rollout any more
  maxAttempts: 10, // a target that fails ten times will not succeed on the eleventh
  maxDelaySeconds: 3600, // a retry later than an hour is a new rollout
  maxWaitSeconds: 86_400, // deadlines and check windows: a day
} as const;

export const ROLLOUT_DEFAULTS = {
  maxParallel: 1,
  onFailure: 'abort',
  stepDeadlineSeconds: 300, // a 20-node Oberon cluster converges in well under a minute; 5 min is generous
  checkSeconds: 10, // how long a converged target must stay healthy before it counts
  retryDelaySeconds: 5,
  backoffFactor: 2,
} as const;
