// A SheetCluster's status, computed from what the operator observed of its sheet and its pods
// (pure): the Ready and Degraded conditions name what a person must fix first, and the summary
// columns (nodes, pods, deployments) come from the sheet, never from the pods.
import type { SheetClusterStatusT } from '../api/sheetcluster.ts';
import type { KubeObject } from '../runtime/client.ts';
import { type Condition, type ConditionInput, setConditions } from '../runtime/conditions.ts';
import type { SheetSummary } from './sheetcluster-observe.ts';
import type { SheetSettings } from './sheetcluster-render.ts';

export interface SheetObservation {
  conflicts: string[];
  secretProblems: string[];
  /** Settings the operator refuses to apply (a dockerSocket it does not allow). */
  notAllowed?: string[];
  summary?: SheetSummary;
  readProblem?: string;
  starting: boolean;
  claimPending?: string;
  podProblems: string[];
  applyProblem: string;
  url: string;
}

export function computeSheetStatus(
  c: KubeObject,
  s: SheetSettings,
  o: SheetObservation,
  now: Date = new Date(),
): SheetClusterStatusT {
  const gen = c.metadata.generation;
  const sum = o.summary;
  const conds: ConditionInput[] = [];
  // What a person must fix, most fundamental first; the same words go to Ready and Degraded.
  const blocking: Array<[string, string]> = [
    ...(o.conflicts.length
      ? [
          [
            'NameConflict',
            `${o.conflicts.join(' and ')} already exist and belong to someone else; rename this SheetCluster`,
          ] as [string, string],
        ]
      : []),
    ...(o.notAllowed ?? []).map((p) => ['NotAllowed', p] as [string, string]),
    ...o.secretProblems.map((p) => ['SecretUnreadable', p] as [string, string]),
    ...(o.claimPending ? [['WorkbookClaimPending', o.claimPending] as [string, string]] : []),
    ...o.podProblems.map((p) => ['PodCannotStart', p] as [string, string]),
    ...(o.readProblem && !o.starting ? [['ApiserverNotAnswering', o.readProblem] as [string, string]] : []),
  ];
  const lost = sum?.lostNodes ?? [];
  const nodesOk = !!sum && sum.readyNodes === s.nodes;
  if (blocking.length) {
    const [reason, message] = blocking[0];
    conds.push({ type: 'Ready', status: 'False', reason, message });
    conds.push({ type: 'Degraded', status: 'True', reason, message: blocking.map((b) => b[1]).join('; ') });
  } else if (!sum) {
    const message = o.readProblem
      ? `waiting for the apiserver: ${o.readProblem}`
      : 'waiting for the apiserver';
    conds.push({ type: 'Ready', status: 'False', reason: 'Starting', message });
    conds.push({ type: 'Degraded', status: 'False', reason: 'Starting', message: '' });
  } else {
    conds.push(
      nodesOk
        ? {
            type: 'Ready',
            status: 'True',
            reason: 'SheetReady',
            message: `${sum.readyNodes}/${s.nodes} nodes Ready in the sheet`,
          }
        : {
            type: 'Ready',
            status: 'False',
            reason: lost.length ? 'NodesNotReady' : 'WaitingForNodes',
            message: `${sum.readyNodes}/${s.nodes} nodes Ready in the sheet`,
          },
    );
    conds.push(
      lost.length
        ? {
            type: 'Degraded',
            status: 'True',
            reason: 'NodesNotReady',
            message: `NotReady past the ${s.failoverSeconds} s TTL: ${lost.join(', ')} (their pods move to other nodes)`,
          }
        : o.applyProblem
          ? { type: 'Degraded', status: 'True', reason: 'DeploymentsRefused', message: o.applyProblem }
          : sum.stuckPods.length
            ? {
                type: 'Degraded',
                status: 'True',
                reason: 'PodsCannotStart',
                message: `the node agents cannot start: ${sum.stuckPods.join('; ')}`,
              }
            : { type: 'Degraded', status: 'False', reason: 'AsExpected', message: '' },
    );
  }
  const status: SheetClusterStatusT = {
    observedGeneration: gen,
    url: o.url,
    conditions: setConditions(
      (c.status as { conditions?: Condition[] } | undefined)?.conditions,
      conds,
      gen,
      now,
    ) as SheetClusterStatusT['conditions'],
  };
  if (sum) {
    Object.assign(status, {
      nodes: `${sum.readyNodes}/${s.nodes}`,
      pods: `${sum.runningPods}/${sum.desiredPods}`,
      readyNodes: sum.readyNodes,
      runningPods: sum.runningPods,
      desiredPods: sum.desiredPods,
      deployments: sum.deployments,
      nodeTable: sum.nodeTable,
      ...(sum.lastWarning ? { lastWarning: sum.lastWarning } : {}),
      ...(sum.metrics ? { metrics: sum.metrics } : {}),
    });
  } else {
    // Unknown while the sheet cannot be read (why is in the conditions).
    Object.assign(status, { nodes: `?/${s.nodes}`, pods: '?' });
  }
  return status;
}
