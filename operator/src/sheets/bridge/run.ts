// The federation verbs as effects: observe the members, ask the pure planners, write. Shared by the
// CLI (`retrokube sheets bridge …`) and the controllers.
import type { Row } from '../store/types.ts';
import { BridgeError, type Member } from './client.ts';
import {
  initialStatus,
  type MigrationObservation,
  type MigrationSpec,
  type MigrationStatus,
  stepMigration,
  TERMINAL,
} from './migrate.ts';
import {
  cpuReqOf,
  federatedView,
  findDeployment,
  freeCpu,
  type MemberSummary,
  type MemberView,
  planStretch,
  planSync,
  replicasOf,
  runningPods,
  type ServiceEntry,
  type StretchPlan,
  stretchMemberOf,
  stretchSteps,
  summarize,
} from './plan.ts';

export const LIMITS = {
  progressEveryMs: 10_000, // a waiting verb says where it stands at least this often
} as const;

export type Log = (line: string) => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- status

export interface FederationStatus {
  members: MemberSummary[];
  services: ServiceEntry[];
  views: MemberView[];
}

export async function federationStatus(members: Member[]): Promise<FederationStatus> {
  const views = await Promise.all(members.map((m) => m.observe()));
  return { members: views.map(summarize), services: federatedView(views), views };
}

// ---------------------------------------------------------------- sync

export interface SyncResult {
  copied: Record<string, string[]>; // member → names applied there
  conflicts: { name: string; members: string[] }[];
}

export async function syncOnce(members: Member[]): Promise<SyncResult> {
  const views = await Promise.all(
    members.map(async (m) => ({ name: m.name, deployments: await m.get('deployments') })),
  );
  const plan = planSync(views);
  const copied: Record<string, string[]> = {};
  for (const m of members) {
    const rows = plan.apply.get(m.name) ?? [];
    if (rows.length) await m.apply(rows);
    copied[m.name] = rows.map((r) => String(r.name));
  }
  return { copied, conflicts: plan.conflicts };
}

// ---------------------------------------------------------------- stretch

export interface StretchOptions {
  replicas: number;
  cpu?: number; // millicores per replica; default: the deployment's cpu_req
  planOnly: boolean;
  allowUnplaced: boolean;
  waitSec: number; // how long grown members may take to run their share before shrinking others
  pollMs: number;
  log: Log;
}

export interface StretchResult {
  plan: StretchPlan;
  members: { name: string; freeCpu: number; current: number }[];
  applied: boolean;
}

export async function stretch(members: Member[], deploy: string, o: StretchOptions): Promise<StretchResult> {
  const views = await Promise.all(members.map((m) => m.observe()));
  const holder = views.find((v) => findDeployment(v, deploy));
  if (!holder)
    throw new BridgeError(
      members[0]?.name ?? '',
      `deployment '${deploy}' not found on any member (${members.map((m) => m.name).join(', ')}); apply it on one first`,
    );
  const spec = findDeployment(holder, deploy) as Row;
  const cpu = o.cpu ?? cpuReqOf(spec);
  const stretchMembers = views.map((v) => stretchMemberOf(v, deploy));
  const plan = planStretch(deploy, o.replicas, cpu, stretchMembers);
  const result = { plan, members: stretchMembers, applied: false };
  if (o.planOnly) return result;
  if (plan.unplaced > 0 && !o.allowUnplaced)
    throw new BridgeError(
      '',
      `only ${o.replicas - plan.unplaced} of ${o.replicas} replicas of '${deploy}' fit (${plan.unplaced} unplaced at ${plan.cpu}m each); nothing was written — add nodes, lower --replicas or --cpu, or pass --allow-unplaced`,
    );
  const current = new Map(
    views.map((v) => [v.name, findDeployment(v, deploy) ? replicasOf(findDeployment(v, deploy)) : undefined]),
  );
  const { grow, shrink } = stretchSteps(plan, { ...spec, cpu_req: cpu }, current);
  const byName = new Map(members.map((m) => [m.name, m]));
  for (const s of grow) if (s.op === 'apply') await (byName.get(s.member) as Member).apply([s.row]);
  // Make before break: the members that grew must run their share before any member shrinks.
  if (shrink.length && grow.length && o.waitSec > 0) {
    const grown = grow.map((s) => ({
      member: byName.get(s.member) as Member,
      want: s.op === 'apply' ? replicasOf(s.row) : 0,
    }));
    const deadline = Date.now() + o.waitSec * 1000;
    let lastSaid = 0;
    for (;;) {
      const counts = await Promise.all(
        grown.map(async (g) => runningPods({ pods: await g.member.get('pods') }, deploy)),
      );
      if (counts.every((c, i) => c >= grown[i].want)) break;
      if (Date.now() >= deadline)
        throw new BridgeError(
          '',
          `timeout: '${deploy}' not Running on ${grown.map((g, i) => `${g.member.name} ${counts[i]}/${g.want}`).join(', ')} within ${o.waitSec}s; no member was scaled down (nothing lost)`,
        );
      if (Date.now() - lastSaid >= LIMITS.progressEveryMs) {
        lastSaid = Date.now();
        o.log(
          `[stretch] waiting: ${grown.map((g, i) => `${g.member.name} ${counts[i]}/${g.want} Running`).join(', ')}`,
        );
      }
      await sleep(o.pollMs);
    }
  }
  for (const s of shrink) {
    const m = byName.get(s.member) as Member;
    if (s.op === 'apply') await m.apply([s.row]);
    else await m.delete(s.name);
  }
  result.applied = true;
  return result;
}

// ---------------------------------------------------------------- migrate

/** Both members' view of one deployment. Free CPU (a Nodes read) only when `withNodes`. */
export async function observeMigration(
  src: Member,
  dst: Member,
  deploy: string,
  withNodes = true,
): Promise<MigrationObservation> {
  const one = async (m: Member) => {
    const [deployments, pods, nodes] = await Promise.all([
      m.get('deployments'),
      m.get('pods'),
      withNodes ? m.get('nodes') : Promise.resolve([]),
    ]);
    return {
      deployment: findDeployment({ deployments }, deploy),
      running: runningPods({ pods }, deploy),
      freeCpu: freeCpu(nodes),
    };
  };
  const [source, target] = await Promise.all([one(src), one(dst)]);
  return { source, target, nowMs: Date.now() };
}

export interface MigrateDriverOptions {
  pollMs: number;
  log: Log; // the reference's [migrate] lines (without the prefix)
  progress?: (o: MigrationObservation, s: MigrationStatus) => void;
  // Stores the status after each step's writes (the controller writes it to the resource).
  persist?: (s: MigrationStatus) => Promise<void>;
}

/** Runs the step machine to a terminal phase, starting from `status` (resume) or from Pending. */
export async function migrate(
  src: Member,
  dst: Member,
  spec: MigrationSpec,
  o: MigrateDriverOptions,
  status: MigrationStatus = initialStatus(Date.now()),
): Promise<MigrationStatus> {
  let s = status;
  const members = { source: src, target: dst };
  let reuse: MigrationObservation | undefined;
  while (!TERMINAL.includes(s.phase)) {
    // A step that moved without writing changed nothing anywhere: the next step may judge the same
    // observation (saves a round of reads per such step). Capacity is read only where it is judged.
    const obs = reuse
      ? { ...reuse, nowMs: Date.now() }
      : await observeMigration(src, dst, spec.deploy, s.phase === 'Pending');
    reuse = undefined;
    const step = stepMigration(spec, s, obs);
    for (const line of step.log) o.log(line);
    for (const w of step.writes) {
      const m = members[w.on];
      if (w.op === 'apply') await m.apply([w.row]);
      else await m.delete(w.name);
    }
    const moved = step.status.phase !== s.phase;
    s = step.status;
    await o.persist?.(s);
    if (moved && step.writes.length === 0) reuse = obs;
    if (!moved) {
      o.progress?.(obs, s);
      await sleep(o.pollMs);
    }
  }
  return s;
}
