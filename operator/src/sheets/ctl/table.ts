// skctl's tables (spec §5): the reference's columns, aligned like `column -t`.
export type Item = Record<string, unknown>;

const s = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const dash = (v: unknown): string => (s(v) === '' ? '-' : s(v));
const or = (v: unknown, d: string): string => (s(v) === '' ? d : s(v));

export interface TableSpec {
  header: string[] | null;
  row: (i: Item) => string[];
  /** Keep only the last N items (events). */
  last?: number;
}

export const TABLES: Record<string, TableSpec> = {
  pods: {
    header: ['NAME', 'DEPLOYMENT', 'NODE', 'PHASE', 'CONTAINER', 'ENDPOINTS'],
    row: (i) => [
      s(i.name),
      dash(i.deployment),
      dash(i.node),
      dash(i.phase),
      dash(s(i.container_id).slice(0, 12)),
      dash(i.endpoints),
    ],
  },
  nodes: {
    header: ['NAME', 'IP', 'CPU', 'CPU_USED', 'MEM', 'STATUS', 'HEARTBEAT'],
    row: (i) => [
      s(i.name),
      dash(i.ip),
      dash(i.cpu_total),
      dash(i.cpu_used),
      dash(i.mem_total),
      dash(i.status),
      dash(i.last_heartbeat),
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
  events: { header: null, row: (i) => [s(i.ts), s(i.kind), s(i.object), s(i.message)], last: 25 },
  metrics: { header: ['TS', 'METRIC', 'VALUE'], row: (i) => [s(i.ts), s(i.metric), s(i.value)], last: 30 },
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

export function renderTable(kind: string, items: Item[]): string {
  const spec = TABLES[kind];
  const chosen = spec.last ? items.slice(-spec.last) : items;
  const rows = chosen.map((i) => spec.row(i).map((c) => c.replace(/[\t\n]/g, ' ')));
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
