// Placement as rendered: an OberonKube's node machines spread over the Kubernetes nodes, its plane
// kept apart from them, a budget that evicts one node machine at a time; a SheetCluster's agents
// likewise. Checked through the real renders, down to the labels the selectors must find.
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../runtime/client.ts';
import { defaultImage } from './oberonair.ts';
import { kubeSettings, type OberonKube, renderKube } from './oberonkube-render.ts';
import { machineSettings, type OberonMachine, renderKubeVirt, renderPod } from './oberonmachine-render.ts';
import { disruptionBudget, type LabelSelector, machinePlacement, ROLE_LABEL, spread } from './placement.ts';
import { renderSheetCluster, sheetSettings } from './sheetcluster-render.ts';

const kube = (spec: Record<string, unknown> = {}): OberonKube => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonKube',
  metadata: { name: 'lab', namespace: 'ns', uid: 'k-1', creationTimestamp: '2026-01-01T00:00:00Z' },
  spec: { nodes: 3, ...spec },
});

type Pod = {
  metadata: { labels: Record<string, string> };
  spec: {
    affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution: unknown[] } };
    topologySpreadConstraints?: Array<Record<string, unknown>>;
  };
};
const podOf = (sts: KubeObject): Pod => (sts as unknown as { spec: { template: Pod } }).spec.template;

/** The machines of a rendered OberonKube, each rendered to its pod template. */
function machinePods(k: OberonKube) {
  const out = renderKube(k, kubeSettings(k), true);
  const pods = out.machines.map((m) => {
    const mo = { ...m, metadata: { ...m.metadata, uid: `m-${m.metadata.name}` } } as OberonMachine;
    return {
      name: m.metadata.name as string,
      pod: podOf(renderPod(mo, machineSettings(mo), 'img:1').statefulSet),
    };
  });
  return { out, pods };
}

const selects = (sel: LabelSelector, labels: Record<string, string>) =>
  Object.entries(sel.matchLabels).every(([k, v]) => labels[k] === v) &&
  (sel.matchExpressions ?? []).every((e) => e.values.includes(labels[e.key] ?? ''));
const spreadOf = (pod: Pod) =>
  (pod.spec.topologySpreadConstraints ?? [])[0] as { labelSelector: LabelSelector };

describe('placement of an OberonKube', () => {
  it('spreads the plane and its node machines together, the plane softly, by hostname, by default', () => {
    const { pods } = machinePods(kube());
    const together = {
      matchLabels: { 'retrokube.io/air': 'lab-air' },
      matchExpressions: [{ key: ROLE_LABEL, operator: 'In', values: ['plane', 'node'] }],
    };
    expect(pods).toHaveLength(4);
    for (const { name, pod } of pods) {
      expect(pod.metadata.labels[ROLE_LABEL]).toBe(name === 'lab-plane' ? 'plane' : 'node');
      expect(pod.spec.topologySpreadConstraints).toEqual([
        {
          maxSkew: 1,
          topologyKey: 'kubernetes.io/hostname',
          whenUnsatisfiable: 'ScheduleAnyway',
          labelSelector: together,
        },
      ]);
      // No anti-affinity: the scheduler would weigh the plane's against its node machines too,
      // and pile them on the hosts without the plane.
      expect(pod.spec.affinity).toBeUndefined();
      // the constraint counts exactly this cluster's plane and node machines
      for (const other of pods)
        expect(selects(spreadOf(pod).labelSelector, other.pod.metadata.labels)).toBe(true);
    }
    const foreign = { 'retrokube.io/air': 'other-air', [ROLE_LABEL]: 'node' };
    expect(selects(together as LabelSelector, foreign)).toBe(false);
    expect(
      selects(together as LabelSelector, { 'retrokube.io/air': 'lab-air', [ROLE_LABEL]: 'standalone' }),
    ).toBe(false);
  });

  it('renders a budget that covers the node machines only, one unavailable at a time', () => {
    const { out, pods } = machinePods(kube());
    const b = out.budget as KubeObject & { spec: { selector: LabelSelector } };
    expect(b.kind).toBe('PodDisruptionBudget');
    expect(b.metadata.name).toBe('rk-kube-lab-nodes');
    expect(b.metadata.ownerReferences?.[0]?.uid).toBe('k-1');
    expect(b.spec).toMatchObject({ maxUnavailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow' });
    const covered = pods.filter((p) => selects(b.spec.selector, p.pod.metadata.labels)).map((p) => p.name);
    expect(covered.sort()).toEqual(['lab-node-a', 'lab-node-b', 'lab-node-c']);
  });

  it('takes spread and topologyKey from the spec down to every machine', () => {
    const { out, pods } = machinePods(
      kube({ placement: { spread: 'required', topologyKey: 'topology.kubernetes.io/zone' } }),
    );
    for (const m of out.machines)
      expect((m as unknown as { spec: { placement: unknown } }).spec.placement).toEqual({
        spread: 'required',
        topologyKey: 'topology.kubernetes.io/zone',
      });
    const node = pods.find((p) => p.name === 'lab-node-a')?.pod as Pod;
    expect(node.spec.topologySpreadConstraints?.[0]).toMatchObject({
      whenUnsatisfiable: 'DoNotSchedule',
      topologyKey: 'topology.kubernetes.io/zone',
    });
    // the plane stays a preference even then: a one-node cluster must still get its plane
    const plane = pods.find((p) => p.name === 'lab-plane')?.pod as Pod;
    expect(plane.spec.topologySpreadConstraints?.[0]).toMatchObject({
      whenUnsatisfiable: 'ScheduleAnyway',
      topologyKey: 'topology.kubernetes.io/zone',
    });
  });

  it('spread none leaves the scheduler alone (no affinity, no constraints), the budget stays', () => {
    const { out, pods } = machinePods(kube({ placement: { spread: 'none' } }));
    for (const { pod } of pods) {
      expect(pod.spec.affinity).toBeUndefined();
      expect(pod.spec.topologySpreadConstraints).toBeUndefined();
    }
    expect(out.budget.kind).toBe('PodDisruptionBudget');
  });

  it('is pure: the same input renders the same objects', () => {
    const k = kube({ placement: { spread: 'soft' } });
    expect(renderKube(k, kubeSettings(k), true)).toEqual(renderKube(k, kubeSettings(k), true));
  });
});

describe('placement of a machine', () => {
  const machine = (spec: Record<string, unknown>): OberonMachine => ({
    apiVersion: 'retrokube.io/v1alpha1',
    kind: 'OberonMachine',
    metadata: { name: 'm', namespace: 'ns', uid: 'm-1' },
    spec,
  });

  it('a machine without an air has no placement rule and no role label', () => {
    const m = machine({});
    const pod = podOf(renderPod(m, machineSettings(m), 'img:1').statefulSet);
    expect(pod.spec.affinity).toBeUndefined();
    expect(pod.spec.topologySpreadConstraints).toBeUndefined();
    expect(pod.metadata.labels[ROLE_LABEL]).toBeUndefined();
  });

  it('standalone machines on one air spread among themselves', () => {
    expect(machinePlacement('a', 'standalone', 'air', { spread: 'soft', topologyKey: 'h' })).toEqual(
      spread({ matchLabels: { air: 'a', [ROLE_LABEL]: 'standalone' } }, { spread: 'soft', topologyKey: 'h' }),
    );
  });

  it('the kubevirt runtime carries the same labels and rules on the VM template', () => {
    const m = machine({ air: 'lab-air', role: 'node', nodeName: 'node-a', runtime: 'kubevirt' });
    const vm = renderKubeVirt(m, machineSettings(m), defaultImage(), { seeded: true }).vm as unknown as {
      spec: { template: Pod };
    };
    expect(vm.spec.template.metadata.labels[ROLE_LABEL]).toBe('node');
    expect(vm.spec.template.spec.topologySpreadConstraints?.[0]).toMatchObject({
      whenUnsatisfiable: 'ScheduleAnyway',
      labelSelector: {
        matchLabels: { 'retrokube.io/air': 'lab-air' },
        matchExpressions: [{ key: ROLE_LABEL, operator: 'In', values: ['plane', 'node'] }],
      },
    });
  });

  it('spread renders nothing for spread none', () => {
    const none = { spread: 'none', topologyKey: 'h' } as const;
    expect(spread({ matchLabels: { a: 'b' } }, none)).toEqual({});
    expect(machinePlacement('a', 'plane', 'air', none)).toEqual({});
    expect(disruptionBudget({ name: 'x', namespace: 'y' }, { a: 'b' }).spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: { a: 'b' } },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
  });
});

describe('placement of a SheetCluster', () => {
  const sheet = (spec: Record<string, unknown>): KubeObject => ({
    apiVersion: 'retrokube.io/v1alpha1',
    kind: 'SheetCluster',
    metadata: { name: 'demo', namespace: 'ns', uid: 's-1' },
    spec,
  });
  const values = { token: 't', signingKey: 'k' };

  it('spreads the apiserver and the agents together (the apiserver softly) and budgets one agent at a time', () => {
    const c = sheet({ nodes: 3 });
    const r = renderSheetCluster(c, sheetSettings(c, 'img:1'), values);
    const agents = podOf(r.agents);
    const api = podOf(r.deployment);
    const [tsc] = agents.spec.topologySpreadConstraints ?? [];
    expect(tsc).toMatchObject({
      maxSkew: 1,
      whenUnsatisfiable: 'ScheduleAnyway',
      topologyKey: 'kubernetes.io/hostname',
    });
    expect(api.spec.topologySpreadConstraints).toEqual([tsc]);
    expect(api.spec.affinity).toBeUndefined();
    const together = (tsc as { labelSelector: LabelSelector }).labelSelector;
    expect(selects(together, agents.metadata.labels)).toBe(true);
    expect(selects(together, api.metadata.labels)).toBe(true);
    expect(selects(together, { ...agents.metadata.labels, 'app.kubernetes.io/instance': 'other' })).toBe(
      false,
    );
    const b = r.budget as KubeObject & { spec: { selector: LabelSelector } };
    expect(b.metadata.name).toBe('rk-sheets-demo-node');
    expect(selects(b.spec.selector, agents.metadata.labels)).toBe(true);
    expect(selects(b.spec.selector, api.metadata.labels)).toBe(false); // one pod: no budget (docs)
  });

  it('required spread refuses a second agent on a node, counting the agents alone', () => {
    const c = sheet({ placement: { spread: 'required' } });
    const r = renderSheetCluster(c, sheetSettings(c, 'img:1'), values);
    const agents = podOf(r.agents);
    const api = podOf(r.deployment);
    const [hard, soft] = (agents.spec.topologySpreadConstraints ?? []) as {
      whenUnsatisfiable: string;
      labelSelector: LabelSelector;
    }[];
    // The hard rule counts agents only: with the apiserver counted too, a skew of one would let two
    // agents share a node while a third node holds the apiserver alone.
    expect(hard?.whenUnsatisfiable).toBe('DoNotSchedule');
    expect(selects(hard?.labelSelector as LabelSelector, agents.metadata.labels)).toBe(true);
    expect(selects(hard?.labelSelector as LabelSelector, api.metadata.labels)).toBe(false);
    // ...and a preference over both keeps the apiserver off the agents' nodes where it can.
    expect(soft?.whenUnsatisfiable).toBe('ScheduleAnyway');
    expect(selects(soft?.labelSelector as LabelSelector, api.metadata.labels)).toBe(true);
    expect(api.spec.topologySpreadConstraints).toEqual([soft]);
  });
});
