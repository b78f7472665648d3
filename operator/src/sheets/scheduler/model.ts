// Scheduler inputs parsed from sheet rows (spec §3.1). Parsing is lenient on purpose: a person's
// odd cell must never stop the cluster; `apply` is where bad input is rejected.
import { isObjectName, nameProblem } from '../names.ts';
import { parseRestartPolicy, type RestartPolicy } from './phases.ts';
import { type AssignedPort, type PortSpec, parseAssigned, parsePortsLenient } from './ports.ts';

// What the scheduler takes from cells a person typed: the same caps as the apiserver's verbs, so a
// typo in the sheet ("99999999999999" replicas, a pasted column of a million rows) cannot make one
// reconcile allocate gigabytes.
export const LIMITS = {
  replicasMax: 10_000, // per Deployment; more is a typo
  deploymentRows: 10_000, // Deployments rows scheduled; rows beyond are ignored (and reported)
  podsMax: 100_000, // pods of the whole cluster; replicas beyond it are not scheduled (and reported)
} as const;

export const DEFAULTS = {
  cpuReq: 100, // millicores a Deployment asks for when cpu_req is blank (reference default)
  memReq: 64, // MiB a Deployment asks for when mem_req is blank (reference default)
  cpuTotal: 1000, // millicores of a node that did not say (reference default)
  memTotal: 512, // MiB of a node that did not say (reference default)
} as const;

export type Row = Record<string, unknown>;

export interface Taint {
  key: string;
  value: string;
  effect: string;
}

export interface DeploymentIn {
  name: string;
  image: string;
  replicas: number;
  cpuReq: number;
  memReq: number;
  command: string;
  nodeSelector: Record<string, string>;
  tolerations: Set<string>;
  env: string;
  secretFiles: string;
  ports: PortSpec[];
  restartPolicy: RestartPolicy;
}

export interface NodeIn {
  name: string;
  ip: string;
  cpuTotal: number;
  memTotal: number;
  lastHeartbeat: number;
  schedulable: boolean;
  labels: Record<string, string>;
  taints: Taint[];
}

export interface ExistingPod {
  name: string;
  node: string;
  ports: AssignedPort[];
}

export function text(v: unknown): string {
  if (v === null || v === undefined) return '';
  return String(v);
}

/** int(float(x)) with a default for blank or garbage, as the reference reads numeric cells. */
export function intOr(v: unknown, dflt: number): number {
  if (v === null || v === undefined || v === '') return dflt;
  if (typeof v === 'boolean') return v ? 1 : 0;
  const n = typeof v === 'number' ? v : Number(String(v).trim());
  if (!Number.isFinite(n)) return dflt;
  return Math.trunc(n);
}

/** Blank means true; FALSE/0/NO (any case) mean false (spec §2.1). */
export function truthyCell(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v === 'boolean') return v;
  const s = String(v).trim().toLowerCase();
  return !(s === 'false' || s === '0' || s === 'no');
}

/** "k=v,k2=v2" → {k:v,k2:v2}; parts without "=" are ignored. */
export function parseKv(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text(v).split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const k = part.slice(0, eq).trim();
    if (k) out[k] = part.slice(eq + 1).trim();
  }
  return out;
}

export function formatKv(kv: Record<string, string>): string {
  return Object.entries(kv)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

export function parseTolerations(v: unknown): Set<string> {
  return new Set(
    text(v)
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

/** "k=v:Effect,…" → taints; a missing effect means NoSchedule. */
export function parseTaints(v: unknown): Taint[] {
  const out: Taint[] = [];
  for (const raw of text(v).split(',')) {
    const part = raw.trim();
    if (!part) continue;
    const colon = part.lastIndexOf(':');
    const kv = colon >= 0 ? part.slice(0, colon) : part;
    const effect = colon >= 0 ? part.slice(colon + 1).trim() || 'NoSchedule' : 'NoSchedule';
    const eq = kv.indexOf('=');
    const key = (eq >= 0 ? kv.slice(0, eq) : kv).trim();
    const value = eq >= 0 ? kv.slice(eq + 1).trim() : '';
    if (key) out.push({ key, value, effect });
  }
  return out;
}

export function formatTaints(taints: Taint[]): string {
  return taints.map((t) => `${t.key}${t.value !== '' ? `=${t.value}` : ''}:${t.effect}`).join(',');
}

export function deploymentFromRow(r: Row): DeploymentIn | null {
  const name = text(r.name).trim();
  if (!name || !isObjectName(name)) return null;
  return {
    name,
    image: text(r.image),
    replicas: Math.min(LIMITS.replicasMax, Math.max(0, intOr(r.replicas, 0))),
    cpuReq: Math.max(0, intOr(r.cpu_req, DEFAULTS.cpuReq)),
    memReq: Math.max(0, intOr(r.mem_req, DEFAULTS.memReq)),
    command: text(r.command),
    nodeSelector: parseKv(r.node_selector),
    tolerations: parseTolerations(r.tolerations),
    env: text(r.env),
    secretFiles: text(r.secret_files),
    ports: parsePortsLenient(r.ports),
    restartPolicy: parseRestartPolicy(r.restart_policy),
  };
}

/**
 * The Deployments rows the scheduler may use, within the caps, and what was left out and why
 * (a row with a name that cannot be a pod or file name, replicas over the cap, rows or pods over
 * the cluster's budget). Lenient like every cell read: the rest of the cluster keeps working.
 */
export function deploymentsFromRows(rows: readonly Row[]): {
  deployments: DeploymentIn[];
  problems: string[];
} {
  const deployments: DeploymentIn[] = [];
  const problems: string[] = [];
  let pods = 0;
  for (const [i, r] of rows.entries()) {
    const name = text(r.name).trim();
    if (!name) continue;
    if (i >= LIMITS.deploymentRows) {
      problems.push(
        `Deployments rows after row ${LIMITS.deploymentRows + 1} are ignored (cap ${LIMITS.deploymentRows})`,
      );
      break;
    }
    if (!isObjectName(name)) {
      problems.push(`Deployment row ${i + 2} ignored: ${nameProblem(name)}`);
      continue;
    }
    const d = deploymentFromRow(r) as DeploymentIn;
    if (intOr(r.replicas, 0) > LIMITS.replicasMax)
      problems.push(`Deployment ${name}: replicas capped at ${LIMITS.replicasMax}`);
    if (pods + d.replicas > LIMITS.podsMax) {
      problems.push(`Deployment ${name}: replicas cut to fit the cluster's ${LIMITS.podsMax} pods`);
      d.replicas = Math.max(0, LIMITS.podsMax - pods);
    }
    pods += d.replicas;
    deployments.push(d);
  }
  return { deployments, problems };
}

export function nodeFromRow(r: Row): NodeIn | null {
  const name = text(r.name).trim();
  if (!name) return null;
  return {
    name,
    ip: text(r.ip),
    cpuTotal: intOr(r.cpu_total, DEFAULTS.cpuTotal),
    memTotal: intOr(r.mem_total, DEFAULTS.memTotal),
    lastHeartbeat: intOr(r.last_heartbeat, 0),
    schedulable: truthyCell(r.schedulable),
    labels: parseKv(r.labels),
    taints: parseTaints(r.taints),
  };
}

export function existingFromRow(r: Row): ExistingPod | null {
  const name = text(r.name).trim();
  if (!name) return null;
  return { name, node: text(r.node).trim(), ports: parseAssigned(r.ports) };
}
