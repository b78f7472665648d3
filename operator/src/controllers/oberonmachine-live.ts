// The live channel's access: a plane pod that follows its deployments ConfigMap through the API
// (machine/live-configmap.ts) runs as its own ServiceAccount, bound to a Role that may get, list
// and watch that one ConfigMap by name — nothing else in the namespace, no Secret, no write. All
// three belong to the machine and go with it through the garbage collector. Pure.
import type { KubeObject } from '../runtime/client.ts';
import { controllerRef, MANAGED_BY } from '../runtime/objects.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { liveReaderName, type MachineSettings, selectorLabels } from './oberonmachine-render.ts';

/** What the machine's Role grants: read and watch its live ConfigMap, by name. */
export function liveReaderRules(configMap: string): PolicyRule[] {
  return [
    {
      apiGroups: [''],
      resources: ['configmaps'],
      resourceNames: [configMap],
      verbs: ['get', 'list', 'watch'],
    },
  ];
}

export const RBAC_TYPES = {
  serviceAccount: {
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
  },
  role: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'roles',
    kind: 'Role',
    namespaced: true,
  },
  roleBinding: {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    kind: 'RoleBinding',
    namespaced: true,
  },
} as const;

/** The operator creates these (and may, holding the same read on ConfigMaps, grant it). */
export const LIVE_ACCESS_RBAC: PolicyRule[] = [
  { apiGroups: [''], resources: ['serviceaccounts'], verbs: ['get', 'create', 'patch', 'update'] },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['get', 'create', 'patch', 'update'],
  },
];

export function renderLiveAccess(
  owner: KubeObject,
  s: MachineSettings,
): { serviceAccount: KubeObject; role: KubeObject; roleBinding: KubeObject } | undefined {
  if (!s.liveCommandsConfigMap || s.runtime !== 'pod') return undefined;
  const name = liveReaderName(s.name);
  const metadata = {
    name,
    namespace: s.namespace,
    labels: {
      ...selectorLabels(s),
      'app.kubernetes.io/component': 'live',
      'app.kubernetes.io/managed-by': MANAGED_BY,
    },
    ownerReferences: [controllerRef(owner)],
  };
  return {
    serviceAccount: {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata,
      automountServiceAccountToken: false,
    } as KubeObject,
    role: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata,
      rules: liveReaderRules(s.liveCommandsConfigMap),
    } as KubeObject,
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: s.namespace }],
    } as KubeObject,
  };
}
