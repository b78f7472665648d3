// hack/nodes-up.sh refuses a cluster it cannot run, before it touches anything: one line saying
// why and what to ask for instead. (Starting one needs root and the node binaries: the cluster
// suite's nodes.test.ts.)
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../envtest/control-plane.ts';

function nodesUp(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync('bash', [join(REPO_ROOT, 'hack', 'nodes-up.sh'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, RETROKUBE_NODES_DIR: '/nonexistent/retrokube-nodes-test', ...env },
    timeout: 30_000,
  });
  return { code: r.status, lines: r.stderr.trim().split('\n') };
}

describe('hack/nodes-up.sh refusals', () => {
  it('more nodes than memory allows: one line with the need, what is available and how many fit', () => {
    const r = nodesUp(['3'], { RETROKUBE_NODES_WORKER_MIB: '100000000' });
    expect(r.code).toBe(2);
    expect(r.lines).toEqual([
      expect.stringMatching(
        /^nodes-up: 3 nodes need about \d+ MiB \(700 for the control plane \+ 100000000 per node\) but only \d+ MiB are available; ask for at most -?\d+ nodes$/,
      ),
    ]);
  });

  it('a count that is not 3-12: one line saying what N may be', () => {
    for (const n of ['2', '13', 'x', '']) {
      const r = nodesUp(n ? [n] : []);
      expect(r.code).toBe(2);
      expect(r.lines).toEqual([
        expect.stringMatching(/^nodes-up: N must be a number from 3 to 12 worker nodes/),
      ]);
    }
  });

  it('hack/node-up.sh --nodes N is the same script; an unknown argument is refused', () => {
    const r = spawnSync('bash', [join(REPO_ROOT, 'hack', 'node-up.sh'), '--nodes', '1'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/^nodes-up: N must be a number from 3 to 12/);
    const u = spawnSync('bash', [join(REPO_ROOT, 'hack', 'node-up.sh'), '--bogus'], { encoding: 'utf8' });
    expect(u.status).toBe(2);
    expect(u.stderr.trim()).toBe("node-up: unknown argument '--bogus'; usage: hack/node-up.sh [--nodes N]");
  });
});
