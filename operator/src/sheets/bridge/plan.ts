// Federation planning (spec §7): pure functions over what the members reported. No I/O here; the
// client (client.ts) observes and acts, the CLI and the controllers drive.
//
// Rules, stated once:
//   status  — the merged service list maps each deployment name to the FIRST member (in the order
//             given, local first) that has it; so on a name collision the local side wins, as in
//             the reference.
//   sync    — union reconcile: every member receives the deployments it lacks, copied from the
//             first member (in order) that has them. Same-named deployments are never touched
//             (the owner stays authoritative; scales and renames are not propagated) and deletions
//             are never propagated. CONFLICT RULE: when two members hold different specs under one
//             name, nothing is written and the name is reported as a conflict, so a person decides.
//   stretch — see planStretch.

import type { Row } from '../store/types.ts';

export const LIMITS = {
  defaultCpuReq: 100, // the scheduler's cpu_req default (spec §3.1)
} as const;

/** What one member told us: its Deployments, Pods and Nodes tabs. */
export interface MemberView {
  name: string;
  deployments: Row[];
  pods: Row[];
  nodes: Row[];
}

export function num(v: unknown, dflt = 0): number {
  const n = typeof v === 'number' ? v : Number.parseFloat(String(v ?? ''));
  return Number.isFinite(n) ? Math.trunc(n) : dflt;
}

/** The reference's int(float(replicas or 0)). */
export function replicasOf(row: Row | undefined): number {
  return Math.max(0, num(row?.replicas, 0));
}

export function cpuReqOf(row: Row | undefined): number {
  const n = num(row?.cpu_req, LIMITS.defaultCpuReq);
  return n > 0 ? n : LIMITS.defaultCpuReq;
}

export function findDeployment(view: Pick<MemberView, 'deployments'>, name: string): Row | undefined {
  return view.deployments.find((d) => String(d.name ?? '') === name);
}

export function runningPods(view: Pick<MemberView, 'pods'>, deploy: string): number {
  return view.pods.filter((p) => p.deployment === deploy && p.phase === 'Running').length;
}

function isFalse(v: unknown): boolean {
  return v === false || /^(false|0|no)$/i.test(String(v ?? '').trim());
}

/** sheetmesh's _free_cpu: Σ max(0, total − used) over Ready-ish, schedulable nodes. */
export function freeCpu(nodes: Row[]): number {
  let free = 0;
  for (const n of nodes) {
    const status = String(n.status ?? '').trim();
    if (status === '' || status.toLowerCase() === 'notready') continue;
    if (isFalse(n.schedulable)) continue;
    free += Math.max(0, num(n.cpu_total) - num(n.cpu_used));
  }
  return free;
}

// ---------------------------------------------------------------- status

export interface ServiceEntry {
  name: string;
  home: string; // the member that answers for it
  members: string[]; // every member that has it
}

export function federatedView(views: Pick<MemberView, 'name' | 'deployments'>[]): ServiceEntry[] {
  const byName = new Map<string, ServiceEntry>();
  for (const v of views) {
    for (const d of v.deployments) {
      const name = String(d.name ?? '');
      if (!name) continue;
      const e = byName.get(name);
      if (e) {
        if (!e.members.includes(v.name)) e.members.push(v.name);
      } else byName.set(name, { name, home: v.name, members: [v.name] });
    }
  }
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export interface MemberSummary {
  name: string;
  deployments: number;
  nodesReady: number;
  nodes: number;
  podsRunning: number;
  pods: number;
  freeCpu: number;
}

export function summarize(v: MemberView): MemberSummary {
  return {
    name: v.name,
    deployments: v.deployments.length,
    nodes: v.nodes.length,
    nodesReady: v.nodes.filter((n) => String(n.status ?? '') === 'Ready').length,
    pods: v.pods.length,
    podsRunning: v.pods.filter((p) => p.phase === 'Running').length,
    freeCpu: freeCpu(v.nodes),
  };
}

// ---------------------------------------------------------------- sync

export interface SyncPlan {
  /** member name → the rows to apply there (each copied from the first member that has it). */
  apply: Map<string, Row[]>;
  /** names held by several members with different specs (left alone; see the conflict rule). */
  conflicts: { name: string; members: string[] }[];
}

// Columns that define a deployment; anything else (a person's own columns) does not make a conflict.
const SPEC_COLUMNS = ['image', 'replicas', 'cpu_req', 'mem_req', 'command', 'env', 'ports'] as const;

export function sameSpec(a: Row, b: Row): boolean {
  return SPEC_COLUMNS.every((c) => String(a[c] ?? '') === String(b[c] ?? ''));
}

export function planSync(views: Pick<MemberView, 'name' | 'deployments'>[]): SyncPlan {
  const apply = new Map<string, Row[]>(views.map((v) => [v.name, []]));
  const conflicts: SyncPlan['conflicts'] = [];
  for (const svc of federatedView(views)) {
    const holders = views.filter((v) => svc.members.includes(v.name));
    const source = findDeployment(holders[0], svc.name) as Row;
    const differing = holders.filter((h) => !sameSpec(source, findDeployment(h, svc.name) as Row));
    if (differing.length > 0) conflicts.push({ name: svc.name, members: holders.map((h) => h.name) });
    for (const v of views) if (!svc.members.includes(v.name)) apply.get(v.name)?.push(source);
  }
  return { apply, conflicts };
}

// ---------------------------------------------------------------- stretch

export interface StretchMember {
  name: string;
  freeCpu: number; // free CPU as the member's scheduler sees it (allocation, not load)
  current: number; // replicas of this deployment the member already declares
  /**
   * Per placeable node: the CPU it could give this deployment, i.e. its free CPU plus what this
   * deployment's own pods there hold now (at their current request; a re-stretch replaces them).
   * A scheduler places whole pods per node, so capacity is the sum of floor(room / cpu) per node.
   */
  nodeRoom?: number[];
}

const placeable = (n: Row): boolean => {
  const status = String(n.status ?? '').trim();
  return status !== '' && status.toLowerCase() !== 'notready' && !isFalse(n.schedulable);
};

/** A member as `stretch` plans with it: free CPU, current replicas, and room per node. */
export function stretchMemberOf(v: MemberView, deploy: string): StretchMember {
  const row = findDeployment(v, deploy);
  const held = row ? cpuReqOf(row) : 0;
  const nodeRoom = v.nodes.filter(placeable).map((n) => {
    const own = v.pods.filter(
      (p) => String(p.deployment ?? '') === deploy && String(p.node ?? '') === String(n.name ?? ''),
    ).length;
    return Math.max(0, num(n.cpu_total) - num(n.cpu_used)) + own * held;
  });
  return { name: v.name, freeCpu: freeCpu(v.nodes), current: row ? replicasOf(row) : 0, nodeRoom };
}

export interface StretchShare {
  member: string;
  replicas: number;
  capacity: number; // replicas this member could hold for the deployment
}

export interface StretchPlan {
  deploy: string;
  replicas: number;
  cpu: number;
  shares: StretchShare[]; // in fill order (home first)
  unplaced: number; // replicas no member has room for
}

/**
 * Split `replicas` of one deployment over the members (the rule of sheetmesh's plan_stretch, which
 * the reference's `bridge stretch` documents as "fill local first, order the rest from the peer"):
 *   1. the home member (first given) fills first, then the others by most free CPU (ties: name);
 *   2. each takes min(left, capacity), capacity = the replicas its scheduler could place: per
 *      placeable node, floor(room / cpu), room = the node's free CPU plus what this deployment's
 *      pods there hold now at their current request (a re-stretch replaces them). Counting them at
 *      the new cpu, or pooling a member's free CPU across nodes, overcommits: web 2×100m re-stretched
 *      at 300m planned 7 + 3 where the schedulers placed 6 + 2. Without node rows (nodeRoom), the
 *      member's free CPU / cpu plus its current replicas;
 *   3. what nobody can hold is `unplaced` — never silently ordered from a member without room (the
 *      reference orders every remaining replica from the peer unchecked).
 */
export function planStretch(
  deploy: string,
  replicas: number,
  cpu: number,
  members: StretchMember[],
): StretchPlan {
  const per = Math.max(1, Math.trunc(cpu));
  const [home, ...rest] = members;
  const order = home
    ? [home, ...[...rest].sort((a, b) => b.freeCpu - a.freeCpu || (a.name < b.name ? -1 : 1))]
    : [];
  let left = Math.max(0, Math.trunc(replicas));
  const shares: StretchShare[] = [];
  for (const m of order) {
    const capacity = m.nodeRoom
      ? m.nodeRoom.reduce((n, room) => n + Math.floor(Math.max(0, room) / per), 0)
      : Math.floor(Math.max(0, m.freeCpu) / per) + Math.max(0, m.current);
    const take = Math.min(left, capacity);
    shares.push({ member: m.name, replicas: take, capacity });
    left -= take;
  }
  return { deploy, replicas: Math.max(0, Math.trunc(replicas)), cpu: per, shares, unplaced: left };
}

/** The reference's one-line plan: `web x10 @ 300m | local free 1000m -> 3, ordered from peer -> 7`. */
export function describeStretch(plan: StretchPlan, members: StretchMember[]): string {
  const [first, ...others] = plan.shares;
  if (!first) return `${plan.deploy} x${plan.replicas} @ ${plan.cpu}m | no members`;
  const free = members.find((m) => m.name === first.member)?.freeCpu ?? 0;
  let line = `${plan.deploy} x${plan.replicas} @ ${plan.cpu}m | ${first.member} free ${free}m -> ${first.replicas}`;
  const ordered = others.filter((s) => s.replicas > 0);
  if (ordered.length)
    line += `, ordered from ${ordered.map((s) => `${s.member} -> ${s.replicas}`).join(', ')}`;
  if (plan.unplaced > 0) line += ` | unplaced ${plan.unplaced} (no member has room)`;
  return line;
}

export type StretchStep =
  | { op: 'apply'; member: string; row: Row }
  | { op: 'delete'; member: string; name: string };

/**
 * The writes that take the members from their current counts to the plan, make-before-break:
 * every member that GROWS (or gets the deployment) comes first, every member that SHRINKS comes
 * after, so the declared total never drops below min(before, after) between two writes. A member
 * whose share is 0 loses the deployment (delete); unchanged members are not written (idempotent).
 */
export function stretchSteps(
  plan: StretchPlan,
  spec: Row,
  current: Map<string, number | undefined>,
): { grow: StretchStep[]; shrink: StretchStep[] } {
  const grow: StretchStep[] = [];
  const shrink: StretchStep[] = [];
  for (const s of plan.shares) {
    const now = current.get(s.member);
    if (now === s.replicas) continue;
    if (s.replicas === 0) {
      if (now !== undefined) shrink.push({ op: 'delete', member: s.member, name: plan.deploy });
      continue;
    }
    const step: StretchStep = {
      op: 'apply',
      member: s.member,
      row: { ...spec, name: plan.deploy, replicas: s.replicas },
    };
    if (now === undefined || now < s.replicas) grow.push(step);
    else shrink.push(step);
  }
  return { grow, shrink };
}
