// Cluster metrics (the Sheetheus idea): a sample of the cluster appended to the Metrics tab at an
// interval with retention, and the same figures on /metrics in Prometheus text format.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { logger } from '../../util/log.ts';
import { intOr, text, truthyCell } from '../scheduler/model.ts';
import type { Store } from '../store/types.ts';

const log = logger('sheets-metrics');

export const LIMITS = {
  intervalSec: 15, // one sample per 15 s: a readable chart and 240 rows/h per metric
  retentionSec: 3600, // keep one hour in the sheet; Prometheus keeps the long history
  minIntervalSec: 1, // faster sampling would turn the Metrics tab into the bottleneck
} as const;

export interface ClusterSample {
  pods_total: number;
  pods_running: number;
  pods_pending: number;
  pods_unschedulable: number;
  nodes_total: number;
  nodes_ready: number;
  cpu_allocated_millicores: number;
  cpu_capacity_millicores: number;
  mem_allocated_mib: number;
  mem_capacity_mib: number;
}

/** Reads the sheet as it is now; nodes count as ready only when their heartbeat is fresh. */
export function sampleCluster(store: Store, nowSec: number, nodeTtlSec: number): ClusterSample {
  const s: ClusterSample = {
    pods_total: 0,
    pods_running: 0,
    pods_pending: 0,
    pods_unschedulable: 0,
    nodes_total: 0,
    nodes_ready: 0,
    cpu_allocated_millicores: 0,
    cpu_capacity_millicores: 0,
    mem_allocated_mib: 0,
    mem_capacity_mib: 0,
  };
  const cpuReq = new Map<string, [number, number]>();
  for (const d of store.rows('Deployments'))
    cpuReq.set(text(d.name), [intOr(d.cpu_req, 100), intOr(d.mem_req, 64)]);
  for (const p of store.rows('Pods')) {
    s.pods_total++;
    const phase = text(p.phase);
    if (phase === 'Running') s.pods_running++;
    else if (phase === 'Unschedulable') s.pods_unschedulable++;
    else if (phase === 'Pending') s.pods_pending++;
    if (text(p.node)) {
      const [c, m] = cpuReq.get(text(p.deployment)) ?? [0, 0];
      s.cpu_allocated_millicores += c;
      s.mem_allocated_mib += m;
    }
  }
  for (const n of store.rows('Nodes')) {
    s.nodes_total++;
    const hb = intOr(n.last_heartbeat, 0);
    const fresh = hb > 0 && nowSec - hb < nodeTtlSec;
    if (fresh && truthyCell(n.schedulable)) s.nodes_ready++;
    if (fresh) {
      s.cpu_capacity_millicores += intOr(n.cpu_total, 1000);
      s.mem_capacity_mib += intOr(n.mem_total, 512);
    }
  }
  return s;
}

const isoSec = (sec: number) => new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Appends one sample to the Metrics tab and drops rows older than the retention. */
export async function recordSample(
  store: Store,
  sample: ClusterSample,
  nowSec: number,
  retentionSec: number,
): Promise<void> {
  const ts = isoSec(nowSec);
  const cutoff = isoSec(nowSec - retentionSec);
  await store.transact(
    (tx) => {
      for (const [metric, value] of Object.entries(sample))
        tx.insert('Metrics', { ts, metric, labels: '', value });
      tx.deleteWhere('Metrics', (r) => text(r.ts) < cutoff);
    },
    { durability: 'buffered' },
  );
}

export interface MetricsOptions {
  store: Store;
  nodeTtlSec: number;
  now: () => number;
  intervalSec?: number;
  retentionSec?: number;
}

/** The apiserver's metrics: its own Registry (never the global one) plus the Metrics-tab recorder. */
export class ClusterMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'method' | 'code'>;
  readonly heartbeatSeconds: Histogram;
  readonly #o: MetricsOptions;
  #timer: NodeJS.Timeout | undefined;

  constructor(o: MetricsOptions) {
    this.#o = o;
    const sample = () => sampleCluster(o.store, o.now(), o.nodeTtlSec);
    const gauge = (name: string, help: string, pick: (s: ClusterSample) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(pick(sample()));
        },
      });
    gauge('sheets_pods_running', 'Pods whose node reports them Running', (s) => s.pods_running);
    gauge('sheets_pods_pending', 'Pods placed but not yet Running', (s) => s.pods_pending);
    gauge('sheets_pods_unschedulable', 'Pods no node can take', (s) => s.pods_unschedulable);
    gauge('sheets_pods', 'Pods in the Pods tab', (s) => s.pods_total);
    gauge('sheets_nodes_ready', 'Nodes with a fresh heartbeat that accept pods', (s) => s.nodes_ready);
    gauge('sheets_nodes', 'Rows in the Nodes tab', (s) => s.nodes_total);
    gauge(
      'sheets_cpu_allocated_millicores',
      'CPU requested by placed pods',
      (s) => s.cpu_allocated_millicores,
    );
    gauge(
      'sheets_cpu_capacity_millicores',
      'CPU of nodes with a fresh heartbeat',
      (s) => s.cpu_capacity_millicores,
    );
    gauge('sheets_memory_allocated_mib', 'Memory requested by placed pods', (s) => s.mem_allocated_mib);
    this.requests = new Counter({
      name: 'sheets_http_requests_total',
      help: 'apiserver requests by method and status code',
      labelNames: ['method', 'code'],
      registers: [this.registry],
    });
    this.heartbeatSeconds = new Histogram({
      name: 'sheets_heartbeat_seconds',
      help: 'time to answer a heartbeat',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [this.registry],
    });
  }

  start(): void {
    const interval = Math.max(LIMITS.minIntervalSec, this.#o.intervalSec ?? LIMITS.intervalSec);
    this.#timer = setInterval(() => void this.recordNow(), interval * 1000);
    this.#timer.unref?.();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async recordNow(): Promise<ClusterSample | undefined> {
    try {
      const now = this.#o.now();
      const s = sampleCluster(this.#o.store, now, this.#o.nodeTtlSec);
      await recordSample(this.#o.store, s, now, this.#o.retentionSec ?? LIMITS.retentionSec);
      return s;
    } catch (err) {
      log.warn({ err }, 'could not record a metrics sample');
      return undefined;
    }
  }
}
