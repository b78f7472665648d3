// Small DOM renderers: rows of objects as a table, and the Metrics tab as a line plot (SVG).

export const LIMITS = {
  plotPoints: 300, // points per series drawn; older ones fall off the left
  plotSeries: 8, // series drawn; the rest are listed, not plotted
  cellChars: 60, // longer cells (image configs, digests) are cut; the whole text is in the tooltip
} as const;

/** Rows of objects as a table whose columns are the union of their keys, in first-seen order. */
export function renderRows(rows: readonly Record<string, unknown>[]): HTMLElement {
  if (rows.length === 0) return Object.assign(document.createElement('p'), { textContent: '(empty)' });
  const cols: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const c of cols) head.append(Object.assign(document.createElement('th'), { textContent: c }));
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    for (const c of cols) {
      const text = r[c] === undefined || r[c] === null ? '' : String(r[c]);
      const cell = tr.insertCell();
      cell.textContent = text.length > LIMITS.cellChars ? `${text.slice(0, LIMITS.cellChars)}…` : text;
      if (text.length > LIMITS.cellChars) cell.title = text;
    }
  }
  return table;
}

const SVG = 'http://www.w3.org/2000/svg';

/**
 * Metrics rows {ts, metric, labels, value} → one line per metric+labels over time, each scaled to
 * its own maximum (pods and millicores share no scale); the legend gives each maximum.
 */
export function plotMetrics(rows: readonly Record<string, unknown>[]): Element {
  const series = new Map<string, [number, number][]>();
  for (const r of rows) {
    const t = Date.parse(String(r.ts)) || Number(r.ts);
    const v = Number(r.value);
    if (!Number.isFinite(t) || !Number.isFinite(v)) continue;
    const name = `${String(r.metric)}${r.labels ? `{${String(r.labels)}}` : ''}`;
    const s = series.get(name) ?? [];
    s.push([t, v]);
    series.set(name, s);
  }
  const w = 640;
  const h = 200;
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h + 20 * Math.min(series.size, LIMITS.plotSeries)}`);
  svg.setAttribute('class', 'plot');
  const shown = [...series]
    .slice(0, LIMITS.plotSeries)
    .map(([n, pts]) => [n, pts.slice(-LIMITS.plotPoints)] as const);
  const all = shown.flatMap(([, p]) => p);
  svg.dataset.points = String(Math.max(0, ...shown.map(([, p]) => p.length)));
  if (all.length === 0) {
    const t = document.createElementNS(SVG, 'text');
    t.setAttribute('x', '10');
    t.setAttribute('y', '20');
    t.textContent = 'no metrics yet';
    svg.append(t);
    return svg;
  }
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]), t0 + 1);
  shown.forEach(([name, pts], i) => {
    const hue = Math.round((i * 360) / shown.length);
    const v1 = Math.max(...pts.map((p) => p[1]), 1);
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute(
      'points',
      pts
        .map(
          ([t, v]) =>
            `${(((t - t0) / (t1 - t0)) * (w - 10) + 5).toFixed(1)},${(h - 5 - (v / v1) * (h - 10)).toFixed(1)}`,
        )
        .join(' '),
    );
    line.setAttribute('fill', 'none');
    line.setAttribute('stroke', `hsl(${hue} 70% 45%)`);
    const label = document.createElementNS(SVG, 'text');
    label.setAttribute('x', '5');
    label.setAttribute('y', String(h + 15 + 20 * i));
    label.setAttribute('fill', `hsl(${hue} 70% 35%)`);
    label.textContent = `${name} (max ${Math.max(...pts.map((p) => p[1]))})`;
    svg.append(line, label);
    // Samples come every 15 s: mark each, so the first ones show before there is a line.
    for (const [t, v] of pts) {
      const dot = document.createElementNS(SVG, 'circle');
      dot.setAttribute('cx', (((t - t0) / (t1 - t0)) * (w - 10) + 5).toFixed(1));
      dot.setAttribute('cy', (h - 5 - (v / v1) * (h - 10)).toFixed(1));
      dot.setAttribute('r', '2');
      dot.setAttribute('fill', `hsl(${hue} 70% 45%)`);
      svg.append(dot);
    }
  });
  return svg;
}
