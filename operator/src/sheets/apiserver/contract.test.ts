// The HTTP contract of spec §1 and the SCRI Core (C1–C9) and Full (F1–F7) conformance items,
// spoken exactly as the reference clients speak it, against a real server on 127.0.0.1.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SIGNATURE_HEADER, sign, TIMESTAMP_HEADER } from '../signing.ts';
import { TABS } from '../store/schema.ts';
import { type Kit, running, startKit, TOKEN } from './testkit.ts';

let kit: Kit;
afterEach(async () => kit?.close());

const web = {
  name: 'web',
  image: 'nginx:alpine',
  replicas: 3,
  cpu_req: 100,
  mem_req: 32,
  command: 'nginx -g "daemon off;"',
};

describe('SCRI Core', () => {
  beforeEach(async () => {
    kit = await startKit();
  });

  it('C1: the workbook has the four SCRI tabs with their normative columns (and the newer tabs)', () => {
    for (const tab of [
      'Deployments',
      'Nodes',
      'Pods',
      'Events',
      'Images',
      'Layers',
      'Secrets',
      'Gateways',
      'Routes',
      'Metrics',
    ])
      expect(kit.store.tabs()).toContain(tab);
    expect(kit.store.headers('Deployments').slice(0, 8)).toEqual([
      'name',
      'image',
      'replicas',
      'cpu_req',
      'mem_req',
      'command',
      'node_selector',
      'tolerations',
    ]);
    expect(kit.store.headers('Nodes')).toEqual([...TABS.Nodes.headers]);
    expect(kit.store.headers('Pods').slice(0, 5)).toEqual([
      'name',
      'deployment',
      'node',
      'phase',
      'container_id',
    ]);
    expect(kit.store.headers('Events')).toEqual(['ts', 'kind', 'object', 'message']);
  });

  it('C2: a missing or wrong token gets 401 {"error":"unauthorized"} on GET and POST', async () => {
    expect(await kit.get('pods', 'nope')).toEqual({ status: 401, body: { error: 'unauthorized' } });
    const r = await fetch(`${kit.url}/?kind=pods`);
    expect(r.status).toBe(401);
    expect(await kit.post({ action: 'scale', name: 'x', replicas: 1 }, { token: 'nope' })).toEqual({
      status: 401,
      body: { error: 'unauthorized' },
    });
    expect((await kit.post({ action: 'scale', name: 'x', replicas: 1 }, { token: null })).status).toBe(401);
    expect((await kit.post({}, { raw: '' })).status).toBe(401); // an empty body is {} — no token
  });

  it('C3: GET returns {"items":[…]} keyed by header for every kind; kind defaults to pods; unknown kind is 400', async () => {
    await kit.post({ action: 'apply', deployments: [web] });
    for (const kind of [
      'pods',
      'nodes',
      'deployments',
      'events',
      'images',
      'layers',
      'secrets',
      'gateways',
      'routes',
    ]) {
      const r = await kit.get(kind);
      expect(r.status, kind).toBe(200);
      expect(Array.isArray(r.body.items), kind).toBe(true);
    }
    const d = await kit.get('deployments');
    expect(d.body.items[0]).toMatchObject({
      name: 'web',
      image: 'nginx:alpine',
      replicas: 3,
      node_selector: null,
    });
    expect((await kit.get()).body.items.map((p: { name: string }) => p.name)).toEqual([
      'web-1',
      'web-2',
      'web-3',
    ]);
    expect(await kit.get('widgets')).toMatchObject({ status: 400, body: { error: 'unknown kind' } });
  });

  it('ignores the URL path, as the reference does (/exec works like /)', async () => {
    expect((await kit.get('nodes', TOKEN, '/exec')).status).toBe(200);
    const r = await fetch(`${kit.url}/exec`, {
      method: 'POST',
      body: JSON.stringify({ token: TOKEN, node: 'n1' }),
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(200);
  });

  it('#17.2 needs application/json on POST: a browser form or text/plain body is a 415 that changes nothing', async () => {
    // (the reference clients — kubelet.sh, skctl, bridge.py — all send Content-Type: application/json)
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
    ]) {
      const r = await fetch(`${kit.url}/`, {
        method: 'POST',
        body: JSON.stringify({
          token: TOKEN,
          action: 'apply',
          deployments: [{ name: 'csrf', image: 'process' }],
        }),
        headers: { 'content-type': type },
      });
      expect(r.status, type).toBe(415);
      expect(((await r.json()) as { error: string }).error).toMatch(/Content-Type must be application\/json/);
    }
    expect((await kit.get('deployments')).body.items.some((d: { name: string }) => d.name === 'csrf')).toBe(
      false,
    );
  });

  it('C4: a heartbeat upserts the node (Ready, last_heartbeat, schedulable) and answers its desired pods', async () => {
    await kit.post({ action: 'apply', deployments: [web] });
    const before = Math.floor(Date.now() / 1000);
    const orders = await kit.heartbeat('node-a');
    expect(orders.pods.map((p: { name: string }) => p.name)).toEqual(['web-1', 'web-2', 'web-3']);
    const node = (await kit.get('nodes')).body.items[0];
    expect(node).toMatchObject({
      name: 'node-a',
      ip: '10.0.0.1',
      cpu_total: 4000,
      mem_total: 4096,
      status: 'Ready',
      schedulable: true,
      cpu_used: 300,
    });
    expect(node.last_heartbeat).toBeGreaterThanOrEqual(before);
    // A second heartbeat updates ip/capacity but keeps cordon, labels and taints.
    await kit.post({ action: 'label', name: 'node-a', spec: 'disk=ssd' });
    await kit.heartbeat('node-a', [], { ip: '10.0.0.9', cpu_total: 8000 });
    expect((await kit.get('nodes')).body.items[0]).toMatchObject({
      ip: '10.0.0.9',
      cpu_total: 8000,
      labels: 'disk=ssd',
    });
  });

  it('heartbeat defaults: cpu_total 1000 and mem_total 512 when missing or unparsable; ip ""', async () => {
    await kit.post({ node: 'n1', cpu_total: 'lots' });
    expect((await kit.get('nodes')).body.items[0]).toMatchObject({
      cpu_total: 1000,
      mem_total: 512,
      ip: null,
    });
    await kit.post({ node: 'n1', cpu_total: '2500.9', mem_total: 1024 });
    expect((await kit.get('nodes')).body.items[0]).toMatchObject({ cpu_total: 2500, mem_total: 1024 });
  });

  it('C5: Running orders carry image, command, requests, env, secret_files, ports and a 12-hex spec_hash', async () => {
    await kit.post({
      action: 'apply',
      deployments: [{ ...web, replicas: 1, env: 'A=1,B=2', secret_files: 'db:/etc/db', ports: '8080:80' }],
    });
    const [o] = (await kit.heartbeat('node-a')).pods;
    expect(o).toMatchObject({
      name: 'web-1',
      desired: 'Running',
      image: 'nginx:alpine',
      command: web.command,
      cpu_req: 100,
      mem_req: 32,
      deployment: 'web',
      env: 'A=1,B=2',
      secret_files: 'db:/etc/db',
      ports: '8080:80/tcp',
    });
    expect(o.spec_hash).toMatch(/^[0-9a-f]{12}$/);
  });

  it('C6: pods a node reports that are no longer desired there get {"desired":"Terminating"}', async () => {
    await kit.post({ action: 'apply', deployments: [{ ...web, replicas: 1 }] });
    const orders = await kit.heartbeat('node-a', [{ name: 'ghost-1', phase: 'Running', container_id: 'x' }]);
    expect(orders.pods).toContainEqual({ name: 'ghost-1', desired: 'Terminating' });
    await kit.post({ action: 'scale', name: 'web', replicas: 0 });
    const after = await kit.heartbeat('node-a', [{ name: 'web-1', phase: 'Running' }]);
    expect(after.pods).toEqual([{ name: 'web-1', desired: 'Terminating' }]);
  });

  it('C8: exactly `replicas` pods named <deployment>-1..N; scale down drops the highest ordinals', async () => {
    await kit.post({ action: 'apply', deployments: [web] });
    await kit.heartbeat('node-a');
    await kit.post({ action: 'scale', name: 'web', replicas: 5 });
    expect((await kit.get('pods')).body.items.map((p: { name: string }) => p.name)).toEqual([
      'web-1',
      'web-2',
      'web-3',
      'web-4',
      'web-5',
    ]);
    await kit.post({ action: 'scale', name: 'web', replicas: 1 });
    expect((await kit.get('pods')).body.items.map((p: { name: string }) => p.name)).toEqual(['web-1']);
  });

  it('C9: apply / scale / delete results, and unknown or missing action is 400 {"error":"unknown action"}', async () => {
    expect(
      (
        await kit.post({
          action: 'apply',
          deployments: [web, { image: 'x' }, { name: 'bad', ports: '80:abc' }],
        })
      ).body,
    ).toEqual({
      applied: ['created', 'invalid: name is required', expect.stringMatching(/^invalid: port "80:abc"/)],
    });
    expect((await kit.post({ action: 'apply', deployments: [{ name: 'web', replicas: 2 }] })).body).toEqual({
      applied: ['updated'],
    });
    // Update only overwrites the keys present.
    expect((await kit.get('deployments')).body.items[0]).toMatchObject({
      image: 'nginx:alpine',
      replicas: 2,
      command: web.command,
    });
    expect((await kit.post({ action: 'scale', name: 'web', replicas: 4 })).body).toEqual({
      result: 'scaled',
    });
    expect((await kit.post({ action: 'scale', name: 'nope', replicas: 4 })).body).toEqual({
      result: 'not found',
    });
    expect((await kit.post({ action: 'delete', name: 'web' })).body).toEqual({ result: 'deleted' });
    expect((await kit.post({ action: 'delete', name: 'web' })).body).toEqual({ result: 'not found' });
    expect((await kit.post({ action: 'delete', name: 'web', kind: 'pod' })).body).toEqual({
      result: 'unknown kind',
    });
    expect(await kit.post({ action: 'explode' })).toEqual({ status: 400, body: { error: 'unknown action' } });
    expect(await kit.post({})).toEqual({ status: 400, body: { error: 'unknown action' } });
  });

  it('apply stores a ports list comma-joined and only known columns', async () => {
    await kit.post({
      action: 'apply',
      deployments: [{ name: 'dns', image: 'coredns', ports: ['8080:80', '53/udp'], colour: 'blue' }],
    });
    const d = (await kit.get('deployments')).body.items[0];
    expect(d.ports).toBe('8080:80,53/udp');
    expect(d).not.toHaveProperty('colour');
  });

  it('action "heartbeat" (the Apps Script form) is accepted as a heartbeat', async () => {
    expect((await kit.post({ action: 'heartbeat', node: 'n1' })).body).toEqual({ pods: [] });
  });
});

describe('verbs and their error results', () => {
  beforeEach(async () => {
    kit = await startKit();
  });

  it('cordon / uncordon / drain answer their result strings or "not found"', async () => {
    await kit.heartbeat('a');
    expect((await kit.post({ action: 'cordon', name: 'a' })).body).toEqual({ result: 'cordoned' });
    expect((await kit.get('nodes')).body.items[0]).toMatchObject({
      schedulable: false,
      status: 'SchedulingDisabled',
    });
    expect((await kit.post({ action: 'uncordon', name: 'a' })).body).toEqual({ result: 'uncordoned' });
    expect((await kit.get('nodes')).body.items[0]).toMatchObject({ schedulable: true, status: 'Ready' });
    expect((await kit.post({ action: 'drain', name: 'a' })).body).toEqual({ result: 'drained' });
    for (const action of ['cordon', 'uncordon', 'drain'])
      expect((await kit.post({ action, name: 'zz' })).body).toEqual({ result: 'not found' });
  });

  it('migrate: "migrating <pod> -> <node>", "unknown node", "target not schedulable", "pod not found"', async () => {
    await kit.post({ action: 'apply', deployments: [{ ...web, replicas: 1 }] });
    await kit.heartbeat('a');
    await kit.heartbeat('b');
    expect((await kit.post({ action: 'migrate', name: 'web-1', node: 'zz' })).body).toEqual({
      result: 'unknown node',
    });
    expect((await kit.post({ action: 'migrate', name: 'nope-1', node: 'b' })).body).toEqual({
      result: 'pod not found',
    });
    await kit.post({ action: 'cordon', name: 'b' });
    expect((await kit.post({ action: 'migrate', name: 'web-1', node: 'b' })).body).toEqual({
      result: 'target not schedulable',
    });
    await kit.post({ action: 'uncordon', name: 'b' });
    const from = (await kit.get('pods')).body.items[0].node;
    const to = from === 'a' ? 'b' : 'a';
    expect((await kit.post({ action: 'migrate', name: 'web-1', node: to })).body).toEqual({
      result: `migrating web-1 -> ${to}`,
    });
    expect((await kit.get('pods')).body.items[0].node).toBe(to);
  });

  it('label: k=v sets, k- removes, "not found" for unknown nodes, a malformed spec is a 400 naming it', async () => {
    expect((await kit.post({ action: 'label', name: 'a', spec: 'x=y' })).body).toEqual({
      result: 'not found',
    });
    await kit.heartbeat('a');
    expect((await kit.post({ action: 'label', name: 'a', spec: 'disk=ssd' })).body).toEqual({ result: 'ok' });
    await kit.post({ action: 'label', name: 'a', spec: 'zone=1' });
    expect((await kit.get('nodes')).body.items[0].labels).toBe('disk=ssd,zone=1');
    await kit.post({ action: 'label', name: 'a', spec: 'disk-' });
    expect((await kit.get('nodes')).body.items[0].labels).toBe('zone=1');
    const bad = await kit.post({ action: 'label', name: 'a', spec: 'no spaces=1' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/label spec/);
  });

  it('taint: k=v:Effect adds or replaces by key, k- removes by key', async () => {
    await kit.heartbeat('a');
    expect((await kit.post({ action: 'taint', name: 'a', spec: 'gpu=yes:NoSchedule' })).body).toEqual({
      result: 'ok',
    });
    await kit.post({ action: 'taint', name: 'a', spec: 'gpu=no:PreferNoSchedule' });
    expect((await kit.get('nodes')).body.items[0].taints).toBe('gpu=no:PreferNoSchedule');
    await kit.post({ action: 'taint', name: 'a', spec: 'gpu-' });
    expect((await kit.get('nodes')).body.items[0].taints).toBe(null); // empty cells read as null (spec §1.2)
    expect((await kit.post({ action: 'taint', name: 'a', spec: 'gpu=yes:Sometimes' })).status).toBe(400);
  });

  it('gateways, routes and secrets: applied with validation, listed, deleted by kind', async () => {
    const r = await kit.post({
      action: 'apply',
      deployments: [],
      gateways: [{ name: 'public', listen: '8080', replicas: 1 }, { name: 'Bad Name' }],
      routes: [
        { name: 'r1', gateway: 'public', host: 'example.com', path: '/api', service: 'web', port: 80 },
        { name: 'r2', host: 'evil;com', service: 'web' },
        { name: 'r3', path: '/x', rewrite: '/$1', service: 'web' },
      ],
      secrets: [
        { name: 'db', data: Buffer.from('pw').toString('base64') },
        { name: 'bad', data: 'not base64!' },
      ],
    });
    expect(r.body.gateways).toEqual(['created', expect.stringMatching(/^invalid:/)]);
    expect(r.body.routes).toEqual([
      'created',
      expect.stringMatching(/^invalid: host/),
      expect.stringMatching(/^invalid: rewrite/),
    ]);
    expect(r.body.secrets).toEqual(['created', expect.stringMatching(/^invalid: data/)]);
    expect((await kit.get('gateways')).body.items).toHaveLength(1);
    expect((await kit.get('routes')).body.items[0]).toMatchObject({
      name: 'r1',
      host: 'example.com',
      path: '/api',
      service: 'web',
      port: 80,
    });
    expect((await kit.get('secrets')).body.items[0]).toEqual({ name: 'db', data: 'cHc=' });
    expect((await kit.post({ action: 'delete', kind: 'route', name: 'r1' })).body).toEqual({
      result: 'deleted',
    });
    expect((await kit.post({ action: 'delete', kind: 'gateway', name: 'public' })).body).toEqual({
      result: 'deleted',
    });
    expect((await kit.get('routes')).body.items).toHaveLength(0);
  });
});

describe('input validation and safety', () => {
  beforeEach(async () => {
    kit = await startKit();
  });

  it('bad JSON is 400 {"error":"bad json"}; a non-object body too', async () => {
    expect(await kit.post({}, { raw: '{"token":' })).toEqual({ status: 400, body: { error: 'bad json' } });
    expect((await kit.post({}, { raw: '[1,2]' })).body.error).toBe('bad json');
  });

  it('a body of the wrong shape is 400 naming the field', async () => {
    const r1 = await kit.post({ action: 'scale', name: 'web', replicas: 'lots' });
    expect(r1.status).toBe(400);
    expect(r1.body.error).toMatch(/replicas/);
    const r2 = await kit.post({ action: 'migrate', name: 'web-1' });
    expect(r2.body.error).toMatch(/node/);
    const r3 = await kit.post({ action: 'apply', deployments: 'web' });
    expect(r3.body.error).toMatch(/deployments/);
    const r4 = await kit.post({ node: 'n1', pods: [{ phase: 'Running' }] });
    expect(r4.status).toBe(400);
    expect(r4.body.error).toMatch(/pods\.0/);
    const r5 = await kit.post({ node: 'bad name;rm' });
    expect(r5.body.error).toMatch(/node/);
  });

  it('values starting with = + - @ are stored as text, never formulas', async () => {
    const evil = ['=HYPERLINK("http://x","y")', '+1+1', '-2+3', '@SUM(A1)'];
    await kit.post({
      action: 'apply',
      deployments: evil.map((command, i) => ({ name: `f${i}`, image: command, command })),
    });
    const items = (await kit.get('deployments')).body.items;
    expect(items.map((d: { command: string }) => d.command)).toEqual(evil);
  });

  it('a body over the size limit is refused with 413 and the server keeps serving', async () => {
    const r = await kit.post(
      {},
      {
        raw: JSON.stringify({
          token: TOKEN,
          action: 'apply',
          deployments: [{ name: 'x', command: 'a'.repeat(9 * 1024 * 1024) }],
        }),
      },
    );
    expect(r.status).toBe(413);
    expect((await kit.get('pods')).status).toBe(200);
  });

  it('a cell longer than the limit is an invalid object, not a crash', async () => {
    const r = await kit.post({ action: 'apply', deployments: [{ name: 'x', command: 'a'.repeat(40_000) }] });
    expect(r.status).toBe(200);
    expect(r.body.applied[0]).toMatch(/^invalid: command is longer/);
  });
});

describe('SCRI Full', () => {
  beforeEach(async () => {
    kit = await startKit();
  });

  it('F1: requests are honoured and a pod no node fits is Unschedulable', async () => {
    await kit.heartbeat('a', [], { cpu_total: 1000 });
    await kit.post({
      action: 'apply',
      deployments: [
        { name: 'big', image: 'x', replicas: 1, cpu_req: 5000 },
        { name: 'ok', image: 'x', replicas: 2, cpu_req: 400 },
      ],
    });
    const pods = (await kit.get('pods')).body.items;
    expect(pods.find((p: { name: string }) => p.name === 'big-1')).toMatchObject({
      node: null,
      phase: 'Unschedulable',
    });
    expect((await kit.get('nodes')).body.items[0].cpu_used).toBe(800);
  });

  it('F2: sticky placement — pods stay put when a bigger node joins', async () => {
    await kit.post({ action: 'apply', deployments: [{ ...web, replicas: 2 }] });
    await kit.heartbeat('a');
    await kit.heartbeat('b', [], { cpu_total: 64000, mem_total: 64000 });
    expect((await kit.get('pods')).body.items.map((p: { node: string }) => p.node)).toEqual(['a', 'a']);
  });

  it('F3: cordon blocks new pods; drain moves pods off (make-before-break: old copies run until new ones do)', async () => {
    await kit.post({ action: 'apply', deployments: [{ ...web, replicas: 2 }] });
    const oa = await kit.heartbeat('a');
    await kit.heartbeat('a', running(oa));
    await kit.heartbeat('b');
    await kit.post({ action: 'cordon', name: 'a' });
    await kit.post({ action: 'scale', name: 'web', replicas: 3 });
    expect((await kit.get('pods')).body.items.map((p: { node: string }) => p.node)).toEqual(['a', 'a', 'b']);
    await kit.post({ action: 'drain', name: 'a' });
    expect((await kit.get('pods')).body.items.map((p: { node: string }) => p.node)).toEqual(['b', 'b', 'b']);
    // a still runs web-1/web-2 until b reports them Running.
    const stillA = await kit.heartbeat('a', [
      { name: 'web-1', phase: 'Running' },
      { name: 'web-2', phase: 'Running' },
    ]);
    expect(stillA.pods.map((p: { desired: string }) => p.desired)).toEqual(['Running', 'Running']);
    const ob = await kit.heartbeat('b');
    await kit.heartbeat('b', running(ob));
    const nowA = await kit.heartbeat('a', [
      { name: 'web-1', phase: 'Running' },
      { name: 'web-2', phase: 'Running' },
    ]);
    expect(nowA.pods).toEqual([
      { name: 'web-1', desired: 'Terminating' },
      { name: 'web-2', desired: 'Terminating' },
    ]);
  });

  it('F4: node_selector places pods only on labelled nodes', async () => {
    await kit.heartbeat('a');
    await kit.heartbeat('b');
    await kit.post({
      action: 'apply',
      deployments: [{ name: 'db', image: 'pg', replicas: 2, node_selector: 'disk=ssd' }],
    });
    expect((await kit.get('pods')).body.items.map((p: { phase: string }) => p.phase)).toEqual([
      'Unschedulable',
      'Unschedulable',
    ]);
    await kit.post({ action: 'label', name: 'b', spec: 'disk=ssd' });
    expect((await kit.get('pods')).body.items.map((p: { node: string }) => p.node)).toEqual(['b', 'b']);
  });

  it('F5: a NoSchedule taint evicts pods without a toleration; tolerating pods stay', async () => {
    await kit.heartbeat('a');
    await kit.post({
      action: 'apply',
      deployments: [
        { name: 'plain', image: 'x', replicas: 1 },
        { name: 'tol', image: 'x', replicas: 1, tolerations: 'gpu' },
      ],
    });
    await kit.post({ action: 'taint', name: 'a', spec: 'gpu=yes:NoSchedule' });
    const pods = (await kit.get('pods')).body.items;
    expect(pods.map((p: { node: string }) => p.node)).toEqual([null, 'a']);
  });

  it('F7: Events are written for node registration, applies, scheduling and verbs', async () => {
    await kit.heartbeat('a');
    await kit.post({ action: 'apply', deployments: [{ ...web, replicas: 1 }] });
    await kit.post({ action: 'cordon', name: 'a' });
    const events = (await kit.get('events')).body.items;
    const text = events.map(
      (e: { kind: string; object: string; message: string }) => `${e.kind} ${e.object} ${e.message}`,
    );
    expect(text).toContainEqual(expect.stringMatching(/^Node a registered/));
    expect(text).toContainEqual(expect.stringMatching(/^Deployment web created/));
    expect(text).toContainEqual('Pod web-1 scheduled to a');
    expect(text).toContainEqual('Node a cordoned');
    expect(events[0].ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });
});

describe('F6: HMAC signing with a replay cache', () => {
  const KEY = 'shared-signing-key';
  beforeEach(async () => {
    kit = await startKit({ signingKey: KEY });
  });

  it('a signed POST passes; unsigned, tampered, stale and replayed requests get 401 "bad signature"', async () => {
    expect((await kit.post({ action: 'apply', deployments: [web] }, { key: KEY })).status).toBe(200);
    const unsigned = await kit.post({ action: 'scale', name: 'web', replicas: 1 });
    expect(unsigned).toMatchObject({ status: 401, body: { error: 'bad signature' } });

    const raw = JSON.stringify({ token: TOKEN, action: 'scale', name: 'web', replicas: 2 });
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = { [TIMESTAMP_HEADER]: ts, [SIGNATURE_HEADER]: sign(KEY, ts, raw) };
    const tampered = await kit.post({}, { raw: raw.replace('"replicas":2', '"replicas":9'), headers });
    expect(tampered.status).toBe(401);

    const stale = String(Math.floor(Date.now() / 1000) - 400);
    expect(
      (
        await kit.post(
          {},
          { raw, headers: { [TIMESTAMP_HEADER]: stale, [SIGNATURE_HEADER]: sign(KEY, stale, raw) } },
        )
      ).status,
    ).toBe(401);

    expect((await kit.post({}, { raw, headers })).status).toBe(200);
    const replay = await kit.post({}, { raw, headers });
    expect(replay).toMatchObject({
      status: 401,
      body: { error: 'bad signature', reason: 'replayed request' },
    });
    expect((await kit.get('deployments')).body.items[0].replicas).toBe(2);
  });

  it('the signature is checked before the body is believed: a bad signature on bad JSON is 401, not 400', async () => {
    expect((await kit.post({}, { raw: '{not json' })).status).toBe(401);
  });

  it('signed heartbeats work and GETs stay unsigned (as in the reference)', async () => {
    const r = await kit.post({ node: 'n1' }, { key: KEY });
    expect(r.status).toBe(200);
    expect((await kit.get('nodes')).status).toBe(200);
  });
});
