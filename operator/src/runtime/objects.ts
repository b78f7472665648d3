// Helpers for the objects a controller owns: owner references, the labels that select them, and
// the comparison that lets a controller skip an apply when nothing it manages differs.
import { createHash } from 'node:crypto';
import type { KubeObject, OwnerReference } from './client.ts';

export const FIELD_MANAGER = 'retrokube';
export const MANAGED_BY = 'retrokube';
/** Label selector of every object retrokube creates; owned-object informers watch only these. */
export const MANAGED_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
/** Hash of the applied intent: a field dropped from the desired object changes it, forcing an apply. */
export const APPLIED_HASH = 'retrokube.io/applied-hash';

/** The controller owner reference of a child: GC deletes it with its owner; one controller only. */
export function controllerRef(owner: KubeObject): OwnerReference {
  const m = owner.metadata;
  if (!owner.apiVersion || !owner.kind || !m.name || !m.uid) {
    throw new Error('an owner needs apiVersion, kind, metadata.name and metadata.uid');
  }
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: m.name,
    uid: m.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller);
}

/** True when `obj` is controlled by the object with `uid`. */
export function isControlledBy(obj: KubeObject, uid: string | undefined): boolean {
  return !!uid && controllerOf(obj)?.uid === uid;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

export function hashOf(v: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(canonical(v)))
    .digest('hex')
    .slice(0, 16);
}

/** Stamps the hash of `desired` (without the stamp) into its annotations; returns a copy. */
export function withAppliedHash<T extends KubeObject>(desired: T): T {
  const copy = structuredClone(desired);
  const ann = { ...(copy.metadata.annotations ?? {}) };
  delete ann[APPLIED_HASH];
  copy.metadata.annotations = ann;
  const h = hashOf(copy);
  copy.metadata.annotations = { ...ann, [APPLIED_HASH]: h };
  return copy;
}

const QUANTITY = /^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$/;
const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a resource quantity ('100m', '1Gi', '0.5'), or undefined if it is not one. */
export function quantityValue(q: unknown): number | undefined {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return undefined;
  const m = QUANTITY.exec(q);
  if (!m) return undefined;
  const n = Number(m[1]);
  if (Number.isNaN(n)) return undefined;
  const s = m[2] ?? '';
  if (s.startsWith('e') || s.startsWith('E')) return n * 10 ** Number(s.slice(1));
  return n * (SUFFIX[s] ?? Number.NaN);
}

/**
 * True when every field of `desired` is present and equal in `observed` (fields the API server
 * or others add are ignored). Arrays must have the same length and match element by element.
 * Quantities compare by value under `resources` ('1024Mi' equals the server's '1Gi').
 */
export function isSubset(desired: unknown, observed: unknown, path: string[] = []): boolean {
  if (desired === observed) return true;
  if (Array.isArray(desired)) {
    return (
      Array.isArray(observed) &&
      desired.length === observed.length &&
      desired.every((d, i) => isSubset(d, observed[i], [...path, String(i)]))
    );
  }
  if (desired && typeof desired === 'object') {
    if (!observed || typeof observed !== 'object' || Array.isArray(observed)) return false;
    const o = observed as Record<string, unknown>;
    return Object.entries(desired as Record<string, unknown>).every(
      ([k, v]) => v === undefined || isSubset(v, o[k], [...path, k]),
    );
  }
  if (path.includes('resources')) {
    const a = quantityValue(desired);
    const b = quantityValue(observed);
    if (a !== undefined && b !== undefined) return Math.abs(a - b) <= Math.abs(a) * 1e-12;
  }
  return false;
}
