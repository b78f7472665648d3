import { Counter, Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { type CheckResult, close, createHandler, listen, portOf } from './server.ts';

describe('operator HTTP endpoints', () => {
  const servers: Array<Awaited<ReturnType<typeof listen>>> = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map(close));
  });

  it('serves the component registry on /metrics and probe verdicts on /healthz and /readyz', async () => {
    const registry = new Registry();
    new Counter({ name: 'probe_test_total', help: 'x', registers: [registry] }).inc(3);
    let ready: CheckResult = 'caches not synced: oberonairs';
    const srv = await listen(
      createHandler({ registry, healthz: () => true, readyz: () => ready }),
      0,
      '127.0.0.1',
    );
    servers.push(srv);
    const base = `http://127.0.0.1:${portOf(srv)}`;

    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('probe_test_total 3');
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain('caches not synced');
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // Ready with a note: an optional kind still waiting is named, and the probe passes.
    ready = { ok: true, text: 'ok; waiting for optional kinds: virtualmachines.kubevirt.io' };
    const noted = await fetch(`${base}/readyz`);
    expect(noted.status).toBe(200);
    expect(await noted.text()).toBe('ok; waiting for optional kinds: virtualmachines.kubevirt.io\n');
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });
});
