// hack/node-up.sh and hack/node-down.sh refuse what would break a running node, each with one
// line saying what and how to fix it, and leave nothing behind. Runs beside the node of this run
// (only where the suite started it on this machine: the scripts act on this machine).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../envtest/control-plane.ts';
import { kubectl, noLocalNode, skipReason } from './harness.ts';

function script(name: string, env: Record<string, string>): { code: number | null; stderr: string } {
  const r = spawnSync('bash', [join(REPO_ROOT, 'hack', name)], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 60_000,
  });
  return { code: r.status, stderr: r.stderr };
}

/** Runs a shell command in a network namespace of this test's own. */
function inNetns(ns: string, command: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync('ip', ['netns', 'exec', ns, 'bash', '-c', command], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe.skipIf(skipReason() || noLocalNode('node-up / node-down refusals'))(
  'node-up / node-down refusals',
  () => {
    it("node-down's iptables clean-up leaves no KUBE-FIREWALL chain nor jump, in iptables and ip6tables", () => {
      const ns = `rk-nodedown-${process.pid}`;
      expect(spawnSync('ip', ['netns', 'add', ns]).status).toBe(0);
      try {
        const replay = (ipt: string) => {
          // The node's own kubelet rules when it made them (the chain and the jumps to it).
          const own = spawnSync(ipt, ['-w', '-S'], { encoding: 'utf8' })
            .stdout.split('\n')
            .filter((l) => /KUBE-FIREWALL|KUBE-KUBELET-CANARY/.test(l));
          const rules = own.some((l) => l.startsWith('-N KUBE-FIREWALL'))
            ? own
            : [
                '-N KUBE-FIREWALL',
                '-A INPUT -j KUBE-FIREWALL',
                '-A OUTPUT -j KUBE-FIREWALL',
                '-A KUBE-FIREWALL -j DROP',
              ];
          const chains = rules.filter((l) => l.startsWith('-N '));
          const rest = rules.filter((l) => !l.startsWith('-N '));
          return [...chains, ...rest].map((l) => `${ipt} -w ${l}`).join(' && ');
        };
        const setup = inNetns(
          ns,
          `${replay('iptables')} && ${replay('ip6tables')} && iptables -N OTHER && iptables -A INPUT -j OTHER`,
        );
        expect(setup.code, setup.stderr).toBe(0);
        expect(inNetns(ns, 'iptables-save; ip6tables-save').stdout).toMatch(/-A INPUT -j KUBE-FIREWALL/);
        const clean = inNetns(ns, `bash ${join(REPO_ROOT, 'hack', 'node-iptables-clean.sh')}`);
        expect(clean.code, clean.stderr).toBe(0);
        const after = inNetns(ns, 'iptables-save; ip6tables-save').stdout;
        expect(after).not.toMatch(/KUBE-/);
        expect(after).toMatch(/-A INPUT -j OTHER/); // what is not the kubelet's stays
      } finally {
        spawnSync('ip', ['netns', 'del', ns]);
      }
    });

    it('a missing binary: one line naming it and the build to run; nothing created', async () => {
      const parent = mkdtempSync(join(tmpdir(), 'rk-nodeup-'));
      const dir = join(parent, 'node');
      try {
        const r = script('node-up.sh', {
          RETROKUBE_NODE_DIR: dir,
          RETROKUBE_NODEBINS_DIR: join(parent, 'no-bins'),
        });
        expect(r.code).toBe(1);
        const lines = r.stderr.trim().split('\n');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(
          /^node-up: .*no-bins\/[a-z-]+ is missing; build it with: bash hack\/build-testbins\.sh && bash hack\/build-node-bins\.sh$/,
        );
        expect(existsSync(dir)).toBe(false);
      } finally {
        rmSync(parent, { recursive: true, force: true });
      }
      expect(await kubectl(['get', 'nodes', '-o', 'name'])).toContain('node/');
    });

    it('a second node while one runs: one line naming the running one; the running node untouched', async () => {
      const parent = mkdtempSync(join(tmpdir(), 'rk-nodeup-'));
      try {
        const up = script('node-up.sh', { RETROKUBE_NODE_DIR: join(parent, 'node') });
        expect(up.code).toBe(1);
        expect(up.stderr.trim().split('\n')).toEqual([
          expect.stringMatching(
            /^node-up: another node \(.+\) owns this machine's bridge and pod cgroups; stop it first: /,
          ),
        ]);
        // node-down for that folder refuses too: the bridge and the pod cgroups are the other node's.
        const down = script('node-down.sh', { RETROKUBE_NODE_DIR: join(parent, 'node') });
        expect(down.code).toBe(1);
        expect(down.stderr.trim().split('\n')).toEqual([expect.stringContaining('belong to the node in')]);
      } finally {
        rmSync(parent, { recursive: true, force: true });
      }
      const ready = await kubectl([
        'get',
        'nodes',
        '-o',
        'jsonpath={.items[0].status.conditions[?(@.type=="Ready")].status}',
      ]);
      expect(ready).toBe('True');
    });
  },
);
