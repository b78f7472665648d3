// Why the operator could not read a key Secret named by keySecretRef, said so that a person can fix
// it. The operator holds no Secret read of its own (its ClusterRole may only create Secrets); a
// user who names a Secret grants `get` on that one Secret with a Role in its namespace. On a 403
// the API server names the operator's user, so the message can give the exact commands.
import { ApiError, CORE, type KubeClient, type KubeObject } from '../runtime/client.ts';

export const KEY_ACCESS_LIMITS = {
  roleNameChars: 63, // RBAC object names are DNS subdomains; keep them short and readable
} as const;

/**
 * The text of one entry of a Secret a spec names, trimmed ('' when the entry is missing). Throws
 * the API error (a 403 or 404 is for secretReadProblem to explain).
 */
export async function secretText(
  client: KubeClient,
  namespace: string,
  ref: { name: string; key: string },
): Promise<string> {
  const s = await client.get<KubeObject & { data?: Record<string, string> }>(
    CORE.secret,
    namespace,
    ref.name,
  );
  return Buffer.from(s.data?.[ref.key] ?? '', 'base64')
    .toString('utf8')
    .trim();
}

/** The Role (and RoleBinding) name the fix suggests for Secret `secret`. */
export function keyRoleName(secret: string): string {
  return `retrokube-read-${secret}`.slice(0, KEY_ACCESS_LIMITS.roleNameChars).replace(/[-.]+$/, '');
}

/** The user in an API server 403 message (`... is forbidden: User "x" cannot get ...`). */
export function forbiddenUser(message: string): string | undefined {
  return /User "([^"]+)" cannot/.exec(message)?.[1];
}

/** A one-paragraph problem statement for a failed read of the key Secret; never contains the key. */
export function keyReadProblem(err: unknown, namespace: string, ref: { name: string; key: string }): string {
  return secretReadProblem(err, namespace, ref, {
    field: 'keySecretRef',
    content: 'the KubeNet key (0–16 hex digits)',
    consequence:
      "so it cannot hear this cluster's air (machines still run: the kubelet reads the key for them)",
  });
}

/**
 * The same for any Secret a spec names (`field`): what it should hold (`content`), what the
 * operator cannot do without it (`consequence`), and on a 403 the Role/RoleBinding that fixes it.
 */
export function secretReadProblem(
  err: unknown,
  namespace: string,
  ref: { name: string; key: string },
  o: { field: string; content: string; consequence: string },
): string {
  const code = err instanceof ApiError ? err.status : 0;
  if (code === 404)
    return `Secret ${ref.name} (${o.field}) does not exist in namespace ${namespace}; create it with ${o.content} in entry "${ref.key}"`;
  if (code !== 403) return `cannot read Secret ${ref.name}: ${(err as Error).message}`;
  const user = forbiddenUser((err as Error).message);
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(user ?? '');
  const subject = sa
    ? `--serviceaccount=${sa[1]}:${sa[2]}`
    : user
      ? `--user=${user}`
      : '--serviceaccount=<operator namespace>:<operator service account>';
  const role = keyRoleName(ref.name);
  return (
    `the operator${user ? ` (${user})` : ''} may not read Secret ${ref.name} named by ${o.field}, ${o.consequence}. Grant "get" on that one Secret: ` +
    `kubectl -n ${namespace} create role ${role} --verb=get --resource=secrets --resource-name=${ref.name} && ` +
    `kubectl -n ${namespace} create rolebinding ${role} --role=${role} ${subject}`
  );
}
