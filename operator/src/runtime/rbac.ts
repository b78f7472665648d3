// RBAC PolicyRules, declared in code next to what needs them; the generator merges them into the
// chart's ClusterRole rules (charts/retrokube/files/rbac-rules.yaml), one source of truth.

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  /** Only these objects (a Role the operator renders; the operator's own rules never narrow by name). */
  resourceNames?: string[];
  verbs: string[];
}

/** What the runtime itself needs: Events for transitions, a Lease for leader election. */
export const RUNTIME_RBAC: PolicyRule[] = [
  { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
];

/** Verbs for a child kind the operator creates by server-side apply and watches by label. */
export const CHILD_VERBS = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'];

/** Merges rules: one rule per (apiGroup, resource) with the union of verbs, in a stable order. */
export function mergeRules(rules: readonly PolicyRule[]): PolicyRule[] {
  const byKey = new Map<string, { group: string; resource: string; verbs: Set<string> }>();
  for (const r of rules) {
    for (const group of r.apiGroups) {
      for (const resource of r.resources) {
        const k = `${group}\u0000${resource}`;
        const e = byKey.get(k) ?? { group, resource, verbs: new Set<string>() };
        for (const v of r.verbs) e.verbs.add(v);
        byKey.set(k, e);
      }
    }
  }
  const order = ['get', 'list', 'watch', 'create', 'patch', 'update', 'delete'];
  const sortVerbs = (v: Set<string>) =>
    [...v].sort(
      (a, b) =>
        order.indexOf(a) +
          100 * +(order.indexOf(a) < 0) -
          (order.indexOf(b) + 100 * +(order.indexOf(b) < 0)) || a.localeCompare(b),
    );
  return [...byKey.values()]
    .sort((a, b) => a.group.localeCompare(b.group) || a.resource.localeCompare(b.resource))
    .map((e) => ({ apiGroups: [e.group], resources: [e.resource], verbs: sortVerbs(e.verbs) }));
}
