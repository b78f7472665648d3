// Turns a federation member of a spec (URL + Secret references) into a bridge Member. Token and key
// are read from Secrets at each reconcile and never written anywhere else. The operator holds no
// Secret read of its own (its ClusterRole may only create Secrets): whoever names a Secret here
// grants `get` on that one Secret with a Role, and a refusal says exactly how (key-access.ts). A
// member SheetCluster's generated token and key are derived from the operator's seed, as the
// SheetCluster controller does: never read.
import type { SheetMemberT } from '../api/sheetmember.ts';
import { ApiError, CORE, type KubeObject } from '../runtime/client.ts';
import type { ReconcileContext } from '../runtime/controller.ts';
import type { PolicyRule } from '../runtime/rbac.ts';
import { Member } from '../sheets/bridge/client.ts';
import { forbiddenUser, keyRoleName } from './key-access.ts';
import { SHEETCLUSTER } from './sheetcluster.ts';
import { derivedSecret, type SheetClusterObject, sheetSettings } from './sheetcluster-render.ts';

export const LIMITS = {
  memberTimeoutMs: 10_000, // one apiserver call; a reconcile must not hang on a dead member
} as const;

/** Nothing cluster-wide: each named Secret is granted by its owner (see the message below). */
export const SHEET_MEMBER_RBAC: PolicyRule[] = [];

export class MemberConfigError extends Error {
  override name = 'MemberConfigError';
}

async function secretValue(
  ctx: ReconcileContext,
  namespace: string,
  member: string,
  ref: { name: string; key: string },
  what: string,
): Promise<string> {
  let s: KubeObject & { data?: Record<string, string> };
  try {
    s = await ctx.client.get(CORE.secret, namespace, ref.name);
  } catch (e) {
    const code = e instanceof ApiError ? e.status : 0;
    if (code === 404)
      throw new MemberConfigError(`member ${member}: ${what} Secret ${namespace}/${ref.name} does not exist`);
    if (code !== 403)
      throw new MemberConfigError(
        `member ${member}: cannot read Secret ${ref.name}: ${(e as Error).message}`,
      );
    const user = forbiddenUser((e as Error).message);
    const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(user ?? '');
    const subject = sa
      ? `--serviceaccount=${sa[1]}:${sa[2]}`
      : user
        ? `--user=${user}`
        : '--serviceaccount=<ns>:<operator>';
    const role = keyRoleName(ref.name);
    throw new MemberConfigError(
      `member ${member}: the operator may not read Secret ${ref.name} (${what}). Grant "get" on that one Secret: ` +
        `kubectl -n ${namespace} create role ${role} --verb=get --resource=secrets --resource-name=${ref.name} && ` +
        `kubectl -n ${namespace} create rolebinding ${role} --role=${role} ${subject}`,
    );
  }
  const b64 = s.data?.[ref.key];
  if (b64 === undefined)
    throw new MemberConfigError(`member ${member}: Secret ${ref.name} has no key "${ref.key}" (${what})`);
  return Buffer.from(b64, 'base64').toString('utf8').trim();
}

/**
 * Why the operator will not call URL for a member of a resource in NAMESPACE, or undefined (#28.7).
 * A member's `url` is written by whoever may create a SheetFederation/SheetMigration; the operator
 * calls it from inside the cluster with its own network position. Allowed: a Service of the same
 * namespace (`http://NAME.NAMESPACE.svc[.cluster.local][:port]`), or a host the operator was started
 * with (`--member-hosts`, env RETROKUBE_MEMBER_HOSTS: exact host names or IP addresses).
 */
export function memberUrlProblem(
  url: string,
  namespace: string,
  allowedHosts: readonly string[],
): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `url ${JSON.stringify(url)} is not a URL`;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `url ${url}: only http:// and https://`;
  if (u.username || u.password) return `url ${url}: no user or password in the URL (use tokenSecretRef)`;
  const host = u.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const svc = new RegExp(
    `^[a-z0-9]([-a-z0-9]*[a-z0-9])?\\.${namespace.replace(/[.]/g, '\\.')}\\.svc(\\.cluster\\.local)?$`,
  );
  if (svc.test(host) || allowedHosts.map((h) => h.toLowerCase()).includes(host)) return undefined;
  return `url ${url}: the operator calls only Services of namespace ${namespace} (http://NAME.${namespace}.svc:PORT) or hosts it was started with (--member-hosts); use sheetCluster for a SheetCluster of this namespace`;
}

/** Where a member lives and which Secrets hold its token and key (pure). */
export interface MemberEndpoint {
  url: string;
  token: { name: string; key: string };
  signingKey?: { name: string; key: string };
  /** A SheetCluster's generated Secrets: derived from the operator's seed and its uid, never read. */
  derive?: { uid: string; token: boolean; signingKey: boolean };
}

/**
 * A member naming a SheetCluster: the cluster's status.url (its Service), and the Secrets the
 * SheetCluster itself uses (its own refs, or the ones it generated), unless the member overrides.
 */
export function sheetClusterEndpoint(
  m: SheetMemberT,
  sc: SheetClusterObject | undefined,
  address?: SheetsAddress,
): MemberEndpoint | { problem: string } {
  if (!sc)
    return { problem: `member ${m.name}: SheetCluster ${m.sheetCluster} does not exist in this namespace` };
  const url = address
    ? address(sc.metadata.namespace as string, sc.metadata.name as string)
    : (sc.status as { url?: string } | undefined)?.url;
  if (!url)
    return {
      problem: `member ${m.name}: SheetCluster ${m.sheetCluster} has no status.url yet (its apiserver is starting)`,
    };
  const s = sheetSettings(sc, '');
  return {
    url,
    token: m.tokenSecretRef ?? s.token,
    signingKey: m.signingKeySecretRef ?? s.signingKey,
    derive: {
      uid: sc.metadata.uid as string,
      token: !m.tokenSecretRef && s.tokenGenerated,
      signingKey: !m.signingKeySecretRef && s.signingKeyGenerated,
    },
  };
}

/** Where the operator reaches a SheetCluster's apiserver when not at its Service (tests, out-of-cluster runs). */
export type SheetsAddress = (namespace: string, cluster: string) => string;

export async function resolveMember(
  ctx: ReconcileContext,
  namespace: string,
  m: SheetMemberT,
  address?: SheetsAddress,
  /** The operator's key seed: a member SheetCluster's generated token and key are derived, not read. */
  seed?: string,
  /** Hosts a member `url` may name besides this namespace's Services (memberUrlProblem). */
  memberHosts: readonly string[] = [],
): Promise<Member> {
  let ep: MemberEndpoint;
  if (m.sheetCluster) {
    const sc = await ctx.client.getOrUndefined<SheetClusterObject>(SHEETCLUSTER, namespace, m.sheetCluster);
    const r = sheetClusterEndpoint(m, sc, address);
    if ('problem' in r) throw new MemberConfigError(r.problem);
    ep = r;
  } else {
    if (!m.url || !m.tokenSecretRef)
      throw new MemberConfigError(`member ${m.name}: give url and tokenSecretRef, or sheetCluster`);
    const problem = memberUrlProblem(m.url, namespace, memberHosts);
    if (problem) throw new MemberConfigError(`member ${m.name}: ${problem}`);
    ep = { url: m.url, token: m.tokenSecretRef, signingKey: m.signingKeySecretRef };
  }
  const derive = seed ? ep.derive : undefined;
  const token = derive?.token
    ? derivedSecret(seed as string, 'token', derive.uid)
    : await secretValue(ctx, namespace, m.name, ep.token, 'token');
  const key = derive?.signingKey
    ? derivedSecret(seed as string, 'signing', derive.uid)
    : ep.signingKey
      ? await secretValue(ctx, namespace, m.name, ep.signingKey, 'signing key')
      : undefined;
  return new Member({
    name: m.name,
    url: ep.url,
    token,
    key,
    timeoutMs: LIMITS.memberTimeoutMs,
    untrusted: true,
  });
}
