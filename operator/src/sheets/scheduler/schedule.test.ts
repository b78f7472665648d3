import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type DeploymentIn,
  deploymentFromRow,
  type ExistingPod,
  type NodeIn,
  nodeFromRow,
  type Row,
} from './model.ts';
import { nodeOrders, podRows, specHash, updateHandoffs } from './orders.ts';
import { parsePorts } from './ports.ts';
import { matches, type Placement, type ScheduleInput, schedule } from './schedule.ts';

const NOW = 1_800_000_000;
const dep = (r: Row): DeploymentIn => deploymentFromRow(r) as DeploymentIn;
const node = (r: Row): NodeIn => nodeFromRow({ last_heartbeat: NOW - 1, ...r }) as NodeIn;
const run = (p: Partial<ScheduleInput> & Pick<ScheduleInput, 'deployments' | 'nodes'>) =>
  schedule({ existing: new Map(), now: NOW, nodeTtlSec: 30, portRange: [30000, 32767], ...p });
const existingOf = (pl: Placement[]): Map<string, ExistingPod> =>
  new Map(pl.map((p) => [p.name, { name: p.name, node: p.node, ports: p.ports }]));
const where = (pl: Placement[]) => Object.fromEntries(pl.map((p) => [p.name, p.node]));

describe('scheduler examples (spec §3 and the reference test list)', () => {
  it('spreads four 100m pods over two equal nodes 2+2 and allocates 200m each', () => {
    const r = run({
      deployments: [dep({ name: 'web', replicas: 4 })],
      nodes: [node({ name: 'a' }), node({ name: 'b' })],
    });
    expect(r.placements.map((p) => p.name)).toEqual(['web-1', 'web-2', 'web-3', 'web-4']);
    expect(r.placements.filter((p) => p.node === 'a')).toHaveLength(2);
    expect(r.nodes.map((n) => n.cpuUsed)).toEqual([200, 200]);
  });

  it("three pods on three equal fresh nodes: one each; placed while one node alone was fresh, they stay there (the live view's three sample pods on node-b)", () => {
    const three = [node({ name: 'node-a' }), node({ name: 'node-b' }), node({ name: 'node-c' })];
    const deployments = [dep({ name: 'web', replicas: 3 })];
    expect(Object.values(where(run({ deployments, nodes: three }).placements)).sort()).toEqual([
      'node-a',
      'node-b',
      'node-c',
    ]);
    // node-b heartbeat first: all three there; the others join later; phase 1 keeps them (spec §3.4)
    const stale = (n: string) => node({ name: n, last_heartbeat: 0 });
    const first = run({ deployments, nodes: [stale('node-a'), node({ name: 'node-b' }), stale('node-c')] });
    expect(new Set(Object.values(where(first.placements)))).toEqual(new Set(['node-b']));
    const later = run({ deployments, nodes: three, existing: existingOf(first.placements) });
    expect(new Set(Object.values(where(later.placements)))).toEqual(new Set(['node-b']));
  });

  it('keeps running pods where they are (sticky) even when another node has more room', () => {
    const nodes = [node({ name: 'a', cpu_total: 1000 }), node({ name: 'b', cpu_total: 8000 })];
    const existing = new Map([['web-1', { name: 'web-1', node: 'a', ports: [] }]]);
    const r = run({ deployments: [dep({ name: 'web', replicas: 1 })], nodes, existing });
    expect(where(r.placements)).toEqual({ 'web-1': 'a' });
  });

  it('moves pods off a node whose heartbeat is older than the TTL and marks it NotReady', () => {
    const nodes = [node({ name: 'a', last_heartbeat: NOW - 30 }), node({ name: 'b' })];
    const existing = new Map([['web-1', { name: 'web-1', node: 'a', ports: [] }]]);
    const r = run({ deployments: [dep({ name: 'web', replicas: 1 })], nodes, existing });
    expect(where(r.placements)).toEqual({ 'web-1': 'b' });
    expect(r.nodes[0].status).toBe('NotReady');
  });

  it('treats a heartbeat just inside the TTL as fresh (strict inequality)', () => {
    const r = run({
      deployments: [dep({ name: 'web', replicas: 1 })],
      nodes: [node({ name: 'a', last_heartbeat: NOW - 29 })],
    });
    expect(r.placements[0].node).toBe('a');
  });

  it('leaves a pod bigger than any node Unschedulable and consuming nothing', () => {
    const r = run({
      deployments: [dep({ name: 'big', replicas: 1, cpu_req: 9000 })],
      nodes: [node({ name: 'a', cpu_total: 4000 })],
    });
    expect(r.placements[0].node).toBe('');
    expect(r.nodes[0].cpuUsed).toBe(0);
  });

  it('packs 4×2000m onto 4000m+2000m nodes as 2, 1 and one unplaced', () => {
    const nodes = [
      node({ name: 'a', cpu_total: 4000, mem_total: 99999 }),
      node({ name: 'b', cpu_total: 2000, mem_total: 99999 }),
    ];
    const r = run({ deployments: [dep({ name: 'w', replicas: 4, cpu_req: 2000 })], nodes });
    expect(r.placements.map((p) => p.node).sort()).toEqual(['', 'a', 'a', 'b']);
  });

  it('uses memory as a constraint: two 6000 MiB pods on 8192 MiB → one fits', () => {
    const r = run({
      deployments: [dep({ name: 'm', replicas: 2, mem_req: 6000, cpu_req: 1 })],
      nodes: [node({ name: 'a', mem_total: 8192 })],
    });
    expect(r.placements.map((p) => p.node)).toEqual(['a', '']);
  });

  it('cordon blocks new pods but keeps existing ones and shows SchedulingDisabled', () => {
    const nodes = [node({ name: 'a', schedulable: false }), node({ name: 'b' })];
    const existing = new Map([['web-1', { name: 'web-1', node: 'a', ports: [] }]]);
    const r = run({ deployments: [dep({ name: 'web', replicas: 2 })], nodes, existing });
    expect(where(r.placements)).toEqual({ 'web-1': 'a', 'web-2': 'b' });
    expect(r.nodes[0].status).toBe('SchedulingDisabled');
  });

  it('drain (exclude) evicts a node’s pods to the survivors', () => {
    const nodes = [node({ name: 'a' }), node({ name: 'b' })];
    const existing = new Map([['web-1', { name: 'web-1', node: 'a', ports: [] }]]);
    const r = run({
      deployments: [dep({ name: 'web', replicas: 1 })],
      nodes,
      existing,
      exclude: new Set(['a']),
    });
    expect(where(r.placements)).toEqual({ 'web-1': 'b' });
  });

  it('is Unschedulable when every node is cordoned', () => {
    const r = run({
      deployments: [dep({ name: 'web', replicas: 1 })],
      nodes: [node({ name: 'a', schedulable: 'FALSE' }), node({ name: 'b', schedulable: 'no' })],
    });
    expect(r.placements[0].node).toBe('');
  });

  it('node_selector pins pods to matching labels, and is Unschedulable without a match', () => {
    const nodes = [node({ name: 'a', labels: 'disk=hdd' }), node({ name: 'b', labels: 'disk=ssd,zone=x' })];
    expect(
      run({
        deployments: [dep({ name: 'db', replicas: 2, node_selector: 'disk=ssd' })],
        nodes,
      }).placements.map((p) => p.node),
    ).toEqual(['b', 'b']);
    expect(
      run({ deployments: [dep({ name: 'db', replicas: 1, node_selector: 'disk=nvme' })], nodes })
        .placements[0].node,
    ).toBe('');
  });

  it('NoSchedule taints repel pods without a toleration; k=v or bare k tolerates; other effects are ignored', () => {
    const nodes = [node({ name: 'a', taints: 'gpu=yes:NoSchedule' })];
    expect(run({ deployments: [dep({ name: 'x', replicas: 1 })], nodes }).placements[0].node).toBe('');
    expect(
      run({ deployments: [dep({ name: 'x', replicas: 1, tolerations: 'gpu=yes' })], nodes }).placements[0]
        .node,
    ).toBe('a');
    expect(
      run({ deployments: [dep({ name: 'x', replicas: 1, tolerations: 'gpu' })], nodes }).placements[0].node,
    ).toBe('a');
    expect(
      run({
        deployments: [dep({ name: 'x', replicas: 1 })],
        nodes: [node({ name: 'a', taints: 'gpu=yes:PreferNoSchedule' })],
      }).placements[0].node,
    ).toBe('a');
    expect(
      run({ deployments: [dep({ name: 'x', replicas: 1 })], nodes: [node({ name: 'a', taints: 'gpu=yes' })] })
        .placements[0].node,
    ).toBe('');
  });

  it('a sticky pod moves when its node’s labels no longer match', () => {
    const existing = new Map([['db-1', { name: 'db-1', node: 'a', ports: [] }]]);
    const nodes = [node({ name: 'a', labels: 'disk=hdd' }), node({ name: 'b', labels: 'disk=ssd' })];
    expect(
      where(
        run({ deployments: [dep({ name: 'db', replicas: 1, node_selector: 'disk=ssd' })], nodes, existing })
          .placements,
      ),
    ).toEqual({ 'db-1': 'b' });
  });

  it('scale down drops the highest ordinals; scale up adds the next ones', () => {
    const nodes = [node({ name: 'a' })];
    const three = run({ deployments: [dep({ name: 'web', replicas: 3 })], nodes });
    const one = run({
      deployments: [dep({ name: 'web', replicas: 1 })],
      nodes,
      existing: existingOf(three.placements),
    });
    expect(one.placements.map((p) => p.name)).toEqual(['web-1']);
    const five = run({
      deployments: [dep({ name: 'web', replicas: 5 })],
      nodes,
      existing: existingOf(one.placements),
    });
    expect(five.placements.map((p) => p.name)).toEqual(['web-1', 'web-2', 'web-3', 'web-4', 'web-5']);
  });

  it('blank replicas mean no pods, and blank requests default to 100m/64Mi', () => {
    const d = dep({ name: 'x', replicas: '' });
    expect(d.replicas).toBe(0);
    expect([d.cpuReq, d.memReq]).toEqual([100, 64]);
    expect(dep({ name: 'x', replicas: '2.7' }).replicas).toBe(2);
  });

  it('a node never heard from (no heartbeat) is stale', () => {
    const r = run({
      deployments: [dep({ name: 'x', replicas: 1 })],
      nodes: [nodeFromRow({ name: 'a' }) as NodeIn],
    });
    expect(r.placements[0].node).toBe('');
    expect(r.nodes[0].status).toBe('NotReady');
  });
});

describe('host ports (spec §3.5)', () => {
  const nodes = [node({ name: 'a', cpu_total: 9000 }), node({ name: 'b', cpu_total: 9000 })];

  it('a fixed port spreads replicas; a third replica with no free node is Unschedulable and consumes nothing', () => {
    const r = run({ deployments: [dep({ name: 'web', replicas: 3, ports: '8080:80' })], nodes });
    expect(r.placements.map((p) => p.node)).toEqual(['a', 'b', '']);
    expect(r.placements[0].ports).toEqual([{ host: 8080, container: 80, proto: 'tcp' }]);
    expect(r.nodes.map((n) => n.cpuUsed)).toEqual([100, 100]);
  });

  it('tcp and udp on the same host port do not conflict', () => {
    const r = run({
      deployments: [
        dep({ name: 't', replicas: 1, ports: '53:53' }),
        dep({ name: 'u', replicas: 1, ports: '53:53/udp' }),
      ],
      nodes: [nodes[0]],
    });
    expect(r.placements.map((p) => p.node)).toEqual(['a', 'a']);
  });

  it('auto ports are distinct, lowest first, and never take a port some Deployment fixes', () => {
    const r = run({
      deployments: [
        dep({ name: 'auto', replicas: 3, ports: '80' }),
        dep({ name: 'fixed', replicas: 0, ports: '30001:80' }),
      ],
      nodes: [nodes[0]],
    });
    expect(r.placements.map((p) => p.ports[0].host)).toEqual([30000, 30002, 30003]);
  });

  it('an exhausted range makes the node ineligible', () => {
    const r = run({
      deployments: [dep({ name: 'auto', replicas: 3, ports: '80' })],
      nodes: [nodes[0]],
      portRange: [30000, 30001],
    });
    expect(r.placements.map((p) => p.node)).toEqual(['a', 'a', '']);
  });

  it('an auto port is sticky, and a running pod keeps its port over an earlier newcomer', () => {
    const existing = new Map([
      [
        'auto-2',
        { name: 'auto-2', node: 'a', ports: [{ host: 30000, container: 80, proto: 'tcp' as const }] },
      ],
    ]);
    const r = run({
      deployments: [dep({ name: 'auto', replicas: 2, ports: '80' })],
      nodes: [nodes[0]],
      existing,
    });
    expect(r.placements.map((p) => p.ports[0].host)).toEqual([30001, 30000]);
  });

  it('a garbage ports cell does not break scheduling, but apply-time parsing rejects it', () => {
    const r = run({ deployments: [dep({ name: 'g', replicas: 1, ports: '80:abc' })], nodes: [nodes[0]] });
    expect(r.placements[0]).toMatchObject({ node: 'a', ports: [] });
    for (const bad of ['http', '80:abc', '0', '70000', '8080:80/sctp', '1:2:3'])
      expect(() => parsePorts(bad), bad).toThrow();
    expect(parsePorts(['8080:80', '53/udp'])).toHaveLength(2);
  });

  it('spec_hash tracks ports, image and command but not cpu/mem', () => {
    const d = dep({ name: 'w', image: 'nginx', replicas: 1 });
    const h1 = specHash(d, []);
    expect(h1).toMatch(/^[0-9a-f]{12}$/);
    expect(specHash(d, [{ host: 30000, container: 80, proto: 'tcp' }])).not.toBe(h1);
    const bigger: DeploymentIn = { ...d, cpuReq: 999, memReq: 999 };
    expect(specHash(bigger, [])).toBe(h1);
    expect(specHash({ ...d, command: 'x' }, [])).not.toBe(h1);
  });

  it('spec_hash equals the reference’s (sha256 of Python json.dumps of the five fields)', () => {
    // sha256('["nginx:alpine", "", "", "", "30000:80/tcp"]')[:12], computed independently.
    const d = dep({ name: 'w', image: 'nginx:alpine', replicas: 1 });
    expect(specHash(d, [{ host: 30000, container: 80, proto: 'tcp' }])).toBe('fd4f1878aa4f');
  });

  it('spec_hash is remembered per Deployment object, and made afresh once that object changes', () => {
    const d = dep({ name: 'w', image: 'nginx:alpine', replicas: 1 });
    const port = [{ host: 30000, container: 80, proto: 'tcp' as const }];
    expect(specHash(d, port)).toBe('fd4f1878aa4f');
    expect(specHash(d, port)).toBe('fd4f1878aa4f');
    const h = specHash({ ...d, image: 'nginx' }, port);
    d.image = 'nginx'; // the same object, changed: its remembered hash no longer applies
    expect(specHash(d, port)).toBe(h);
    expect(h).not.toBe('fd4f1878aa4f');
  });
});

describe('pods rows, orders and make-before-break', () => {
  const deps = [dep({ name: 'web', replicas: 2, image: 'nginx' })];
  const depMap = new Map(deps.map((d) => [d.name, d]));

  it('rows: Unschedulable for node "", reporter vouches only for its own pods, others keep last known phase', () => {
    const placements: Placement[] = [
      { name: 'web-1', deployment: 'web', node: 'a', ports: [] },
      { name: 'web-2', deployment: 'web', node: 'b', ports: [] },
      { name: 'web-3', deployment: 'web', node: '', ports: [] },
    ];
    const prev = new Map<string, Row>([
      ['web-2', { name: 'web-2', node: 'b', phase: 'Running', container_id: 'c2' }],
    ]);
    const rows = podRows(placements, prev, {
      node: 'a',
      ip: '10.0.0.1',
      pods: [
        {
          name: 'web-1',
          phase: 'Running',
          container_id: 'c1',
          ports: '0.0.0.0:30000->80/tcp, :::30000->80/tcp',
        },
      ],
    });
    expect(rows.map((r) => r.phase)).toEqual(['Running', 'Running', 'Unschedulable']);
    expect(rows[0].endpoints).toBe('10.0.0.1:30000->80/tcp');
    expect(rows[1].container_id).toBe('c2');
  });

  it('orders: Running with start fields for assigned pods, Terminating for reported pods not assigned', () => {
    const placements: Placement[] = [{ name: 'web-1', deployment: 'web', node: 'a', ports: [] }];
    const o = nodeOrders('a', placements, depMap, ['web-1', 'old-1'], new Map());
    expect(o[0]).toMatchObject({
      name: 'web-1',
      desired: 'Running',
      image: 'nginx',
      cpu_req: 100,
      mem_req: 64,
      deployment: 'web',
    });
    expect(o[1]).toEqual({ name: 'old-1', desired: 'Terminating' });
  });

  it('a pod moving off a live node keeps running there until the target reports it Running', () => {
    const before = new Map<string, Row>([
      ['web-1', { name: 'web-1', node: 'a', phase: 'Running', ports: '' }],
    ]);
    const placements: Placement[] = [{ name: 'web-1', deployment: 'web', node: 'b', ports: [] }];
    const fresh = new Set(['a', 'b']);
    const h1 = updateHandoffs({ previous: new Map(), before, placements, freshNodes: fresh, now: NOW });
    expect(h1.get('web-1')).toMatchObject({ from: 'a', to: 'b' });
    // Source heartbeats first: it is told to keep running, not to terminate.
    expect(nodeOrders('a', placements, depMap, ['web-1'], h1)).toMatchObject([
      { name: 'web-1', desired: 'Running' },
    ]);
    // Target reports Pending: hand-off stays; target reports Running: hand-off done, source terminates.
    const h2 = updateHandoffs({
      previous: h1,
      before,
      placements,
      freshNodes: fresh,
      now: NOW + 5,
      report: { node: 'b', ip: '', pods: [{ name: 'web-1', phase: 'Pending' }] },
    });
    expect(h2.size).toBe(1);
    const h3 = updateHandoffs({
      previous: h2,
      before,
      placements,
      freshNodes: fresh,
      now: NOW + 10,
      report: { node: 'b', ip: '', pods: [{ name: 'web-1', phase: 'Running' }] },
    });
    expect(h3.size).toBe(0);
    expect(nodeOrders('a', placements, depMap, ['web-1'], h3)).toEqual([
      { name: 'web-1', desired: 'Terminating' },
    ]);
  });

  it('no hand-off when the source node is dead (failover) or after the time limit', () => {
    const before = new Map<string, Row>([['web-1', { name: 'web-1', node: 'a', phase: 'Running' }]]);
    const placements: Placement[] = [{ name: 'web-1', deployment: 'web', node: 'b', ports: [] }];
    expect(
      updateHandoffs({ previous: new Map(), before, placements, freshNodes: new Set(['b']), now: NOW }).size,
    ).toBe(0);
    const h = updateHandoffs({
      previous: new Map(),
      before,
      placements,
      freshNodes: new Set(['a', 'b']),
      now: NOW,
    });
    expect(
      updateHandoffs({ previous: h, before, placements, freshNodes: new Set(['a', 'b']), now: NOW + 301 })
        .size,
    ).toBe(0);
  });
});

// ---- properties ---------------------------------------------------------------------------

const labelArb = fc.constantFrom('disk=ssd', 'disk=hdd', 'zone=a', 'zone=b', '');
const nodeArb = fc.record({
  cpu_total: fc.integer({ min: 0, max: 4000 }),
  mem_total: fc.integer({ min: 0, max: 4096 }),
  labels: fc.array(labelArb, { maxLength: 2 }).map((l) => l.filter(Boolean).join(',')),
  taints: fc.constantFrom('', 'gpu=yes:NoSchedule', 'spot=1:NoSchedule', 'x=y:PreferNoSchedule'),
  schedulable: fc.boolean(),
  age: fc.integer({ min: 0, max: 60 }),
});
const depArb = fc.record({
  replicas: fc.integer({ min: 0, max: 6 }),
  cpu_req: fc.integer({ min: 0, max: 1500 }),
  mem_req: fc.integer({ min: 0, max: 1500 }),
  node_selector: fc.constantFrom('', 'disk=ssd', 'zone=a', 'disk=hdd,zone=b'),
  tolerations: fc.constantFrom('', 'gpu', 'spot=1', 'gpu=yes,spot'),
  ports: fc.constantFrom('', '80', '8080:80', '53/udp,80'),
});
const clusterArb = fc.record({
  nodes: fc.array(nodeArb, { minLength: 1, maxLength: 6 }),
  deps: fc.array(depArb, { maxLength: 5 }),
});

type Cluster = { nodes: (Row & { age: number })[]; deps: Row[] };
function build(c: Cluster): { nodes: NodeIn[]; deployments: DeploymentIn[] } {
  const nodes = c.nodes.map(
    (n, i) => nodeFromRow({ ...n, name: `n${i}`, last_heartbeat: NOW - n.age }) as NodeIn,
  );
  const deployments = c.deps.map((d, i) => dep({ ...d, name: `d${i}` }));
  return { nodes, deployments };
}

describe('scheduler properties (fast-check)', () => {
  it('no node is ever allocated beyond its CPU or memory, nor binds a host port twice', () => {
    fc.assert(
      fc.property(clusterArb, (c) => {
        const { nodes, deployments } = build(c);
        const r = run({ deployments, nodes });
        for (const n of r.nodes) {
          const spec = nodes.find((x) => x.name === n.name) as NodeIn;
          if (n.cpuUsed > spec.cpuTotal || n.memUsed > spec.memTotal) return false;
        }
        const bound = new Set<string>();
        for (const p of r.placements)
          for (const port of p.ports) {
            const k = `${p.node}/${port.host}/${port.proto}`;
            if (bound.has(k)) return false;
            bound.add(k);
          }
        return true;
      }),
    );
  });

  it('every placement respects node_selector and NoSchedule taints, and lands on a fresh node', () => {
    fc.assert(
      fc.property(clusterArb, (c) => {
        const { nodes, deployments } = build(c);
        const r = run({ deployments, nodes });
        const byDep = new Map(deployments.map((d) => [d.name, d]));
        return r.placements.every((p) => {
          if (p.node === '') return true;
          const n = nodes.find((x) => x.name === p.node) as NodeIn;
          return (
            matches(byDep.get(p.deployment) as DeploymentIn, n) && NOW - n.lastHeartbeat < 30 && n.schedulable
          );
        });
      }),
    );
  });

  it('exactly `replicas` pods per Deployment, named <deployment>-1..N', () => {
    fc.assert(
      fc.property(clusterArb, (c) => {
        const { nodes, deployments } = build(c);
        const r = run({ deployments, nodes });
        const expected = deployments.flatMap((d) =>
          Array.from({ length: d.replicas }, (_, i) => `${d.name}-${i + 1}`),
        );
        return JSON.stringify(r.placements.map((p) => p.name)) === JSON.stringify(expected);
      }),
    );
  });

  it('sticky pods never move while their node is Ready and they still fit (rescheduling is a fixed point)', () => {
    fc.assert(
      fc.property(clusterArb, fc.integer({ min: 0, max: 3 }), (c, extraReplicas) => {
        const { nodes, deployments } = build(c);
        const first = run({ deployments, nodes });
        // Scale every Deployment up: the pods already placed must stay exactly where they are.
        const grown = deployments.map((d) => ({ ...d, replicas: d.replicas + extraReplicas }));
        const second = run({ deployments: grown, nodes, existing: existingOf(first.placements) });
        const after = new Map(second.placements.map((p) => [p.name, p]));
        for (const p of first.placements) {
          if (p.node === '') continue;
          const q = after.get(p.name) as Placement;
          if (q.node !== p.node || JSON.stringify(q.ports) !== JSON.stringify(p.ports)) return false;
        }
        // And with nothing changed, a second run is identical.
        const again = run({ deployments, nodes, existing: existingOf(first.placements) });
        return JSON.stringify(again) === JSON.stringify(first);
      }),
    );
  });

  it('a cordoned node keeps its existing pods but never receives a new one', () => {
    fc.assert(
      fc.property(clusterArb, fc.nat(5), (c, pick) => {
        const { nodes, deployments } = build(c);
        const first = run({ deployments, nodes });
        const target = nodes[pick % nodes.length];
        const cordoned = nodes.map((n) => (n === target ? { ...n, schedulable: false } : n));
        const second = run({ deployments, nodes: cordoned, existing: existingOf(first.placements) });
        const before = new Map(first.placements.map((p) => [p.name, p.node]));
        return second.placements.every((p) => p.node !== target.name || before.get(p.name) === target.name);
      }),
    );
  });
});
