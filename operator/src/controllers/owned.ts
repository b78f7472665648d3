// What every retrokube controller declares and does the same way: its kind in our API group, the
// RBAC rules for its own kind, and applying a child it owns without ever taking over someone
// else's object of the same name.
import { GROUP, VERSION } from '../api/group.ts';
import type { KubeObject, ResourceType } from '../runtime/client.ts';
import type { ReconcileContext } from '../runtime/controller.ts';
import { isControlledBy } from '../runtime/objects.ts';
import type { PolicyRule } from '../runtime/rbac.ts';

/** One of our namespaced kinds (retrokube.io/v1alpha1). */
export function ourKind(plural: string, kind: string): ResourceType {
  return { group: GROUP, version: VERSION, plural, kind, namespaced: true };
}

/** A controller's rules for its primary kind: read and watch it, write its status and finalizers. */
export function primaryRules(plural: string): PolicyRule[] {
  return [
    { apiGroups: [GROUP], resources: [plural], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [GROUP], resources: [`${plural}/status`], verbs: ['get', 'patch', 'update'] },
    { apiGroups: [GROUP], resources: [`${plural}/finalizers`], verbs: ['update'] },
  ];
}

export type OwnedApply =
  | { conflict: string } // "<Kind> <name>": the name is someone else's; nothing was written
  | { object: KubeObject; created: boolean };

/**
 * Server-side applies `desired` (a child of `owner`) unless it is already as desired. Owned caches
 * hold only our labelled objects, so on a miss the API server is asked whether someone else's
 * object holds the name: then it is left alone and reported as a conflict.
 */
export async function applyOwned(
  ctx: ReconcileContext,
  owner: KubeObject,
  type: ResourceType,
  desired: KubeObject,
  /** A kind the controller does not watch (no cache): read from the API server. */
  opts: { uncached?: boolean } = {},
): Promise<OwnedApply> {
  const ns = desired.metadata.namespace as string;
  const name = desired.metadata.name as string;
  const current =
    (opts.uncached ? undefined : ctx.cached(type, ns, name)) ??
    (await ctx.client.getOrUndefined(type, ns, name));
  if (current && !isControlledBy(current, owner.metadata.uid)) return { conflict: `${type.kind} ${name}` };
  const { object, wrote } = await ctx.applyIfChanged(type, desired, current);
  return { object, created: wrote && !current };
}
