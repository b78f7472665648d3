// Random bodies, queries and headers (fast-check) never produce a 5xx, and the workbook written
// meanwhile always reopens with the same content. Numeric strings, names with path separators and
// Origin/Host headers have their own properties (issue #17).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest } from '../../util/http-guard.testkit.ts';
import { checkRequest } from '../../util/http-guard.ts';
import { isObjectName } from '../names.ts';
import { LIMITS as SHEET_LIMITS } from '../scheduler/model.ts';
import { openXlsxStore } from '../store/xlsx.ts';
import { type Kit, startKit, TOKEN } from './testkit.ts';

let kit: Kit;
let dir = '';
let file = '';
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sk-fuzz-'));
  file = path.join(dir, 'cluster.xlsx');
  kit = await startKit({ store: await openXlsxStore(file, { flushDelayMs: 20, watchMs: 0 }) });
  await kit.heartbeat('a');
  await kit.heartbeat('b');
});
afterAll(async () => {
  await kit?.close();
  await rm(dir, { recursive: true, force: true });
});

const ACTIONS = [
  'apply',
  'scale',
  'delete',
  'cordon',
  'uncordon',
  'drain',
  'migrate',
  'label',
  'taint',
  'heartbeat',
  'nope',
  '',
];
const FIELDS = [
  'name',
  'replicas',
  'node',
  'spec',
  'kind',
  'deployments',
  'gateways',
  'routes',
  'secrets',
  'pods',
  'cpu_total',
  'mem_total',
  'ip',
  'image',
  'ports',
];
const NAMES = ['web', 'web-1', 'a', 'b', '', '=1+1', '@x', '-1', 'x'.repeat(300), '../etc', '\u0000', 'é'];
const scalar = fc.oneof(
  fc.constantFrom(...NAMES),
  fc.string(),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);
const deployment = fc.dictionary(
  fc.constantFrom(
    'name',
    'image',
    'replicas',
    'cpu_req',
    'mem_req',
    'command',
    'node_selector',
    'tolerations',
    'env',
    'secret_files',
    'ports',
    'extra',
  ),
  fc.oneof(
    scalar,
    fc.array(scalar, { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), scalar, { maxKeys: 2 }),
  ),
);
const value = fc.oneof(
  scalar,
  fc.array(deployment, { maxLength: 3 }),
  fc.array(scalar, { maxLength: 3 }),
  deployment,
);
const body = fc.record({
  token: fc.oneof(fc.constant(TOKEN), fc.constant(TOKEN), fc.string(), fc.integer()),
  action: fc.option(fc.constantFrom(...ACTIONS), { nil: undefined }),
  fields: fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 5 }),
});

describe('random input', () => {
  it('random POST bodies get 2xx or 4xx, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const payload: Record<string, unknown> = { token: b.token, ...b.fields };
        if (b.action !== undefined) payload.action = b.action;
        const r = await kit.post(payload, { token: null });
        if (r.status >= 500)
          throw new Error(
            `${r.status} for ${JSON.stringify(payload).slice(0, 300)}: ${JSON.stringify(r.body)}`,
          );
      }),
      { numRuns: 300 },
    );
  });

  it('random raw bytes, queries and signature headers get 4xx, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 200 }),
        fc.string({ maxLength: 60 }),
        fc.string({ maxLength: 20 }),
        async (raw, q, ts) => {
          const p = await fetch(`${kit.url}/`, {
            method: 'POST',
            body: raw,
            headers: {
              'x-sncf-timestamp': ts.replace(/[^\x20-\x7e]/g, ''),
              'content-type': 'application/json',
            },
          });
          expect(p.status).toBeLessThan(500);
          const g = await fetch(
            `${kit.url}/?${encodeURIComponent(q)}=1&token=${encodeURIComponent(q)}&kind=${encodeURIComponent(q)}&kind=x`,
          );
          expect(g.status).toBeLessThan(500);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('after all that, the workbook reopens with exactly what the apiserver holds', async () => {
    const tabs = ['Deployments', 'Nodes', 'Pods', 'Secrets', 'Gateways', 'Routes'];
    const held = Object.fromEntries(tabs.map((t) => [t, kit.store.rows(t)]));
    await kit.store.flush();
    const again = await openXlsxStore(file, { watchMs: 0 });
    try {
      for (const t of tabs) expect(again.rows(t), t).toEqual(held[t]);
    } finally {
      await again.close();
    }
    expect((await kit.get('pods')).status).toBe(200);
  });
});

// Issue #17's properties run on a memory store: each one may schedule thousands of pods.
describe('random input (#17: numbers, names, headers)', () => {
  let mem: Kit;
  beforeAll(async () => {
    mem = await startKit();
    await mem.heartbeat('a');
  });
  afterAll(async () => {
    await mem?.close();
  });

  it('numeric strings anywhere a number goes: parsed, then range-checked (#17.5)', async () => {
    const numeric = fc.oneof(
      fc.stringMatching(/^\s?\d{1,20}(\.\d{0,3})?\s?$/),
      fc.constantFrom('99999999999999', '1e9', '-1', '10000', '10001', '0x10', 'Infinity', 'NaN', '3.0'),
    );
    await fc.assert(
      fc.asyncProperty(numeric, numeric, async (replicas, cpu) => {
        const a = await mem.post({
          action: 'apply',
          deployments: [{ name: 'num', image: 'x', replicas, cpu_req: cpu, mem_req: 1 }],
        });
        expect(a.status).toBe(200);
        const s = await mem.post({ action: 'scale', name: 'num', replicas });
        expect([200, 400]).toContain(s.status);
        const n = Number(mem.store.get('Deployments', 'num')?.replicas || 0);
        expect(n).toBeLessThanOrEqual(SHEET_LIMITS.replicasMax);
        await mem.post({ action: 'scale', name: 'num', replicas: 0 }); // keep each run's reconcile small
      }),
      { numRuns: 100 },
    );
    await mem.post({ action: 'scale', name: 'num', replicas: 0 });
    await mem.heartbeat('a');
    expect(mem.store.rows('Pods').length).toBeLessThanOrEqual(SHEET_LIMITS.podsMax);
    expect((await fetch(`${mem.url}/healthz`)).status).toBe(200);
  });

  it('names with path separators never become pods, whether applied or typed into the sheet (#17.6)', async () => {
    const piece = fc.constantFrom('..', '.', '/', '\\', 'a', 'b', '-', '_', '%2f', ':', ' ');
    const name = fc.array(piece, { minLength: 1, maxLength: 6 }).map((p) => p.join(''));
    await fc.assert(
      fc.asyncProperty(name, fc.boolean(), async (n, typed) => {
        if (typed)
          await mem.store.transact((tx) =>
            tx.upsert('Deployments', { name: n, image: 'x', replicas: 1, cpu_req: 0, mem_req: 0 }),
          );
        else
          expect(
            (await mem.post({ action: 'apply', deployments: [{ name: n, image: 'x', replicas: 1 }] })).status,
          ).toBe(200);
        const orders = await mem.heartbeat('a');
        for (const p of orders.pods as { name: string }[]) expect(isObjectName(p.name), p.name).toBe(true);
      }),
      { numRuns: 100 },
    );
    for (const p of mem.store.rows('Pods')) expect(isObjectName(p.name), String(p.name)).toBe(true);
    // leave the sheet as the other properties expect it: only valid rows stay
    await mem.store.transact((tx) => {
      for (const d of tx.rows('Deployments'))
        if (!isObjectName(String(d.name).trim())) tx.delete('Deployments', String(d.name));
    });
  });

  it('random Origin and Host headers: never a 5xx, and a change only from a loopback, same-origin request (#17.2)', async () => {
    const port = new URL(mem.url).port;
    const host = fc.oneof(
      fc.constantFrom(`127.0.0.1:${port}`, `localhost:${port}`, `evil.example:${port}`, `[::1]:${port}`),
      fc.domain().map((d) => `${d}:${port}`),
    );
    const origin = fc.option(fc.oneof(fc.constantFrom('null', `http://127.0.0.1:${port}`), fc.webUrl()), {
      nil: undefined,
    });
    await fc.assert(
      fc.asyncProperty(host, origin, async (h, o) => {
        const headers: Record<string, string> = { host: h, 'content-type': 'application/json' };
        if (o !== undefined) headers.origin = o;
        const r = await rawRequest(`${mem.url}/`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ token: TOKEN, action: 'cordon', name: 'a' }),
        });
        expect(r.status).toBeLessThan(500);
        expect(r.status === 200).toBe(checkRequest({ method: 'POST', headers }, { requireJson: true }).ok);
      }),
      { numRuns: 100 },
    );
    await mem.post({ action: 'uncordon', name: 'a' });
  });
});
