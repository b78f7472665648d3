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
import { incrementalPass } from './incremental.ts';
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
  // A cluster counts as big once this many reconciles in a row took longer than deferAboveMs: one
  // slow pass (a cold JIT, a GC, a loaded host) does not make a small cluster defer its reconciles.
  bigAfter: 3,
  // ...and small again only once this many in a row took under half of deferAboveMs. Without the
  // gap, a cluster whose reconciles take about deferAboveMs (1,000 nodes and 10,000 pods on a loaded
  // host) flipped back to small at one fast pass and then ran a reconcile inline in every person's
  // write — four a second in bench/sheets-scale, each holding the event loop (a 1,000-node profile:
  // p99 16 -> 58 ms once the reconciles got faster, all of it scale -> reconcileSoon -> #reconcile).
  smallAfter: 10,
  // A cluster whose last schedule held this many pods and nodes together is big from its first
  // heartbeat, whatever the timing says: a full pass costs about 10 µs a row (60 ms at 10,000 of
  // each), so its first LIMITS.bigAfter passes, run inline in the first heartbeats of the
  // registration storm, held the event loop 200–300 ms each (bench/sheets-scale's profile: two such
  // stretches alone delayed 1 % of a 10,000-node run's heartbeats past the p99 goal).
  bigRows: 5_000,
  // A big cluster (reconciles slower than deferAboveMs, bigAfter) leaves the reconciles that new nodes and a person's
  // apply/scale/delete ask for to the timer, which runs one at most every paceFactor × T ms (T the
  // last reconcile's duration): scheduling then holds the event loop ≤ 1 % of the time, so a
  // heartbeat's p99 is not a reconcile's duration. The reference apiserver changes pods only at a
  // heartbeat (spec §1.3: apply/delete do not reschedule), so a node hears of a change up to one
  // kubelet INTERVAL later anyway: paceMaxMs caps the wait at that.
  paceFactor: 99,
  paceMaxMs: 10_000,
} as const;

export interface ClusterOptions {
  store: Store;
  nodeTtlSec?: number;
  portRange?: [number, number];
  /** Unix seconds; injectable for tests. */
  now?: () => number;
  tickMs?: number;
  eventsMax?: number;
  /** LIMITS.deferAboveMs; tests set -1 to make a small cluster behave as a big one. */
  deferAboveMs?: number;
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
  /** Reconciles in a row slower than deferAboveMs (LIMITS.bigAfter), and under half of it (LIMITS.smallAfter). */
  #slowInRow = 0;
  #fastInRow = 0;
  #isBig = false;
  readonly #deferAboveMs: number;
  /** A change placement depends on was left to the timer (big cluster): the next paced tick reconciles. */
  #pending = false;
  /**
   * A node returned or changed capacity since the last schedule (its heartbeat was answered from
   * that schedule): the next pass must be a full one. Without it, and with no other change than
   * Deployments' replicas and nodes that joined (#joined), the timer's pass is incremental.ts's.
   */
  #nodesChanged = false;
  /**
   * Nodes registered since the last schedule (answered from it), as placement sees their rows, in
   * the order the rows were appended to the Nodes tab: incremental.ts adds them.
   */
  #joined = new Map<string, NodeIn>();
  #lastIncrementalMs = 0;
  #lastIncrementalEnd = 0;
  /** Passes that were incremental.ts's (counted in `reconciles` too). */
  incrementalPasses = 0;
  /** Unix s from which a node fresh in the last schedule may have gone silent (failover check). */
  #staleAt = 0;
  /** Heartbeats and verbs answered without a reconcile while a big cluster's reconcile was deferred. */
  deferred = 0;
  reconciles = 0;
  /** Unix seconds when start() ran (0 before): the floor of a Ready node's last heartbeat. */
  #startedAt = 0;
  /** What the verbs need of this cluster. */
  readonly #verbs: verbs.VerbContext = {
    writeEvents: (tx, events, now) => this.#events.write(tx, events, now),
    reconcile: (tx, o) => void this.#reconcile(tx, o),
    reconcileSoon: (tx, o) => {
      if (this.#big()) {
        this.#pending = true;
        this.deferred++;
      } else this.#reconcile(tx, o);
    },
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
    this.#deferAboveMs = o.deferAboveMs ?? LIMITS.deferAboveMs;
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
   * The timer: reconcile when a node fresh in the last schedule went silent (failover, at once), or
   * — paced in a big cluster (LIMITS.paceFactor) — when a change was left to it, someone edited the
   * sheet, or a hand-off timed out. A small cluster also compares the whole schedule key, as cheap
   * there as it is costly (tens of ms) at 10,000 nodes, where the flags above say the same.
   */
  async tick(): Promise<boolean> {
    if (this.#tickRunning) return false;
    this.#tickRunning = true;
    try {
      const now = this.#now();
      const urgent = this.#failoverDue(now);
      if (!urgent && this.#incrementalAllowed()) {
        if (!this.#paceAllows(this.#lastIncrementalMs, this.#lastIncrementalEnd)) return false;
        const { value } = await this.store.transact((tx) => this.#incrementalPass(tx, now), {
          durability: 'buffered',
        });
        if (value) return true;
        this.#nodesChanged = true; // the sheet did not allow it: the next pass is a full one, paced
      }
      if (!urgent && !this.#paceAllows(this.#lastReconcileMs, this.#lastReconcileEnd)) return false;
      const handoffExpired = [...this.#handoffs.values()].some(
        (h) => now - h.since > ORDER_LIMITS.handoffMaxSec,
      );
      const asked = urgent || this.#pending || this.#externalDirty || handoffExpired;
      if (!asked && (this.#big() || this.#cache?.key() === scheduleKey(this.#nodes(), now, this.nodeTtlSec)))
        return false;
      await this.store.transact((tx) => this.#reconcile(tx, { now }), { durability: 'buffered' });
      return true;
    } catch (err) {
      log.error({ err }, 'timer reconcile failed');
      return false;
    } finally {
      this.#tickRunning = false;
    }
  }

  /** Whether reconciles are costly enough (LIMITS.bigAfter, smallAfter, bigRows) that new nodes and verbs leave them to the timer. */
  #big(): boolean {
    const c = this.#cache;
    if (c === undefined) return false;
    return this.#isBig || c.result.placements.length + c.result.nodes.length >= LIMITS.bigRows;
  }

  /**
   * Whether the timer may run a pass that last took `ms` and ended at `end` now: always in a small
   * cluster, paced in a big one.
   */
  #paceAllows(ms: number, end: number): boolean {
    if (!this.#big()) return true;
    const wait = Math.min(LIMITS.paceMaxMs, LIMITS.paceFactor * ms);
    return performance.now() - end >= wait;
  }

  /** A big cluster's pending change may be only replicas and new nodes (incremental.ts checks the rest). */
  #incrementalAllowed(): boolean {
    return (
      this.#big() && this.#pending && !this.#nodesChanged && !this.#externalDirty && this.#handoffs.size === 0
    );
  }

  /** incremental.ts's pass; false (nothing done) when the sheet needs a full one. */
  #incrementalPass(tx: Tx, now: number): boolean {
    const cache = this.#cache;
    if (!cache) return false;
    const t0 = performance.now();
    const pass = incrementalPass(tx, cache, {
      now,
      nodeTtlSec: this.nodeTtlSec,
      joined: [...this.#joined.values()],
    });
    if (!pass) return false;
    this.reconciles++;
    this.incrementalPasses++;
    this.#reportSheetProblems(pass.problems);
    this.#events.write(tx, pass.events, now);
    this.#cache = pass.cache;
    this.#pending = pass.deferred > 0; // Unschedulable pods left for the next pass
    this.#joined.clear();
    this.#staleAt = Math.min(this.#staleAt, pass.cache.staleAt);
    this.#lastIncrementalEnd = performance.now();
    this.#lastIncrementalMs = this.#lastIncrementalEnd - t0;
    return true;
  }

  /**
   * Whether a node fresh in the last schedule has gone silent. Heartbeats only make a node fresher,
   * so before #staleAt (the earliest a cached-fresh node can turn stale) nothing is scanned; after
   * it, one scan either finds a silent node or moves #staleAt on.
   */
  #failoverDue(now: number): boolean {
    const cache = this.#cache;
    if (!cache) return true;
    if (now < this.#staleAt) return false;
    let next = Number.POSITIVE_INFINITY;
    for (const r of this.store.rows('Nodes')) {
      const n = this.#nodeIn(r);
      if (!n || !cache.fresh.has(n.name)) continue;
      if (now - n.lastHeartbeat >= this.nodeTtlSec) return true;
      next = Math.min(next, n.lastHeartbeat + this.nodeTtlSec);
    }
    this.#staleAt = next;
    return false;
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
      this.#pending = false;
      this.#nodesChanged = false;
      this.#joined.clear();
      this.#staleAt = pass.cache.staleAt;
      return pass.cache;
    } finally {
      this.#lastReconcileEnd = performance.now();
      this.#lastReconcileMs = this.#lastReconcileEnd - t0;
      const ms = this.#lastReconcileMs;
      this.#slowInRow = ms > this.#deferAboveMs ? this.#slowInRow + 1 : 0;
      this.#fastInRow = ms < this.#deferAboveMs / 2 ? this.#fastInRow + 1 : 0;
      if (this.#slowInRow >= LIMITS.bigAfter) this.#isBig = true;
      else if (this.#fastInRow >= LIMITS.smallAfter) this.#isBig = false;
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
        let registered: Row | undefined;
        if (existing) {
          tx.update('Nodes', nodeName, { ip, cpu_total: cpuTotal, mem_total: memTotal, last_heartbeat: now });
          if (text(existing.status) === 'NotReady')
            events.push({ kind: 'Node', object: nodeName, message: 'Ready: heartbeat resumed' });
        } else {
          registered = {
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
          };
          tx.insert('Nodes', registered);
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
        // A big cluster answers a new or returning node from the last schedule and leaves the
        // reconcile to the paced timer (LIMITS.paceFactor): a heartbeat never waits for a schedule
        // of the whole cluster. Small clusters always reconcile inline.
        if (!fast && cache && this.#big()) {
          this.#pending = true;
          // A node new to the workbook joins (incremental.ts places pods on it), as its row reads;
          // one that returned or changed capacity needs a full pass, and so does a joined node
          // without a row (its registration was rolled back: its place in the tab is no longer the
          // order #joined holds).
          const j = this.#joined.get(nodeName);
          const joins = registered ? this.#nodeIn(registered) : null;
          if (joins && !j) this.#joined.set(nodeName, joins);
          else if (j && existing && j.cpuTotal === cpuTotal && j.memTotal === memTotal)
            this.#joined.set(nodeName, { ...j, ip, lastHeartbeat: now });
          else this.#nodesChanged = true;
          this.deferred++;
          foldReport(tx, cache, report, this.#handoffs);
        } else if (fast && cache) foldReport(tx, cache, report, this.#handoffs);
        else cache = this.#reconcile(tx, { now, report });
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
