// Restart policies and phases as pure functions: what each exit means, and which words reach the
// Pods tab (a Deployment without a declared policy keeps the reference's four phases).
import { describe, expect, it } from 'vitest';
import { deploymentCells } from '../apiserver/validate.ts';
import { age, cellTime, renderTable } from '../ctl/table.ts';
import { deploymentFromRow } from './model.ts';
import { nodeOrders, podRows } from './orders.ts';
import { finalPhase, normalizePhase, parseRestartPolicy, restartDue } from './phases.ts';
import type { Placement } from './schedule.ts';

describe('restart policy', () => {
  it('restarts: Always and undeclared on every exit, OnFailure only on a failure, Never never', () => {
    expect([0, 1].map((c) => restartDue('', c))).toEqual([true, true]);
    expect([0, 1].map((c) => restartDue('Always', c))).toEqual([true, true]);
    expect([0, 1].map((c) => restartDue('OnFailure', c))).toEqual([false, true]);
    expect([0, 1].map((c) => restartDue('Never', c))).toEqual([false, false]);
    expect([finalPhase(0), finalPhase(137)]).toEqual(['Succeeded', 'Failed']);
  });

  it('phases: policy words reach the row only for a declared policy; unknown words are Pending', () => {
    for (const p of ['Succeeded', 'Failed', 'CrashLoopBackOff']) {
      expect(normalizePhase(p, 'OnFailure')).toBe(p);
      expect(normalizePhase(p, '')).toBe('Pending');
    }
    expect(normalizePhase('', 'Never')).toBe('Running'); // the reference kubelet sends no phase
    expect(normalizePhase(undefined)).toBe('Running');
    expect(normalizePhase('Exploded', 'Always')).toBe('Pending');
    expect(normalizePhase('Terminating', '')).toBe('Terminating');
  });

  it('a cell is lenient (odd words mean undeclared); apply is strict and names the choices', () => {
    expect(parseRestartPolicy(' Never ')).toBe('Never');
    expect(parseRestartPolicy('never')).toBe('');
    expect(parseRestartPolicy(null)).toBe('');
    expect(deploymentCells({ name: 'j', restartPolicy: 'OnFailure' })).toMatchObject({
      restart_policy: 'OnFailure',
    });
    expect(deploymentCells({ name: 'j', restart_policy: '' })).toMatchObject({ restart_policy: '' });
    expect(() => deploymentCells({ name: 'j', restart_policy: 'Sometimes' })).toThrow(
      /restart_policy "Sometimes" must be one of Always, OnFailure, Never/,
    );
    expect('restart_policy' in deploymentCells({ name: 'j' })).toBe(false); // absent stays untouched
  });

  it('pods rows: a node saying Succeeded counts only where the Deployment declares a policy', () => {
    const placements: Placement[] = [
      { name: 'job-1', deployment: 'job', node: 'a', ports: [] },
      { name: 'old-1', deployment: 'old', node: 'a', ports: [] },
    ];
    const report = {
      node: 'a',
      ip: '127.0.0.1',
      pods: [
        { name: 'job-1', phase: 'Succeeded', container_id: 'wasm-1', exit_code: 0, message: 'completed' },
        { name: 'old-1', phase: 'Succeeded', container_id: 'wasm-2', exit_code: 0 },
      ],
    };
    const rows = podRows(placements, new Map(), report, (d) => (d === 'job' ? 'Never' : ''));
    expect(rows[0]).toMatchObject({ phase: 'Succeeded', exit_code: 0, message: 'completed' });
    expect(rows[1]).toMatchObject({ phase: 'Pending', message: 'Succeeded' }); // the word kept as the reason
  });

  it('orders carry restart_policy only when declared (the reference orders are unchanged)', () => {
    const deps = [
      deploymentFromRow({ name: 'job', image: 'sicf:m:v1', replicas: 1, restart_policy: 'OnFailure' }),
      deploymentFromRow({ name: 'web', image: 'nginx', replicas: 1 }),
    ].filter((d) => d !== null);
    const placements: Placement[] = [
      { name: 'job-1', deployment: 'job', node: 'a', ports: [] },
      { name: 'web-1', deployment: 'web', node: 'a', ports: [] },
    ];
    const orders = nodeOrders('a', placements, new Map(deps.map((d) => [d.name, d])), [], new Map());
    expect(orders[0]).toMatchObject({ name: 'job-1', restart_policy: 'OnFailure' });
    expect('restart_policy' in orders[1]).toBe(false);
  });

  it("the Pods tab keeps the spec_hash a pod's agent runs (blank from a reference kubelet)", () => {
    const web = deploymentFromRow({ name: 'web', image: 'sicf:m:v1', replicas: 2 });
    if (!web) throw new Error('row');
    const placements: Placement[] = [
      { name: 'web-1', deployment: 'web', node: 'a', ports: [] },
      { name: 'web-2', deployment: 'web', node: 'a', ports: [] },
    ];
    const [order] = nodeOrders('a', placements, new Map([['web', web]]), [], new Map());
    const hash = (order as { spec_hash: string }).spec_hash;
    const report = {
      node: 'a',
      ip: '10.0.0.1',
      pods: [
        { name: 'web-1', phase: 'Running', spec_hash: hash },
        { name: 'web-2', phase: 'Running' },
      ],
    };
    const rows = podRows(placements, new Map(), report);
    expect(rows.map((r) => r.spec_hash)).toEqual([hash, '']);
    // another node's heartbeat keeps what this node reported
    const kept = podRows(placements, new Map(rows.map((r) => [r.name, { ...r }])), {
      node: 'b',
      ip: '',
      pods: [],
    });
    expect(kept[0].spec_hash).toBe(hash);
  });
});

describe('a Pending pod says why (#29.6)', () => {
  it('until its node reports it, the row names the agent it waits for; a report replaces that', () => {
    const placements: Placement[] = [
      { name: 'web-1', deployment: 'web', node: 'node-b', ports: [] },
      { name: 'web-2', deployment: 'web', node: 'node-b', ports: [] },
    ];
    const ordered = podRows(placements, new Map());
    expect(ordered.map((r) => [r.phase, r.message])).toEqual([
      ['Pending', "waiting for node-b's agent to start it"],
      ['Pending', "waiting for node-b's agent to start it"],
    ]);
    const reported = podRows(placements, new Map(ordered.map((r) => [r.name, { ...r }])), {
      node: 'node-b',
      ip: '10.0.0.2',
      pods: [{ name: 'web-1', phase: 'Running' }],
    });
    expect(reported.map((r) => [r.phase, r.message])).toEqual([
      ['Running', ''],
      ['Pending', "waiting for node-b's agent to start it"], // ordered in this very reply
    ]);
    const starting = podRows(placements, new Map(), {
      node: 'node-b',
      ip: '10.0.0.2',
      pods: [
        { name: 'web-1', phase: 'Pending' },
        { name: 'web-2', phase: 'Pending', message: 'image x is not in the Images tab' },
      ],
    });
    expect(starting.map((r) => r.message)).toEqual([
      "node-b's agent is starting it",
      'image x is not in the Images tab',
    ]);
  });
});

describe('tables for people', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');
  it('ages: seconds, minutes, hours, days; a clock slightly ahead reads as 0s ago', () => {
    expect(age(now - 3_000, now)).toBe('3s ago');
    expect(age(now - 5 * 60_000, now)).toBe('5m ago');
    expect(age(now - 3 * 3600_000, now)).toBe('3h ago');
    expect(age(now - 4 * 86_400_000, now)).toBe('4d ago');
    expect(age(now + 2_000, now)).toBe('0s ago');
    expect(age(undefined, now)).toBe('-');
    expect(cellTime(1796089742)).toBe(1796089742_000);
    expect(cellTime('2026-12-01T11:59:30Z')).toBe(now - 30_000);
    expect(cellTime('')).toBeUndefined();
  });

  it('nodes show the heartbeat as an age, events their time as an age, pods the restarts and reason', () => {
    const nodes = renderTable(
      'nodes',
      [{ name: 'node-a', ip: '127.0.0.1', last_heartbeat: now / 1000 - 3, status: 'Ready' }],
      now,
    );
    expect(nodes).toMatch(/node-a\s+127\.0\.0\.1\s+-\s+-\s+-\s+Ready\s+3s ago/);
    const ev = renderTable(
      'events',
      [{ ts: '2026-12-01T11:58:00Z', kind: 'Pod', object: 'hello-1', message: 'scheduled to node-a' }],
      now,
    );
    expect(ev).toBe('2m ago  Pod  hello-1  scheduled to node-a\n');
    const pods = renderTable(
      'pods',
      [
        {
          name: 'job-1',
          deployment: 'job',
          node: 'a',
          phase: 'CrashLoopBackOff',
          restarts: 2,
          message: `back-off: exited with code 3; restarting in 20s${' and more'.repeat(20)}`,
        },
      ],
      now,
    );
    expect(pods).toMatch(
      /job-1\s+job\s+a\s+CrashLoopBackOff\s+-\s+-\s+2\s+back-off: exited with code 3; restarting in 20s.*…\n$/,
    );
  });
});
