// One reconcile pass of a spreadsheet cluster, inside a store transaction: schedule everything, write
// the Pods tab and the nodes' cpu_used/status, say what changed as Events, carry the make-before-break
// hand-offs forward, and keep the schedule for the heartbeats that follow (the fast path). Also the
// fast path itself: a heartbeat that changes nothing placement depends on folds its node's report
// into the Pods rows of the last schedule. No timers, no HTTP, no state of its own.

import {
  type DeploymentIn,
  deploymentsFromRows,
  type ExistingPod,
  existingFromRow,
  intOr,
  type NodeIn,
  text,
} from '../scheduler/model.ts';
import { type Handoff, normalizePhase, podRows, type Report, updateHandoffs } from '../scheduler/orders.ts';
import { formatAssigned } from '../scheduler/ports.ts';
import { type Placement, type ScheduleResult, schedule } from '../scheduler/schedule.ts';
import { KeepRow, type Row, type Tx } from '../store/types.ts';
import type { EventRow } from './events.ts';

export interface CachedSchedule {
  /** scheduleKey() of the nodes this schedule saw; computed on first use (tens of ms at 10,000 nodes). */
  key(): string;
  /** Nodes that were fresh, and each node's "cpu|mem", when this schedule was made. */
  fresh: Set<string>;
  caps: Map<string, string>;
  /** Unix s at which the first of the fresh nodes turns stale unless it heartbeats again. */
  staleAt: number;
  result: ScheduleResult;
  byNode: Map<string, Placement[]>;
  deployments: Map<string, DeploymentIn>;
  /** The nodes as this schedule saw them, aligned with result.nodes; undefined when a name repeats. */
  nodes?: NodeIn[];
  /** nodes' positions by name, made by the first incremental pass that needs it and kept by the next. */
  nodeIndex?: Map<string, number>;
}

export interface PassInput {
  now: number;
  nodeTtlSec: number;
  portRange: [number, number];
  /** A Nodes row as placement sees it (the cluster's view of a node heard before its start). */
  nodeIn: (r: Row) => NodeIn | null;
  handoffs: Map<string, Handoff>;
  report?: Report;
  /** Nodes drained for this pass. */
  exclude?: Set<string>;
  /** Pods whose node is rewritten before scheduling (migrate). */
  pins?: Map<string, string>;
}

export interface PassResult {
  cache: CachedSchedule;
  handoffs: Map<string, Handoff>;
  events: EventRow[];
  /** Deployments cells the scheduler could not use as typed. */
  problems: string[];
}

/** What the schedule depends on besides Deployments and Pods: node set, capacity, freshness, flags. */
export function scheduleKey(nodes: NodeIn[], now: number, nodeTtlSec: number): string {
  const parts: string[] = [];
  for (const n of nodes) {
    const fresh = n.lastHeartbeat > 0 && now - n.lastHeartbeat < nodeTtlSec;
    parts.push(
      `${n.name}|${n.cpuTotal}|${n.memTotal}|${fresh ? 1 : 0}|${n.schedulable ? 1 : 0}|${JSON.stringify(n.labels)}|${JSON.stringify(n.taints)}`,
    );
  }
  return parts.join('\n');
}

/** Schedule everything and write Pods and the nodes' cpu_used/status (the caller writes the Events). */
export function reconcilePass(tx: Tx, o: PassInput): PassResult {
  const { deployments, problems } = deploymentsFromRows(tx.rows('Deployments'));
  const nodeRows = tx.rows('Nodes');
  const nodes: NodeIn[] = [];
  for (const r of nodeRows) {
    const n = o.nodeIn(r);
    if (n) nodes.push(n);
  }
  const podRowsBefore = tx.rows('Pods');
  const before = new Map<string, Row>();
  const existing = new Map<string, ExistingPod>();
  for (const r of podRowsBefore) {
    const p = existingFromRow(r);
    if (!p || before.has(p.name)) continue;
    before.set(p.name, r);
    const pin = o.pins?.get(p.name);
    existing.set(p.name, pin ? { ...p, node: pin } : p);
  }
  const result = schedule({
    deployments,
    nodes,
    existing,
    now: o.now,
    nodeTtlSec: o.nodeTtlSec,
    exclude: o.exclude,
    portRange: o.portRange,
  });

  // Pods tab: rewrite only when the set or order of pods changed, else update changed rows. A pod
  // that stays where it was and is not in the report being answered keeps its row as it is: its
  // PodRow would only copy that row back (kept() below), and building then comparing 10,000 of them
  // was most of a reconcile at 10,000 pods (the profile: podRows + differs ~half of reconcilePass).
  const policies = new Map(deployments.map((d) => [d.name, d.restartPolicy]));
  const policyOf = (d: string) => policies.get(d) ?? '';
  const placements = result.placements;
  const sameShape =
    placements.length === podRowsBefore.length &&
    placements.every((p, i) => text(podRowsBefore[i].name) === p.name);
  const events = podEvents(placements, before);
  const keep = (p: Placement) => kept(p, before.get(p.name), o.report);
  if (sameShape) {
    const changed = placements.filter((p) => !keep(p));
    for (const r of podRows(changed, before, o.report, policyOf)) {
      const b = before.get(r.name) as Row;
      if (differs(b, r as unknown as Row)) tx.update('Pods', r.name, r as unknown as Row);
    }
  } else {
    const built = new Map(
      podRows(
        placements.filter((p) => !keep(p)),
        before,
        o.report,
        policyOf,
      ).map((r) => [r.name, r as unknown as Row]),
    );
    tx.rewrite(
      'Pods',
      placements.map((p) => built.get(p.name) ?? new KeepRow(text((before.get(p.name) as Row).name))),
    );
  }

  // Nodes: cpu_used and status.
  const rowByName = new Map(nodeRows.map((r) => [text(r.name).trim(), r]));
  for (const n of result.nodes) {
    const r = rowByName.get(n.name);
    if (!r) continue;
    if (text(r.status) !== n.status && text(r.status) !== '') {
      events.push({
        kind: 'Node',
        object: n.name,
        message:
          n.status === 'NotReady'
            ? `NotReady: no heartbeat for ${o.nodeTtlSec}s or more`
            : `status ${n.status}`,
      });
    }
    if (intOr(r.cpu_used, -1) !== n.cpuUsed || text(r.status) !== n.status)
      tx.update('Nodes', n.name, { cpu_used: n.cpuUsed, status: n.status });
  }

  // Make-before-break hand-offs.
  const fresh = new Set(result.nodes.filter((n) => n.fresh).map((n) => n.name));
  const handoffs = updateHandoffs({
    previous: o.handoffs,
    before,
    placements: result.placements,
    freshNodes: fresh,
    now: o.now,
    report: o.report,
  });

  const byNode = new Map<string, Placement[]>();
  for (const p of result.placements) {
    const l = byNode.get(p.node);
    if (l) l.push(p);
    else byNode.set(p.node, [p]);
  }
  let key: string | undefined;
  const cache: CachedSchedule = {
    key: () => (key ??= scheduleKey(nodes, o.now, o.nodeTtlSec)),
    fresh,
    caps: new Map(nodes.map((n) => [n.name, `${n.cpuTotal}|${n.memTotal}`])),
    staleAt: nodes.reduce(
      (t, n) => (fresh.has(n.name) ? Math.min(t, n.lastHeartbeat + o.nodeTtlSec) : t),
      Number.POSITIVE_INFINITY,
    ),
    result,
    byNode,
    deployments: new Map(deployments.map((d) => [d.name, d])),
    // schedule() keeps the first of nodes that share a name: equal lengths mean none does.
    nodes: result.nodes.length === nodes.length ? nodes : undefined,
  };
  return { cache, handoffs, events, problems };
}

/**
 * Whether podRows() would give this placement's pod exactly its current row back (as differs()
 * compares: cell text): placed, on the node its row names, same deployment and ports, a phase
 * already written, and not in the report being answered (a reporting node's pods are rewritten from
 * the report). Then the row is kept as it is.
 */
function kept(p: Placement, b: Row | undefined, report: Report | undefined): boolean {
  return (
    b !== undefined &&
    p.node !== '' &&
    report?.node !== p.node &&
    text(b.name) === p.name &&
    text(b.node) === p.node &&
    text(b.deployment) === p.deployment &&
    text(b.phase) !== '' &&
    text(b.ports) === formatAssigned(p.ports)
  );
}

/** Pods scheduled, moved, left unschedulable or deleted between two versions of the Pods tab. */
function podEvents(rows: readonly { name: string; node: string }[], before: Map<string, Row>): EventRow[] {
  const events: EventRow[] = [];
  for (const r of rows) {
    const b = before.get(r.name);
    if (!b)
      events.push(
        r.node
          ? { kind: 'Pod', object: r.name, message: `scheduled to ${r.node}` }
          : { kind: 'Pod', object: r.name, message: 'Unschedulable: no node fits' },
      );
    else if (text(b.node) !== r.node) {
      events.push(
        r.node
          ? {
              kind: 'Pod',
              object: r.name,
              message: text(b.node) ? `moved ${text(b.node)} -> ${r.node}` : `scheduled to ${r.node}`,
            }
          : { kind: 'Pod', object: r.name, message: `Unschedulable: left ${text(b.node)}, no node fits` },
      );
    }
  }
  // Deleted pods: only looked for when not every pod before is still there (names are unique in
  // both), so a reconcile that removes none builds no set of 10,000 names.
  let still = 0;
  for (const r of rows) if (before.has(r.name)) still++;
  if (still === before.size) return events;
  const want = new Set(rows.map((r) => r.name));
  for (const name of before.keys())
    if (!want.has(name))
      events.push({ kind: 'Pod', object: name, message: 'deleted (scaled down or deployment removed)' });
  return events;
}

/**
 * The fast path: placement unchanged, so only this node's pods' observed state is written. A
 * hand-off whose target now reports the pod Running is made (removed from `handoffs`): the old copy
 * may stop.
 */
export function foldReport(
  tx: Tx,
  cache: CachedSchedule,
  report: Report,
  handoffs: Map<string, Handoff>,
): void {
  const mine = cache.byNode.get(report.node) ?? [];
  if (mine.length > 0) {
    const prev = new Map<string, Row>();
    for (const p of mine) {
      const r = tx.get('Pods', p.name);
      if (r) prev.set(p.name, r);
    }
    const policyOf = (d: string) => cache.deployments.get(d)?.restartPolicy ?? '';
    for (const r of podRows(mine, prev, report, policyOf)) {
      const b = prev.get(r.name);
      if (b && differs(b, r as unknown as Row)) tx.update('Pods', r.name, r as unknown as Row);
    }
  }
  for (const p of report.pods) {
    const h = handoffs.get(p.name);
    if (h && h.to === report.node && normalizePhase(p.phase) === 'Running') handoffs.delete(p.name);
  }
}

/** Whether row `b` would change any cell of `a` (compared as the sheet shows them: text). */
export function differs(a: Row, b: Row): boolean {
  for (const [k, v] of Object.entries(b)) {
    const x = a[k];
    if ((x === null || x === undefined ? '' : String(x)) !== (v === null || v === undefined ? '' : String(v)))
      return true;
  }
  return false;
}
