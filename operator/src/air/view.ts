// The cluster view from the air: a state machine fed with (time, datagram) that rebuilds what a
// KubeNet cluster is doing, the way every station would judge it (kube-on-oberon spec §3.4, §8.1).
// Because every message is broadcast and carries full state, a passive station hears everything:
// the operator's OberonKube status, `retrokube air listen` and the tests are all built on this.
//
//   const view = new AirView({ cluster: 'kube', key: keyFromHex('00c0ffee00c0ffee') });
//   view.ingest(Date.now(), datagram);   // → FrameRecord (decoded, judged) or null (not a frame)
//   const v = view.view(Date.now());     // → ClusterView (nodes, pods, images, convergence, counts)
//
// No I/O and no timers: time is whatever the caller passes (milliseconds, never going back).
import { type Eviction, type Freshness, FreshnessTable, PLANE_SENDER } from './freshness.ts';
import { clusterTag, decodeKubeFrame, kindName, macValid, refusalSum, ZERO_KEY } from './kubenet.ts';
import { LIMITS, TYP, toHex } from './wire.ts';

export const VIEW_LIMITS = {
  /** A node is Ready while its last accepted heartbeat is at most this old (the plane's TTL). */
  TTL_MS: LIMITS.TTL_MS,
  /** Recent rejected frames kept for people to inspect; older ones only count. */
  RECENT_REJECTS: 50,
  /** Freshness table size: the machines keep 32 senders, so the view judges as they do. */
  FRESHNESS_PEERS: LIMITS.FRESHNESS_PEERS,
} as const;

/** How the view judged one frame, in the order a machine checks (§3.4). */
export type Verdict =
  | 'ok' // this cluster, MAC valid, counter fresh: applied to the view
  | 'other-cluster' // a KubeNet message with another cluster tag (ignored, as the machines do)
  | 'malformed' // KubeNet type, but length or list count is wrong
  | 'forged' // this cluster's tag, but the MAC does not match the key
  | 'stale' // signed, but its counter is not fresh: a replay while its sender is alive
  | 'not-kube'; // some other SCC packet type

/** One decoded frame, JSON-friendly (field names follow the reference listener's records). */
export interface FrameRecord {
  /** Time the caller gave, in ms. */
  t: number;
  ch: number;
  dadr: number;
  sadr: number;
  typ: number;
  len: number;
  /** Hex of the whole 33-byte datagram (replayable). */
  raw: string;
  kind?: 'heartbeat' | 'assign' | 'spec' | 'refusal' | 'failed';
  cluster?: number;
  /** Heartbeat: the sender. Assignment: the node the list is for. */
  node?: string;
  ids?: number[];
  /** Spec: the pod id and its image. */
  id?: number;
  image?: string;
  /** Refusal: this part's words, its index and the count of parts. */
  text?: string;
  part?: string;
  counter?: number;
  /** The MAC matched the view's key. */
  auth?: boolean;
  fresh?: Freshness;
  verdict: Verdict;
  reason?: string;
}

export interface NodeView {
  name: string;
  /** Time of the last accepted heartbeat; null if only assignments were heard. */
  lastHeardMs: number | null;
  ageMs: number | null;
  /** Heard within the TTL (5 s). */
  ready: boolean;
  /** Ids the kubelet reports running (last heartbeat). */
  running: number[];
  /** Wanted ids its kubelet says it could not start (no such module, Start refused or trapped), heard within the TTL. */
  failed: number[];
  /** Ids the plane last assigned to it; null if no assignment heard yet. */
  assigned: number[] | null;
  assignedAtMs: number | null;
  /** Ready, an assignment heard, and the running set equals the assigned set. */
  converged: boolean;
  heartbeats: number;
  assignments: number;
  /** Accepted assignments whose id list differed from the previous one (order-sensitive, as the kubelet compares). */
  assignmentChanges: number;
  lastAssignmentChangeMs: number | null;
  /** Gaps longer than the TTL between two accepted heartbeats: times the node went NotReady and came back. */
  flaps: number;
}

export interface PodView {
  id: number;
  /** From the latest spec for this id; null if no spec heard yet. */
  image: string | null;
  /** Nodes whose latest assignment lists the id (one when healthy). */
  assignedTo: string[];
  /** Ready nodes that report running it (one when healthy). */
  runningOn: string[];
}

export interface ViewCounts {
  frames: number;
  ok: number;
  heartbeats: number;
  assignments: number;
  specs: number;
  refusals: number;
  failed: number;
  otherCluster: number;
  malformed: number;
  forged: number;
  stale: number;
  notKube: number;
  /** Datagrams that were not 33-byte frames (hellos, wrong sizes). */
  ignored: number;
}

export interface ClusterView {
  cluster: number;
  atMs: number;
  nodes: NodeView[];
  pods: PodView[];
  readyNodes: number;
  /** Ids running on Ready nodes, counted once each. */
  running: number;
  /** Ids reported by more than one Ready node. */
  duplicates: number[];
  /** At least one Ready node, every Ready node converged, no id running twice. */
  converged: boolean;
  plane: {
    lastHeardMs: number | null;
    ageMs: number | null;
    heard: boolean;
    counter: number | null;
    /**
     * What the plane says it refuses now (all parts heard within the TTL, at most
     * LIMITS.REFUSAL_CHARS characters); null when it says nothing: a refusal it no longer
     * repeats is over once the TTL has passed.
     */
    refusal: string | null;
  };
  counts: ViewCounts;
  /** Latest rejected frames (forged, stale, malformed, other cluster), newest last. */
  rejects: FrameRecord[];
}

export interface AirViewOptions {
  /** Cluster name (tag computed) or tag. Default "kube". */
  cluster?: string | number;
  /** The cluster's 8-byte key. Default the all-zero key, as KubeNet uses without one. */
  key?: Uint8Array;
  ttlMs?: number;
  /** Freshness-table eviction: 'stalest' as our machines (default), 'first' as the reference. */
  eviction?: Eviction;
  /** Silence after which the plane's counter is learned again: 180 s as our kubelets (default), 5 s as the reference's. */
  planeTtlMs?: number;
}

interface NodeState {
  name: string;
  lastHeardMs: number | null;
  running: number[];
  failed: number[];
  failedAtMs: number | null;
  assigned: number[] | null;
  assignedAtMs: number | null;
  heartbeats: number;
  assignments: number;
  assignmentChanges: number;
  lastAssignmentChangeMs: number | null;
  flaps: number;
}

const sameList = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

const sameSet = (a: readonly number[], b: readonly number[]): boolean => {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
};

export class AirView {
  readonly tag: number;
  readonly ttlMs: number;
  private readonly key: Uint8Array;
  private readonly freshness: FreshnessTable;
  private readonly nodes = new Map<string, NodeState>();
  private readonly images = new Map<number, string>();
  private planeHeardMs: number | null = null;
  private planeCounter: number | null = null;
  /** The refusal's parts as last heard, by index; the whole words once every part of one text is in. */
  private readonly refusalParts = new Map<number, { parts: number; sum: number; text: string }>();
  private refusal: { text: string; heardMs: number } | null = null;
  private readonly recentRejects: FrameRecord[] = [];
  private readonly c: ViewCounts = {
    frames: 0,
    ok: 0,
    heartbeats: 0,
    assignments: 0,
    specs: 0,
    refusals: 0,
    failed: 0,
    otherCluster: 0,
    malformed: 0,
    forged: 0,
    stale: 0,
    notKube: 0,
    ignored: 0,
  };

  constructor(opts: AirViewOptions = {}) {
    const cluster = opts.cluster ?? 'kube';
    this.tag = typeof cluster === 'number' ? cluster : clusterTag(cluster);
    if (!Number.isInteger(this.tag) || this.tag < 1 || this.tag > 255) {
      throw new RangeError(`cluster tag ${this.tag} is outside 1..255`);
    }
    this.key = opts.key ?? ZERO_KEY;
    if (this.key.length !== LIMITS.KEY_BYTES) throw new RangeError('the cluster key must be 8 bytes');
    this.ttlMs = opts.ttlMs ?? VIEW_LIMITS.TTL_MS;
    this.freshness = new FreshnessTable({
      capacity: VIEW_LIMITS.FRESHNESS_PEERS,
      eviction: opts.eviction,
      planeTtlMs: opts.planeTtlMs,
    });
  }

  /** Decodes, judges and applies one datagram. Returns null for anything that is not a frame. */
  ingest(tMs: number, datagram: Uint8Array): FrameRecord | null {
    const f = decodeKubeFrame(datagram);
    if (!f) {
      this.c.ignored++;
      return null;
    }
    this.c.frames++;
    const rec: FrameRecord = {
      t: tMs,
      ch: f.channel,
      dadr: f.header.dadr,
      sadr: f.header.sadr,
      typ: f.header.typ,
      len: f.header.len,
      raw: toHex(datagram),
      verdict: 'not-kube',
    };
    const kind = kindName(f.header.typ);
    if (!kind) {
      this.c.notKube++;
      return rec;
    }
    rec.kind = kind;
    if (!f.kube.ok) return this.reject(rec, 'malformed', f.kube.reason);
    const msg = f.kube.msg;
    rec.cluster = msg.cluster;
    rec.counter = msg.counter;
    if (msg.typ === TYP.SPEC) {
      rec.id = msg.podId;
      rec.image = msg.image;
    } else if (msg.typ === TYP.REFUSAL) {
      rec.text = msg.text;
      rec.part = `${msg.index + 1}/${msg.parts}`;
    } else {
      rec.node = msg.node;
      rec.ids = msg.ids;
    }
    rec.auth = macValid(this.key, f.kube);
    if (msg.cluster !== this.tag) return this.reject(rec, 'other-cluster');
    if (!rec.auth) return this.reject(rec, 'forged', 'MAC does not match the cluster key');
    const sender = msg.typ === TYP.HEARTBEAT || msg.typ === TYP.FAILED ? msg.node : PLANE_SENDER;
    rec.fresh = this.freshness.accept(sender, msg.counter, tMs);
    if (rec.fresh === 'stale') {
      const last = this.freshness.last(sender);
      return this.reject(rec, 'stale', `counter ${msg.counter} is not newer than ${last} of ${sender}`);
    }
    rec.verdict = 'ok';
    this.c.ok++;
    if (msg.typ === TYP.HEARTBEAT) {
      this.c.heartbeats++;
      const n = this.node(msg.node);
      if (n.lastHeardMs !== null && tMs - n.lastHeardMs > this.ttlMs) n.flaps++;
      n.lastHeardMs = tMs;
      n.running = msg.ids;
      n.heartbeats++;
    } else if (msg.typ === TYP.FAILED) {
      this.c.failed++;
      const n = this.node(msg.node);
      n.failed = msg.ids;
      n.failedAtMs = tMs;
    } else if (msg.typ === TYP.ASSIGN) {
      this.c.assignments++;
      const n = this.node(msg.node);
      if (n.assigned !== null && !sameList(n.assigned, msg.ids)) {
        n.assignmentChanges++;
        n.lastAssignmentChangeMs = tMs;
      }
      n.assigned = msg.ids;
      n.assignedAtMs = tMs;
      n.assignments++;
      this.planeHeardMs = tMs;
      this.planeCounter = msg.counter;
    } else if (msg.typ === TYP.SPEC) {
      this.c.specs++;
      this.images.set(msg.podId, msg.image);
      this.planeHeardMs = tMs;
      this.planeCounter = msg.counter;
    } else if (msg.typ === TYP.REFUSAL) {
      this.c.refusals++;
      this.hearRefusal(tMs, msg);
      this.planeHeardMs = tMs;
      this.planeCounter = msg.counter;
    }
    return rec;
  }

  /** The cluster as of `nowMs`. A fresh object; later ingests do not change it. */
  view(nowMs: number): ClusterView {
    const nodes: NodeView[] = [...this.nodes.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((n) => {
        const ageMs = n.lastHeardMs === null ? null : nowMs - n.lastHeardMs;
        const ready = ageMs !== null && ageMs <= this.ttlMs;
        return {
          name: n.name,
          lastHeardMs: n.lastHeardMs,
          ageMs,
          ready,
          running: [...n.running],
          failed: n.failedAtMs !== null && nowMs - n.failedAtMs <= this.ttlMs ? [...n.failed] : [],
          assigned: n.assigned ? [...n.assigned] : null,
          assignedAtMs: n.assignedAtMs,
          converged: ready && n.assigned !== null && sameSet(n.assigned, n.running),
          heartbeats: n.heartbeats,
          assignments: n.assignments,
          assignmentChanges: n.assignmentChanges,
          lastAssignmentChangeMs: n.lastAssignmentChangeMs,
          flaps: n.flaps,
        };
      });
    const ids = new Set<number>(this.images.keys());
    const assignedTo = new Map<number, string[]>();
    const runningOn = new Map<number, string[]>();
    for (const n of nodes) {
      for (const id of n.assigned ?? []) {
        ids.add(id);
        assignedTo.set(id, [...(assignedTo.get(id) ?? []), n.name]);
      }
      if (!n.ready) continue;
      for (const id of new Set(n.running)) {
        ids.add(id);
        runningOn.set(id, [...(runningOn.get(id) ?? []), n.name]);
      }
    }
    const pods: PodView[] = [...ids]
      .sort((a, b) => a - b)
      .map((id) => ({
        id,
        image: this.images.get(id) ?? null,
        assignedTo: assignedTo.get(id) ?? [],
        runningOn: runningOn.get(id) ?? [],
      }));
    const ready = nodes.filter((n) => n.ready);
    const duplicates = [...runningOn].filter(([, on]) => on.length > 1).map(([id]) => id);
    const planeAge = this.planeHeardMs === null ? null : nowMs - this.planeHeardMs;
    const refusal = this.refusal && nowMs - this.refusal.heardMs <= this.ttlMs ? this.refusal.text : null;
    return {
      cluster: this.tag,
      atMs: nowMs,
      nodes,
      pods,
      readyNodes: ready.length,
      running: runningOn.size,
      duplicates: duplicates.sort((a, b) => a - b),
      converged: ready.length > 0 && ready.every((n) => n.converged) && duplicates.length === 0,
      plane: {
        lastHeardMs: this.planeHeardMs,
        ageMs: planeAge,
        heard: planeAge !== null && planeAge <= this.ttlMs,
        counter: this.planeCounter,
        refusal,
      },
      counts: { ...this.c },
      rejects: this.recentRejects.map((r) => ({ ...r })),
    };
  }

  /** The image the plane announced for a pod id, if heard. */
  imageOf(id: number): string | undefined {
    return this.images.get(id);
  }

  /** Keeps a refusal part; when every part of that text is in and its sum agrees, the words stand. */
  private hearRefusal(tMs: number, m: { index: number; parts: number; sum: number; text: string }): void {
    this.refusalParts.set(m.index, { parts: m.parts, sum: m.sum, text: m.text });
    let text = '';
    for (let i = 0; i < m.parts; i++) {
      const p = this.refusalParts.get(i);
      if (!p || p.parts !== m.parts || p.sum !== m.sum) return;
      text += p.text;
    }
    if (text.length > LIMITS.REFUSAL_CHARS || refusalSum(text) !== m.sum) return;
    this.refusal = { text, heardMs: tMs };
  }

  private node(name: string): NodeState {
    let n = this.nodes.get(name);
    if (!n) {
      n = {
        name,
        lastHeardMs: null,
        running: [],
        failed: [],
        failedAtMs: null,
        assigned: null,
        assignedAtMs: null,
        heartbeats: 0,
        assignments: 0,
        assignmentChanges: 0,
        lastAssignmentChangeMs: null,
        flaps: 0,
      };
      this.nodes.set(name, n);
    }
    return n;
  }

  private reject(
    rec: FrameRecord,
    verdict: Exclude<Verdict, 'ok' | 'not-kube'>,
    reason?: string,
  ): FrameRecord {
    rec.verdict = verdict;
    if (reason) rec.reason = reason;
    if (verdict === 'other-cluster') this.c.otherCluster++;
    else if (verdict === 'malformed') this.c.malformed++;
    else if (verdict === 'forged') this.c.forged++;
    else this.c.stale++;
    this.recentRejects.push(rec);
    if (this.recentRejects.length > VIEW_LIMITS.RECENT_REJECTS) this.recentRejects.shift();
    return rec;
  }
}

/**
 * True when `replicas` pods (or any number, if omitted) run on Ready nodes, each exactly once,
 * and every Ready node runs what it was assigned — the harness's `converged(R)` (§8.1).
 */
export function isConverged(v: ClusterView, replicas?: number): boolean {
  return v.converged && (replicas === undefined || v.running === replicas);
}

/** One line per frame, as the reference listener prints it, plus the verdict when not ok. */
export function formatRecord(rec: FrameRecord, sinceMs: number): string {
  const t = ((rec.t - sinceMs) / 1000).toFixed(2).padStart(8);
  const flag =
    rec.verdict === 'ok' || rec.verdict === 'not-kube'
      ? ''
      : `  ${rec.verdict.toUpperCase()}${rec.reason ? ` (${rec.reason})` : ''}`;
  if (rec.kind && rec.cluster !== undefined) {
    const tag = `[${String(rec.cluster).padStart(3)}]`;
    if (rec.kind === 'spec') {
      return `${t}  ${'spec'.padEnd(9)}  ${tag} id ${String(rec.id).padEnd(5)}  ${rec.image}${flag}`;
    }
    if (rec.kind === 'refusal') {
      return `${t}  ${'refusal'.padEnd(9)}  ${tag} ${(rec.part ?? '').padEnd(8)}  "${rec.text ?? ''}"${flag}`;
    }
    return `${t}  ${rec.kind.padEnd(9)}  ${tag} ${(rec.node ?? '').padEnd(8)}  [${(rec.ids ?? []).join(', ')}]${flag}`;
  }
  const typ = `0x${rec.typ.toString(16).padStart(2, '0')}`;
  return `${t}  typ ${typ}  len ${rec.len}  ${rec.sadr} -> ${rec.dadr}${flag}`;
}

/** The view as a table for people. */
export function formatView(v: ClusterView): string {
  const lines: string[] = [];
  const planeAge = v.plane.ageMs === null ? 'never' : `${(v.plane.ageMs / 1000).toFixed(1)}s ago`;
  lines.push(
    `cluster ${v.cluster}  plane heard ${planeAge}  nodes ${v.readyNodes}/${v.nodes.length} Ready  ` +
      `pods running ${v.running}  ${v.converged ? 'CONVERGED' : 'converging'}`,
  );
  lines.push('');
  lines.push(`${'NODE'.padEnd(8)} ${'STATUS'.padEnd(9)} ${'HEARD'.padEnd(8)} ${'RUNS'.padEnd(32)} ASSIGNED`);
  for (const n of v.nodes) {
    const heard = n.ageMs === null ? '-' : `${(n.ageMs / 1000).toFixed(1)}s`;
    const status = n.ready ? (n.converged ? 'Ready' : 'Ready*') : 'NotReady';
    lines.push(
      `${n.name.padEnd(8)} ${status.padEnd(9)} ${heard.padEnd(8)} ${n.running.join(' ').padEnd(32)} ${n.assigned ? n.assigned.join(' ') : '-'}`,
    );
  }
  lines.push('');
  lines.push(`${'POD'.padEnd(5)} ${'IMAGE'.padEnd(16)} ${'ASSIGNED'.padEnd(16)} RUNNING`);
  for (const p of v.pods) {
    lines.push(
      `${String(p.id).padEnd(5)} ${(p.image ?? '?').padEnd(16)} ${(p.assignedTo.join(',') || '-').padEnd(16)} ${p.runningOn.join(',') || '-'}`,
    );
  }
  if (v.duplicates.length) lines.push(`\nrunning twice: ${v.duplicates.join(' ')}`);
  if (v.plane.refusal) lines.push(`\nthe plane refuses: ${v.plane.refusal}`);
  const c = v.counts;
  lines.push('');
  lines.push(
    `frames ${c.frames}: ok ${c.ok}, forged ${c.forged}, stale ${c.stale}, other cluster ${c.otherCluster}, ` +
      `malformed ${c.malformed}, other types ${c.notKube}`,
  );
  return lines.join('\n');
}
