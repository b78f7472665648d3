// The timer's pass when the cluster changed only in ways that leave every placed pod where it is: a
// person's `scale` (Deployments' replica counts) and nodes that registered (the registration storm
// of a big cluster: 1,000 new Nodes rows a second). The pods that stay keep their place, removed ones
// go, the Unschedulable ones and the new replicas are placed as phase 2 of the scheduler would place
// them, and only their rows are written. A full pass reads and rebuilds all 10,000 Nodes and Pods
// rows — 60 ms alone, 100–260 ms on the loaded bench host, with every heartbeat that arrives
// meanwhile waiting (bench/sheets-scale's profile: the longest stalls of and after the storm) —
// while this one touches the rows that change.
//
// Exactly what reconcilePass would do, under conditions the caller and this module check: no node
// returned, went silent or changed capacity, labels or taints since the cached schedule (the
// cluster's flags say so); the nodes that joined are fresh, new, and at the end of the Nodes tab in
// the order given; no hand-off in flight; each Deployment unchanged but for replicas, and no pod left
// for phase 2 has host ports. Then the full pass's phase 1 keeps every remaining placed pod where it
// is (a subset of pods that fitted still fits, on the same node, with the same ports; a new node
// changes no other node's allocation), and phase 2 places only the Unschedulable pods that stay and
// the new slots, in slot order, on the same allocation plus the new nodes. Anything else: undefined,
// and the caller runs the full pass.

import { FreeHeap } from '../scheduler/free-heap.ts';
import { type DeploymentIn, deploymentsFromRows, intOr, type NodeIn, text } from '../scheduler/model.ts';
import { podRows } from '../scheduler/orders.ts';
import { isFresh, matches, type NodeResult, type Placement } from '../scheduler/schedule.ts';
import { type Row, SchemaError, type Tx } from '../store/types.ts';
import type { EventRow } from './events.ts';
import { type CachedSchedule, differs, type PassResult, scheduleKey } from './reconcile.ts';

/** Every field placement or a pod's row depends on, except replicas, is the same. */
function sameButReplicas(a: DeploymentIn, b: DeploymentIn): boolean {
  return (
    a.name === b.name &&
    a.image === b.image &&
    a.cpuReq === b.cpuReq &&
    a.memReq === b.memReq &&
    a.command === b.command &&
    a.env === b.env &&
    a.secretFiles === b.secretFiles &&
    a.restartPolicy === b.restartPolicy &&
    JSON.stringify(a.nodeSelector) === JSON.stringify(b.nodeSelector) &&
    JSON.stringify([...a.tolerations]) === JSON.stringify([...b.tolerations]) &&
    JSON.stringify(a.ports) === JSON.stringify(b.ports)
  );
}

export const LIMITS = {
  /** Up to this many new pods are placed by a scan of the nodes each; more build phase 2's heap once. */
  scanBelow: 8,
  // Unschedulable pods placed by one pass, at most: once this many have found a node, the rest wait,
  // untouched, for the next pass (new replicas are always placed). The first pass of a registration
  // storm found all 10,000 pods of bench/sheets-scale waiting and wrote them in one turn of the
  // event loop. At about 10 µs a pod and the timer's pacing (a pass, then 99 times its length
  // without one), 1,000 a pass is a stall of ~10 ms and still ~1,000 pods placed a second.
  maxPlacedPerPass: 1_000,
} as const;

/**
 * Phase 2 of schedule() for pods without host ports, over the nodes' allocation `cpu`/`mem` (tab
 * order), changed in place. A scan picks the node with the most free CPU, first on ties — the heap's
 * top when it fits — so both ways place alike (the test compares with the full pass). Once `budget`
 * pods are placed, the Unschedulable ones that stay (`was`) are left out: undefined.
 */
function placeNew(
  nodes: readonly NodeIn[],
  placeable: (i: number) => boolean,
  cpu: Float64Array,
  mem: Float64Array,
  slots: Slot[],
  budget: number,
): (Placement | undefined)[] {
  const fits = (i: number, d: DeploymentIn) =>
    cpu[i] + d.cpuReq <= nodes[i].cpuTotal && mem[i] + d.memReq <= nodes[i].memTotal;
  let heap: FreeHeap | undefined;
  const items: number[] = []; // heap item → node index
  // Node index → heap item (-1: not placeable). Typed arrays, not a Map of 10,000 entries built per
  // pass: the heap's set-up was the larger part of a pass that places a few pods.
  let itemOf: Int32Array | undefined;
  if (slots.length >= LIMITS.scanBelow) {
    for (let i = 0; i < nodes.length; i++) if (placeable(i)) items.push(i);
    const freeOf = (j: number) => nodes[items[j]].cpuTotal - cpu[items[j]];
    let finite = true;
    for (let j = 0; j < items.length && finite; j++) finite = Number.isFinite(freeOf(j));
    if (finite) {
      heap = new FreeHeap(items.length, freeOf);
      itemOf = new Int32Array(nodes.length).fill(-1);
      for (let j = 0; j < items.length; j++) itemOf[items[j]] = j;
    }
  }
  let placed = 0;
  return slots.map(({ name, dep, was }) => {
    if (was && placed >= budget) return undefined;
    const t = heap ? heap.top() : -1;
    let best = t >= 0 && fits(items[t], dep) && matches(dep, nodes[items[t]]) ? items[t] : -1;
    // The top has the most free CPU: when the pod's CPU does not fit there, it fits nowhere (a pod
    // left Unschedulable for want of CPU costs no scan of every node).
    const noCpu = t >= 0 && cpu[items[t]] + dep.cpuReq > nodes[items[t]].cpuTotal;
    if (best < 0 && !noCpu) {
      let bestFree = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < nodes.length; i++) {
        if (!placeable(i)) continue;
        const free = nodes[i].cpuTotal - cpu[i];
        if (free <= bestFree || !fits(i, dep) || !matches(dep, nodes[i])) continue;
        best = i;
        bestFree = free;
      }
    }
    if (best < 0) return { name, deployment: dep.name, node: '', ports: [] };
    placed++;
    cpu[best] += dep.cpuReq;
    mem[best] += dep.memReq;
    const j = itemOf ? itemOf[best] : -1;
    if (j >= 0) heap?.update(j);
    return { name, deployment: dep.name, node: nodes[best].name, ports: [] };
  });
}

/** Two lists each ordered by `key`, merged into one (stable: `a`'s entry first on a tie). */
function mergeBy<T>(a: T[], b: T[], key: (x: T) => number): T[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const out: T[] = [];
  let i = 0;
  let j = 0;
  let ka = key(a[0]);
  let kb = key(b[0]);
  while (i < a.length && j < b.length) {
    if (ka <= kb) {
      out.push(a[i++]);
      if (i < a.length) ka = key(a[i]);
    } else {
      out.push(b[j++]);
      if (j < b.length) kb = key(b[j]);
    }
  }
  while (i < a.length) out.push(a[i++]);
  while (j < b.length) out.push(b[j++]);
  return out;
}

export interface IncrementalInput {
  /** Unix s of the pass (the joined nodes' freshness, the cached schedule key). */
  now: number;
  nodeTtlSec: number;
  /**
   * Nodes registered since the cached schedule, as placement sees their rows, in the order the rows
   * were appended to the Nodes tab (a registration is the only thing that adds a Nodes row; the
   * cluster records each one, and its later heartbeats). Their rows are as a registration writes
   * them — cpu_used 0, status Ready — but for what the nodes' heartbeats updated: reading and
   * parsing thousands of rows again was a third of a storm's pass.
   */
  joined: readonly NodeIn[];
  /** LIMITS.maxPlacedPerPass (tests compare an uncapped pass with the full one). */
  maxPlaced?: number;
}

/** Whether every joined node is a plain fresh newcomer with a row (else the full pass runs). */
function joinedOk(tx: Tx, index: ReadonlyMap<string, number>, o: IncrementalInput): boolean {
  const seen = new Set<string>();
  for (const node of o.joined) {
    if (index.has(node.name) || seen.has(node.name)) return false;
    seen.add(node.name);
    if (!isFresh(node, o.now, o.nodeTtlSec) || !tx.has('Nodes', node.name)) return false;
  }
  return true;
}

/** A replica slot phase 2 places: an Unschedulable pod that stays (`was`), or a new replica. */
interface Slot {
  name: string;
  dep: DeploymentIn;
  was: boolean;
}

/**
 * The pass as an update of `cache`, or undefined when the conditions above do not hold (then the
 * caller runs reconcilePass; a decline is decided before anything is written, but for a Pods tab
 * that is not the cached schedule's, found while splicing). The cache's byNode is updated in place
 * (a copy of 10,000 entries was a third of this pass): the returned cache replaces it.
 */
export function incrementalPass(
  tx: Tx,
  cache: CachedSchedule,
  o: IncrementalInput,
): (PassResult & { deferred: number }) | undefined {
  const cached = cache.nodes;
  if (!cached) return undefined;
  const { deployments, problems } = deploymentsFromRows(tx.rows('Deployments'));
  if (deployments.length !== cache.deployments.size) return undefined;
  const before = [...cache.deployments.values()];
  for (let i = 0; i < deployments.length; i++)
    if (!sameButReplicas(deployments[i], before[i])) return undefined;
  const old = cache.result.placements;
  let total = 0;
  for (const d of before) total += d.replicas;
  if (total !== old.length) return undefined;
  cache.nodeIndex ??= new Map(cached.map((n, i) => [n.name, i]));
  const indexOf = cache.nodeIndex;
  const joined = o.joined;
  if (!joinedOk(tx, indexOf, o)) return undefined;

  // The cached placements are the slots in Deployment order: each Deployment's block, ordinals 1..n.
  // Phase 1 of the full pass keeps every placed pod that stays (a subset of pods that fitted still
  // fits, on the same node, with the same ports; a new node changes no one's allocation); phase 2
  // places the rest — the Unschedulable ones that stay and the new replicas — in slot order.
  const removed: Placement[] = [];
  let slots: Slot[] = [];
  for (let i = 0, at = 0; i < deployments.length; at += before[i].replicas, i++) {
    const d = deployments[i];
    const was = before[i].replicas;
    const keep = Math.min(was, d.replicas);
    for (let j = at; j < at + keep; j++)
      if (old[j].node === '') slots.push({ name: old[j].name, dep: d, was: true });
    for (const p of old.slice(at + keep, at + was)) removed.push(p);
    for (let n = was + 1; n <= d.replicas; n++) slots.push({ name: `${d.name}-${n}`, dep: d, was: false });
  }
  // Host ports are phase 2's bindPorts, not placeNew's.
  if (slots.some((s) => s.dep.ports.length > 0)) return undefined;
  const deploymentsNow = new Map(deployments.map((d) => [d.name, d]));
  if (joined.length === 0 && slots.length === 0 && removed.length === 0)
    return {
      cache: { ...cache, deployments: deploymentsNow },
      handoffs: new Map(),
      events: [],
      problems,
      deferred: 0,
    };

  // The nodes: the cached schedule's, then the joined ones (fresh, nothing placed on them yet).
  const nodes = joined.length > 0 ? [...cached, ...joined] : cached;
  const results = [
    ...cache.result.nodes,
    ...joined.map(
      (node): NodeResult => ({
        name: node.name,
        fresh: true,
        status: node.schedulable ? 'Ready' : 'SchedulingDisabled',
        cpuUsed: 0,
        memUsed: 0,
      }),
    ),
  ];
  // The index moves to the pass's cache with the joined nodes added, not copied (10,000 entries a
  // pass of the storm): the input cache gives it up and builds its own again if it is ever used.
  if (joined.length > 0) {
    cache.nodeIndex = undefined;
    for (let i = cached.length; i < nodes.length; i++) indexOf.set(nodes[i].name, i);
  }
  // The allocation after phase 1: the schedule's, less the removed pods' requests (plain loops:
  // Float64Array.from with a map function goes through the iterator protocol, per node).
  const cpu = new Float64Array(results.length);
  const mem = new Float64Array(results.length);
  for (let i = 0; i < results.length; i++) {
    cpu[i] = results[i].cpuUsed;
    mem[i] = results[i].memUsed;
  }
  for (const p of removed) {
    if (p.node === '') continue;
    const n = indexOf.get(p.node) as number; // a placed pod's node is one of the schedule's
    const d = deploymentsNow.get(p.deployment) as DeploymentIn;
    cpu[n] -= d.cpuReq;
    mem[n] -= d.memReq;
  }
  // Placeable as the full timer pass has it (fresh and schedulable). Unschedulable pods beyond
  // LIMITS.maxPlacedPerPass wait, untouched, for the next pass (`deferred`).
  const tried = placeNew(
    nodes,
    (i) => results[i].status === 'Ready',
    cpu,
    mem,
    slots,
    o.maxPlaced ?? LIMITS.maxPlacedPerPass,
  );
  // An Unschedulable pod that stays so keeps its row as a pass wrote it (the full pass would write
  // the same cells and no Event) and stays in the schedule's Unschedulable list: it is left out like
  // a deferred one, so a storm's first passes do not read and compare thousands of unchanged rows.
  const stays = (k: number) => tried[k] === undefined || (slots[k].was && tried[k]?.node === '');
  const deferred = tried.filter((p) => p === undefined).length;
  const placed = tried.filter((_, k) => !stays(k)) as Placement[];
  if (placed.length < tried.length) slots = slots.filter((_, k) => !stays(k));
  // The rows of the Unschedulable pods that stay: podRows starts from them, as the full pass's does.
  const prev = new Map<string, Row>();
  for (const s of slots) {
    if (!s.was) continue;
    const r = tx.get('Pods', s.name);
    if (!r) return undefined;
    prev.set(s.name, r);
  }

  const events: EventRow[] = [];
  for (let k = 0; k < slots.length; k++) {
    const p = placed[k];
    if (p.node) events.push({ kind: 'Pod', object: p.name, message: `scheduled to ${p.node}` });
    else if (!slots[k].was)
      events.push({ kind: 'Pod', object: p.name, message: 'Unschedulable: no node fits' });
  }
  for (const p of removed)
    events.push({ kind: 'Pod', object: p.name, message: 'deleted (scaled down or deployment removed)' });

  // The Pods tab is the cached placements (only a pass changes its rows' order or set; a person's
  // edit makes the next pass a full one): a stayed pod's row is updated where it is, and each
  // Deployment's block is cut or extended at its end.
  const policies = new Map(deployments.map((d) => [d.name, d.restartPolicy]));
  const rows = podRows(placed, prev, undefined, (d) => policies.get(d) ?? '') as unknown as Row[];
  const placements: Placement[] = [];
  try {
    for (let i = 0, at = 0, k = 0; i < deployments.length; at += before[i].replicas, i++) {
      const d = deployments[i];
      const was = before[i].replicas;
      const keep = Math.min(was, d.replicas);
      for (let j = at; j < at + keep; j++) {
        if (old[j].node !== '' || slots[k]?.name !== old[j].name) {
          placements.push(old[j]); // placed, or deferred
          continue;
        }
        const b = prev.get(old[j].name) as Row;
        if (differs(b, rows[k])) tx.update('Pods', old[j].name, rows[k]);
        placements.push(placed[k++]);
      }
      const added = Math.max(0, d.replicas - was);
      const end = placements.length; // where this block ends in the new tab
      const cut = old.slice(at + keep, at + was).map((p) => p.name);
      if (cut.length > 0 || added > 0)
        tx.spliceRows(
          'Pods',
          end,
          cut,
          rows.slice(k, k + added),
          end > 0 ? placements[end - 1].name : undefined,
        );
      for (let j = 0; j < added; j++) placements.push(placed[k++]);
    }
  } catch (e) {
    if (e instanceof SchemaError) return undefined; // the Pods tab is not the cached schedule's: full pass
    throw e;
  }

  // Nodes whose allocation changed, and joined ones whose row a registration did not leave as the
  // pass has them (not schedulable): cpu_used and status where the row differs (status is the cached
  // one for the others: their freshness is unchanged), as the full pass writes.
  const nodeResults = results; // a copy already (of the cache's and the joined nodes'): updated in place
  const touched = new Set<number>();
  for (const p of [...removed, ...placed]) {
    const i = indexOf.get(p.node); // '' holds the Unschedulable
    if (i !== undefined) touched.add(i);
  }
  for (let i = cached.length; i < nodes.length; i++) if (results[i].status !== 'Ready') touched.add(i);
  for (const i of [...touched].sort((a, b) => a - b)) {
    const r = results[i];
    if (cpu[i] !== r.cpuUsed || mem[i] !== r.memUsed)
      nodeResults[i] = { ...r, cpuUsed: cpu[i], memUsed: mem[i] };
    const row = tx.get('Nodes', r.name);
    if (!row) continue;
    if (text(row.status) !== r.status && text(row.status) !== '')
      events.push({ kind: 'Node', object: r.name, message: `status ${r.status}` });
    if (intOr(row.cpu_used, -1) !== cpu[i] || text(row.status) !== r.status)
      tx.update('Nodes', r.name, { cpu_used: cpu[i], status: r.status });
  }

  // Each node's pods in placement order (Deployment, then ordinal), as a full pass lists them.
  const depIndex = new Map(deployments.map((d, i) => [d.name, i]));
  const order = (p: Placement) =>
    (depIndex.get(p.deployment) ?? 0) * 1e6 + Number(p.name.slice(p.name.lastIndexOf('-') + 1));
  const gone = new Set([...removed.map((p) => p.name), ...slots.filter((s) => s.was).map((s) => s.name)]);
  const byNode = cache.byNode;
  const placedOn = new Map<string, Placement[]>(); // by node: one pass over the placed, not one per node
  for (const p of placed) {
    const l = placedOn.get(p.node);
    if (l) l.push(p);
    else placedOn.set(p.node, [p]);
  }
  const listed = new Set([...removed.map((p) => p.node), ...placedOn.keys()]);
  if (slots.some((s) => s.was)) listed.add('');
  for (const n of listed) {
    // Both lists are in that order already (placed is in slot order): merged, not sorted — the
    // Unschedulable list holds up to every pod, and sorting it was most of a storm's pass.
    const list = mergeBy(
      (byNode.get(n) ?? []).filter((q) => !gone.has(q.name)),
      placedOn.get(n) ?? [],
      order,
    );
    if (list.length > 0) byNode.set(n, list);
    else byNode.delete(n);
  }
  if (joined.length === 0)
    return {
      cache: { ...cache, result: { placements, nodes: nodeResults }, byNode, deployments: deploymentsNow },
      handoffs: new Map(),
      events,
      problems,
      deferred,
    };
  const fresh = new Set(cache.fresh);
  const caps = new Map(cache.caps);
  let staleAt = cache.staleAt;
  for (const node of joined) {
    fresh.add(node.name);
    caps.set(node.name, `${node.cpuTotal}|${node.memTotal}`);
    staleAt = Math.min(staleAt, node.lastHeartbeat + o.nodeTtlSec);
  }
  let key: string | undefined;
  return {
    cache: {
      key: () => (key ??= scheduleKey(nodes, o.now, o.nodeTtlSec)),
      fresh,
      caps,
      staleAt,
      result: { placements, nodes: nodeResults },
      byNode,
      deployments: deploymentsNow,
      nodes,
      nodeIndex: indexOf,
    },
    handoffs: new Map(),
    events,
    problems,
    deferred,
  };
}
