// Regression tests of issue #17's findings on the apiserver, each reproduced on the old code:
// numeric strings past the limits (5), names that are paths (6), cross-site requests (2), replay
// after a restart (11).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { rawRequest } from '../../util/http-guard.testkit.ts';
import { DEFAULT_TOKEN } from '../default-token.ts';
import { LIMITS as SHEET_LIMITS } from '../scheduler/model.ts';
import { signRequest } from '../signing.ts';
import { MemoryStore } from '../store/memory.ts';
import { exposureProblem } from './server.ts';
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

describe('#17.2 cross-site requests from a browser', () => {
  it('a foreign Origin, a cross-site fetch or a rebound Host changes nothing; the reference clients still work', async () => {
    const k = await kit();
    const apply = JSON.stringify({
      token: 'test-token',
      action: 'apply',
      deployments: [{ name: 'csrf', image: 'x' }],
    });
    const json = { 'content-type': 'application/json' };
    const port = new URL(k.url).port;
    for (const headers of [
      { ...json, origin: 'https://evil.example' },
      { ...json, origin: 'null' },
      { ...json, 'sec-fetch-site': 'cross-site' },
      { ...json, host: `evil.example:${port}` },
      { ...json, host: `evil.example:${port}`, origin: `http://evil.example:${port}` },
    ]) {
      const r = await rawRequest(`${k.url}/`, { method: 'POST', headers, body: apply });
      expect(r.status, JSON.stringify(headers)).toBe(403);
    }
    // A GET through a rebound name cannot read the secrets either.
    expect(
      (await rawRequest(`${k.url}/?token=test-token&kind=secrets`, { headers: { host: 'evil.example' } }))
        .status,
    ).toBe(403);
    expect((await k.get('deployments')).body.items).toEqual([]);
    // What curl / kubelet.sh / skctl send: JSON, loopback Host, no Origin.
    expect((await rawRequest(`${k.url}/`, { method: 'POST', headers: json, body: apply })).status).toBe(200);
  });
});

describe('#17.1 serving beyond loopback needs a token of your own and signing', () => {
  it('refuses 0.0.0.0 with the default token, or without a signing key, and says what to set', async () => {
    const plain = await startKit({ token: DEFAULT_TOKEN });
    kits.push(plain);
    await expect(plain.server.listen(0, '0.0.0.0')).rejects.toThrow(/default token.*TOKEN/);
    const unsigned = await startKit({ token: 'a-real-secret' });
    kits.push(unsigned);
    await expect(unsigned.server.listen(0, '0.0.0.0')).rejects.toThrow(
      /without request signing.*SIGNING_KEY/,
    );
    expect(exposureProblem('127.0.0.1', DEFAULT_TOKEN, undefined)).toBeUndefined();
    expect(exposureProblem('::', 'a-real-secret', 'k')).toBeUndefined();
  });

  it('`sheets serve` listens on 127.0.0.1 by default and exits with the reason on 0.0.0.0 with the default token', async () => {
    const main = new URL('../../cli/main.ts', import.meta.url).pathname;
    const run = promisify(execFile);
    const r = run(
      process.execPath,
      [main, 'sheets', 'serve', '--workbook', 'memory:', '--port', '0', '--host', '0.0.0.0'],
      {
        timeout: 60_000,
        env: { ...process.env, TOKEN: '' },
      },
    );
    await expect(r).rejects.toThrow(/refusing to listen on 0.0.0.0 with the well-known default token/);
  }, 60_000);
});

describe('#17.11 a captured signed request is not accepted again after a restart', () => {
  it('the restarted apiserver refuses what was signed before it started; new requests pass', async () => {
    const KEY = 'replay-key';
    const store = new MemoryStore();
    let t = 1_000_000;
    const a = await startKit({ store, signingKey: KEY, now: () => t });
    t += 10;
    const raw = JSON.stringify({ token: 'test-token', action: 'cordon', name: 'a' });
    const captured = signRequest(KEY, raw, t);
    expect((await a.post(null, { raw, headers: captured })).status).toBe(200);
    expect((await a.post(null, { raw, headers: captured })).body).toMatchObject({
      reason: 'replayed request',
    });
    await a.server.close(); // the store stays: a restart of the process
    t += 5;
    const b = await startKit({ store, signingKey: KEY, now: () => t });
    kits.push(b);
    const again = await b.post(null, { raw, headers: captured });
    expect(again.status).toBe(401);
    expect(again.body.reason).toMatch(/signed before the apiserver started/);
    expect((await b.post(null, { raw, headers: signRequest(KEY, raw, t) })).status).toBe(200);
  });
});
