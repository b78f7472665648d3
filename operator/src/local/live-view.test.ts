import { describe, expect, it } from 'vitest';
import type { ClusterView } from '../air/view.ts';
import { fitFrame, fitParts, kubeBlocks, type LiveTable, sheetsBlocks } from './live-view.ts';

const table = (n: number): LiveTable => ({
  header: ['NAME', 'LONG-COLUMN', 'STATUS'],
  rows: Array.from({ length: n }, (_, i) => [`row-${i}`, 'x'.repeat(40), 'Ready']),
  drop: [1],
});

describe('the live view fits the terminal', () => {
  it('drops columns before cutting lines, never wraps', () => {
    const lines = fitFrame(['a head line '.repeat(10), table(2)], 'footer', 40, 24);
    expect(lines.every((l) => l.length <= 40)).toBe(true);
    expect(lines[0]).toMatch(/…$/);
    expect(lines[1]).toMatch(/^NAME\s+STATUS$/); // LONG-COLUMN dropped, not cut
    expect(lines.at(-1)).toBe('footer');
  });

  it('shows fewer rows of the longest table with "+N more", keeping header and footer', () => {
    const lines = fitFrame(['head', table(30), '', table(3)], 'footer', 80, 12);
    expect(lines).toHaveLength(12);
    expect(lines[0]).toBe('head');
    expect(lines).toContain('+27 more');
    expect(lines.filter((l) => l.startsWith('NAME'))).toHaveLength(2);
    expect(lines.at(-1)).toBe('footer');
  });

  it('a frame that fits is left alone', () => {
    expect(fitFrame(['head', table(2)], 'f', 80, 24)).toHaveLength(5);
  });
});

describe('the live view says what it shows', () => {
  const v: ClusterView = {
    cluster: 20,
    atMs: 0,
    readyNodes: 1,
    running: 1,
    duplicates: [],
    converged: false,
    plane: { lastHeardMs: 0, ageMs: 400, heard: true, counter: 1, refusal: null },
    counts: {} as ClusterView['counts'],
    rejects: [],
    nodes: [
      {
        name: 'node-a',
        lastHeardMs: 0,
        ageMs: 900,
        ready: true,
        running: [1],
        failed: [],
        assigned: [1, 2],
        assignedAtMs: 0,
        converged: false,
        heartbeats: 1,
        assignments: 1,
        assignmentChanges: 0,
        lastAssignmentChangeMs: null,
        flaps: 0,
      },
      {
        name: 'node-b',
        lastHeardMs: 0,
        ageMs: 9000,
        ready: false,
        running: [3],
        failed: [],
        assigned: [],
        assignedAtMs: 0,
        converged: false,
        heartbeats: 1,
        assignments: 1,
        assignmentChanges: 0,
        lastAssignmentChangeMs: null,
        flaps: 0,
      },
    ],
    pods: [
      { id: 1, image: 'Ticker', assignedTo: ['node-a'], runningOn: ['node-a'] },
      { id: 2, image: 'Ticker', assignedTo: ['node-a'], runningOn: [] },
      { id: 3, image: 'Ticker', assignedTo: [], runningOn: [] }, // replaced by an apply
    ],
  };

  it('a legend for Ready*, nothing listed for a NotReady node, no rows for replaced pods', () => {
    const text = fitFrame(kubeBlocks(v), 'f', 80, 24).join('\n');
    expect(text).toMatch(/^node-a\s+Ready\*\s+0\.9s ago\s+1\s+1 2$/m);
    expect(text).toMatch(/^\* Ready, still starting or stopping/m);
    expect(text).toMatch(/^node-b\s+NotReady\s+9\.0s ago\s+-\s+-$/m);
    expect(text).not.toMatch(/^3\s/m);
  });

  it("sheets pods all on one node are explained as the reference's scheduler", () => {
    const nodes = ['node-a', 'node-b'].map((name) => ({ name, status: 'Ready' }));
    const pods = [1, 2].map((i) => ({ name: `web-${i}`, node: 'node-b', phase: 'Running' }));
    const text = fitFrame(sheetsBlocks(nodes, pods, 0), 'f', 80, 24).join('\n');
    expect(text).toMatch(/reference's scheduler/);
  });
});

describe('the footer', () => {
  it('keeps whole hints that fit, the first always', () => {
    expect(fitParts(['Ctrl-C stops', './retrokube status', 'x'.repeat(60)], 40)).toBe(
      'Ctrl-C stops · ./retrokube status',
    );
  });
});
