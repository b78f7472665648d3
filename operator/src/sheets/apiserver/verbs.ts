// The verbs a person or a client sends a spreadsheet cluster (apply, scale, delete, cordon, drain,
// migrate, label/taint), each the body of one store transaction: check, write the sheet, say what
// happened in an Event, reschedule. The cluster runs them durably (cluster.ts); nothing here waits.

import { text, truthyCell } from '../scheduler/model.ts';
import type { Row, Tx } from '../store/types.ts';
import type { EventRow } from './events.ts';
import {
  applyLabel,
  applyTaint,
  deploymentCells,
  gatewayCells,
  routeCells,
  secretCells,
} from './validate.ts';

/** What a verb needs of the cluster it runs in. */
export interface VerbContext {
  writeEvents(tx: Tx, events: EventRow[], now: number): void;
  reconcile(tx: Tx, o: { now: number; exclude?: Set<string>; pins?: Map<string, string> }): void;
  /**
   * Reconcile now in a small cluster; in a big one leave it to the paced timer. For the verbs the
   * reference does not reschedule on (spec §1.3: pods change on the next heartbeat), so a person's
   * write is acknowledged without waiting for a schedule of the whole cluster.
   */
  reconcileSoon(tx: Tx, o: { now: number }): void;
  /** Whether the node of this Nodes row has heartbeated within the TTL (as placement sees it). */
  nodeFresh(r: Row, now: number): boolean;
}

export type ApplyResult = { applied: string[]; gateways?: string[]; routes?: string[]; secrets?: string[] };

export interface ApplyBody {
  deployments?: Record<string, unknown>[] | null;
  gateways?: Record<string, unknown>[] | null;
  routes?: Record<string, unknown>[] | null;
  secrets?: Record<string, unknown>[] | null;
}

export function applyObjects(c: VerbContext, tx: Tx, now: number, body: ApplyBody): ApplyResult {
  const out: ApplyResult = { applied: [] };
  const events: EventRow[] = [];
  const one = (
    tab: string,
    kind: string,
    cells: (o: Record<string, unknown>) => Row,
    objs: Record<string, unknown>[],
  ) =>
    objs.map((obj) => {
      try {
        const row = cells(obj);
        const r = tx.upsert(tab, row);
        events.push({
          kind,
          object: String(row.name),
          message: kind === 'Secret' ? r : `${r}: ${summary(row)}`,
        });
        return r;
      } catch (err) {
        return `invalid: ${err instanceof Error ? err.message : String(err)}`;
      }
    });
  out.applied = one('Deployments', 'Deployment', deploymentCells, body.deployments ?? []);
  if (body.gateways) out.gateways = one('Gateways', 'Gateway', gatewayCells, body.gateways);
  if (body.routes) out.routes = one('Routes', 'Route', routeCells, body.routes);
  if (body.secrets) out.secrets = one('Secrets', 'Secret', secretCells, body.secrets);
  c.writeEvents(tx, events, now);
  c.reconcileSoon(tx, { now });
  return out;
}

export function scaleDeployment(c: VerbContext, tx: Tx, now: number, name: string, replicas: number): string {
  if (!tx.update('Deployments', name, { replicas })) return 'not found';
  c.writeEvents(tx, [{ kind: 'Deployment', object: name, message: `scaled to ${replicas}` }], now);
  c.reconcileSoon(tx, { now });
  return 'scaled';
}

const TAB_OF_KIND: Record<string, string> = {
  deployment: 'Deployments',
  gateway: 'Gateways',
  route: 'Routes',
  secret: 'Secrets',
};

/** The tab a `delete` of this kind works on, or undefined for a kind that cannot be deleted. */
export function tabOfKind(kind: string): string | undefined {
  return Object.hasOwn(TAB_OF_KIND, kind) ? TAB_OF_KIND[kind] : undefined;
}

export function deleteObject(
  c: VerbContext,
  tx: Tx,
  now: number,
  tab: string,
  kind: string,
  name: string,
): string {
  if (!tx.delete(tab, name)) return 'not found';
  c.writeEvents(tx, [{ kind: kind[0].toUpperCase() + kind.slice(1), object: name, message: 'deleted' }], now);
  c.reconcileSoon(tx, { now });
  return 'deleted';
}

export function cordonNode(c: VerbContext, tx: Tx, now: number, name: string, on: boolean): string {
  if (!tx.update('Nodes', name, { schedulable: !on })) return 'not found';
  c.writeEvents(tx, [{ kind: 'Node', object: name, message: on ? 'cordoned' : 'uncordoned' }], now);
  c.reconcile(tx, { now });
  return on ? 'cordoned' : 'uncordoned';
}

export function drainNode(c: VerbContext, tx: Tx, now: number, name: string): string {
  if (!tx.update('Nodes', name, { schedulable: false })) return 'not found';
  c.writeEvents(
    tx,
    [
      {
        kind: 'Node',
        object: name,
        message: 'drained: pods move to other nodes (old copies stop once new ones run)',
      },
    ],
    now,
  );
  c.reconcile(tx, { now, exclude: new Set([name]) });
  return 'drained';
}

export function migratePod(c: VerbContext, tx: Tx, now: number, pod: string, target: string): string {
  const n = tx.get('Nodes', target);
  if (!n) return 'unknown node';
  if (!c.nodeFresh(n, now) || !truthyCell(n.schedulable)) return 'target not schedulable';
  const p = tx.get('Pods', pod);
  if (!p) return 'pod not found';
  c.writeEvents(
    tx,
    [
      {
        kind: 'Pod',
        object: pod,
        message: `migrating ${text(p.node) || '(unscheduled)'} -> ${target} (make-before-break)`,
      },
    ],
    now,
  );
  c.reconcile(tx, { now, pins: new Map([[pod, target]]) });
  return `migrating ${pod} -> ${target}`;
}

/** label/taint: edit a node cell and reschedule. Throws (→ 400) on a malformed spec. */
export function editNode(
  c: VerbContext,
  tx: Tx,
  now: number,
  verb: 'label' | 'taint',
  name: string,
  spec: string,
): string {
  const n = tx.get('Nodes', name);
  if (!n) return 'not found';
  if (verb === 'label') tx.update('Nodes', name, { labels: applyLabel(n.labels, spec) });
  else tx.update('Nodes', name, { taints: applyTaint(n.taints, spec) });
  c.writeEvents(tx, [{ kind: 'Node', object: name, message: `${verb} ${spec}` }], now);
  c.reconcile(tx, { now });
  return 'ok';
}

function summary(row: Row): string {
  return Object.entries(row)
    .filter(([k]) => k !== 'name')
    .map(([k, v]) => `${k}=${String(v).slice(0, 40)}`)
    .join(' ');
}
