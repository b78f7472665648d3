// Small DOM renderers: rows of objects as a table, and the Metrics tab as line plots (SVG), one
// panel per unit with labelled axes shared by the series of that unit.
import { type Cell, niceMax, shortCell, unitOf } from '../cells.ts';

export const LIMITS = {
  plotPoints: 300, // points per series drawn; older ones fall off the left
  plotSeries: 8, // series drawn per panel (unit); the rest are listed, not plotted
} as const;

/**
 * Rows of objects as a table whose columns are the union of their keys, in first-seen order;
 * `format` may show a column its own way (an age for a time).
 */
export function renderRows(
  rows: readonly Record<string, unknown>[],
  format: Record<string, (v: unknown) => Cell> = {},
): HTMLElement {
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
      const { text, title } = (format[c] ?? shortCell)(r[c]);
      const cell = tr.insertCell();
      cell.textContent = text;
      if (title !== undefined) cell.title = title;
    }
  }
  return table;
}

const SVG = 'http://www.w3.org/2000/svg';
const svgEl = (tag: string, attrs: Record<string, string | number>, text?: string): SVGElement => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
};
const clock = (t: number): string => new Date(t).toLocaleTimeString([], { hour12: false });

type Series = { name: string; pts: [number, number][] };

/** One panel: the series of one unit on one y axis from 0, time on x; a legend line per series. */
function panel(unit: string, series: Series[], t0: number, t1: number): SVGSVGElement {
  const w = 640;
  const h = 150;
  const left = 56;
  const right = 10;
  const top = 18;
  const bottom = 20;
  const shown = series.slice(0, LIMITS.plotSeries);
  const vmax = niceMax(Math.max(0, ...shown.flatMap((s) => s.pts.map((p) => p[1]))));
  const svg = document.createElementNS(SVG, 'svg');
  const legendH = 16 * shown.length + (series.length > shown.length ? 16 : 0);
  svg.setAttribute('viewBox', `0 0 ${w} ${h + legendH + 6}`);
  svg.setAttribute('class', 'plot');
  svg.dataset.unit = unit;
  svg.dataset.points = String(Math.max(0, ...shown.map((s) => s.pts.length)));
  svg.dataset.ymax = String(vmax);
  const x = (t: number): number => left + ((t - t0) / Math.max(1, t1 - t0)) * (w - left - right);
  const y = (v: number): number => h - bottom - (v / vmax) * (h - top - bottom);
  svg.append(svgEl('text', { x: 4, y: 12, 'font-weight': 'bold' }, unit));
  // The y axis: 0, half and the top, in the unit; faint grid lines across.
  for (const v of [0, vmax / 2, vmax]) {
    svg.append(
      svgEl('line', { x1: left, x2: w - right, y1: y(v), y2: y(v), stroke: '#ddd' }),
      svgEl('text', { x: left - 4, y: y(v) + 4, 'text-anchor': 'end' }, String(+v.toPrecision(3))),
    );
  }
  svg.append(
    svgEl('line', { x1: left, x2: left, y1: top, y2: h - bottom, stroke: '#888' }),
    svgEl('text', { x: left, y: h - 4 }, clock(t0)),
    svgEl('text', { x: w - right, y: h - 4, 'text-anchor': 'end' }, clock(t1)),
  );
  shown.forEach((s, i) => {
    const hue = Math.round((i * 360) / shown.length);
    const colour = `hsl(${hue} 70% 40%)`;
    svg.append(
      svgEl('polyline', {
        points: s.pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' '),
        fill: 'none',
        stroke: colour,
        'stroke-width': 1.5,
      }),
    );
    // Samples come every 15 s: mark each, so the first ones show before there is a line.
    for (const [t, v] of s.pts)
      svg.append(svgEl('circle', { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 2, fill: colour }));
    const last = s.pts[s.pts.length - 1]?.[1];
    svg.append(
      svgEl('text', { x: left, y: h + 12 + 16 * i, fill: colour }, `${s.name}: ${last} ${unit} now`),
    );
  });
  if (series.length > shown.length)
    svg.append(
      svgEl(
        'text',
        { x: left, y: h + 12 + 16 * shown.length },
        `not plotted: ${series
          .slice(shown.length)
          .map((s) => s.name)
          .join(', ')}`,
      ),
    );
  return svg;
}

/**
 * Metrics rows {ts, metric, labels, value} → one panel per unit (pods, nodes, millicores, MiB),
 * each series of a unit on the same labelled axis from 0, all panels on the same time span.
 */
export function plotMetrics(rows: readonly Record<string, unknown>[]): Element {
  const byName = new Map<string, [number, number][]>();
  for (const r of rows) {
    const t = Date.parse(String(r.ts)) || Number(r.ts);
    const v = Number(r.value);
    if (!Number.isFinite(t) || !Number.isFinite(v)) continue;
    const name = `${String(r.metric)}${r.labels ? `{${String(r.labels)}}` : ''}`;
    const s = byName.get(name) ?? [];
    s.push([t, v]);
    byName.set(name, s);
  }
  const box = document.createElement('div');
  box.className = 'plots';
  const series = [...byName].map(([name, pts]) => ({ name, pts: pts.slice(-LIMITS.plotPoints) }));
  const all = series.flatMap((s) => s.pts);
  box.dataset.points = String(Math.max(0, ...series.map((s) => s.pts.length)));
  if (all.length === 0) {
    box.textContent = 'no metrics yet (a sample every 15 s)';
    return box;
  }
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]), t0 + 1);
  const units = new Map<string, Series[]>();
  for (const s of series) {
    const u = unitOf(s.name.replace(/\{.*$/, ''));
    units.set(u, [...(units.get(u) ?? []), s]);
  }
  for (const [u, ss] of units) box.append(panel(u, ss, t0, t1));
  return box;
}
