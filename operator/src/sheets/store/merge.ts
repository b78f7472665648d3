// Three-way merge of a store's model with a copy changed by someone else (a person saving the
// xlsx, an edit in the Google Sheet). The rule (documented for users in xlsx.ts and google.ts):
// cell by cell, rows matched by key; a cell only one side changed takes that side's value; a cell
// both changed takes THE PERSON's (theirs); rows they deleted stay deleted, rows they added stay,
// rows we added stay, rows we deleted stay deleted unless they edited them; append-only tabs get
// their rows plus the rows we appended since the base.

import { Book, Grid, isFormula, type StoredCell } from './model.ts';

export function sameCell(a: StoredCell | undefined, b: StoredCell | undefined): boolean {
  const x = a ?? null;
  const y = b ?? null;
  if (isFormula(x) || isFormula(y)) {
    return isFormula(x) && isFormula(y) && x.formula === y.formula && x.result === y.result;
  }
  return x === y || ((x === null || x === '') && (y === null || y === ''));
}

export function diffTabs(a: Book, b: Book): string[] {
  const out: string[] = [];
  for (const [name, g] of b.grids) {
    const o = a.grids.get(name);
    if (!o || o.headers.join('\u0001') !== g.headers.join('\u0001') || o.rows.length !== g.rows.length) {
      out.push(name);
      continue;
    }
    if (g.rows.some((r, i) => r !== o.rows[i] && !sameRow(r, o.rows[i]))) out.push(name);
  }
  return out;
}

export function sameRow(a: StoredCell[], b: StoredCell[]): boolean {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (!sameCell(a[i], b[i])) return false;
  return true;
}

// Three-way merge (rule in the header comment). Rows are laid out in THEIR column order.
export function mergeBooks(base: Book, ours: Book, theirs: Book): { book: Book; oursStillPending: string[] } {
  const grids = new Map<string, Grid>();
  const pending: string[] = [];
  for (const [name, t] of theirs.grids) {
    const o = ours.grids.get(name);
    const b = base.grids.get(name);
    if (!o) {
      grids.set(name, t);
      continue;
    }
    const m = mergeGrid(b, o, t);
    grids.set(name, m.grid);
    if (m.oursWon) pending.push(name);
  }
  // Tabs we created since the base and the person's file does not have (yet).
  for (const [name, o] of ours.grids) {
    if (!theirs.grids.has(name)) {
      grids.set(name, o);
      pending.push(name);
    }
  }
  return { book: new Book(grids), oursStillPending: pending };
}

function mergeGrid(b: Grid | undefined, o: Grid, t: Grid): { grid: Grid; oursWon: boolean } {
  let oursWon = false;
  const headers = [...t.headers];
  for (const h of o.headers) {
    if (h !== '' && !headers.includes(h) && !b?.headers.includes(h)) {
      headers.push(h); // a column we added since the base
      oursWon = true;
    }
  }
  const out = new Grid(t.name, headers, [], o.keyCols);
  const get = (g: Grid | undefined, r: StoredCell[] | undefined, h: string): StoredCell => {
    if (!g || !r) return null;
    const i = g.col(h);
    return i < 0 ? null : (r[i] ?? null);
  };
  const layout = (g: Grid, r: StoredCell[]): StoredCell[] => headers.map((h) => get(g, r, h));
  if (o.keyCols.length === 0) {
    const baseRows = new Set(b?.rows ?? []);
    const rows = t.rows.map((r) => layoutFrom(t, r, headers, get));
    for (const r of o.rows) {
      if (!baseRows.has(r)) {
        rows.push(layout(o, r));
        oursWon = true;
      }
    }
    out.rows = rows;
    return { grid: out, oursWon };
  }
  const index = (g: Grid | undefined): Map<string, StoredCell[]> => {
    const m = new Map<string, StoredCell[]>();
    if (!g) return m;
    for (const r of g.rows) {
      const k = g.rowKey(r);
      if (k !== undefined && !m.has(k)) m.set(k, r);
    }
    return m;
  };
  const bi = index(b);
  const oi = index(o);
  const rows: StoredCell[][] = [];
  for (const r of t.rows) {
    const k = t.rowKey(r);
    if (k === undefined) {
      rows.push(layoutFrom(t, r, headers, get));
      continue;
    }
    const br = bi.get(k);
    const or = oi.get(k);
    if (br && !or) {
      // We deleted it; keep it only if the person edited it since.
      const edited = t.headers.some((h) => h !== '' && !sameCell(get(t, r, h), get(b, br, h)));
      if (edited) rows.push(layoutFrom(t, r, headers, get));
      else oursWon = true;
      continue;
    }
    const merged = layoutFrom(t, r, headers, get).map((cell, i) => {
      const h = headers[i];
      if (h === '' || i !== (i < t.headers.length ? t.col(h) : i)) return cell; // unnamed or duplicate header
      const tv = get(t, r, h);
      if (!or) return tv;
      const ov = get(o, or, h);
      const bv = br ? get(b, br, h) : null;
      const theyChanged = t.col(h) >= 0 && (!br || !sameCell(tv, bv));
      const weChanged = !br ? !sameCell(ov, tv) : !sameCell(ov, bv);
      if (weChanged && !theyChanged) {
        if (!sameCell(ov, tv)) oursWon = true;
        return ov;
      }
      return t.col(h) >= 0 ? tv : ov;
    });
    rows.push(merged);
  }
  for (const r of o.rows) {
    const k = o.rowKey(r);
    if (k === undefined) continue;
    if (!bi.has(k) && t.findKey(k) < 0) {
      rows.push(layout(o, r)); // we added it since the base
      oursWon = true;
    }
  }
  out.rows = rows;
  return { grid: out, oursWon };
}

function layoutFrom(
  t: Grid,
  r: StoredCell[],
  headers: string[],
  get: (g: Grid | undefined, r: StoredCell[] | undefined, h: string) => StoredCell,
): StoredCell[] {
  // Same layout as theirs for their own columns (headers start with t.headers), then our additions.
  if (headers.length === t.headers.length && r.length <= headers.length) return r;
  const out = r.slice(0, t.headers.length);
  while (out.length < t.headers.length) out.push(null);
  for (let i = t.headers.length; i < headers.length; i++) out.push(get(t, r, headers[i]));
  return out;
}
