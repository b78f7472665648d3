// The timer's pass when only Deployments' replica counts changed since the last schedule (a person's
// `scale`): the pods that stay keep their place, removed ones go, new ones are placed as phase 2 of
// the scheduler would place them, and only those rows are written. A full pass reads and rebuilds
// all 10,000 Nodes and Pods rows — 60 ms alone, 100–260 ms on the loaded bench host, with every
// heartbeat that arrives meanwhile waiting (bench/sheets-scale's profile: the longest stalls after
// the registration storm) — while this one touches the rows that change.
//
// Exactly what reconcilePass would do, under conditions the caller and this module check: no node
// joined, returned, went silent or changed capacity, labels or taints since the cached schedule (the
// cluster's flags say so); no hand-off in flight; every cached pod placed; each Deployment unchanged
// but for replicas, and a Deployment whose replicas changed binds no host ports. Then the full pass's
// phase 1 keeps every remaining pod where it is (a subset of pods that fitted still fits, on the same
// node, with the same ports), and phase 2 places only the new slots, in slot order, on the same
// allocation. Anything else: undefined, and the caller runs the full pass.

import { FreeHeap } from '../scheduler/free-heap.ts';
import { type DeploymentIn, deploymentsFromRows, intOr, type NodeIn, text } from '../scheduler/model.ts';
import { podRows } from '../scheduler/orders.ts';
import { matches, type Placement } from '../scheduler/schedule.ts';
import { type Row, SchemaError, type Tx } from '../store/types.ts';
import type { EventRow } from './events.ts';
import type { CachedSchedule, PassResult } from './reconcile.ts';

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

/** Up to this many new pods are placed by a scan of the nodes each; more build phase 2's heap once. */
const SCAN_BELOW = 8;

/**
 * Phase 2 of schedule() for pods without host ports, over the nodes' allocation `cpu`/`mem` (tab
 * order), changed in place. A scan picks the node with the most free CPU, first on ties — the heap's
 * top when it fits — so both ways place alike (the test compares with the full pass).
 */
function placeNew(
  nodes: readonly NodeIn[],
  placeable: (i: number) => boolean,
  cpu: Float64Array,
  mem: Float64Array,
  slots: { name: string; dep: DeploymentIn }[],
): Placement[] {
  const fits = (i: number, d: DeploymentIn) =>
    cpu[i] + d.cpuReq <= nodes[i].cpuTotal && mem[i] + d.memReq <= nodes[i].memTotal;
  let heap: FreeHeap | undefined;
  let items: number[] = []; // heap item → node index
  if (slots.length >= SCAN_BELOW) {
    items = nodes.map((_, i) => i).filter(placeable);
    const freeOf = (j: number) => nodes[items[j]].cpuTotal - cpu[items[j]];
    if (items.every((_, j) => Number.isFinite(freeOf(j)))) heap = new FreeHeap(items.length, freeOf);
  }
  const itemOf = heap ? new Map(items.map((n, j) => [n, j])) : undefined;
  return slots.map(({ name, dep }) => {
    const t = heap ? heap.top() : -1;
    let best = t >= 0 && fits(items[t], dep) && matches(dep, nodes[items[t]]) ? items[t] : -1;
    if (best < 0) {
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
    cpu[best] += dep.cpuReq;
    mem[best] += dep.memReq;
    const j = itemOf?.get(best);
    if (j !== undefined) heap?.update(j);
    return { name, deployment: dep.name, node: nodes[best].name, ports: [] };
  });
}

/**
 * The pass as an update of `cache`, or undefined when the conditions above do not hold (then the
 * caller runs reconcilePass in the same transaction; nothing has been written). The cache's byNode
 * is updated in place (a copy of 10,000 entries was a third of this pass): the returned cache
 * replaces it.
 */
export function replicasPass(tx: Tx, cache: CachedSchedule): PassResult | undefined {
  const nodes = cache.nodes;
  if (!nodes) return undefined;
  const { deployments, problems } = deploymentsFromRows(tx.rows('Deployments'));
  if (deployments.length !== cache.deployments.size) return undefined;
  const before = [...cache.deployments.values()];
  for (let i = 0; i < deployments.length; i++) {
    const d = deployments[i];
    if (!sameButReplicas(d, before[i])) return undefined;
    if (d.replicas !== before[i].replicas && d.ports.length > 0) return undefined;
  }
  const old = cache.result.placements;
  if (old.some((p) => p.node === '')) return undefined;
  let total = 0;
  for (const d of before) total += d.replicas;
  if (total !== old.length) return undefined;
  const deploymentsNow = new Map(deployments.map((d) => [d.name, d]));
  if (deployments.every((d, i) => d.replicas === before[i].replicas))
    return { cache: { ...cache, deployments: deploymentsNow }, handoffs: new Map(), events: [], problems };

  // The allocation after phase 1: the schedule's, less the removed pods' requests.
  const results = cache.result.nodes;
  const cpu = Float64Array.from(results, (r) => r.cpuUsed);
  const mem = Float64Array.from(results, (r) => r.memUsed);
  cache.nodeIndex ??= new Map(nodes.map((n, i) => [n.name, i]));
  const indexOf = cache.nodeIndex;
  // The cached placements are the slots in Deployment order: each Deployment's block, ordinals 1..n.
  const removed: Placement[] = [];
  const wanted: { name: string; dep: DeploymentIn }[] = [];
  for (let i = 0, at = 0; i < deployments.length; at += before[i].replicas, i++) {
    const d = deployments[i];
    const was = before[i].replicas;
    for (const p of old.slice(at + Math.min(was, d.replicas), at + was)) {
      removed.push(p);
      const n = indexOf.get(p.node) as number; // a placed pod's node is one of the schedule's
      cpu[n] -= d.cpuReq;
      mem[n] -= d.memReq;
    }
    for (let n = was + 1; n <= d.replicas; n++) wanted.push({ name: `${d.name}-${n}`, dep: d });
  }
  // Phase 2 for the new slots; placeable as the full timer pass has it (fresh and schedulable).
  const placedNew = placeNew(nodes, (i) => results[i].status === 'Ready', cpu, mem, wanted);

  // The Pods tab is the cached placements (only a pass changes its rows' order or set; a person's
  // edit makes the next pass a full one): each Deployment's block is cut or extended at its end.
  const policies = new Map(deployments.map((d) => [d.name, d.restartPolicy]));
  const newRows = podRows(placedNew, new Map(), undefined, (d) => policies.get(d) ?? '');
  const placements: Placement[] = [];
  try {
    for (let i = 0, at = 0, w = 0; i < deployments.length; at += before[i].replicas, i++) {
      const d = deployments[i];
      const was = before[i].replicas;
      const keep = Math.min(was, d.replicas);
      for (let j = at; j < at + keep; j++) placements.push(old[j]);
      const added = Math.max(0, d.replicas - was);
      const end = placements.length; // where this block ends in the new tab
      const cut = old.slice(at + keep, at + was).map((p) => p.name);
      if (cut.length > 0 || added > 0)
        tx.spliceRows(
          'Pods',
          end,
          cut,
          newRows.slice(w, w + added) as unknown as Row[],
          end > 0 ? placements[end - 1].name : undefined,
        );
      for (let j = 0; j < added; j++) placements.push(placedNew[w + j]);
      w += added;
    }
  } catch (e) {
    if (e instanceof SchemaError) return undefined; // the Pods tab is not the cached schedule's: full pass
    throw e;
  }

  const events: EventRow[] = placedNew.map((p) =>
    p.node
      ? { kind: 'Pod', object: p.name, message: `scheduled to ${p.node}` }
      : { kind: 'Pod', object: p.name, message: 'Unschedulable: no node fits' },
  );
  for (const p of removed)
    events.push({ kind: 'Pod', object: p.name, message: 'deleted (scaled down or deployment removed)' });

  // Nodes whose allocation changed: their cpu_used (status is the cached one: freshness is unchanged).
  const nodeResults = [...results];
  const changedNodes = new Set([...removed, ...placedNew].map((p) => p.node)); // '' holds the Unschedulable
  for (const name of changedNodes) {
    const i = indexOf.get(name);
    if (i === undefined) continue;
    const r = results[i];
    if (cpu[i] === r.cpuUsed && mem[i] === r.memUsed) continue;
    nodeResults[i] = { ...r, cpuUsed: cpu[i], memUsed: mem[i] };
    const row = tx.get('Nodes', r.name);
    if (row && (intOr(row.cpu_used, -1) !== cpu[i] || text(row.status) !== r.status))
      tx.update('Nodes', r.name, { cpu_used: cpu[i], status: r.status });
  }

  // Each node's pods in placement order (Deployment, then ordinal), as a full pass lists them.
  const depIndex = new Map(deployments.map((d, i) => [d.name, i]));
  const order = (p: Placement) =>
    (depIndex.get(p.deployment) ?? 0) * 1e6 + Number(p.name.slice(p.name.lastIndexOf('-') + 1));
  const gone = new Set(removed.map((p) => p.name));
  const byNode = cache.byNode;
  for (const n of changedNodes) {
    const list = (byNode.get(n) ?? []).filter((q) => !gone.has(q.name));
    for (const p of placedNew) if (p.node === n) list.push(p);
    list.sort((a, b) => order(a) - order(b));
    if (list.length > 0) byNode.set(n, list);
    else byNode.delete(n);
  }
  return {
    cache: {
      ...cache,
      result: { placements, nodes: nodeResults },
      byNode,
      deployments: deploymentsNow,
    },
    handoffs: new Map(),
    events,
    problems,
  };
}
