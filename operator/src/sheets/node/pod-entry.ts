// One pod as the node agent tracks it (an Entry), what it reports for it (PodStatus), and the
// pure rules the agent applies to it: its phase, a fresh entry for a new order, a finished
// pod's message. The agent (agent.ts) owns the side effects: runtimes, timers, heartbeats.
import type { RunOrder } from '../scheduler/orders.ts';
import { backoffPhase, parseRestartPolicy, type RestartPolicy } from '../scheduler/phases.ts';
import type { RuntimeName } from './pod-plan.ts';
import type { RunningPod } from './runtimes/types.ts';

export type AgentPhase = 'Pending' | 'Running' | 'CrashLoopBackOff' | 'Succeeded' | 'Failed';

export interface PodStatus {
  name: string;
  phase: AgentPhase;
  container_id: string | null;
  ports: string;
  restarts: number;
  exit_code: number | null;
  message: string | null;
  /** The spec_hash of the order this pod runs (a trailing Pods column: which spec is running). */
  spec_hash: string;
}

export interface Entry {
  name: string;
  order: RunOrder;
  run: RunningPod | undefined;
  launching: boolean;
  stopping: boolean;
  restarts: number;
  exitCode: number | null;
  message: string | null;
  backoffStep: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
  runtime: RuntimeName | undefined;
  /** The pod exited and its policy starts it again after the back-off now running. */
  backingOff: boolean;
  /** The pod finished and its policy does not start it again. */
  done: 'Succeeded' | 'Failed' | undefined;
  /** The id of the last run, still shown for a finished pod (which run it was). */
  lastId: string | null;
}

/** What a node reports for one of its pods. */
export function entryPhase(e: Pick<Entry, 'run' | 'done' | 'backingOff' | 'order'>): AgentPhase {
  if (e.run) return 'Running';
  if (e.done) return e.done;
  if (e.backingOff) return backoffPhase(policyOf(e.order));
  return 'Pending';
}

export const policyOf = (o: RunOrder): RestartPolicy => parseRestartPolicy(o.restart_policy);
export function newEntry(order: RunOrder): Entry {
  return {
    name: order.name,
    order,
    run: undefined,
    launching: false,
    stopping: false,
    restarts: 0,
    exitCode: null,
    message: null,
    backoffStep: 0,
    startedAt: 0,
    timer: undefined,
    runtime: undefined,
    backingOff: false,
    done: undefined,
    lastId: null,
  };
}

export function finishedMessage(code: number): string {
  return code === 0 ? 'completed (exit code 0)' : `exited with code ${code}`;
}
