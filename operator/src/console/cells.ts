// How the console's page shows values, as pure functions (no DOM): cells shortened for a table,
// and the unit and axis of a metric.

export const LIMITS = {
  cellChars: 40, // longer cells (image configs) are cut; the whole text is in the tooltip
  digestHex: 12, // a digest shows this many hex digits (as `docker images` does); all in the tooltip
} as const;

export interface Cell {
  text: string;
  /** The whole value, on hover, when `text` is shorter than it. */
  title?: string;
}

/** A cell as a person reads it: digests and long text shortened, the whole value kept for the tooltip. */
export function shortCell(v: unknown): Cell {
  const text = v === undefined || v === null ? '' : String(v);
  const digest = /^(sha256:)?([0-9a-f]{64})$/.exec(text);
  if (digest) return { text: `${digest[1] ?? ''}${digest[2].slice(0, LIMITS.digestHex)}…`, title: text };
  if (text.length > LIMITS.cellChars) return { text: `${text.slice(0, LIMITS.cellChars - 1)}…`, title: text };
  return { text };
}

/** The unit a metric is counted in, from its name: `*_millicores`, `*_mib`, `*_seconds`, else `pods_*` → pods. */
export function unitOf(metric: string): string {
  const parts = metric.split('_');
  const last = parts[parts.length - 1];
  if (['millicores', 'mib', 'bytes', 'seconds'].includes(last)) return last === 'mib' ? 'MiB' : last;
  return parts[0] || metric;
}

/** Round axis maxima: 1, 2, 5 × 10^n at or above v. */
export function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
