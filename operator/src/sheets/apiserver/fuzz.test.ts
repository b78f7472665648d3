// Random bodies, queries and headers (fast-check) never produce a 5xx, and the workbook written
// meanwhile always reopens with the same content.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
