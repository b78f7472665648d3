// What an air sounds like as a whole, without any cluster's key: who transmits, which clusters
// are on it, how busy it is. Fed with the same (time, datagram) pairs as the AirView; pure (time is
// whatever the caller passes), no sockets. The OberonAir status is made of its summary.
//
// Without a key nothing here is verified: a node is "heard" when a heartbeat with its name and
// its cluster's tag crossed the air. A cluster whose key the operator knows (an OberonKube on this
// air) also carries its verified forged-frame count, from that cluster's AirView.
import { decodeKubeFrame } from '../air/kubenet.ts';
import { TYP, LIMITS as WIRE } from '../air/wire.ts';

export const CENSUS_LIMITS = {
  stationTtlMs: WIRE.RELAY_PEER_TTL_MS, // a sender silent this long is gone, as the relay forgets a peer
  rateWindowMs: 10_000, // frames/s is averaged over this window: ten heartbeat periods
  maxClusters: 16, // clusters listed in status (the tag space is 255; an air with more is a party)
  maxNodesPerCluster: 20, // node names listed per cluster (an OberonKube has at most 20 nodes)
  maxSenders: 1_024, // senders remembered; beyond that the stalest is forgotten (bounded memory)
  maxNodesRemembered: 256, // node names remembered per tag (forged names must not grow memory)
  rateSlack: 0.25, // a rate within 25 % of the one in status is "the same" (no write for jitter)
  rateSlackAbs: 0.5, // ... or within 0.5 frames/s, for slow airs
} as const;

/** One cluster tag heard on the air. */
export interface HeardCluster {
  tag: number;
  /** The cluster name when an OberonKube on this air names it, else '' (a tag is not reversible). */
  name: string;
  /** The operator holds this cluster's key, so forged frames can be told from genuine ones. */
  verified: boolean;
  /** Node names heard in heartbeats within the station TTL, sorted (unverified names). */
  nodes: string[];
  /** Assignments or specs (the plane's messages) heard within the station TTL. */
  plane: boolean;
  /** Frames with this tag and a bad MAC heard so far; 0 when not verified (cannot be judged). */
  forgedFrames: number;
}

/** The air as heard: the `heard` block of the OberonAir status. */
export interface AirHeard {
  /** Distinct senders heard within the station TTL: nodes by name, planes by tag, others by SCC address. */
  stations: number;
  /** Frames per second over the last window, one decimal. */
  framesPerSecond: number;
  clusters: HeardCluster[];
}

interface ClusterState {
  nodes: Map<string, number>;
  planeMs: number;
}

export class AirCensus {
  /** Sender identity → time last heard. */
  private readonly senders = new Map<string, number>();
  private readonly clusters = new Map<number, ClusterState>();
  /** Frame arrival times within the rate window, oldest first. */
  private readonly recent: number[] = [];

  ingest(tMs: number, datagram: Uint8Array): void {
    const f = decodeKubeFrame(datagram);
    if (!f) return; // a hello or not a frame: the relay would not forward it either
    this.recent.push(tMs);
    this.trimRate(tMs);
    if (f.kube.ok) {
      const msg = f.kube.msg;
      const c = this.cluster(msg.cluster);
      if (msg.typ === TYP.HEARTBEAT) {
        touch(c.nodes, msg.node, tMs, CENSUS_LIMITS.maxNodesRemembered);
        this.heardFrom(`node ${msg.cluster}/${msg.node}`, tMs);
      } else {
        c.planeMs = tMs;
        this.heardFrom(`plane ${msg.cluster}`, tMs);
      }
    } else {
      this.heardFrom(`scc ${f.header.sadr}`, tMs);
    }
  }

  /** The air as of `nowMs`; `known` names clusters (by tag) whose key the operator holds. */
  summary(
    nowMs: number,
    known: ReadonlyMap<number, { name: string; forgedFrames: number }> = new Map(),
  ): AirHeard {
    const alive = (t: number) => nowMs - t <= CENSUS_LIMITS.stationTtlMs;
    this.trimRate(nowMs);
    let stations = 0;
    for (const [id, t] of this.senders) {
      if (alive(t)) stations++;
      else this.senders.delete(id);
    }
    const clusters: HeardCluster[] = [];
    const tags = new Set<number>([...this.clusters.keys(), ...known.keys()]);
    for (const tag of [...tags].sort((a, b) => a - b)) {
      const c = this.clusters.get(tag);
      for (const [n, t] of c?.nodes ?? []) if (!alive(t)) c?.nodes.delete(n);
      const nodes = c ? [...c.nodes.keys()] : [];
      const plane = !!c && c.planeMs > 0 && alive(c.planeMs);
      const k = known.get(tag);
      // A known cluster is always listed (its forged count matters even while it is silent).
      if (!nodes.length && !plane && !k) {
        this.clusters.delete(tag);
        continue;
      }
      clusters.push({
        tag,
        name: k?.name ?? '',
        verified: !!k,
        nodes: nodes.sort().slice(0, CENSUS_LIMITS.maxNodesPerCluster),
        plane,
        forgedFrames: k?.forgedFrames ?? 0,
      });
    }
    return {
      stations,
      framesPerSecond: Math.round((this.recent.length * 10_000) / CENSUS_LIMITS.rateWindowMs) / 10,
      clusters: clusters.slice(0, CENSUS_LIMITS.maxClusters),
    };
  }

  private cluster(tag: number): ClusterState {
    let c = this.clusters.get(tag);
    if (!c) {
      c = { nodes: new Map(), planeMs: 0 };
      this.clusters.set(tag, c);
    }
    return c;
  }

  private heardFrom(id: string, tMs: number): void {
    touch(this.senders, id, tMs, CENSUS_LIMITS.maxSenders);
  }

  private trimRate(nowMs: number): void {
    let drop = 0;
    while (drop < this.recent.length && nowMs - (this.recent[drop] as number) >= CENSUS_LIMITS.rateWindowMs)
      drop++;
    if (drop) this.recent.splice(0, drop);
  }
}

/** Marks `id` heard at `tMs`, keeping the map least recently heard first and at most `max` long. */
function touch(m: Map<string, number>, id: string, tMs: number, max: number): void {
  m.delete(id);
  m.set(id, tMs);
  if (m.size > max) {
    const stalest = m.keys().next().value;
    if (stalest !== undefined) m.delete(stalest);
  }
}

/**
 * The rate to report: the one already in status while the new one is within the slack (so a
 * steady air causes no status writes), the new one otherwise. Silence is always reported.
 */
export function steadyRate(reported: number | undefined, current: number): number {
  if (reported === undefined || current === 0 || reported === 0) return current;
  const slack = Math.max(CENSUS_LIMITS.rateSlackAbs, reported * CENSUS_LIMITS.rateSlack);
  return Math.abs(current - reported) <= slack ? reported : current;
}
