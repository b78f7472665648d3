// Where `retrokube rollout VERB NAME` looks: a local `up` running a fleet, or Kubernetes.
import { describe, expect, it } from 'vitest';
import { rolloutHome } from './rollout.ts';

describe('rollout verbs find their rollout', () => {
  it('--local and --state mean the local up; --kubeconfig and -n mean Kubernetes', () => {
    expect(rolloutHome({ local: true }, false)).toBe('local');
    expect(rolloutHome({ state: '/tmp/s' }, false)).toBe('local');
    expect(rolloutHome({ kubeconfig: 'k' }, true)).toBe('kubernetes');
    expect(rolloutHome({ namespace: 'fleet' }, true)).toBe('kubernetes');
  });
  it('with neither, a running up with a fleet FILE wins, else Kubernetes', () => {
    expect(rolloutHome({}, true)).toBe('local');
    expect(rolloutHome({}, false)).toBe('kubernetes');
  });
});
