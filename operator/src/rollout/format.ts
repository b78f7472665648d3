// The seed's report for people: a rollout as a progress bar over the walk and a row per target.
// Pure rendering, shared by `retrokube rollout status` (Kubernetes or a local `up`) and the live
// view of `retrokube up` with a fleet FILE.
import type { RolloutStatusT } from '../api/rollout.ts';
import { TARGET_DONE } from './plan.ts';

export const FORMAT_LIMITS = {
  barWidth: 20, // characters of the progress bar
  messageChars: 60, // a target's message in the table
} as const;

export interface RolloutLike {
  metadata: { name?: string; namespace?: string };
  spec?: {
    strategy?: { type?: string };
    change?: { deployment?: string; image?: string; replicas?: number };
  };
  status?: RolloutStatusT;
}

/** The seed's report as a table: one row per target, a bar for the whole walk. Pure. */
export function formatRollout(r: RolloutLike, nowMs: number): string {
  const st = r.status ?? {};
  const rows = st.targets ?? [];
  const done = rows.filter((t) => t.phase === 'Succeeded').length;
  const ended = rows.filter((t) => TARGET_DONE.has(t.phase)).length;
  const filled = rows.length ? Math.round((FORMAT_LIMITS.barWidth * ended) / rows.length) : 0;
  const c = r.spec?.change ?? {};
  const change = [c.image, c.replicas !== undefined ? `×${c.replicas}` : undefined].filter(Boolean).join(' ');
  const head = [
    `rollout ${r.metadata.namespace}/${r.metadata.name}: ${r.spec?.strategy?.type ?? '?'} change of ${c.deployment ?? '?'} to ${change}`,
    `[${'#'.repeat(filled)}${'-'.repeat(FORMAT_LIMITS.barWidth - filled)}] ${done}/${rows.length} changed  ${st.phase ?? 'Pending'}${st.message ? ` — ${st.message}` : ''}`,
  ];
  const table = [['TARGET', 'PHASE', 'ATTEMPTS', 'SINCE', 'MESSAGE']];
  for (const t of rows) {
    const since = t.finishedAt ?? t.startedAt;
    table.push([
      t.name,
      t.phase,
      String(t.attempts),
      since ? age(nowMs - Date.parse(since)) : '-',
      (t.message ?? '').slice(0, FORMAT_LIMITS.messageChars),
    ]);
  }
  const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)));
  const lines = table.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd(),
  );
  return [...head, '', ...lines].join('\n');
}

/** "3s ago", "4m ago", "2h ago". */
export function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}
