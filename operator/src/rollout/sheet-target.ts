// A Sheeternetes cluster as a rollout target, the pure half: what its sheet says about one
// deployment (rows → the planner's Observation), what to POST to change it (a version → an `apply`
// body of the apiserver's contract), where its HTTP check goes, and which federation member serves
// a federated service after a blue/green switch. The Rollout controller and `retrokube rollout`
// for local clusters do the reads and writes; everything they decide with is here.
//
// "Runs the new version", read from the sheet: the Deployments row has the version, exactly
// `replicas` pods of the deployment are in the Pods tab, every one is Running, and every one reports
// (in the Pods tab's trailing spec_hash column, which our node agent fills) the spec_hash the
// apiserver orders for the row as it is now — so a pod still running the old image, or one whose
// new copy has not started yet, keeps the target unconverged.

import { deploymentFromRow, type Row, text } from '../sheets/scheduler/model.ts';
import { specHashOfText } from '../sheets/scheduler/orders.ts';
import type { Observation, Version } from './plan.ts';

export const SHEET_TARGET_LIMITS = {
  httpChecks: 8, // pods probed per check (all of them up to this; a wide deployment is sampled in pod order)
  httpTimeoutMs: 3_000, // one probe; a slower answer fails the check for this look
} as const;

/** The tabs a rollout reads from a target's sheet (GET kind=deployments and kind=pods). */
export interface SheetTargetRows {
  deployments: readonly Row[];
  pods: readonly Row[];
}

/** The optional HTTP check of a Sheeternetes target (spec.check.httpGet). */
export interface HttpGetCheck {
  path: string;
  /** The container port to probe (the pod's endpoint for it); default its first TCP endpoint. */
  port?: number;
}

const byName = (rows: readonly Row[], name: string): Row | undefined =>
  rows.find((r) => text(r.name).trim() === name);

/** A pod counts as running once its agent started it (phase Running): the check's meaning. */
const running = (p: Row): boolean => text(p.phase) === 'Running';

/** The deployment's version as its Deployments row declares it; undefined when there is no such row. */
export function sheetVersion(rows: SheetTargetRows, deployment: string): Version | undefined {
  const row = byName(rows.deployments, deployment);
  if (!row) return undefined;
  const d = deploymentFromRow(row);
  if (!d) return undefined;
  return { image: d.image, replicas: d.replicas };
}

/**
 * What the sheet says about `deployment` now. `ownedBySpec` is the problem the SheetCluster's own
 * spec.deployments would make (see specOwnership): such a target cannot be judged, so nothing starts.
 */
export function observeSheet(
  rows: SheetTargetRows,
  deployment: string,
  minRunning: number,
  ownedBySpec?: string,
): Observation {
  const row = byName(rows.deployments, deployment);
  const d = row ? deploymentFromRow(row) : null;
  const runningPods = rows.pods.filter(running).length;
  const healthy = runningPods >= minRunning;
  if (!row || !d) return { converged: false, healthy };
  const current: Version = { image: d.image, replicas: d.replicas };
  if (ownedBySpec) return { current, converged: false, healthy, problem: ownedBySpec };
  const pods = rows.pods.filter((p) => text(p.deployment) === deployment);
  if (pods.length > 0 && pods.every((p) => !('spec_hash' in p)))
    return {
      current,
      converged: false,
      healthy,
      problem:
        "the sheet's Pods tab has no spec_hash column (a reference kubelet or apiserver): which spec a pod runs cannot be read",
    };
  const converged =
    pods.length === d.replicas &&
    pods.every((p) => running(p) && text(p.spec_hash) === specHashOfText(d, text(p.ports)));
  return { current, converged, healthy };
}

/**
 * The signed POST body that makes the deployment run `version` (the token is added by the client).
 * `apply` overwrites only the keys it is sent, so every other cell of the row stays as it was, and
 * sending the same body twice changes nothing: a rollback is this with the previous version.
 */
export function applyRequest(
  deployment: string,
  version: Version,
): { action: 'apply'; deployments: [{ name: string; image?: string; replicas?: number }] } {
  return {
    action: 'apply',
    deployments: [
      {
        name: deployment,
        ...(version.image !== undefined ? { image: version.image } : {}),
        ...(version.replicas !== undefined ? { replicas: version.replicas } : {}),
      },
    ],
  };
}

/** The apiserver's answer to applyRequest: undefined when it took the row, else why not. */
export function applyRefusal(reply: unknown): string | undefined {
  const r = (reply as { applied?: unknown[] } | undefined)?.applied?.[0];
  if (r === 'created' || r === 'updated') return undefined;
  return `the apiserver did not apply the deployment: ${JSON.stringify(reply).slice(0, 300)}`;
}

/**
 * A SheetCluster's spec.deployments owns the fields it sets (the SheetCluster controller puts them
 * back in the sheet): a rollout changing such a field would be undone within seconds. Returns why
 * the target cannot be rolled, and how to fix it; undefined when the change is the sheet's to make.
 */
export function specOwnership(
  cluster: string,
  specDeployments: readonly { name: string; image?: string; replicas?: number }[] | undefined,
  change: { deployment: string; image?: string; replicas?: number },
): string | undefined {
  const d = specDeployments?.find((x) => x.name === change.deployment);
  if (!d) return undefined;
  const owned = (['image', 'replicas'] as const).filter((f) => change[f] !== undefined && d[f] !== undefined);
  if (owned.length === 0) return undefined;
  return `SheetCluster ${cluster} sets ${owned.map((f) => `${change.deployment}.${f}`).join(' and ')} in its spec.deployments, which would put the old value back; remove ${owned.length > 1 ? 'those fields' : 'that field'} from spec.deployments (the sheet then owns ${owned.length > 1 ? 'them' : 'it'}) or change it there instead`;
}

/**
 * Where the HTTP check goes: the endpoint (node ip:host port, from the Pods tab's `endpoints`) of
 * each Running pod of the deployment, for the container port asked (or the pod's first TCP one).
 * A Running pod without such an endpoint is named in `missing`: the check fails for it.
 * With `nodes` (the Nodes tab), an endpoint must be on the address the apiserver recorded for the
 * pod's node from its heartbeats (#28.14): an `endpoints` cell naming any other host (a sheet
 * editor's metadata address, say) is not fetched, and the pod is named in `missing` with why.
 */
export function httpCheckUrls(
  pods: readonly Row[],
  deployment: string,
  check: HttpGetCheck,
  nodes?: readonly Row[],
): { urls: string[]; missing: string[] } {
  const urls: string[] = [];
  const missing: string[] = [];
  const nodeIp = (p: Row): string | undefined =>
    nodes ? text(byName(nodes, text(p.node).trim())?.ip).trim() || undefined : undefined;
  const path = check.path.startsWith('/') ? check.path : `/${check.path}`;
  for (const p of pods) {
    if (text(p.deployment) !== deployment || !running(p)) continue;
    if (urls.length + missing.length >= SHEET_TARGET_LIMITS.httpChecks) break;
    const ep = text(p.endpoints)
      .split(',')
      .map((e) => /^(.+):(\d+)->(\d+)\/tcp$/i.exec(e.trim()))
      .find((m) => m && (check.port === undefined || Number(m[3]) === check.port));
    if (!ep) missing.push(text(p.name));
    else if (nodes && ep[1] !== nodeIp(p))
      missing.push(
        `${text(p.name)} (endpoint ${ep[1]} is not its node's address ${nodeIp(p) ?? '(none recorded)'})`,
      );
    else urls.push(`http://${ep[1].includes(':') ? `[${ep[1]}]` : ep[1]}:${ep[2]}${path}`);
  }
  return { urls, missing };
}

/** One federation member as a rollout sees it: its name and its blue/green group. */
export interface MemberGroup {
  member: string;
  group: string | undefined;
}

/**
 * Blue/green over a federation: the federated service `service` is served by one member at a time,
 * its active member. Switching to `group` makes the first member of that group, in the
 * federation's member order, the active one. Returns the federation's new spec.active list, or
 * undefined when it already says so (nothing to write) or no member is in the group.
 */
export function switchActive(
  active: readonly { service: string; member: string }[] | undefined,
  service: string,
  members: readonly MemberGroup[],
  group: string,
): { service: string; member: string }[] | undefined {
  const to = members.find((m) => m.group === group)?.member;
  if (!to) return undefined;
  const list = [...(active ?? [])];
  const i = list.findIndex((a) => a.service === service);
  if (i >= 0 && list[i].member === to) return undefined;
  if (i >= 0) list[i] = { service, member: to };
  else list.push({ service, member: to });
  return list;
}

/**
 * The active member of a federated service: the one spec.active names, if it holds the service;
 * else its home (the first member that has it, as the merged service list says).
 */
export function activeMember(
  active: readonly { service: string; member: string }[] | undefined,
  service: string,
  holders: readonly string[],
): string | undefined {
  const pinned = active?.find((a) => a.service === service)?.member;
  if (pinned && holders.includes(pinned)) return pinned;
  return holders[0];
}
