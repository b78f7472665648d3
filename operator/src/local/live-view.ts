// The live view of `retrokube up` in a terminal: pure rendering of one frame that fits the
// terminal's size. Too wide: a table drops its least needed columns, then every line is cut (never
// wrapped). Too tall: the longest table shows fewer rows and ends with "+N more"; then blank lines
// go; the footer (how to stop, where the addresses are) always stays on the last line.
import type { ClusterView } from '../air/view.ts';
import { type Item, TABLES } from '../sheets/ctl/table.ts';

export interface LiveTable {
  header: string[];
  rows: string[][];
  /** Column indexes to drop when the table is too wide, first dropped first. */
  drop: number[];
  /** A line under the table (a legend), shown when the table shows at least one row. */
  note?: string;
}

export type LiveBlock = string | LiveTable;

const isTable = (b: LiveBlock): b is LiveTable => typeof b !== 'string';

/** Cuts a line to `cols` characters, marking the cut. */
export function cut(line: string, cols: number): string {
  if (line.length <= cols) return line;
  return cols <= 1 ? line.slice(0, cols) : `${line.slice(0, cols - 1)}…`;
}

/** As many of the parts as fit in `cols`, joined with " · " (the first one always). */
export function fitParts(parts: string[], cols: number): string {
  let line = parts[0] ?? '';
  for (const p of parts.slice(1)) {
    if (line.length + 3 + p.length > cols) break;
    line += ` · ${p}`;
  }
  return cut(line, cols);
}

function tableLines(t: LiveTable, cols: number): { header: string; rows: string[] } {
  let keep = t.header.map((_, i) => i);
  const width = (ks: number[]): number[] =>
    ks.map((k) => Math.max((t.header[k] ?? '').length, ...t.rows.map((r) => (r[k] ?? '').length)));
  const total = (ks: number[]): number => width(ks).reduce((a, b) => a + b, 0) + 2 * (ks.length - 1);
  for (const d of t.drop) {
    if (total(keep) <= cols || keep.length <= 1) break;
    keep = keep.filter((k) => k !== d);
  }
  const w = width(keep);
  const line = (cells: string[]): string =>
    cut(
      keep
        .map((k, j) => (j === keep.length - 1 ? (cells[k] ?? '') : (cells[k] ?? '').padEnd(w[j] ?? 0)))
        .join('  '),
      cols,
    );
  return { header: line(t.header), rows: t.rows.map(line) };
}

/** One frame of `rows` lines at most, each of `cols` characters at most. */
export function fitFrame(blocks: LiveBlock[], footer: string, cols: number, rows: number): string[] {
  const c = Math.max(20, cols);
  const r = Math.max(3, rows);
  const tables = blocks.map((b) => (isTable(b) ? tableLines(b, c) : null));
  const shown = tables.map((t) => (t ? t.rows.length : 0));
  const linesOf = (i: number): number => {
    const t = tables[i];
    if (!t) return 1;
    const b = blocks[i] as LiveTable;
    const more = shown[i] < t.rows.length ? 1 : 0;
    return 1 + shown[i] + more + (b.note && shown[i] > 0 ? 1 : 0);
  };
  const total = (): number => blocks.reduce((n, _, i) => n + linesOf(i), 0) + 1;
  // Shorten the longest table, one row at a time, down to its header and "+N more".
  while (total() > r) {
    let longest = -1;
    for (let i = 0; i < blocks.length; i++)
      if (tables[i] && shown[i] > 0 && (longest < 0 || shown[i] > shown[longest])) longest = i;
    if (longest < 0) break;
    shown[longest]--;
  }
  let out: string[] = [];
  blocks.forEach((b, i) => {
    const t = tables[i];
    if (!t) {
      out.push(cut(b as string, c));
      return;
    }
    out.push(t.header, ...t.rows.slice(0, shown[i]));
    if (shown[i] < t.rows.length) out.push(`+${t.rows.length - shown[i]} more`);
    const note = (b as LiveTable).note;
    if (note && shown[i] > 0) out.push(cut(note, c));
  });
  // Still too tall: blank lines go, then whatever is last before the footer.
  while (out.length + 1 > r && out.includes('')) out.splice(out.lastIndexOf(''), 1);
  if (out.length + 1 > r) out = out.slice(0, r - 1);
  return [...out, cut(footer, c)];
}

/** The Kube on Oberon part: a summary line, nodes and pods as heard on the air. */
export function kubeBlocks(v: ClusterView): LiveBlock[] {
  const planeAge = v.plane.ageMs === null ? 'never' : `${(v.plane.ageMs / 1000).toFixed(1)}s ago`;
  const syncing = v.nodes.some((n) => n.ready && !n.converged);
  const nodes: LiveTable = {
    header: ['NODE', 'STATUS', 'HEARD', 'RUNS', 'ASSIGNED'],
    rows: v.nodes.map((n) => [
      n.name,
      n.ready ? (n.converged ? 'Ready' : 'Ready*') : 'NotReady',
      n.ageMs === null ? '-' : `${(n.ageMs / 1000).toFixed(1)}s ago`,
      // A NotReady node's last report is history, not what it runs now.
      n.ready ? n.running.join(' ') || '-' : '-',
      n.assigned ? n.assigned.join(' ') || '-' : '-',
    ]),
    drop: [2, 4],
    note: syncing ? '* Ready, still starting or stopping pods to match its assignment' : undefined,
  };
  // Pods that are neither assigned nor running (replaced by an apply) are gone, not listed.
  const live = v.pods.filter((p) => p.assignedTo.length > 0 || p.runningOn.length > 0);
  const pods: LiveTable = {
    header: ['POD', 'IMAGE', 'ASSIGNED', 'RUNNING'],
    rows: live.map((p) => [
      String(p.id),
      p.image ?? '?',
      p.assignedTo.join(',') || '-',
      p.runningOn.join(',') || '-',
    ]),
    drop: [2],
  };
  return [
    `plane heard ${planeAge} · nodes ${v.readyNodes}/${v.nodes.length} Ready · pods running ${v.running} · ${v.converged ? 'CONVERGED' : 'converging'}${v.duplicates.length ? ` · running twice: ${v.duplicates.join(' ')}` : ''}`,
    nodes,
    pods,
  ];
}

const cells = (kind: 'nodes' | 'pods', items: Item[], nowMs: number): string[][] =>
  items.map((i) => (TABLES[kind] as { row: (i: Item, n: number) => string[] }).row(i, nowMs));

/** The Sheeternetes part: its nodes and pods tables, narrowed for a terminal. */
export function sheetsBlocks(nodes: Item[], pods: Item[], nowMs: number): LiveBlock[] {
  const spread = new Set(pods.map((p) => String(p.node ?? '')).filter(Boolean)).size;
  return [
    {
      header: TABLES.nodes?.header ?? [],
      rows: cells('nodes', nodes, nowMs),
      drop: [1, 4, 2, 6, 3], // IP, MEM, CPU, HEARTBEAT, CPU_USED: NAME and STATUS stay
    },
    {
      header: TABLES.pods?.header ?? [],
      rows: cells('pods', pods, nowMs),
      drop: [4, 5, 1, 6],
      // Why pods may sit on one node: the reference's scheduler keeps running pods where they are
      // and gives new ones to the node with the most free CPU (spec §3.4).
      note:
        pods.length > 1 && spread === 1 && nodes.length > 1
          ? "all on one node: it joined first, and the reference's scheduler keeps pods put"
          : undefined,
    },
  ];
}
