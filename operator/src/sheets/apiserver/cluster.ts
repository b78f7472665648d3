// The control loop of a spreadsheet cluster, without HTTP: verbs, heartbeats, reconcile, timer-driven
// failover, Events. Every change is one synchronous store transaction (read → schedule → write),
// so concurrent requests can never lose an update, and a failed write changes nothing.

import { logger } from '../../util/log.ts';
import {
  type DeploymentIn,
  deploymentsFromRows,
  type ExistingPod,
  existingFromRow,
  intOr,
  type NodeIn,
  nodeFromRow,
  text,
  truthyCell,
} from '../scheduler/model.ts';
import {
  type Handoff,
  nodeOrders,
  normalizePhase,
  LIMITS as ORDER_LIMITS,
  type Order,
  podRows,
  type Report,
  updateHandoffs,
} from '../scheduler/orders.ts';
import { type Placement, type ScheduleResult, schedule } from '../scheduler/schedule.ts';
import { setupCluster } from '../store/setup.ts';
import type { Durability, Row, Store, Tx } from '../store/types.ts';
import {
  applyLabel,
  applyTaint,
  deploymentCells,
  gatewayCells,
  type HeartbeatBody,
  routeCells,
  secretCells,
} from './validate.ts';

const log = logger('sheets-apiserver');

export const LIMITS = {
  nodeTtlSec: 30, // reference NODE_TTL: a node silent this long is NotReady and loses its pods
  tickMs: 1000, // how often the failover timer looks for nodes that went silent
  eventsMax: 5000, // Events rows kept; older ones are trimmed (the tab would otherwise grow forever)
  eventsTrimSlack: 500, // trim only when this many over, so trimming is rare
  deferAboveMs: 20, // reconciles cheaper than this always run inline (small clusters, tests)
  dutyFactor: 4, // after a reconcile of T ms, new/returning nodes wait for the timer during 4T
} as const;

export interface ClusterOptions {
  store: Store;
  nodeTtlSec?: number;
  portRange?: [number, number];
  /** Unix seconds; injectable for tests. */
  now?: () => number;
  tickMs?: number;
  eventsMax?: number;
}

export type ApplyResult = { applied: string[]; gateways?: string[]; routes?: string[]; secrets?: string[] };

interface CachedSchedule {
  key: string;
  /** Nodes that were fresh, and each node's "cpu|mem", when this schedule was made. */
  fresh: Set<string>;
  caps: Map<string, string>;
  result: ScheduleResult;
  byNode: Map<string, Placement[]>;
  deployments: Map<string, DeploymentIn>;
}

interface EventRow {
  kind: string;
  object: string;
  message: string;
}

export class Cluster {
  readonly store: Store;
  readonly nodeTtlSec: number;
  readonly portRange: [number, number];
  readonly #now: () => number;
  readonly #tickMs: number;
  readonly #eventsMax: number;
  #timer: NodeJS.Timeout | undefined;
  #handoffs = new Map<string, Handoff>();
  #cache: CachedSchedule | undefined;
  /** Tabs changed by someone else since our last schedule (a person's edit, another process). */
  #externalDirty = true;
  #unsubscribe: () => void;
  #tickRunning = false;
  #lastReconcileMs = 0;
  #lastReconcileEnd = 0;
  /** Heartbeats answered from the last schedule while a big cluster's reconcile was deferred. */
  deferred = 0;
  #eventCount: number | undefined;
  reconciles = 0;
  /** Unix seconds when start() ran (0 before): the floor of a Ready node's last heartbeat. */
  #startedAt = 0;

  constructor(o: ClusterOptions) {
    this.store = o.store;
    this.nodeTtlSec = o.nodeTtlSec ?? LIMITS.nodeTtlSec;
    this.portRange = o.portRange ?? [30000, 32767];
    this.#now = o.now ?? (() => Math.floor(Date.now() / 1000));
    this.#tickMs = o.tickMs ?? Math.min(LIMITS.tickMs, Math.max(50, (this.nodeTtlSec * 1000) / 10));
    this.#eventsMax = o.eventsMax ?? LIMITS.eventsMax;
    this.#unsubscribe = this.store.onChange((ev) => {
      if (ev.source === 'external') {
        this.#externalDirty = true;
        this.#cache = undefined;
        this.#eventCount = undefined;
      }
    });
  }

  now(): number {
    return this.#now();
  }

  /** Create or upgrade the workbook, then start the failover timer. */
  async start(opts: { samples?: boolean } = {}): Promise<void> {
    await setupCluster(this.store, { samples: opts.samples ?? true });
    this.#startedAt = this.#now();
    this.#timer = setInterval(() => void this.tick(), this.#tickMs);
    this.#timer.unref?.();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unsubscribe();
  }

  /**
   * The timer: reconcile when a node's freshness changed (failover with no request arriving), when
   * someone edited the sheet, or when a hand-off timed out.
   */
  async tick(): Promise<boolean> {
    if (this.#tickRunning) return false;
    this.#tickRunning = true;
    try {
      const now = this.#now();
      const nodes = this.#nodes();
      const key = this.#scheduleKey(nodes, now);
      const handoffExpired = [...this.#handoffs.values()].some(
        (h) => now - h.since > ORDER_LIMITS.handoffMaxSec,
      );
      if (this.#cache?.key === key && !this.#externalDirty && !handoffExpired) return false;
      await this.store.transact((tx) => this.#reconcile(tx, { now }), { durability: 'buffered' });
      return true;
    } catch (err) {
      log.error({ err }, 'timer reconcile failed');
      return false;
    } finally {
      this.#tickRunning = false;
    }
  }

  // ---- reads -----------------------------------------------------------------------------

  /**
   * A Nodes row as placement sees it. A node the workbook still holds as Ready counts as heard no
   * earlier than this apiserver's start: the apiserver's own downtime (a restart, a new pod opening
   * the same workbook) is not the node's silence, so each node gets one full TTL to report before it
   * loses its pods. A node already NotReady in the workbook stays NotReady until it heartbeats.
   */
  #nodeIn(r: Row): NodeIn | null {
    const n = nodeFromRow(r);
    if (!n || n.lastHeartbeat <= 0 || n.lastHeartbeat >= this.#startedAt || text(r.status) === 'NotReady')
      return n;
    return { ...n, lastHeartbeat: this.#startedAt };
  }

  #nodes(): NodeIn[] {
    const out: NodeIn[] = [];
    for (const r of this.store.rows('Nodes')) {
      const n = this.#nodeIn(r);
      if (n) out.push(n);
    }
    return out;
  }

  /** What the schedule depends on besides Deployments and Pods: node set, capacity, freshness, flags. */
  #scheduleKey(nodes: NodeIn[], now: number): string {
    const parts: string[] = [];
    for (const n of nodes) {
      const fresh = n.lastHeartbeat > 0 && now - n.lastHeartbeat < this.nodeTtlSec;
      parts.push(
        `${n.name}|${n.cpuTotal}|${n.memTotal}|${fresh ? 1 : 0}|${n.schedulable ? 1 : 0}|${JSON.stringify(n.labels)}|${JSON.stringify(n.taints)}`,
      );
    }
    return parts.join('\n');
  }

  // ---- reconcile ---------------------------------------------------------------------------

  /**
   * Schedule everything and write Pods and the nodes' cpu_used/status. Runs inside a transaction.
   * `pins` rewrites a pod's node before scheduling (migrate); `exclude` drains nodes for this pass.
   */
  #reconcile(
    tx: Tx,
    o: { now: number; report?: Report; exclude?: Set<string>; pins?: Map<string, string> },
  ): CachedSchedule {
    this.reconciles++;
    const t0 = performance.now();
    try {
      return this.#reconcileInner(tx, o);
    } finally {
      this.#lastReconcileEnd = performance.now();
      this.#lastReconcileMs = this.#lastReconcileEnd - t0;
    }
  }

  #reconcileInner(
    tx: Tx,
    o: { now: number; report?: Report; exclude?: Set<string>; pins?: Map<string, string> },
  ): CachedSchedule {
    const { deployments, problems } = deploymentsFromRows(tx.rows('Deployments'));
    this.#reportSheetProblems(problems);
    const nodeRows = tx.rows('Nodes');
    const nodes: NodeIn[] = [];
    for (const r of nodeRows) {
      const n = this.#nodeIn(r);
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
      nodeTtlSec: this.nodeTtlSec,
      exclude: o.exclude,
      portRange: this.portRange,
    });

    // Pods tab: rewrite only when the set or order of pods changed, else update changed rows.
    const policies = new Map(deployments.map((d) => [d.name, d.restartPolicy]));
    const rows = podRows(result.placements, before, o.report, (d) => policies.get(d) ?? '');
    const sameShape =
      rows.length === podRowsBefore.length && rows.every((r, i) => text(podRowsBefore[i].name) === r.name);
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
    const want = new Set(rows.map((r) => r.name));
    for (const name of before.keys())
      if (!want.has(name))
        events.push({ kind: 'Pod', object: name, message: 'deleted (scaled down or deployment removed)' });
    if (sameShape) {
      for (const r of rows) {
        const b = before.get(r.name) as Row;
        if (differs(b, r as unknown as Row)) tx.update('Pods', r.name, r as unknown as Row);
      }
    } else {
      tx.replaceAll('Pods', rows as unknown as Row[]);
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
              ? `NotReady: no heartbeat for ${this.nodeTtlSec}s or more`
              : `status ${n.status}`,
        });
      }
      if (intOr(r.cpu_used, -1) !== n.cpuUsed || text(r.status) !== n.status)
        tx.update('Nodes', n.name, { cpu_used: n.cpuUsed, status: n.status });
    }

    // Make-before-break hand-offs.
    const fresh = new Set(result.nodes.filter((n) => n.fresh).map((n) => n.name));
    this.#handoffs = updateHandoffs({
      previous: this.#handoffs,
      before,
      placements: result.placements,
      freshNodes: fresh,
      now: o.now,
      report: o.report,
    });

    this.#writeEvents(tx, events, o.now);
    const byNode = new Map<string, Placement[]>();
    for (const p of result.placements) {
      const l = byNode.get(p.node);
      if (l) l.push(p);
      else byNode.set(p.node, [p]);
    }
    const cache: CachedSchedule = {
      key: this.#scheduleKey(nodes, o.now),
      fresh,
      caps: new Map(nodes.map((n) => [n.name, `${n.cpuTotal}|${n.memTotal}`])),
      result,
      byNode,
      deployments: new Map(deployments.map((d) => [d.name, d])),
    };
    this.#cache = cache;
    this.#externalDirty = false;
    return cache;
  }

  // Cells the scheduler left out are logged once per distinct set (reconciles repeat every second).
  #lastSheetProblems = '';
  #reportSheetProblems(problems: string[]): void {
    const key = problems.join('\n');
    if (key === this.#lastSheetProblems) return;
    this.#lastSheetProblems = key;
    if (problems.length > 0)
      log.warn(
        { problems: problems.slice(0, 20) },
        'some Deployments cells were not used as typed; fix them in the sheet',
      );
  }

  #writeEvents(tx: Tx, events: EventRow[], now: number): void {
    if (events.length === 0) return;
    const ts = new Date(now * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    // The row count is tracked, not re-read: reading the whole Events tab per write would cost O(events).
    this.#eventCount ??= tx.rows('Events').length;
    for (const e of events) tx.insert('Events', { ts, kind: e.kind, object: e.object, message: e.message });
    this.#eventCount += events.length;
    if (this.#eventCount > this.#eventsMax + LIMITS.eventsTrimSlack) {
      const all = tx.rows('Events');
      tx.replaceAll('Events', all.slice(Math.max(0, all.length - this.#eventsMax)));
      this.#eventCount = Math.min(all.length, this.#eventsMax);
    }
  }

  // ---- heartbeat ---------------------------------------------------------------------------

  /** Upsert the node, reconcile if anything that placement depends on changed, answer its orders. */
  async heartbeat(body: HeartbeatBody): Promise<{ pods: Order[] }> {
    const now = this.#now();
    const nodeName = body.node;
    const cpuTotal = intOr(body.cpu_total, 1000);
    const memTotal = intOr(body.mem_total, 512);
    const ip = text(body.ip);
    const reported = (body.pods ?? []).map((p) => ({
      name: p.name,
      phase: p.phase ?? undefined,
      container_id: p.container_id ?? undefined,
      ports: p.ports ?? undefined,
      restarts: p.restarts ?? undefined,
      exit_code: p.exit_code,
      message: p.message ?? undefined,
      spec_hash: p.spec_hash ?? undefined,
    }));
    const report: Report = { node: nodeName, ip, pods: reported };
    const { value } = await this.store.transact(
      (tx) => {
        const existing = tx.get('Nodes', nodeName);
        const events: EventRow[] = [];
        if (existing) {
          tx.update('Nodes', nodeName, { ip, cpu_total: cpuTotal, mem_total: memTotal, last_heartbeat: now });
          if (text(existing.status) === 'NotReady')
            events.push({ kind: 'Node', object: nodeName, message: 'Ready: heartbeat resumed' });
        } else {
          tx.insert('Nodes', {
            name: nodeName,
            ip,
            cpu_total: cpuTotal,
            cpu_used: 0,
            mem_total: memTotal,
            status: 'Ready',
            last_heartbeat: now,
            schedulable: true,
            labels: '',
            taints: '',
          });
          events.push({
            kind: 'Node',
            object: nodeName,
            message: `registered (${cpuTotal}m, ${memTotal}Mi)`,
          });
        }
        this.#writeEvents(tx, events, now);
        // Fast path: a known, fresh node re-reporting the same capacity changes nothing placement
        // depends on (other nodes going silent is the timer's job), so the last schedule stands.
        let cache = this.#cache;
        const fast =
          cache !== undefined &&
          !this.#externalDirty &&
          existing !== undefined &&
          cache.fresh.has(nodeName) &&
          cache.caps.get(nodeName) === `${cpuTotal}|${memTotal}`;
        // A big cluster that just reconciled answers a new or returning node from the last schedule
        // and leaves the reconcile to the timer (≤ 1 tick later): scheduling stays under ~20 % of
        // the time however many nodes join at once. Small clusters always reconcile inline.
        const busy =
          cache !== undefined &&
          this.#lastReconcileMs > LIMITS.deferAboveMs &&
          performance.now() - this.#lastReconcileEnd < LIMITS.dutyFactor * this.#lastReconcileMs;
        if ((fast || busy) && cache) {
          if (!fast) this.deferred++;
          this.#foldReport(tx, cache, report);
        } else cache = this.#reconcile(tx, { now, report });
        // Only this node's placements matter unless it still carries a hand-off (rare): scanning
        // every placement per heartbeat cost O(pods) each.
        let carries = false;
        for (const h of this.#handoffs.values()) if (h.from === nodeName) carries = true;
        return nodeOrders(
          nodeName,
          carries ? cache.result.placements : (cache.byNode.get(nodeName) ?? []),
          cache.deployments,
          reported.map((p) => p.name),
          this.#handoffs,
        );
      },
      { durability: 'buffered' },
    );
    return { pods: value };
  }

  /** Fast path: placement unchanged, so only this node's pods' observed state is written. */
  #foldReport(tx: Tx, cache: CachedSchedule, report: Report): void {
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
    // A hand-off is made once its target reports the pod Running: the old copy may now stop.
    for (const p of report.pods) {
      const h = this.#handoffs.get(p.name);
      if (h && h.to === report.node && normalizePhase(p.phase) === 'Running') this.#handoffs.delete(p.name);
    }
  }

  // ---- verbs -------------------------------------------------------------------------------

  async #mutate<T>(fn: (tx: Tx, now: number) => T, durability: Durability = 'durable'): Promise<T> {
    const { value } = await this.store.transact((tx) => fn(tx, this.#now()), { durability });
    return value;
  }

  async apply(body: {
    deployments?: Record<string, unknown>[] | null;
    gateways?: Record<string, unknown>[] | null;
    routes?: Record<string, unknown>[] | null;
    secrets?: Record<string, unknown>[] | null;
  }): Promise<ApplyResult> {
    return this.#mutate((tx, now) => {
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
      this.#writeEvents(tx, events, now);
      this.#reconcile(tx, { now });
      return out;
    });
  }

  async scale(name: string, replicas: number): Promise<string> {
    return this.#mutate((tx, now) => {
      if (!tx.update('Deployments', name, { replicas })) return 'not found';
      this.#writeEvents(tx, [{ kind: 'Deployment', object: name, message: `scaled to ${replicas}` }], now);
      this.#reconcile(tx, { now });
      return 'scaled';
    });
  }

  async delete(name: string, kind: string): Promise<string> {
    const tab =
      kind === 'deployment'
        ? 'Deployments'
        : kind === 'gateway'
          ? 'Gateways'
          : kind === 'route'
            ? 'Routes'
            : kind === 'secret'
              ? 'Secrets'
              : '';
    if (!tab) return 'unknown kind';
    return this.#mutate((tx, now) => {
      if (!tx.delete(tab, name)) return 'not found';
      this.#writeEvents(
        tx,
        [{ kind: kind[0].toUpperCase() + kind.slice(1), object: name, message: 'deleted' }],
        now,
      );
      this.#reconcile(tx, { now });
      return 'deleted';
    });
  }

  async cordon(name: string, on: boolean): Promise<string> {
    return this.#mutate((tx, now) => {
      if (!tx.update('Nodes', name, { schedulable: !on })) return 'not found';
      this.#writeEvents(tx, [{ kind: 'Node', object: name, message: on ? 'cordoned' : 'uncordoned' }], now);
      this.#reconcile(tx, { now });
      return on ? 'cordoned' : 'uncordoned';
    });
  }

  async drain(name: string): Promise<string> {
    return this.#mutate((tx, now) => {
      if (!tx.update('Nodes', name, { schedulable: false })) return 'not found';
      this.#writeEvents(
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
      this.#reconcile(tx, { now, exclude: new Set([name]) });
      return 'drained';
    });
  }

  async migrate(pod: string, target: string): Promise<string> {
    return this.#mutate((tx, now) => {
      const n = tx.get('Nodes', target);
      if (!n) return 'unknown node';
      const node = this.#nodeIn(n);
      const fresh = node !== null && node.lastHeartbeat > 0 && now - node.lastHeartbeat < this.nodeTtlSec;
      if (!fresh || !truthyCell(n.schedulable)) return 'target not schedulable';
      const p = tx.get('Pods', pod);
      if (!p) return 'pod not found';
      this.#writeEvents(
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
      this.#reconcile(tx, { now, pins: new Map([[pod, target]]) });
      return `migrating ${pod} -> ${target}`;
    });
  }

  /** label/taint: edit a node cell and reschedule. Throws (→ 400) on a malformed spec. */
  async editNode(verb: 'label' | 'taint', name: string, spec: string): Promise<string> {
    return this.#mutate((tx, now) => {
      const n = tx.get('Nodes', name);
      if (!n) return 'not found';
      if (verb === 'label') tx.update('Nodes', name, { labels: applyLabel(n.labels, spec) });
      else tx.update('Nodes', name, { taints: applyTaint(n.taints, spec) });
      this.#writeEvents(tx, [{ kind: 'Node', object: name, message: `${verb} ${spec}` }], now);
      this.#reconcile(tx, { now });
      return 'ok';
    });
  }

  /** Pending make-before-break hand-offs (for status and tests). */
  handoffs(): Handoff[] {
    return [...this.#handoffs.values()];
  }
}

function differs(a: Row, b: Row): boolean {
  for (const [k, v] of Object.entries(b)) {
    const x = a[k];
    if ((x === null || x === undefined ? '' : String(x)) !== (v === null || v === undefined ? '' : String(v)))
      return true;
  }
  return false;
}

function summary(row: Row): string {
  return Object.entries(row)
    .filter(([k]) => k !== 'name')
    .map(([k, v]) => `${k}=${String(v).slice(0, 40)}`)
    .join(' ');
}
