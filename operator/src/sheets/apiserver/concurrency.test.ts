// 50 clients at once against one apiserver on the xlsx backend: every read-modify-write lands,
// and the workbook on disk holds all of them afterwards.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openXlsxStore } from '../store/xlsx.ts';
import { type Kit, startKit } from './testkit.ts';

let kit: Kit | undefined;
let dir = '';
afterEach(async () => {
  await kit?.close();
  kit = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('concurrency', () => {
  it('50 parallel clients: no lost update (labels on one shared node), no error reply, all persisted', async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sk-conc-'));
    const file = path.join(dir, 'cluster.xlsx');
    kit = await startKit({ store: await openXlsxStore(file, { flushDelayMs: 50, watchMs: 0 }) });
    await kit.heartbeat('shared');
    const k = kit;
    const clients = Array.from({ length: 50 }, async (_, i) => {
      const replies = [
        await k.post({
          action: 'apply',
          deployments: [{ name: `d${i}`, image: 'x', replicas: 1, cpu_req: 1, mem_req: 1 }],
        }),
        await k.post({ action: 'label', name: 'shared', spec: `k${i}=v${i}` }),
        await k.post({ node: `n${i}`, cpu_total: 1000, mem_total: 1000 }),
        await k.get('pods'),
        await k.post({ action: 'scale', name: `d${i}`, replicas: 2 }),
      ];
      return replies.map((r) => r.status);
    });
    const statuses = (await Promise.all(clients)).flat();
    expect(statuses.every((s) => s === 200)).toBe(true);
    const labels = String(kit.store.get('Nodes', 'shared')?.labels).split(',');
    expect(labels).toHaveLength(50);
    expect(kit.store.rows('Deployments')).toHaveLength(50);
    expect(kit.store.rows('Pods')).toHaveLength(100);
    await kit.close();
    kit = undefined;
    // Everything acknowledged is in the file; no temp file is left behind.
    const again = await openXlsxStore(file, { watchMs: 0 });
    try {
      expect(String(again.get('Nodes', 'shared')?.labels).split(',')).toHaveLength(50);
      expect(again.rows('Deployments').map((d) => d.replicas)).toEqual(Array(50).fill(2));
      expect(again.rows('Nodes')).toHaveLength(51);
    } finally {
      await again.close();
    }
    expect((await readdir(dir)).filter((f) => f.startsWith('.~sk-'))).toEqual([]);
  });
});
