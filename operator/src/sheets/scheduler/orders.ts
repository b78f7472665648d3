// What a schedule means for the sheet and for each node: the Pods rows (spec §3.7), the orders a
// heartbeat answers with (spec §1.4), spec_hash (spec §3.8), and make-before-break hand-offs.
import { createHash } from 'node:crypto';
import { type DeploymentIn, type Row, text } from './model.ts';
import { normalizePhase, type RestartPolicy } from './phases.ts';
import { type AssignedPort, endpointsFromReport, formatAssigned, parseAssigned } from './ports.ts';
import type { Placement } from './schedule.ts';

export const LIMITS = {
  handoffMaxSec: 300, // a migrating pod's old copy is stopped after this even if the new one never reports Running
  // spec_hash memo entries per Deployment object (one per distinct ports text; auto host ports make
  // them differ by pod): enough for every pod of a big deployment, bounded if ports keep changing.
  specHashMemoPerDeployment: 4096,
} as const;

export { normalizePhase, POD_PHASES } from './phases.ts';

export interface ReportedPod {
  name: string;
  phase?: string;
  container_id?: string;
  ports?: string;
  restarts?: number;
  exit_code?: number | null;
  message?: string;
  spec_hash?: string;
}

export interface Report {
  node: string;
  ip: string;
  pods: ReportedPod[];
}

export interface PodRow {
  name: string;
  deployment: string;
  node: string;
  phase: string;
  container_id: string;
  ports: string;
  endpoints: string;
  restarts: number | string;
  exit_code: number | string;
  message: string;
  spec_hash: string;
}

/** A pod moving off a live node: its old copy keeps running until the new one reports Running. */
export interface Handoff {
  pod: string;
  from: string;
  to: string;
  ports: AssignedPort[];
  since: number;
}

/**
 * Python's json.dumps of a list of strings (", " separator, non-ASCII as \uXXXX), so our hash
 * equals the reference's and a kubelet moved between the two does not recreate its containers.
 */
function pyJsonList(items: string[]): string {
  const enc = (s: string) =>
    JSON.stringify(s).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
  return `[${items.map(enc).join(', ')}]`;
}

export function specHash(
  dep: Pick<DeploymentIn, 'image' | 'command' | 'env' | 'secretFiles'>,
  ports: AssignedPort[],
): string {
  return specHashOfText(dep, formatAssigned(ports));
}

/** specHash from a pod's ports as the Pods tab writes them (what a reader of the sheet has). */
export function specHashOfText(
  dep: Pick<DeploymentIn, 'image' | 'command' | 'env' | 'secretFiles'>,
  portsText: string,
): string {
  // Every heartbeat's orders carry each pod's spec_hash: at 1,000 heartbeats/s the sha256 (and the
  // JSON it hashes) was 4 % of the apiserver's busy time (bench/sheets-scale profile). The same
  // Deployment object is asked again and again, so the hash is kept per object and ports text,
  // checked against the fields it was made from (an object changed since gives a fresh hash).
  let memo = specHashMemo.get(dep);
  if (
    !memo ||
    memo.image !== dep.image ||
    memo.command !== dep.command ||
    memo.env !== dep.env ||
    memo.secretFiles !== dep.secretFiles
  ) {
    memo = {
      image: dep.image,
      command: dep.command,
      env: dep.env,
      secretFiles: dep.secretFiles,
      byPorts: new Map(),
    };
    specHashMemo.set(dep, memo);
  }
  const hit = memo.byPorts.get(portsText);
  if (hit !== undefined) return hit;
  const body = pyJsonList([dep.image, dep.command, dep.env, dep.secretFiles, portsText]);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  if (memo.byPorts.size >= LIMITS.specHashMemoPerDeployment) memo.byPorts.clear();
  memo.byPorts.set(portsText, hash);
  return hash;
}

interface SpecHashMemo {
  image: string;
  command: string;
  env: string;
  secretFiles: string;
  byPorts: Map<string, string>;
}
const specHashMemo = new WeakMap<object, SpecHashMemo>();

/**
 * The Pods tab after a schedule. `prev` are the current rows by name; `report` is the heartbeat
 * being answered (if any); `policyOf` gives a Deployment's declared restart policy. Only a pod's
 * own node may vouch for its phase.
 */
export function podRows(
  placements: Placement[],
  prev: ReadonlyMap<string, Row>,
  report?: Report,
  policyOf: (deployment: string) => RestartPolicy = () => '',
): PodRow[] {
  const reported = new Map<string, ReportedPod>();
  if (report) for (const p of report.pods) reported.set(p.name, p);
  return placements.map((pl) => {
    const row: PodRow = {
      name: pl.name,
      deployment: pl.deployment,
      node: pl.node,
      phase: 'Pending',
      container_id: '',
      ports: formatAssigned(pl.ports),
      endpoints: '',
      restarts: '',
      exit_code: '',
      message: '',
      spec_hash: '',
    };
    if (pl.node === '') {
      row.phase = 'Unschedulable';
      return row;
    }
    // Until its node reports it, a pod is Pending for a reason a person can read (#29.6).
    row.message = awaitingAgent(pl.node);
    if (report && report.node === pl.node) {
      const r = reported.get(pl.name);
      if (r) {
        row.phase = normalizePhase(r.phase, policyOf(pl.deployment));
        row.container_id = text(r.container_id);
        row.endpoints = endpointsFromReport(report.ip, r.ports);
        row.restarts = typeof r.restarts === 'number' ? r.restarts : '';
        row.exit_code = typeof r.exit_code === 'number' ? r.exit_code : '';
        row.spec_hash = text(r.spec_hash);
        row.message = text(
          r.message === undefined ? (row.phase === text(r.phase) ? '' : r.phase) : r.message,
        );
        if (row.phase === 'Pending' && row.message === '') row.message = agentStarting(pl.node);
      }
      return row;
    }
    const old = prev.get(pl.name);
    if (old && text(old.node) === pl.node) {
      row.phase = text(old.phase) || 'Pending';
      row.container_id = text(old.container_id);
      row.endpoints = text(old.endpoints);
      row.restarts = (old.restarts as number | string | undefined) ?? '';
      row.exit_code = (old.exit_code as number | string | undefined) ?? '';
      row.message = text(old.message);
      row.spec_hash = text(old.spec_hash);
    }
    return row;
  });
}

export interface RunOrder {
  name: string;
  desired: 'Running';
  image: string;
  command: string;
  cpu_req: number;
  mem_req: number;
  deployment: string;
  env: string;
  secret_files: string;
  ports: string;
  spec_hash: string;
  /** Only when the Deployment declares one: the reference's orders stay exactly as they were. */
  restart_policy?: Exclude<RestartPolicy, ''>;
}
export interface StopOrder {
  name: string;
  desired: 'Terminating';
}
export type Order = RunOrder | StopOrder;

function runOrder(name: string, dep: DeploymentIn, ports: AssignedPort[]): RunOrder {
  const order: RunOrder = {
    name,
    desired: 'Running',
    image: dep.image,
    command: dep.command,
    cpu_req: dep.cpuReq,
    mem_req: dep.memReq,
    deployment: dep.name,
    env: dep.env,
    secret_files: dep.secretFiles,
    ports: formatAssigned(ports),
    spec_hash: specHash(dep, ports),
  };
  // Not part of spec_hash: changing the policy needs no new copy of the pod.
  if (dep.restartPolicy !== '') order.restart_policy = dep.restartPolicy;
  return order;
}

/** A node's orders: Running for its pods (and hand-offs it still carries), then Terminating. */
export function nodeOrders(
  node: string,
  placements: Placement[],
  deployments: ReadonlyMap<string, DeploymentIn>,
  reportedNames: string[],
  handoffs: ReadonlyMap<string, Handoff>,
): Order[] {
  const out: Order[] = [];
  const keep = new Set<string>();
  for (const pl of placements) {
    const dep = deployments.get(pl.deployment);
    if (!dep) continue;
    if (pl.node === node) {
      out.push(runOrder(pl.name, dep, pl.ports));
      keep.add(pl.name);
    } else {
      const h = handoffs.get(pl.name);
      if (h && h.from === node) {
        out.push(runOrder(pl.name, dep, h.ports));
        keep.add(pl.name);
      }
    }
  }
  for (const name of reportedNames) {
    if (!keep.has(name)) {
      out.push({ name, desired: 'Terminating' });
      keep.add(name); // a name reported twice gets one order
    }
  }
  return out;
}

export interface HandoffInput {
  previous: ReadonlyMap<string, Handoff>;
  /** Pods rows before this schedule. */
  before: ReadonlyMap<string, Row>;
  placements: Placement[];
  freshNodes: ReadonlySet<string>;
  now: number;
  /** A heartbeat being answered: a target reporting the pod Running completes its hand-off. */
  report?: Report;
}

/** Hand-offs after a schedule: new ones for pods that left a live node, finished ones dropped. */
export function updateHandoffs(i: HandoffInput): Map<string, Handoff> {
  const out = new Map<string, Handoff>();
  const runningOnReporter = new Set<string>();
  if (i.report)
    for (const p of i.report.pods) if (normalizePhase(p.phase) === 'Running') runningOnReporter.add(p.name);
  for (const pl of i.placements) {
    if (pl.node === '') continue;
    const old = i.before.get(pl.name);
    let h = i.previous.get(pl.name);
    if (h && h.to !== pl.node) h = undefined; // re-moved: the old plan no longer applies
    if (!h && old) {
      const from = text(old.node);
      if (from && from !== pl.node && text(old.phase) === 'Running' && i.freshNodes.has(from)) {
        h = { pod: pl.name, from, to: pl.node, ports: [], since: i.now };
        h.ports = parseAssigned(old.ports);
      }
    }
    if (!h) continue;
    if (!i.freshNodes.has(h.from)) continue; // the old copy is gone with its node
    if (i.now - h.since > LIMITS.handoffMaxSec) continue;
    if (i.report && i.report.node === h.to && runningOnReporter.has(pl.name)) continue; // made: break
    out.set(pl.name, h);
  }
  return out;
}

/** A Pending pod's words before its agent reports it (#29.6). */
export function awaitingAgent(node: string): string {
  return `waiting for ${node}'s agent to start it`;
}
/** A Pending pod's words once its agent has it and names no reason. */
export function agentStarting(node: string): string {
  return `${node}'s agent is starting it`;
}
/** Whether a Pending pod's message is only the scheduler's word that its start is under way (not stuck). */
export function isStartingMessage(message: string): boolean {
  return /^(waiting for \S+'s agent to start it|\S+'s agent is starting it)$/.test(message);
}
