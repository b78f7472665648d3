// Finalizers, only for cleanup outside Kubernetes (owned children go by ownerReferences and GC).
// Added and removed by server-side apply under a manager of their own: the finalizer list is a
// set, so our entry merges with other controllers' entries and removing ours leaves theirs.
import type { KubeClient, KubeObject, ResourceType } from './client.ts';
import { FIELD_MANAGER } from './objects.ts';

const FINALIZER_MANAGER = `${FIELD_MANAGER}-finalizer`;

export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata.finalizers?.includes(finalizer) ?? false;
}

export function isDeleting(obj: KubeObject): boolean {
  return !!obj.metadata.deletionTimestamp;
}

/** Ensures `finalizer` is on `obj`; no write when it already is. Returns whether it wrote. */
export async function addFinalizer(
  client: KubeClient,
  t: ResourceType,
  obj: KubeObject,
  finalizer: string,
): Promise<boolean> {
  if (hasFinalizer(obj, finalizer)) return false;
  await client.apply(
    t,
    { metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace, finalizers: [finalizer] } },
    FINALIZER_MANAGER,
  );
  return true;
}

/** Removes `finalizer` (after cleanup succeeded); no write when it is absent. */
export async function removeFinalizer(
  client: KubeClient,
  t: ResourceType,
  obj: KubeObject,
  finalizer: string,
): Promise<boolean> {
  if (!hasFinalizer(obj, finalizer)) return false;
  // Applying an empty list under our manager releases our entry; entries of others stay.
  await client.apply(
    t,
    { metadata: { name: obj.metadata.name, namespace: obj.metadata.namespace, finalizers: [] } },
    FINALIZER_MANAGER,
  );
  return true;
}
