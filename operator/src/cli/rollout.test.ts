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

describe('rollout resume with no local fleet and a Kubernetes that refuses', () => {
  it("names both places: Kubernetes' answer and the state folder searched, and how to point at a local up", async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { spawnSync } = await import('node:child_process');
    const dir = mkdtempSync(join(tmpdir(), 'rollout-hint-'));
    const kubeconfig = join(dir, 'kubeconfig');
    // an http:// server: the Kubernetes client refuses it before any request
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const r = spawnSync(
      process.execPath,
      [join(import.meta.dirname, 'main.ts'), 'rollout', 'resume', 'ticker2'],
      {
        encoding: 'utf8',
        env: { ...process.env, KUBECONFIG: kubeconfig, RETROKUBE_STATE: join(dir, 'state') },
        timeout: 60_000,
      },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /^retrokube: rollout ticker2 in Kubernetes \(namespace default\): .+\. No local "retrokube up" running a fleet was found in .*state; for one elsewhere pass --state DIR/m,
    );
  }, 90_000);
});
