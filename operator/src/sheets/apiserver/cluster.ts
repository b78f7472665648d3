// The control loop of a spreadsheet cluster, without HTTP: heartbeats, the verbs, timer-driven
// failover. Every change is one synchronous store transaction (read → schedule → write), so
// concurrent requests can never lose an update, and a failed write changes nothing. The pass itself
// is reconcile.ts, the verbs verbs.ts, the Events tab events.ts; this file holds the state between
// passes (the last schedule, the hand-offs) and decides when a pass runs.

import { logger } from '../../util/log.ts';
import { intOr, type NodeIn, nodeFromRow, text } from '../scheduler/model.ts';
import {
  type Handoff,
  nodeOrders,
  LIMITS as ORDER_LIMITS,
  type Order,
  type Report,
} from '../scheduler/orders.ts';
import { setupCluster } from '../store/setup.ts';
import type { Durability, Row, Store, Tx } from '../store/types.ts';
import { EventLog, type EventRow } from './events.ts';
import { type CachedSchedule, foldReport, reconcilePass, scheduleKey } from './reconcile.ts';
import type { HeartbeatBody } from './validate.ts';
import * as verbs from './verbs.ts';

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

export type { ApplyResult } from './verbs.ts';

type PassOptions = { now: number; report?: Report; exclude?: Set<string>; pins?: Map<string, string> };

export class Cluster {
  readonly store: Store;
  readonly nodeTtlSec: number;
  readonly portRange: [number, number];
  readonly #now: () => number;
  readonly #tickMs: number;
  readonly #events: EventLog;
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
  reconciles = 0;
  /** Unix seconds when start() ran (0 before): the floor of a Ready node's last heartbeat. */
  #startedAt = 0;
  /** What the verbs need of this cluster. */
  readonly #verbs: verbs.VerbContext = {
    writeEvents: (tx, events, now) => this.#events.write(tx, events, now),
    reconcile: (tx, o) => void this.#reconcile(tx, o),
    nodeFresh: (r, now) => {
      const n = this.#nodeIn(r);
      return n !== null && n.lastHeartbeat > 0 && now - n.lastHeartbeat < this.nodeTtlSec;
    },
  };

  constructor(o: ClusterOptions) {
    this.store = o.store;
    this.nodeTtlSec = o.nodeTtlSec ?? LIMITS.nodeTtlSec;
    this.portRange = o.portRange ?? [30000, 32767];
    this.#now = o.now ?? (() => Math.floor(Date.now() / 1000));
    this.#tickMs = o.tickMs ?? Math.min(LIMITS.tickMs, Math.max(50, (this.nodeTtlSec * 1000) / 10));
    this.#events = new EventLog(o.eventsMax ?? LIMITS.eventsMax, LIMITS.eventsTrimSlack);
    this.#unsubscribe = this.store.onChange((ev) => {
      if (ev.source === 'external') {
        this.#externalDirty = true;
        this.#cache = undefined;
        this.#events.forget();
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
      const key = scheduleKey(this.#nodes(), now, this.nodeTtlSec);
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

  /** One reconcile pass (reconcile.ts) inside a transaction, timed for the heartbeat's deferral. */
  #reconcile(tx: Tx, o: PassOptions): CachedSchedule {
    this.reconciles++;
    const t0 = performance.now();
    try {
      const pass = reconcilePass(tx, {
        ...o,
        nodeTtlSec: this.nodeTtlSec,
        portRange: this.portRange,
        nodeIn: (r) => this.#nodeIn(r),
        handoffs: this.#handoffs,
      });
      this.#reportSheetProblems(pass.problems);
      this.#handoffs = pass.handoffs;
      this.#events.write(tx, pass.events, o.now);
      this.#cache = pass.cache;
      this.#externalDirty = false;
      return pass.cache;
    } finally {
      this.#lastReconcileEnd = performance.now();
      this.#lastReconcileMs = this.#lastReconcileEnd - t0;
    }
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
        this.#events.write(tx, events, now);
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
          foldReport(tx, cache, report, this.#handoffs);
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

  // ---- verbs (verbs.ts), each one durable transaction ----------------------------------------

  async #mutate<T>(fn: (tx: Tx, now: number) => T, durability: Durability = 'durable'): Promise<T> {
    const { value } = await this.store.transact((tx) => fn(tx, this.#now()), { durability });
    return value;
  }

  apply(body: verbs.ApplyBody): Promise<verbs.ApplyResult> {
    return this.#mutate((tx, now) => verbs.applyObjects(this.#verbs, tx, now, body));
  }

  scale(name: string, replicas: number): Promise<string> {
    return this.#mutate((tx, now) => verbs.scaleDeployment(this.#verbs, tx, now, name, replicas));
  }

  async delete(name: string, kind: string): Promise<string> {
    const tab = verbs.tabOfKind(kind);
    if (!tab) return 'unknown kind';
    return this.#mutate((tx, now) => verbs.deleteObject(this.#verbs, tx, now, tab, kind, name));
  }

  cordon(name: string, on: boolean): Promise<string> {
    return this.#mutate((tx, now) => verbs.cordonNode(this.#verbs, tx, now, name, on));
  }

  drain(name: string): Promise<string> {
    return this.#mutate((tx, now) => verbs.drainNode(this.#verbs, tx, now, name));
  }

  migrate(pod: string, target: string): Promise<string> {
    return this.#mutate((tx, now) => verbs.migratePod(this.#verbs, tx, now, pod, target));
  }

  /** label/taint: edit a node cell and reschedule. Throws (→ 400) on a malformed spec. */
  editNode(verb: 'label' | 'taint', name: string, spec: string): Promise<string> {
    return this.#mutate((tx, now) => verbs.editNode(this.#verbs, tx, now, verb, name, spec));
  }

  /** Pending make-before-break hand-offs (for status and tests). */
  handoffs(): Handoff[] {
    return [...this.#handoffs.values()];
  }
}
