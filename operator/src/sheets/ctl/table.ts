// skctl's tables (spec §5): the reference's columns, aligned like `column -t`, made for people:
// heartbeats and event times are ages ("3s ago"; `-o json` keeps the exact cells), and the pods
// table adds RESTARTS and REASON after the reference's columns (why a pod waits, crashed or ended).
export type Item = Record<string, unknown>;

export const LIMITS = {
  reasonChars: 60, // a pod's message in the table; -o json has all of it
} as const;

const s = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const dash = (v: unknown): string => (s(v) === '' ? '-' : s(v));
const or = (v: unknown, d: string): string => (s(v) === '' ? d : s(v));

/** "3s ago", "4m ago", "2h ago", "5d ago" from a time and now (both ms); "-" for no time. */
export function age(whenMs: number | undefined, nowMs: number): string {
  if (whenMs === undefined || !Number.isFinite(whenMs)) return '-';
  const sec = Math.max(0, Math.round((nowMs - whenMs) / 1000)); // a clock a little ahead reads as now
  if (sec < 120) return `${sec}s ago`;
  if (sec < 7200) return `${Math.floor(sec / 60)}m ago`;
  if (sec < 172_800) return `${Math.floor(sec / 3600)}h ago`;
  return `${Math.floor(sec / 86_400)}d ago`;
}

/** A heartbeat cell (Unix seconds) or an event's ts (ISO text) → ms, undefined if neither. */
export function cellTime(v: unknown): number | undefined {
  if (v === null || v === undefined || v === '') return undefined;
  if (typeof v === 'number' || /^\s*\d+(\.\d+)?\s*$/.test(String(v))) {
    const n = Number(v);
    return n > 0 ? n * 1000 : undefined;
  }
  const t = Date.parse(String(v));
  return Number.isNaN(t) ? undefined : t;
}

const clip = (v: unknown, n: number): string => {
  const t = s(v);
  return t.length > n ? `${t.slice(0, n - 1)}…` : t;
};

export interface TableSpec {
  header: string[] | null;
  row: (i: Item, nowMs: number) => string[];
  /** Keep only the last N items (events). */
  last?: number;
}

export const TABLES: Record<string, TableSpec> = {
  pods: {
    header: ['NAME', 'DEPLOYMENT', 'NODE', 'PHASE', 'CONTAINER', 'ENDPOINTS', 'RESTARTS', 'REASON'],
    row: (i) => [
      s(i.name),
      dash(i.deployment),
      dash(i.node),
      dash(i.phase),
      dash(s(i.container_id).slice(0, 12)),
      dash(i.endpoints),
      or(i.restarts, '0'),
      dash(clip(i.message, LIMITS.reasonChars)),
    ],
  },
  nodes: {
    header: ['NAME', 'IP', 'CPU', 'CPU_USED', 'MEM', 'STATUS', 'HEARTBEAT'],
    row: (i, now) => [
      s(i.name),
      dash(i.ip),
      dash(i.cpu_total),
      dash(i.cpu_used),
      dash(i.mem_total),
      dash(i.status),
      age(cellTime(i.last_heartbeat), now),
    ],
  },
  deployments: {
    header: ['NAME', 'IMAGE', 'REPLICAS', 'CPU', 'MEM', 'PORTS'],
    row: (i) => [s(i.name), dash(i.image), dash(i.replicas), dash(i.cpu_req), dash(i.mem_req), dash(i.ports)],
  },
  gateways: {
    header: ['NAME', 'LISTEN', 'REPLICAS', 'ADDRESS', 'STATUS'],
    row: (i) => [s(i.name), or(i.listen, 'auto'), or(i.replicas, '1'), dash(i.address), dash(i.status)],
  },
  routes: {
    header: ['NAME', 'GATEWAY', 'HOST', 'PATH', 'SERVICE', 'PORT', 'REWRITE', 'STATUS'],
    row: (i) => [
      s(i.name),
      or(i.gateway, '*'),
      or(i.host, '*'),
      or(i.path, '/'),
      dash(i.service),
      or(i.port, '80'),
      dash(i.rewrite),
      dash(i.status),
    ],
  },
  events: {
    header: null,
    row: (i, now) => [
      cellTime(i.ts) === undefined ? s(i.ts) : age(cellTime(i.ts), now),
      s(i.kind),
      s(i.object),
      s(i.message),
    ],
    last: 25,
  },
  metrics: {
    header: ['AGE', 'METRIC', 'VALUE'],
    row: (i, now) => [
      cellTime(i.ts) === undefined ? s(i.ts) : age(cellTime(i.ts), now),
      s(i.metric),
      s(i.value),
    ],
    last: 30,
  },
};

/** Kind names skctl accepts, with the reference's aliases. */
export const KIND_ALIASES: Record<string, string> = {
  pods: 'pods',
  pod: 'pods',
  po: 'pods',
  nodes: 'nodes',
  node: 'nodes',
  no: 'nodes',
  deployments: 'deployments',
  deployment: 'deployments',
  deploy: 'deployments',
  gateways: 'gateways',
  gateway: 'gateways',
  gw: 'gateways',
  routes: 'routes',
  route: 'routes',
  events: 'events',
  event: 'events',
  ev: 'events',
  metrics: 'metrics',
};

export function renderTable(kind: string, items: Item[], nowMs = Date.now()): string {
  const spec = TABLES[kind];
  const chosen = spec.last ? items.slice(-spec.last) : items;
  const rows = chosen.map((i) => spec.row(i, nowMs).map((c) => c.replace(/[\t\n]/g, ' ')));
  if (spec.header === null) return rows.map((r) => `${r.join('  ')}\n`).join('');
  return align([spec.header, ...rows]);
}

export function align(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) {
    for (let i = 0; i < r.length; i++) widths[i] = Math.max(widths[i] ?? 0, r[i].length);
  }
  return rows
    .map((r) => `${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')}\n`)
    .join('');
}
