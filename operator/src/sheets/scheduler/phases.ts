// Pod phases and restart policies: which words a Pods row may show, and what a pod's exit means.
//
// A Deployment that declares no restart_policy behaves as the reference does: its pods restart on
// every exit and its rows only ever show the SCRI phases (Pending, Running, Terminating,
// Unschedulable), so the reference clients see what they always saw. A Deployment that declares
// one (the Kubernetes words Always | OnFailure | Never) gets the Kubernetes outcome words too:
// Succeeded and Failed for a pod that finished and is not restarted, CrashLoopBackOff while a
// restart waits out its back-off.

export type RestartPolicy = '' | 'Always' | 'OnFailure' | 'Never';
export const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'] as const;

/** Phases a Pods row may show for any pod (SCRI §8). */
export const POD_PHASES = new Set(['Pending', 'Running', 'Terminating', 'Unschedulable']);
/** Phases only pods of a Deployment with a declared restart_policy show. */
export const POLICY_PHASES = new Set(['Succeeded', 'Failed', 'CrashLoopBackOff']);

/** A cell's restart policy; anything unknown counts as undeclared (lenient, as all sheet reads). */
export function parseRestartPolicy(v: unknown): RestartPolicy {
  const s = v === null || v === undefined ? '' : String(v).trim();
  return (RESTART_POLICIES as readonly string[]).includes(s) ? (s as RestartPolicy) : '';
}

/**
 * The phase written to the Pods row for what a node reported. A blank report means Running (the
 * reference kubelet sends no phase); an unknown word, or a policy word for a pod whose Deployment
 * declares no policy, means Pending (the node's message keeps the detail).
 */
export function normalizePhase(phase: unknown, policy: RestartPolicy = ''): string {
  const p = phase === null || phase === undefined ? '' : String(phase).trim();
  if (p === '') return 'Running';
  if (POD_PHASES.has(p)) return p;
  if (policy !== '' && POLICY_PHASES.has(p)) return p;
  return 'Pending';
}

/** Whether a pod that exited with `code` is started again (after its back-off). */
export function restartDue(policy: RestartPolicy, code: number): boolean {
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return code !== 0;
  return true; // Always, and undeclared (the reference restarts on every exit)
}

/** The phase of a pod that exited and will not be restarted. */
export function finalPhase(code: number): 'Succeeded' | 'Failed' {
  return code === 0 ? 'Succeeded' : 'Failed';
}

/** The phase a node reports while a restart waits out its back-off. */
export function backoffPhase(policy: RestartPolicy): 'Pending' | 'CrashLoopBackOff' {
  return policy === '' ? 'Pending' : 'CrashLoopBackOff';
}
