// The timing file of a CI run (.ci/timings.ts, written by .ci/run): set-up steps from their
// `[setup]` lines, each vitest project's wall time from vitest's JSON report.
import { describe, expect, it } from 'vitest';
import { projectOf, projectSeconds, setupSteps } from '../../.ci/timings.ts';

describe('.ci/timings.ts', () => {
  it('files map to the vitest projects of vitest.config.ts', () => {
    expect(projectOf('/r/operator/src/air/relay.test.ts')).toBe('unit');
    expect(projectOf('/r/operator/src/machine/vnc.host.test.ts')).toBe('host');
    expect(projectOf('/r/test/envtest/chart.test.ts')).toBe('envtest');
    expect(projectOf('/r/test/cluster/node.test.ts')).toBe('cluster');
    expect(projectOf('/r/test/cluster/nodes.test.ts')).toBe('nodes');
    expect(projectOf('/r/test/unit/docs.test.ts')).toBe('unit');
  });
  it('a project lasts from its first file start to its last file end', () => {
    const r = projectSeconds({
      testResults: [
        { name: '/r/test/e2e/a.test.ts', startTime: 1_000, endTime: 5_000 },
        { name: '/r/test/e2e/b.test.ts', startTime: 5_000, endTime: 12_500 },
        { name: '/r/operator/src/x.test.ts', startTime: 0, endTime: 300 },
      ],
    });
    expect(r).toEqual({ e2e: 11.5, unit: 0.3 });
  });
  it('set-up steps: cold (done, installed), warm (ready) and the total', () => {
    const log = [
      '[setup] Debian packages: installed (63.1 s)',
      '[setup] kube-apiserver, kine, helm, kubectl: still working, 3 min so far — x',
      '[setup] kube-apiserver, kine, helm, kubectl: done (1800.2 s)',
      '[setup] Oberon base disk image: ready (0.6 s)',
      '[setup] all set in 1900.0 s',
    ].join('\n');
    expect(setupSteps(log)).toEqual({
      'Debian packages': { seconds: 63.1, state: 'installed' },
      'kube-apiserver, kine, helm, kubectl': { seconds: 1800.2, state: 'done' },
      'Oberon base disk image': { seconds: 0.6, state: 'ready' },
      total: { seconds: 1900, state: 'all set' },
    });
  });
});
