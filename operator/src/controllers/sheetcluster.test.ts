import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../runtime/client.ts';
import { allowedDockerSocket, DOCKER_SOCKETS } from './sheetcluster.ts';
import {
  deploymentsToApply,
  isWarning,
  readSheet,
  type SheetRows,
  started,
  summarize,
} from './sheetcluster-observe.ts';
import { agentArgs, derivedSecret, renderSheetCluster, sheetSettings } from './sheetcluster-render.ts';
import { computeSheetStatus } from './sheetcluster-status.ts';

const obj = (spec: Record<string, unknown>): KubeObject => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'SheetCluster',
  metadata: { name: 'demo', namespace: 'ns', uid: 'u-1', generation: 3 },
  spec,
});

describe('SheetCluster render', () => {
  it('is pure and puts no secret on any command line', () => {
    const c = obj({ runtimes: ['wasm', 'process'], nodes: 2 });
    const s = sheetSettings(c, 'img:1');
    const values = {
      token: derivedSecret('seed', 'token', 'u-1'),
      signingKey: derivedSecret('seed', 'signing', 'u-1'),
    };
    const a = renderSheetCluster(c, s, values);
    expect(renderSheetCluster(c, s, values)).toEqual(a);
    expect(values.token).toMatch(/^[0-9a-f]{48}$/);
    expect(derivedSecret('seed', 'token', 'u-2')).not.toBe(values.token);
    const pods = JSON.stringify([a.deployment, a.agents]);
    expect(pods).not.toContain(values.token);
    expect(pods).not.toContain(values.signingKey);
    expect(a.secrets.map((x) => x.metadata.name)).toEqual(['rk-sheets-demo-token', 'rk-sheets-demo-signing']);
    expect(agentArgs(s)).toContain('wasm,process');
  });

  it('uses Secrets the spec names and generates none for them', () => {
    const s = sheetSettings(
      obj({ tokenSecretRef: { name: 'mine' }, signingKeySecretRef: { name: 'k', key: 'hmac' } }),
      'i',
    );
    const a = renderSheetCluster(obj({}), s, { token: '', signingKey: '' });
    expect(a.secrets).toEqual([]);
    expect(JSON.stringify(a.agents)).toContain('"secretKeyRef":{"name":"k","key":"hmac"}');
  });
});

const rows = (o: Partial<SheetRows>): SheetRows => ({
  nodes: [],
  pods: [],
  deployments: [],
  events: [],
  metrics: [],
  ...o,
});

describe('SheetCluster observation', () => {
  it('summarizes nodes, started pods, the newest warning and the newest metrics', () => {
    const sum = summarize(
      rows({
        nodes: [
          { name: 'node-0', status: 'Ready', cpu_used: 50, cpu_total: 1000, mem_total: 512 },
          { name: 'node-1', status: 'NotReady', cpu_used: 0, cpu_total: 1000, mem_total: 512 },
          { name: 'laptop', status: 'Ready', cpu_used: 0, cpu_total: 4000, mem_total: 8192 },
        ],
        pods: [
          { name: 'a-1', node: 'node-0', phase: 'Running' },
          { name: 'b-1', node: 'node-0', phase: 'Pending', exit_code: 0 },
          { name: 'c-1', node: '', phase: 'Unschedulable' },
        ],
        deployments: [
          { name: 'a', replicas: 1 },
          { name: 'b', replicas: 1 },
          { name: 'c', replicas: 2 },
        ],
        events: [
          { ts: '1', kind: 'Node', object: 'node-1', message: 'NotReady: no heartbeat for 30s or more' },
          { ts: '2', kind: 'Pod', object: 'a-1', message: 'scheduled to node-0' },
          // Past warnings that no longer hold: a pod running now, a node Ready again.
          { ts: '3', kind: 'Pod', object: 'a-1', message: 'Unschedulable: no node fits' },
          { ts: '4', kind: 'Node', object: 'node-0', message: 'NotReady: no heartbeat for 30s or more' },
        ],
        metrics: [
          { ts: '1', metric: 'cpu_capacity_millicores', value: 1 },
          { ts: '2', metric: 'cpu_capacity_millicores', value: 6000 },
        ],
      }),
      ['node-0', 'node-1', 'node-2'],
    );
    expect(sum.readyNodes).toBe(1);
    expect(sum.lostNodes).toEqual(['node-1']);
    expect(sum.nodeTable.map((n) => `${n.name}:${n.status}`)).toEqual([
      'node-0:Ready',
      'node-1:NotReady',
      'node-2:Absent',
      'laptop:Ready',
    ]);
    expect(sum.runningPods).toBe(2);
    expect(sum.desiredPods).toBe(4);
    expect(sum.lastWarning).toBe('1 Node/node-1: NotReady: no heartbeat for 30s or more');
    expect(sum.metrics?.cpuCapacityMillicores).toBe(6000);
    expect(started({ phase: 'Pending', node: '', exit_code: '' })).toBe(false);
    expect(isWarning('scheduled to node-0')).toBe(false);
    expect(isWarning('Unschedulable: no node fits')).toBe(true);
  });

  it('ownership: the spec owns exactly the fields it sets', async () => {
    const spec = [
      { name: 'web', replicas: 2, env: ['A=1', 'B=2'] },
      { name: 'new', image: 'sicf:x:1' },
    ];
    expect(
      await deploymentsToApply(spec, [
        { name: 'web', replicas: 2, env: 'A=1,B=2', command: 'edited by a person' },
      ]),
    ).toEqual([{ deployment: spec[1], fields: ['image'], created: true }]);
    const drift = await deploymentsToApply(spec, [
      { name: 'web', replicas: 5, env: 'A=1,B=2' },
      { name: 'new', image: 'sicf:x:1', replicas: 9 },
    ]);
    expect(drift).toEqual([{ deployment: spec[0], fields: ['replicas'], created: false }]);
  });
});

describe('SheetCluster status', () => {
  const s = sheetSettings(obj({ nodes: 2 }), 'i');
  const base = {
    conflicts: [],
    secretProblems: [],
    podProblems: [],
    applyProblem: '',
    starting: false,
    url: 'u',
  };
  it('Ready from the sheet; the most fundamental problem first; identical inputs give identical status', () => {
    const sum = summarize(
      rows({
        nodes: [
          { name: 'node-0', status: 'Ready' },
          { name: 'node-1', status: 'Ready' },
        ],
      }),
      ['node-0', 'node-1'],
    );
    const now = new Date('2026-12-01T00:00:00Z');
    const ok = computeSheetStatus(obj({}), s, { ...base, summary: sum }, now);
    expect(ok.nodes).toBe('2/2');
    expect(ok.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(
      computeSheetStatus(
        { ...obj({}), status: ok },
        s,
        { ...base, summary: sum },
        new Date('2026-12-02T00:00:00Z'),
      ),
    ).toEqual(ok);
    const bad = computeSheetStatus(
      obj({}),
      s,
      { ...base, secretProblems: ['no token'], claimPending: 'pvc pending', readProblem: 'down' },
      now,
    );
    expect(bad.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      reason: 'SecretUnreadable',
      message: 'no token',
    });
    expect(bad.conditions?.find((c) => c.type === 'Degraded')?.message).toBe('no token; pvc pending; down');
    expect(bad.nodes).toBe('?/2');
    // A pod an agent cannot start (its reason in the Pods tab): Degraded says which and why.
    const stuck = summarize(
      rows({
        nodes: [
          { name: 'node-0', status: 'Ready' },
          { name: 'node-1', status: 'Ready' },
        ],
        pods: [
          {
            name: 'ghost-1',
            node: 'node-0',
            phase: 'Pending',
            message: 'image nope is not in the Images tab',
          },
          { name: 'web-1', node: 'node-1', phase: 'Pending', message: '' },
          // the scheduler's words while a start is under way: not stuck
          {
            name: 'web-2',
            node: 'node-1',
            phase: 'Pending',
            message: "waiting for node-1's agent to start it",
          },
          { name: 'web-3', node: 'node-0', phase: 'Pending', message: "node-0's agent is starting it" },
          // ran, and waits out its restart back-off: not stuck (its message counts down)
          {
            name: 'tick-1',
            node: 'node-1',
            phase: 'Pending',
            exit_code: 0,
            message: 'exited with code 0; restarting in 20s',
          },
        ],
      }),
      ['node-0', 'node-1'],
    );
    expect(stuck.stuckPods).toEqual(['ghost-1: image nope is not in the Images tab']);
    const st = computeSheetStatus(obj({}), s, { ...base, summary: stuck }, now);
    expect(st.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'PodsCannotStart',
      message: 'the node agents cannot start: ghost-1: image nope is not in the Images tab',
    });
  });
});

describe('SheetCluster reads (node:http, the contract as SheetsClient reads it)', () => {
  it('ask the Nodes tab first: an apiserver in trouble costs one request per read, a healthy one five', async () => {
    let code = 503;
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(new URL(req.url ?? '/', 'http://x').searchParams.get('kind') ?? '');
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(code === 200 ? { items: [{ name: 'node-0' }] } : { error: 'no' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const bad = await readSheet(url, 't', 'Service rk-sheets-demo');
      expect(bad).toMatchObject({ ok: false, unauthorized: false });
      expect(!bad.ok && bad.problem).toMatch(/answered HTTP 503/);
      expect(asked).toEqual(['nodes']);
      code = 401;
      expect(await readSheet(url, 't')).toMatchObject({ ok: false, unauthorized: true });
      code = 200;
      asked.length = 0;
      const good = await readSheet(url.replace('127.0.0.1', 'localhost'), 't');
      expect(good.ok && good.rows.nodes).toEqual([{ name: 'node-0' }]);
      expect(asked.sort()).toEqual(['deployments', 'events', 'metrics', 'nodes', 'pods']);
    } finally {
      server.close();
    }
    const gone = await readSheet('http://127.0.0.1:1', 't', 'Service rk-sheets-demo (http://127.0.0.1:1)');
    expect(gone).toMatchObject({ ok: false });
    expect(!gone.ok && gone.problem).toMatch(
      /does not answer at Service rk-sheets-demo \(http:\/\/127\.0\.0\.1:1\)/,
    );
  });

  it('resolve Service names on the event loop: a name that does not resolve fails the read within its timeout', async () => {
    const t0 = performance.now();
    const r = await readSheet('http://rk-sheets-demo.nowhere.invalid:8787', 't');
    expect(r).toMatchObject({ ok: false });
    expect(!r.ok && r.problem).toMatch(
      /does not answer at http:\/\/rk-sheets-demo\.nowhere\.invalid:8787 \((ENOTFOUND|ETIMEOUT|ESERVFAIL|ECONNREFUSED)\)/,
    );
    expect(performance.now() - t0).toBeLessThan(4_500);
  });
});

describe("#28.10 dockerSocket names only Docker's socket unless the operator allows more", () => {
  const volumes = (r: ReturnType<typeof renderSheetCluster>) =>
    JSON.stringify(
      (r.agents as unknown as { spec: { template: { spec: { volumes?: unknown[] } } } }).spec.template.spec
        .volumes ?? [],
    );
  it('the containerd socket is neither mounted nor run with; the status says why and how to allow it', () => {
    const c = obj({ runtimes: ['wasm', 'docker'], dockerSocket: '/run/containerd/containerd.sock' });
    const { s, refused } = allowedDockerSocket(sheetSettings(c, 'i'), DOCKER_SOCKETS);
    expect(refused[0]).toMatch(
      /dockerSocket \/run\/containerd\/containerd.sock is not allowed.*--docker-sockets/,
    );
    const r = renderSheetCluster(c, s, { token: 't', signingKey: 'k' });
    expect(volumes(r)).not.toContain('containerd');
    expect(agentArgs(s).join(' ')).not.toMatch(/docker/);
    const st = computeSheetStatus(c, s, {
      conflicts: [],
      secretProblems: [],
      notAllowed: refused,
      podProblems: [],
      applyProblem: '',
      starting: false,
      url: 'u',
    });
    expect(st.conditions?.find((x) => x.type === 'Ready')).toMatchObject({ reason: 'NotAllowed' });
  });

  it("Docker's own socket, or a path the operator was started with, is mounted", () => {
    const ok = obj({ runtimes: ['docker'], dockerSocket: '/var/run/docker.sock' });
    const a = allowedDockerSocket(sheetSettings(ok, 'i'), DOCKER_SOCKETS);
    expect(a.refused).toEqual([]);
    expect(volumes(renderSheetCluster(ok, a.s, { token: 't', signingKey: 'k' }))).toContain(
      '/var/run/docker.sock',
    );
    const other = obj({ runtimes: ['docker'], dockerSocket: '/srv/docker.sock' });
    expect(allowedDockerSocket(sheetSettings(other, 'i'), ['/srv/docker.sock']).refused).toEqual([]);
  });

  it('the tenant form (Cozystack catalog) has no dockerSocket field', async () => {
    const { APPS, formSchema } = await import('../marketplace/apps.ts');
    const app = APPS.find((a) => a.name === 'sheet-cluster');
    expect(
      Object.keys((formSchema(app!.def.spec, app!.operatorOnly).properties ?? {}) as object),
    ).not.toContain('dockerSocket');
  });
});
