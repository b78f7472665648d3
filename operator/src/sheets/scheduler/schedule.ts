// The scheduler (spec §3) as one pure function: Deployments × Nodes (+ the current Pods for
// stickiness) → a placement for every replica slot and the allocation of every node.
import { FreeHeap } from './free-heap.ts';
import type { DeploymentIn, ExistingPod, NodeIn } from './model.ts';
import type { AssignedPort, PortSpec } from './ports.ts';

export type NodeStatus = 'Ready' | 'NotReady' | 'SchedulingDisabled';

export interface ScheduleInput {
  deployments: DeploymentIn[];
  nodes: NodeIn[];
  /** Current Pods rows by pod name (node "" = not placed). */
  existing: ReadonlyMap<string, ExistingPod>;
  /** Unix seconds. */
  now: number;
  nodeTtlSec: number;
  /** Nodes being drained: they keep nothing and take nothing in this pass. */
  exclude?: ReadonlySet<string>;
  /** NODEPORT_RANGE, inclusive. */
  portRange: [number, number];
}

export interface Placement {
  name: string;
  deployment: string;
  /** "" = Unschedulable. */
  node: string;
  ports: AssignedPort[];
}

export interface NodeResult {
  name: string;
  fresh: boolean;
  status: NodeStatus;
  cpuUsed: number;
  memUsed: number;
}

export interface ScheduleResult {
  placements: Placement[];
  nodes: NodeResult[];
}

interface NodeAlloc {
  node: NodeIn;
  fresh: boolean;
  keepable: boolean;
  placeable: boolean;
  cpu: number;
  mem: number;
  /** Bound `port/proto` keys; made at the first binding (most nodes of a big cluster bind none). */
  bound: Set<string> | undefined;
  /** Lowest port of the range that might still be free (every lower one is bound or fixed). */
  autoCursor: { tcp: number; udp: number };
  /** Its number in phase 2's FreeHeap (placeable nodes in tab order), -1 when not placeable. */
  heapItem: number;
}

const portKey = (port: number, proto: string): string => `${port}/${proto}`;

export function isFresh(node: NodeIn, now: number, ttlSec: number): boolean {
  return node.lastHeartbeat > 0 && now - node.lastHeartbeat < ttlSec;
}

/** node_selector ⊆ labels, and every NoSchedule taint tolerated (by `k=v` or bare `k`). */
export function matches(dep: DeploymentIn, node: NodeIn): boolean {
  // for…in, not Object.entries: this runs once per pod and candidate node (no array per call).
  for (const k in dep.nodeSelector) {
    if (!Object.hasOwn(dep.nodeSelector, k)) continue;
    if (node.labels[k] !== dep.nodeSelector[k]) return false;
  }
  for (const t of node.taints) {
    if (t.effect !== 'NoSchedule') continue;
    if (!dep.tolerations.has(t.key) && !dep.tolerations.has(`${t.key}=${t.value}`)) return false;
  }
  return true;
}

function fits(a: NodeAlloc, dep: DeploymentIn): boolean {
  return a.cpu + dep.cpuReq <= a.node.cpuTotal && a.mem + dep.memReq <= a.node.memTotal;
}

/**
 * Binds a pod's ports on one node, or returns null when it cannot. `prev` are the pod's previous
 * host ports (an auto port keeps its old number when still valid). Nothing is committed here.
 */
function bindPorts(
  a: NodeAlloc,
  specs: PortSpec[],
  prev: AssignedPort[] | undefined,
  fixedAnywhere: ReadonlySet<string>,
  range: [number, number],
): AssignedPort[] | null {
  if (specs.length === 0) return [];
  const taken = new Set<string>();
  const isFree = (port: number, proto: string) =>
    !a.bound?.has(portKey(port, proto)) && !taken.has(portKey(port, proto));
  const out: AssignedPort[] = [];
  for (const s of specs) {
    if (s.host !== null) {
      if (!isFree(s.host, s.proto)) return null;
      taken.add(portKey(s.host, s.proto));
      out.push({ host: s.host, container: s.container, proto: s.proto });
      continue;
    }
    const old = prev?.find((p) => p.container === s.container && p.proto === s.proto);
    const oldOk =
      old !== undefined &&
      old.host >= range[0] &&
      old.host <= range[1] &&
      !fixedAnywhere.has(portKey(old.host, s.proto)) &&
      isFree(old.host, s.proto);
    let host = oldOk ? (old as AssignedPort).host : -1;
    if (host < 0) {
      for (let p = Math.max(range[0], a.autoCursor[s.proto]); p <= range[1]; p++) {
        if (!fixedAnywhere.has(portKey(p, s.proto)) && isFree(p, s.proto)) {
          host = p;
          break;
        }
      }
    }
    if (host < 0) return null;
    taken.add(portKey(host, s.proto));
    out.push({ host, container: s.container, proto: s.proto });
  }
  return out;
}

function commit(
  a: NodeAlloc,
  dep: DeploymentIn,
  ports: AssignedPort[],
  range: [number, number],
  fixed: ReadonlySet<string>,
) {
  a.cpu += dep.cpuReq;
  a.mem += dep.memReq;
  // A pod without host ports binds nothing, and the cursors stay a valid lower bound (every port
  // below them is bound or fixed): only a binding moves them. Most pods have none, and advancing
  // both cursors built two port keys per pod.
  if (ports.length === 0) return;
  a.bound ??= new Set();
  for (const p of ports) a.bound.add(portKey(p.host, p.proto));
  // Advance the auto cursors past ports that are now bound or fixed.
  for (const proto of ['tcp', 'udp'] as const) {
    let c = Math.max(a.autoCursor[proto], range[0]);
    while (c <= range[1] && (a.bound?.has(portKey(c, proto)) || fixed.has(portKey(c, proto)))) c++;
    a.autoCursor[proto] = c;
  }
}

export function schedule(input: ScheduleInput): ScheduleResult {
  const exclude = input.exclude ?? new Set<string>();
  const allocs: NodeAlloc[] = [];
  const byName = new Map<string, NodeAlloc>();
  for (const node of input.nodes) {
    if (byName.has(node.name)) continue; // a duplicated Nodes row: the first one counts
    const fresh = isFresh(node, input.now, input.nodeTtlSec);
    const keepable = fresh && !exclude.has(node.name);
    const a: NodeAlloc = {
      node,
      fresh,
      keepable,
      placeable: keepable && node.schedulable,
      cpu: 0,
      mem: 0,
      bound: undefined,
      autoCursor: { tcp: input.portRange[0], udp: input.portRange[0] },
      heapItem: -1,
    };
    allocs.push(a);
    byName.set(node.name, a);
  }

  const fixed = new Set<string>();
  for (const d of input.deployments)
    for (const p of d.ports) if (p.host !== null) fixed.add(portKey(p.host, p.proto));

  // Slots in Deployment-row order, ordinals 1..replicas; a duplicated Deployment name counts once.
  const slots: { name: string; dep: DeploymentIn }[] = [];
  const seenDeps = new Set<string>();
  for (const dep of input.deployments) {
    if (seenDeps.has(dep.name)) continue;
    seenDeps.add(dep.name);
    for (let i = 1; i <= dep.replicas; i++) slots.push({ name: `${dep.name}-${i}`, dep });
  }

  // By slot number (slot names are unique: a name's last `-n` is its ordinal): an array, not a Map
  // keyed by name — setting 10,000 Map entries was the schedule's hottest line in the profile.
  const placed: (Placement | undefined)[] = new Array(slots.length);
  let placedCount = 0;
  // Phase 1: running pods keep their node when it is keepable and still matches, fits and binds.
  for (let k = 0; k < slots.length; k++) {
    const { name, dep } = slots[k];
    const prev = input.existing.get(name);
    if (!prev?.node) continue;
    const a = byName.get(prev.node);
    if (!a?.keepable || !matches(dep, a.node) || !fits(a, dep)) continue;
    const ports = bindPorts(a, dep.ports, prev.ports, fixed, input.portRange);
    if (!ports) continue;
    commit(a, dep, ports, input.portRange, fixed);
    placed[k] = { name, deployment: dep.name, node: a.node.name, ports };
    placedCount++;
  }
  // Phase 2: the rest go to the placeable node with the most free CPU (first in tab order on ties).
  // The heap's top is that node among all placeable ones; when it fits, matches and binds, no other
  // node can be preferred, so only a pod it cannot take scans them all (non-finite CPU: always scan).
  const placeable = allocs.filter((a) => a.placeable);
  const freeOf = (i: number) => placeable[i].node.cpuTotal - placeable[i].cpu;
  placeable.forEach((a, i) => {
    a.heapItem = i;
  });
  // Built only when some pod is left for phase 2 (a steady cluster keeps every pod in phase 1).
  const heap =
    placedCount < slots.length && placeable.every((_, i) => Number.isFinite(freeOf(i)))
      ? new FreeHeap(placeable.length, freeOf)
      : undefined;
  for (let k = 0; k < slots.length; k++) {
    if (placed[k]) continue;
    const { name, dep } = slots[k];
    const prev = input.existing.get(name);
    let best: NodeAlloc | null = null;
    let bestPorts: AssignedPort[] = [];
    const t = heap ? heap.top() : -1;
    const top = t >= 0 ? placeable[t] : undefined;
    if (top && fits(top, dep) && matches(dep, top.node)) {
      const ports = bindPorts(top, dep.ports, prev?.ports, fixed, input.portRange);
      if (ports) {
        best = top;
        bestPorts = ports;
      }
    }
    let bestFree = Number.NEGATIVE_INFINITY;
    for (const a of best ? [] : allocs) {
      if (!a.placeable) continue;
      const free = a.node.cpuTotal - a.cpu;
      if (free <= bestFree) continue;
      if (!fits(a, dep) || !matches(dep, a.node)) continue;
      const ports = bindPorts(a, dep.ports, prev?.ports, fixed, input.portRange);
      if (!ports) continue;
      best = a;
      bestPorts = ports;
      bestFree = free;
    }
    if (best) {
      commit(best, dep, bestPorts, input.portRange, fixed);
      if (best.heapItem >= 0) heap?.update(best.heapItem);
      placed[k] = { name, deployment: dep.name, node: best.node.name, ports: bestPorts };
    } else {
      placed[k] = { name, deployment: dep.name, node: '', ports: [] };
    }
  }

  return {
    placements: placed as Placement[], // every slot is placed (or Unschedulable) by phase 2
    nodes: allocs.map((a) => ({
      name: a.node.name,
      fresh: a.fresh,
      status: !a.fresh ? 'NotReady' : !a.node.schedulable ? 'SchedulingDisabled' : 'Ready',
      cpuUsed: a.cpu,
      memUsed: a.mem,
    })),
  };
}
