// What an owned child keeps in the informer caches: the operator reads a cached child to decide
// whether to write it (isSubset of what it would apply: every field it renders must stay, so a
// hand edit is still seen and reverted) and a few status fields; the rest is what the API server
// defaults or reports and nobody reads. With 1,000 OberonKubes the caches hold ~5,000
// StatefulSets, Services and PVCs; their defaulted fields and unread status are dropped on arrival.
// A field listed here must never be one a render sets (cache-trim.test.ts checks every render):
// dropping it would make the cached child differ from the desired one forever, a write per reconcile.
import type { KubeObject } from './client.ts';

/** A path into an object; '*' is every element of an array. */
type Path = readonly string[];

interface KindTrim {
  /** Defaulted by the API server, never rendered, never read. */
  drop: readonly Path[];
  /** The status fields a controller reads (the rest of status is dropped). */
  statusKeep: readonly string[];
}

/** The container fields the API server defaults (imagePullPolicy from the tag; none is rendered). */
const CONTAINER_DEFAULTS: readonly Path[] = [
  ['terminationMessagePath'],
  ['terminationMessagePolicy'],
  ['imagePullPolicy'],
  ['readinessProbe', 'timeoutSeconds'],
  ['readinessProbe', 'successThreshold'],
  ['readinessProbe', 'failureThreshold'],
];

const POD_TEMPLATE_DEFAULTS: readonly Path[] = [
  ['template', 'metadata', 'creationTimestamp'],
  ['template', 'spec', 'restartPolicy'],
  ['template', 'spec', 'dnsPolicy'],
  ['template', 'spec', 'schedulerName'],
  ...['containers', 'initContainers'].flatMap((list) =>
    CONTAINER_DEFAULTS.map((p) => ['template', 'spec', list, '*', ...p]),
  ),
];

/** Keyed by `apiVersion/kind`. Kinds not listed are cached as they arrive. */
export const CACHE_TRIMS: Readonly<Record<string, KindTrim>> = {
  'apps/v1/StatefulSet': {
    drop: [
      ...POD_TEMPLATE_DEFAULTS,
      ['revisionHistoryLimit'],
      ['updateStrategy'],
      ['volumeClaimTemplates', '*', 'metadata', 'creationTimestamp'],
      ['volumeClaimTemplates', '*', 'spec', 'volumeMode'],
      ['volumeClaimTemplates', '*', 'status'],
    ].map((p) => ['spec', ...p]),
    statusKeep: ['readyReplicas'], // oberonmachine-status.ts: a pod machine is ready
  },
  'v1/Service': {
    drop: [
      ['clusterIP'],
      ['clusterIPs'],
      ['ipFamilies'],
      ['ipFamilyPolicy'],
      ['sessionAffinity'],
      ['internalTrafficPolicy'],
    ].map((p) => ['spec', ...p]),
    statusKeep: [],
  },
  'v1/PersistentVolumeClaim': {
    drop: [['spec', 'volumeMode']],
    statusKeep: ['phase'], // sheetcluster.ts: a workbook claim that does not bind
  },
};

/** `v` without the field at `path`; objects along the path are rebuilt, never `delete`d (see informer.ts). */
export function without(v: unknown, path: Path): unknown {
  if (!path.length || v === null || typeof v !== 'object') return v;
  const [head, ...rest] = path as [string, ...string[]];
  if (Array.isArray(v)) {
    if (head !== '*') return v;
    let changed = false;
    const out = v.map((e) => {
      const t = without(e, rest);
      if (t !== e) changed = true;
      return t;
    });
    return changed ? out : v;
  }
  const o = v as Record<string, unknown>;
  if (!(head in o)) return v;
  if (!rest.length) {
    const { [head]: _dropped, ...others } = o;
    return others;
  }
  const inner = without(o[head], rest);
  return inner === o[head] ? v : { ...o, [head]: inner };
}

/** Trims `obj` for the cache, in place (its top-level fields are replaced by trimmed copies). */
export function trimForCache(obj: KubeObject): void {
  const trim = CACHE_TRIMS[`${obj.apiVersion}/${obj.kind}`];
  if (!trim) return;
  let rest: unknown = { spec: obj.spec };
  for (const p of trim.drop) rest = without(rest, p);
  const spec = (rest as { spec?: unknown }).spec;
  if (spec !== undefined) obj.spec = spec as KubeObject['spec'];
  if (obj.status && typeof obj.status === 'object') {
    const st = obj.status as Record<string, unknown>;
    const kept: Record<string, unknown> = {};
    for (const k of trim.statusKeep) if (k in st) kept[k] = st[k];
    obj.status = kept;
  }
}
