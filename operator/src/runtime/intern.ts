// One copy of each repeated value in the informer caches. JSON.parse makes a fresh string for
// every value, so 4,000 cached StatefulSets hold 4,000 copies of the same image, command lines,
// label keys and values, owner apiVersions. Measured on the objects of 1,000 OberonKubes
// (13,000 children), interning strings takes the caches from 42 to 30 MiB of heap.
// The objects repeat too: a plane's StatefulSet is ~350 objects (containers, probes, mounts,
// ports), nearly all alike from one cluster to the next, and StatefulSets were 13 of those 30 MiB.
// So below `metadata` every object and array is shared as well (hash-consing: children first,
// then one canonical copy per distinct node, found by a hash and checked by a shallow compare),
// and frozen: a cached spec is read, never written, and a write to one would now throw.
// Strings that never repeat (resourceVersion, uid, timestamps) are left alone so the pool holds
// only what is shared; the pools are bounded, and start over when full (a value then simply gets
// a new canonical copy: correctness never depends on them).

export const INTERN_LIMITS = {
  maxStrings: 100_000, // ~ a few MiB of pool at most; 1,000 OberonKubes need ~20,000 distinct strings
  maxLength: 4_096, // longer strings (boot texts, scripts) are rarer and costlier to hash
  // One entry (a small-integer key and a reference, ~30 bytes) per distinct cached node, most of
  // them the few unique nodes of each object: the 15,000 children the operator renders for 1,000
  // OberonKubes make 59,039 (counted over their renders; the caches hold a few more kinds).
  maxNodes: 400_000,
} as const;

/** metadata fields whose values are unique per object or per version: interning them only fills the pool. */
const UNIQUE_KEYS = new Set(['resourceVersion', 'uid', 'creationTimestamp', 'deletionTimestamp', 'time']);

export class StringPool {
  private readonly pool = new Map<string, string>();
  private readonly max: number;

  constructor(max: number = INTERN_LIMITS.maxStrings) {
    this.max = max;
  }

  get size(): number {
    return this.pool.size;
  }

  string(v: string): string {
    if (v.length > INTERN_LIMITS.maxLength) return v;
    const had = this.pool.get(v);
    if (had !== undefined) return had;
    if (this.pool.size >= this.max) this.pool.clear();
    this.pool.set(v, v);
    return v;
  }

  /** Replaces, in place, every string in `value` (objects and arrays, recursively) by its pooled copy. */
  intern<T>(value: T): T {
    if (typeof value === 'string') return this.string(value) as T;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = this.intern(value[i]);
    } else if (value && typeof value === 'object') {
      const o = value as Record<string, unknown>;
      for (const k of Object.keys(o)) if (!UNIQUE_KEYS.has(k)) o[k] = this.intern(o[k]);
    }
    return value;
  }
}

/** FNV-1a over a string's UTF-16 units, as a signed 32-bit integer (a V8 small integer: no allocation). */
function hashString(s: string, h = 0x811c9dc5): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h | 0;
}

const mix = (h: number, v: number): number => Math.imul(h ^ v, 0x01000193) | 0;

/** Same keys in the same order, or same length, with identical (===) values: children are canonical. */
function shallowEqual(a: object, b: object): boolean {
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (let i = 0; i < ka.length; i++)
    if (ka[i] !== kb[i] || ra[ka[i] as string] !== rb[ka[i] as string]) return false;
  return true;
}

/** One frozen copy of each distinct JSON subtree (strings through a StringPool). */
export class SubtreePool {
  private readonly nodes = new Map<number, object>();
  /** The hash of the value `walk` returned last (a second return value, without a tuple per node). */
  private hash = 0;

  private readonly strings: StringPool;
  private readonly max: number;

  constructor(strings: StringPool, max: number = INTERN_LIMITS.maxNodes) {
    this.strings = strings;
    this.max = max;
  }

  get size(): number {
    return this.nodes.size;
  }

  /** The canonical, frozen copy of `value` (a JSON value); `value`'s own nodes may be rewired to shared children. */
  share<T>(value: T): T {
    return this.walk(value) as T;
  }

  private walk(v: unknown): unknown {
    if (typeof v === 'string') {
      const s = this.strings.string(v);
      this.hash = hashString(s, 0x2f);
      return s;
    }
    if (v === null || typeof v !== 'object') {
      this.hash = hashString(String(v), 0x3b);
      return v;
    }
    let h: number;
    if (Array.isArray(v)) {
      h = 0x5b;
      for (let i = 0; i < v.length; i++) {
        v[i] = this.walk(v[i]);
        h = mix(h, this.hash);
      }
    } else {
      h = 0x7b;
      const o = v as Record<string, unknown>;
      for (const k of Object.keys(o)) {
        o[k] = this.walk(o[k]);
        h = mix(mix(h, hashString(k)), this.hash);
      }
    }
    this.hash = h;
    const had = this.nodes.get(h);
    if (had !== undefined) return shallowEqual(had, v) ? had : Object.freeze(v); // a collision: not shared
    if (this.nodes.size >= this.max) this.nodes.clear();
    this.nodes.set(h, Object.freeze(v));
    return v;
  }
}

/** The process's pools, shared by every informer: the same values recur across kinds. */
export const cacheStrings = new StringPool();
export const cacheSubtrees = new SubtreePool(cacheStrings);

/** Top-level fields that are the object's own (metadata: names, versions, owners) or its type. */
const NOT_SHARED = new Set(['metadata', 'apiVersion', 'kind']);

/**
 * Readies a parsed object for an informer cache, in place: one copy of each repeated string in it,
 * and every field beside `metadata` (spec, status, data...) shared with equal ones and frozen.
 */
export function internForCache<T extends object>(obj: T): T {
  const o = obj as Record<string, unknown>;
  for (const k of Object.keys(o))
    o[k] = NOT_SHARED.has(k) ? cacheStrings.intern(o[k]) : cacheSubtrees.share(o[k]);
  return obj;
}
