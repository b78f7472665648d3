// The Metrics tab (append at an interval, keep only the retention window) and /metrics (Prometheus
// text from the apiserver's own Registry) report the same cluster figures.
import { afterEach, describe, expect, it } from 'vitest';
import { type Kit, running, startKit } from '../apiserver/testkit.ts';
import { MemoryStore } from '../store/memory.ts';
import { setupCluster } from '../store/setup.ts';
import { recordSample, sampleCluster } from './metrics.ts';

let kit: Kit | undefined;
afterEach(async () => {
  await kit?.close();
  kit = undefined;
});

describe('cluster metrics', () => {
  it('samples pods running, nodes ready and CPU allocated into the Metrics tab and onto /metrics', async () => {
    kit = await startKit();
    await kit.post({
      action: 'apply',
      deployments: [{ name: 'web', image: 'x', replicas: 3, cpu_req: 250 }],
    });
    const o = await kit.heartbeat('a');
    await kit.heartbeat('a', running(o));
    await kit.heartbeat('b');
    const s = await kit.server.metrics.recordNow();
    expect(s).toMatchObject({
      pods_running: 3,
      nodes_ready: 2,
      nodes_total: 2,
      cpu_allocated_millicores: 750,
      pods_total: 3,
    });
    const rows = (await kit.get('metrics')).body.items as { metric: string; value: number }[];
    expect(rows.find((r) => r.metric === 'pods_running')?.value).toBe(3);
    expect(rows.find((r) => r.metric === 'cpu_allocated_millicores')?.value).toBe(750);
    const text = await (await fetch(`${kit.url}/metrics`)).text();
    expect(text).toMatch(/^sheets_pods_running 3$/m);
    expect(text).toMatch(/^sheets_nodes_ready 2$/m);
    expect(text).toMatch(/^sheets_cpu_allocated_millicores 750$/m);
    expect(text).toMatch(/sheets_http_requests_total\{method="POST",code="200"\} \d+/);
  });

  it('keeps only the retention window in the Metrics tab', async () => {
    const store = new MemoryStore();
    await setupCluster(store, { samples: false });
    const s = sampleCluster(store, 1000, 30);
    await recordSample(store, s, 1_800_000_000, 60);
    await recordSample(store, s, 1_800_000_030, 60);
    expect(new Set(store.rows('Metrics').map((r) => r.ts)).size).toBe(2);
    await recordSample(store, s, 1_800_000_090, 60); // the first sample is now 90 s old
    const ts = [...new Set(store.rows('Metrics').map((r) => r.ts))];
    expect(ts).toHaveLength(2);
    expect(ts).not.toContain(new Date(1_800_000_000_000).toISOString().replace(/\.\d{3}Z$/, 'Z'));
  });

  it('a node whose heartbeat is older than the TTL is not counted ready', async () => {
    const store = new MemoryStore();
    await setupCluster(store, { samples: false });
    await store.transact((tx) => {
      tx.insert('Nodes', { name: 'old', last_heartbeat: 1000, cpu_total: 1000 });
      tx.insert('Nodes', { name: 'new', last_heartbeat: 1025, cpu_total: 1000 });
    });
    expect(sampleCluster(store, 1031, 30)).toMatchObject({
      nodes_total: 2,
      nodes_ready: 1,
      cpu_capacity_millicores: 1000,
    });
  });
});
