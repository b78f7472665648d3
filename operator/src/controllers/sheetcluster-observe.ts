// What the operator knows of a SheetCluster comes from its sheet, read through the apiserver's own
// contract (GET ?token=&kind=…, the reference clients' reads; POSTs signed with the cluster's key):
// nodes, pods, deployments, the Events tab and the Metrics tab. This module does the reads (one
// edge function) and turns rows into a summary (pure); it also decides which spec deployments must
// be (re)applied — the ownership rule: the spec owns the fields it sets, the sheet owns the rest.

import { type LookupAddress, type LookupOptions, Resolver } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { SheetDeploymentT } from '../api/sheetcluster.ts';
import { HttpStatusError, SheetsClient } from '../sheets/ctl/client.ts';
import { isStartingMessage } from '../sheets/scheduler/orders.ts';

export const LIMITS = {
  timeoutMs: 4_000, // one read; an apiserver slower than this is reported as not answering
  replyBytes: 64 * 1024 * 1024, // one tab's JSON: 10,000 pods are a few MB; more is not a sheet
  dnsTimeoutMs: 1_500, // one DNS query for a Service name (cluster DNS answers in milliseconds)
  dnsTries: 2, // so a name that cannot be resolved fails within ~3 s, inside the read's timeout
  warningChars: 300, // status.lastWarning
  stuckPodsListed: 3, // pods named in Degraded's message when agents cannot start them
  recentEvents: 200, // only the newest Events rows are looked at for the latest warning
} as const;

type Row = Record<string, unknown>;

export interface SheetRows {
  nodes: Row[];
  pods: Row[];
  deployments: Row[];
  events: Row[];
  metrics: Row[];
}

export type SheetRead = { ok: true; rows: SheetRows } | { ok: false; problem: string; unauthorized: boolean };

/**
 * Reads the five tabs the status is made of. Never throws: a failure is described for people
 * (`where` names the apiserver in it). The Nodes tab is read first and the other four only once it
 * answered: an apiserver that is not there costs one failed request per read, not five.
 */
export async function readSheet(url: string, token: string, where = url): Promise<SheetRead> {
  try {
    const nodes = await getTab(url, token, 'nodes');
    const [pods, deployments, events, metrics] = await Promise.all(
      (['pods', 'deployments', 'events', 'metrics'] as const).map((k) => getTab(url, token, k)),
    );
    return { ok: true, rows: { nodes, pods, deployments, events, metrics } };
  } catch (err) {
    if (err instanceof HttpStatusError) {
      const unauthorized = err.status === 401;
      return {
        ok: false,
        unauthorized,
        problem: unauthorized
          ? 'the apiserver refused the token (401): the token Secret was changed after the apiserver started; restart the apiserver pod, or delete a generated token Secret so the operator writes it again'
          : `the apiserver answered HTTP ${err.status} (${String((err.body as { error?: unknown })?.error ?? '').slice(0, 120)}): the workbook may be failing to load or save; see the apiserver pod's log`,
      };
    }
    const e = err as { code?: string; cause?: { code?: string } };
    const cause = e.code ?? e.cause?.code;
    return {
      ok: false,
      unauthorized: false,
      problem: `the apiserver does not answer at ${where}${cause ? ` (${cause})` : ''}`,
    };
  }
}

/**
 * Service names are resolved on the event loop (c-ares, its own timeout), not with getaddrinfo on
 * libuv's four-thread pool: a read that times out cannot cancel a getaddrinfo, so with a DNS server
 * that drops some queries (5 s per try) the lookups of 100 clusters' reads queued up without bound —
 * memory grew, and an operator told to stop waited minutes for the queue to drain before exiting.
 * The names are fully qualified (`<svc>.<ns>.svc.cluster.local`), so no search list is needed.
 */
const resolver = new Resolver({ timeout: LIMITS.dnsTimeoutMs, tries: LIMITS.dnsTries });

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

function lookupOnEventLoop(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  const reply = (address: string, family: number): void => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const name = hostname.replace(/^\[|\]$/g, '');
  if (isIP(name)) reply(name, isIP(name));
  else if (name === 'localhost') reply('127.0.0.1', 4);
  else
    resolver.resolve4(name, (err4, v4) => {
      if (!err4 && v4.length > 0) reply(v4[0], 4);
      else
        resolver.resolve6(name, (err6, v6) => {
          if (!err6 && v6.length > 0) reply(v6[0], 6);
          else callback(err4 ?? err6, '');
        });
    });
}

/**
 * One GET ?token=&kind= of the contract (the reads SheetsClient.get makes), on node:http. The
 * operator reads every sheet every few seconds, and fetch() leaves several times the garbage per
 * request, which an unconstrained V8 heap lets pile up: at 20 reads/s a fetch loop grew RSS by
 * ~55 MiB a minute where this one stayed flat (100 SheetClusters: 400 MiB peak before).
 */
function getTab(url: string, token: string, kind: string): Promise<Row[]> {
  const u = new URL(url);
  u.searchParams.set('token', token);
  u.searchParams.set('kind', kind);
  return new Promise((ok, fail) => {
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      { method: 'GET', headers: { accept: 'application/json' }, lookup: lookupOnEventLoop },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (b: Buffer) => {
          size += b.length;
          if (size > LIMITS.replyBytes) req.destroy(new Error(`reply over ${LIMITS.replyBytes} bytes`));
          else chunks.push(b);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // not JSON: kept as text for the error
          }
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) return fail(new HttpStatusError(status, body));
          const items = (body as { items?: unknown } | null)?.items;
          if (!Array.isArray(items))
            return fail(new Error(`the apiserver answered without an items list: ${text.slice(0, 200)}`));
          ok(items as Row[]);
        });
        res.on('error', fail);
      },
    );
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error('no answer in time'), { code: 'ETIMEDOUT' })),
      LIMITS.timeoutMs,
    );
    req.on('close', () => clearTimeout(timer));
    req.on('error', fail);
    req.end();
  });
}

export interface ApplyOutcome {
  applied: string[]; // "web: created" / "web: updated"
  refused: string[]; // "web: invalid: ..."
}

/** POSTs `apply` (signed). Throws a readable error when the apiserver refuses the request itself. */
export async function applyDeployments(
  url: string,
  token: string,
  key: string,
  deployments: SheetDeploymentT[],
): Promise<ApplyOutcome> {
  const client = new SheetsClient({ url, token, key, timeoutMs: LIMITS.timeoutMs });
  const reply = (await client.post({ action: 'apply', deployments })) as { applied?: unknown[] };
  const out: ApplyOutcome = { applied: [], refused: [] };
  (reply.applied ?? []).forEach((r, i) => {
    const line = `${deployments[i]?.name}: ${String(r)}`;
    (String(r).startsWith('invalid') ? out.refused : out.applied).push(line);
  });
  return out;
}

// --- pure ------------------------------------------------------------------------------------------

const text = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
const int = (v: unknown): number => {
  const n = Number.parseInt(text(v), 10);
  return Number.isFinite(n) ? n : 0;
};

export interface NodeLine {
  name: string;
  status: string;
  cpu: string;
  memory: string;
}

export interface SheetSummary {
  expected: string[];
  nodeTable: NodeLine[];
  readyNodes: number;
  /** Expected nodes whose row says NotReady (silent past the TTL). */
  lostNodes: string[];
  runningPods: number;
  desiredPods: number;
  deployments: number;
  lastWarning?: string;
  /** Pods an agent says it cannot start, with its reason from the Pods tab ("pod: reason"), a few. */
  stuckPods: string[];
  metrics?: {
    cpuAllocatedMillicores: number;
    cpuCapacityMillicores: number;
    memAllocatedMiB: number;
    memCapacityMiB: number;
  };
}

/**
 * Which Events rows are warnings. The sheet's Events tab has no type column (spec §2.1: ts, kind,
 * object, message); our apiserver words trouble as these prefixes.
 */
export function isWarning(message: string): boolean {
  return /^(NotReady|Unschedulable|invalid|failed|error|crash|evicted|refused)\b/i.test(message.trim());
}

/**
 * Whether a warning row still describes the cluster now: a pod's warning while that pod exists and
 * has not started, a node's while the node is not Ready; others (a deployment refused) stand. So a
 * start-up "Unschedulable" is not shown once the pod runs.
 */
export function stillTrue(e: Row, rows: SheetRows): boolean {
  const kind = text(e.kind);
  const name = text(e.object);
  if (kind === 'Pod') {
    const p = rows.pods.find((x) => text(x.name) === name);
    return !!p && !started(p);
  }
  if (kind === 'Node') {
    const n = rows.nodes.find((x) => text(x.name) === name);
    return !!n && text(n.status) !== 'Ready' && text(n.status) !== 'SchedulingDisabled';
  }
  return true;
}

/**
 * A pod counts as running once its agent has started it: phase Running, or an exit code reported (a
 * WASM program that finished and waits out its restart backoff ran, and will run again). Counting
 * only the instant phase would make a short program's cluster flap between 0 and 1 in status.
 */
export function started(p: Row): boolean {
  return text(p.phase) === 'Running' || (text(p.node) !== '' && text(p.exit_code) !== '');
}

export function summarize(rows: SheetRows, expected: string[]): SheetSummary {
  const byName = new Map(rows.nodes.map((n) => [text(n.name), n]));
  const extra = [...byName.keys()].filter((n) => n && !expected.includes(n)).sort();
  const nodeTable = [...expected, ...extra].map((name) => {
    const n = byName.get(name);
    return {
      name,
      status: n ? text(n.status) || 'Unknown' : 'Absent',
      cpu: n ? `${int(n.cpu_used)}/${int(n.cpu_total)}` : '0/0',
      memory: n ? String(int(n.mem_total)) : '0',
    };
  });
  const ready = (l: NodeLine) => l.status === 'Ready' || l.status === 'SchedulingDisabled';
  const mine = nodeTable.filter((l) => expected.includes(l.name));
  const desiredPods = rows.deployments.reduce((a, d) => a + Math.max(0, int(d.replicas)), 0);
  const events = rows.events.slice(-LIMITS.recentEvents);
  let lastWarning: string | undefined;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (isWarning(text(e.message)) && stillTrue(e, rows)) {
      lastWarning = `${text(e.ts)} ${text(e.kind)}/${text(e.object)}: ${text(e.message)}`.slice(
        0,
        LIMITS.warningChars,
      );
      break;
    }
  }
  return {
    expected,
    nodeTable: nodeTable.slice(0, 64),
    readyNodes: mine.filter(ready).length,
    lostNodes: mine.filter((l) => l.status === 'NotReady').map((l) => l.name),
    runningPods: rows.pods.filter(started).length,
    desiredPods,
    deployments: rows.deployments.length,
    lastWarning,
    stuckPods: rows.pods
      // A pod that ran (an exit code, waiting out its restart back-off) is not stuck, and its
      // message counts the back-off down: listing it would rewrite status at every step.
      // Nor is a pod the scheduler says is being started: only an agent's reason means stuck.
      .filter(
        (p) =>
          text(p.phase) === 'Pending' &&
          text(p.node) !== '' &&
          text(p.message) !== '' &&
          !isStartingMessage(text(p.message)) &&
          !started(p),
      )
      .map((p) => `${text(p.name)}: ${text(p.message)}`.slice(0, LIMITS.warningChars))
      .sort()
      .slice(0, LIMITS.stuckPodsListed),
    metrics: latestMetrics(rows.metrics),
  };
}

const METRIC_NAMES = {
  cpu_allocated_millicores: 'cpuAllocatedMillicores',
  cpu_capacity_millicores: 'cpuCapacityMillicores',
  mem_allocated_mib: 'memAllocatedMiB',
  mem_capacity_mib: 'memCapacityMiB',
} as const;

/** The newest value of each capacity metric in the Metrics tab (rows: ts, metric, labels, value). */
function latestMetrics(rows: Row[]): SheetSummary['metrics'] {
  const out: Record<string, number> = {};
  for (const r of rows) {
    const k = METRIC_NAMES[text(r.metric) as keyof typeof METRIC_NAMES];
    if (k) out[k] = Math.max(0, int(r.value)); // rows are in time order: the last one wins
  }
  if (Object.keys(out).length === 0) return undefined;
  return {
    cpuAllocatedMillicores: out.cpuAllocatedMillicores ?? 0,
    cpuCapacityMillicores: out.cpuCapacityMillicores ?? 0,
    memAllocatedMiB: out.memAllocatedMiB ?? 0,
    memCapacityMiB: out.memCapacityMiB ?? 0,
  };
}

/**
 * The ownership rule for spec.deployments: the spec owns exactly the fields it sets. A deployment
 * whose row is missing, or whose row differs from the spec in a field the spec sets, is applied
 * again (apply overwrites only the keys it sends, so every other cell stays as people left it).
 * Returns those deployments, each with the fields that differ named for the Event.
 */
export async function deploymentsToApply(
  spec: readonly SheetDeploymentT[],
  rows: readonly Row[],
): Promise<Array<{ deployment: SheetDeploymentT; fields: string[]; created: boolean }>> {
  // The apiserver's own cell rules, loaded on the first cluster with deployments: that module
  // compiles TypeBox validators, which an operator with no SheetCluster never needs (#32).
  const { deploymentCells } = await import('../sheets/apiserver/validate.ts');
  const byName = new Map(rows.map((r) => [text(r.name).trim(), r]));
  const out: Array<{ deployment: SheetDeploymentT; fields: string[]; created: boolean }> = [];
  for (const d of spec) {
    let cells: Row;
    try {
      cells = deploymentCells(d as unknown as Row);
    } catch {
      // The apiserver will say why; applying it is how the refusal is learnt.
      out.push({ deployment: d, fields: Object.keys(d), created: !byName.has(d.name) });
      continue;
    }
    const row = byName.get(d.name);
    if (!row) {
      out.push({ deployment: d, fields: Object.keys(cells).filter((f) => f !== 'name'), created: true });
      continue;
    }
    const fields = Object.keys(cells).filter((f) => f !== 'name' && text(cells[f]) !== text(row[f]));
    if (fields.length) out.push({ deployment: d, fields, created: false });
  }
  return out;
}
