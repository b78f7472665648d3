// The directory B-tree, with the same insertion, split, deletion, balancing and merge rules as
// Oberon's FileDir, so a directory we change has exactly the shape Oberon would have given it.
import { copyEntry, type DirEntry, type DirPage, FORMAT } from './format.ts';

/** Page access the tree needs: read/write a page and allocate a new page sector near a hint. */
export interface PageStore {
  getPage(adr: number): DirPage;
  putPage(adr: number, page: DirPage): void;
  allocSector(hint: number): number;
}

export const LIMITS = {
  maxDepth: 8, // a B-tree of 65,536 sectors with >= 12 entries a page is at most 5 levels deep; more is a cycle
} as const;

/** Thrown when the directory's page pointers do not form a tree (a corrupt disk). */
export class DirectoryCycleError extends Error {
  override name = 'DirectoryCycleError';
}

function tooDeep(adr: number): never {
  throw new DirectoryCycleError(
    `corrupt directory: pages nest deeper than ${LIMITS.maxDepth} levels at sector ${adr / FORMAT.adrFactor} (a page points back into the tree)`,
  );
}

const N = FORMAT.dirHalf;
const PAGE = FORMAT.dirPageSize;

/** Index of the first entry of the page whose name is >= name (binary search, as FileDir). */
function locate(a: DirPage, name: string): number {
  let l = 0;
  let r = a.m;
  while (l < r) {
    const i = (l + r) >> 1;
    if (name <= a.e[i].name) r = i;
    else l = i + 1;
  }
  return r;
}

function childLeftOf(a: DirPage, r: number): number {
  return r === 0 ? a.p0 : a.e[r - 1].p;
}

export function search(store: PageStore, name: string): number {
  let adr: number = FORMAT.dirRootAdr;
  for (let depth = 0; ; depth++) {
    if (depth > LIMITS.maxDepth) tooDeep(adr);
    const a = store.getPage(adr);
    const r = locate(a, name);
    if (r < a.m && a.e[r].name === name) return a.e[r].adr;
    adr = childLeftOf(a, r);
    if (adr === 0) return 0;
  }
}

interface Rise {
  entry: DirEntry; // the entry that climbs to the parent after a split
}

function insertInto(
  store: PageStore,
  name: string,
  pageAdr: number,
  fad: number,
  depth = 0,
): Rise | undefined {
  if (depth > LIMITS.maxDepth) tooDeep(pageAdr);
  const a = store.getPage(pageAdr);
  let r = locate(a, name);
  if (r < a.m && a.e[r].name === name) {
    a.e[r].adr = fad; // the name exists: point it at the new header
    store.putPage(pageAdr, a);
    return undefined;
  }
  const child = childLeftOf(a, r);
  let u: DirEntry;
  if (child === 0) {
    u = { name, adr: fad, p: 0 };
  } else {
    const rise = insertInto(store, name, child, fad, depth + 1);
    if (!rise) return undefined;
    u = rise.entry;
  }
  // u goes to the left of e[r]
  if (a.m < PAGE) {
    for (let i = a.m; i > r; i--) a.e[i] = a.e[i - 1];
    a.e[r] = u;
    a.m++;
    store.putPage(pageAdr, a);
    return undefined;
  }
  // Full page: keep the lower half here, move the upper half to a new page, lift the middle entry.
  a.m = N;
  let v: DirEntry;
  let newAdr: number;
  if (r < N) {
    v = copyEntry(a.e[N - 1]);
    for (let i = N - 1; i > r; i--) a.e[i] = a.e[i - 1];
    a.e[r] = u;
    store.putPage(pageAdr, a);
    newAdr = store.allocSector(pageAdr);
    for (let i = 0; i < N; i++) a.e[i] = a.e[i + N];
  } else {
    store.putPage(pageAdr, a);
    newAdr = store.allocSector(pageAdr);
    r -= N;
    let i = 0;
    if (r === 0) {
      v = u;
    } else {
      v = copyEntry(a.e[N]);
      while (i < r - 1) {
        a.e[i] = a.e[N + 1 + i];
        i++;
      }
      a.e[i] = u;
      i++;
    }
    while (i < N) {
      a.e[i] = a.e[N + i];
      i++;
    }
  }
  a.p0 = v.p;
  v = copyEntry(v);
  v.p = newAdr;
  store.putPage(newAdr, a);
  return { entry: v };
}

/** Adds name → fad, or re-points an existing name (FileDir.Insert). */
export function insert(store: PageStore, name: string, fad: number): void {
  const rise = insertInto(store, name, FORMAT.dirRootAdr, fad);
  if (!rise) return;
  // The root split: its old contents move to a new page and the root gets one entry.
  const root = store.getPage(FORMAT.dirRootAdr);
  const oldRoot = store.allocSector(FORMAT.dirRootAdr);
  store.putPage(oldRoot, root);
  const fresh = store.getPage(FORMAT.dirRootAdr);
  fresh.m = 1;
  fresh.p0 = oldRoot;
  fresh.e[0] = rise.entry;
  store.putPage(FORMAT.dirRootAdr, fresh);
}

/**
 * Rebalances after page `dpg0` (child s-side of c) dropped below N entries: borrow from a
 * neighbour, or merge with it. Returns whether c itself is now too small.
 */
function underflow(store: PageStore, c: DirPage, dpg0: number, s: number): boolean {
  const a = store.getPage(dpg0);
  let h: boolean;
  if (s < c.m) {
    // b is the page to the right of a
    const dpg1 = c.e[s].p;
    const b = store.getPage(dpg1);
    const k = (b.m - N + 1) >> 1; // entries b can spare
    a.e[N - 1] = copyEntry(c.e[s]);
    a.e[N - 1].p = b.p0;
    if (k > 0) {
      let i = 0;
      while (i < k - 1) {
        a.e[i + N] = b.e[i];
        i++;
      }
      c.e[s] = copyEntry(b.e[i]);
      b.p0 = c.e[s].p;
      c.e[s].p = dpg1;
      b.m -= k;
      for (i = 0; i < b.m; i++) b.e[i] = b.e[i + k];
      store.putPage(dpg1, b);
      a.m = N - 1 + k;
      h = false;
    } else {
      for (let i = 0; i < N; i++) a.e[i + N] = b.e[i];
      c.m--;
      for (let i = s; i < c.m; i++) c.e[i] = c.e[i + 1];
      a.m = 2 * N;
      h = c.m < N;
    }
    store.putPage(dpg0, a);
  } else {
    // b is the page to the left of a
    s--;
    const dpg1 = s === 0 ? c.p0 : c.e[s - 1].p;
    const b = store.getPage(dpg1);
    const k = (b.m - N + 1) >> 1;
    if (k > 0) {
      for (let i = N - 1; i > 0; i--) a.e[i - 1 + k] = a.e[i - 1];
      let i = k - 1;
      a.e[i] = copyEntry(c.e[s]);
      a.e[i].p = a.p0;
      b.m -= k;
      while (i > 0) {
        i--;
        a.e[i] = b.e[i + b.m + 1];
      }
      c.e[s] = copyEntry(b.e[b.m]);
      a.p0 = c.e[s].p;
      c.e[s].p = dpg0;
      a.m = N - 1 + k;
      h = false;
      store.putPage(dpg0, a);
    } else {
      c.e[s].p = a.p0;
      b.e[N] = copyEntry(c.e[s]);
      for (let i = 0; i < N - 1; i++) b.e[i + N + 1] = a.e[i];
      b.m = 2 * N;
      c.m--;
      h = c.m < N;
    }
    store.putPage(dpg1, b);
  }
  return h;
}

interface Removal {
  fad: number;
  under: boolean; // the page is now below N entries
}

function deleteFrom(store: PageStore, name: string, dpg0: number, depth = 0): Removal {
  if (depth > LIMITS.maxDepth) tooDeep(dpg0);
  const a = store.getPage(dpg0);
  const r = locate(a, name);
  const dpg1 = childLeftOf(a, r);
  if (r < a.m && a.e[r].name === name) {
    const fad = a.e[r].adr;
    let h: boolean;
    if (dpg1 === 0) {
      a.m--;
      h = a.m < N;
      for (let i = r; i < a.m; i++) a.e[i] = a.e[i + 1];
    } else {
      // replace the entry by its in-order predecessor (the rightmost entry of the left subtree)
      h = takeRightmost(store, a, r, dpg1, depth + 1);
      if (h) h = underflow(store, a, dpg1, r);
    }
    store.putPage(dpg0, a);
    return { fad, under: h };
  }
  if (dpg1 === 0) return { fad: 0, under: false };
  const sub = deleteFrom(store, name, dpg1, depth + 1);
  if (sub.under) {
    const h = underflow(store, a, dpg1, r);
    store.putPage(dpg0, a);
    return { fad: sub.fad, under: h };
  }
  return sub;
}

function takeRightmost(store: PageStore, a: DirPage, r: number, dpg1: number, depth: number): boolean {
  if (depth > LIMITS.maxDepth) tooDeep(dpg1);
  const b = store.getPage(dpg1);
  const dpg2 = b.e[b.m - 1].p;
  if (dpg2 !== 0) {
    let h = takeRightmost(store, a, r, dpg2, depth + 1);
    if (h) {
      h = underflow(store, b, dpg2, b.m);
      store.putPage(dpg1, b);
    }
    return h;
  }
  b.e[b.m - 1].p = a.e[r].p;
  a.e[r] = copyEntry(b.e[b.m - 1]);
  b.m--;
  store.putPage(dpg1, b);
  return b.m < N;
}

/** Removes name; returns the DiskAdr of its header, or 0 when absent (FileDir.Delete). */
export function remove(store: PageStore, name: string): number {
  const res = deleteFrom(store, name, FORMAT.dirRootAdr);
  if (res.under) {
    const root = store.getPage(FORMAT.dirRootAdr);
    if (root.m === 0 && root.p0 !== 0) {
      // the tree shrinks: the only child becomes the root
      store.putPage(FORMAT.dirRootAdr, store.getPage(root.p0));
    }
  }
  return res.fad;
}

export interface ListedEntry {
  name: string;
  adr: number;
}

/** All entries in name order. */
export function enumerate(store: PageStore): ListedEntry[] {
  const out: ListedEntry[] = [];
  const walk = (adr: number, depth: number): void => {
    if (depth > LIMITS.maxDepth) tooDeep(adr);
    const a = store.getPage(adr);
    if (a.p0 !== 0) walk(a.p0, depth + 1);
    for (let i = 0; i < a.m; i++) {
      out.push({ name: a.e[i].name, adr: a.e[i].adr });
      if (a.e[i].p !== 0) walk(a.e[i].p, depth + 1);
    }
  };
  walk(FORMAT.dirRootAdr, 0);
  return out;
}
