// A local cluster as the planner sees it: judged from its air view, changed through live lines.
import { describe, expect, it } from 'vitest';
import type { ClusterView, NodeView } from '../air/view.ts';
import {
  desiredAfterRestart,
  liveCommandsText,
  observeLocalKube,
  withLocalVersion,
} from './rollout-observe.ts';

/** A view of one cluster: nodes with the pod ids they run, and each pod's image. */
function view(
  nodes: Record<string, { ready: boolean; running: number[] }>,
  images: Record<number, string>,
  o: { planeHeard?: boolean; converged?: boolean } = {},
): ClusterView {
  const ns: NodeView[] = Object.entries(nodes).map(([name, n]) => ({
    name,
    lastHeardMs: 0,
    ageMs: 0,
    ready: n.ready,
    running: n.running,
    failed: [],
    assigned: n.running,
    assignedAtMs: 0,
    converged: n.ready,
    heartbeats: 1,
    assignments: 1,
    assignmentChanges: 0,
    lastAssignmentChangeMs: null,
    flaps: 0,
  }));
  const running = ns.filter((n) => n.ready).reduce((s, n) => s + n.running.length, 0);
  return {
    cluster: 1,
    atMs: 0,
    nodes: ns,
    pods: Object.entries(images).map(([id, image]) => ({
      id: Number(id),
      image,
      assignedTo: [],
      runningOn: [],
    })),
    readyNodes: ns.filter((n) => n.ready).length,
    running,
    duplicates: [],
    converged: o.converged ?? true,
    plane: { lastHeardMs: 0, ageMs: 0, heard: o.planeHeard ?? true, counter: 1, refusal: null },
    counts: {} as ClusterView['counts'],
    rejects: [],
  };
}

const WEB2 = [{ name: 'web', replicas: 2, module: 'Ticker2' }];

describe('a local cluster judged from its air', () => {
  it('is converged when every node is Ready and enough pods are heard running the new image', () => {
    const v = view(
      { 'node-a': { ready: true, running: [3, 4] } },
      { 1: 'Ticker', 3: 'Ticker2', 4: 'Ticker2' },
    );
    expect(observeLocalKube(v, WEB2, ['node-a'], 'web', 2)).toEqual({
      current: { image: 'Ticker2', replicas: 2 },
      converged: true,
      healthy: true,
    });
  });

  it('is not converged while old pods run, a node is missing, or a pod waits (Pending)', () => {
    const old = view({ 'node-a': { ready: true, running: [1, 2] } }, { 1: 'Ticker', 2: 'Ticker' });
    expect(observeLocalKube(old, WEB2, ['node-a'], 'web', 0).converged).toBe(false);
    const nodeGone = view({ 'node-a': { ready: false, running: [3, 4] } }, { 3: 'Ticker2', 4: 'Ticker2' });
    const o = observeLocalKube(nodeGone, WEB2, ['node-a'], 'web', 1);
    expect(o).toMatchObject({ converged: false, healthy: false });
    const pending = view(
      { 'node-a': { ready: true, running: [3] } },
      { 3: 'Ticker2', 4: 'Ticker2' },
      { converged: false },
    );
    expect(observeLocalKube(pending, WEB2, ['node-a'], 'web', 1)).toMatchObject({
      converged: false,
      healthy: true,
    });
    // Every pod of the cluster counts: another deployment's pods still starting hold convergence back.
    const two = [...WEB2, { name: 'api', replicas: 1, module: 'Ticker' }];
    const v = view({ 'node-a': { ready: true, running: [3, 4] } }, { 3: 'Ticker2', 4: 'Ticker2' });
    expect(observeLocalKube(v, two, ['node-a'], 'web', 0).converged).toBe(false);
  });

  it('cannot be judged while its plane is not heard; a missing deployment has no current version', () => {
    const v = view({}, {}, { planeHeard: false });
    expect(observeLocalKube(v, WEB2, ['node-a'], 'web', 0).problem).toMatch(/plane is not heard/);
    expect(observeLocalKube(null, WEB2, ['node-a'], 'web', 0).problem).toMatch(/not listening/);
    expect(observeLocalKube(v, WEB2, ['node-a'], 'api', 0)).toEqual({ converged: false, healthy: false });
  });
});

describe('the live channel of a local plane', () => {
  it('sets one deployment to a version and tells the plane every deployment as Kube.Apply lines', () => {
    const d = [
      { name: 'web', replicas: 2, module: 'Ticker' },
      { name: 'api', replicas: 1, module: 'Ticker' },
    ];
    const next = withLocalVersion(d, 'web', { image: 'Ticker2' });
    expect(liveCommandsText(next)).toBe('Kube.Apply web 2 Ticker2\nKube.Apply api 1 Ticker\n');
    expect(liveCommandsText(withLocalVersion(next, 'web', { replicas: 5 }))).toMatch(
      /^Kube.Apply web 5 Ticker2\n/,
    );
    expect(d[0].module).toBe('Ticker'); // not changed in place
    expect(() => withLocalVersion(d, 'db', { replicas: 1 })).toThrow(/deployment db does not exist/);
  });

  it('after a restart, what the live file last told the plane wins over the FILE', () => {
    const fromFile = [
      { name: 'web', replicas: 2, module: 'Ticker' },
      { name: 'api', replicas: 1, module: 'Ticker' },
    ];
    expect(desiredAfterRestart(fromFile, ['Kube.Apply web 3 Ticker2', 'Kube.Apply gone 1 Ticker'])).toEqual([
      { name: 'web', replicas: 3, module: 'Ticker2' },
      { name: 'api', replicas: 1, module: 'Ticker' },
    ]);
  });
});
