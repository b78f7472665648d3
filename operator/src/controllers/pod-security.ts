// The hardening every pod the operator renders gets, in one place so no renderer drifts from it:
// non-root with fixed ids, the runtime's seccomp profile, no privilege escalation, no capabilities.

/** Pod-level: run as these ids (never root), with the container runtime's default seccomp profile. */
export function restrictedPodSecurity(ids: {
  user: number;
  group: number;
  fsGroup?: number;
}): Record<string, unknown> {
  return {
    runAsNonRoot: true,
    runAsUser: ids.user,
    runAsGroup: ids.group,
    ...(ids.fsGroup !== undefined ? { fsGroup: ids.fsGroup } : {}),
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** Container-level: no escalation, no capabilities; a read-only root where it writes only to volumes. */
export function restrictedContainerSecurity(o: { readOnlyRoot: boolean }): Record<string, unknown> {
  return {
    allowPrivilegeEscalation: false,
    ...(o.readOnlyRoot ? { readOnlyRootFilesystem: true } : {}),
    capabilities: { drop: ['ALL'] },
  };
}
