// Google backend specifics, against the emulator through the real googleapis client.

import { google } from 'googleapis';
import { afterEach, describe, expect, it } from 'vitest';
import { SheetsEmulator } from '../google-emulator/server.ts';
import { authFromCredentials, openGoogleStore } from './google.ts';
import { setupCluster } from './setup.ts';
import { testAuth } from './testing.ts';

const emus: SheetsEmulator[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c().catch(() => {});
  for (const e of emus.splice(0)) await e.close();
});

async function emulator(opts: ConstructorParameters<typeof SheetsEmulator>[0] = {}) {
  const emu = new SheetsEmulator(opts);
  emus.push(emu);
  await emu.listen();
  return emu;
}

describe('Google Sheets backend', () => {
  it('paces its writes: a burst of 300 changes stays within the per-minute write quota with no 429', async () => {
    // Time runs 60x faster inside the emulator's quota window (1 s real = 1 min), so the real
    // 60 writes/min/user quota can be exercised in seconds; the store paces to 50/min likewise.
    const t0 = Date.now();
    const emu = await emulator({ now: () => t0 + (Date.now() - t0) * 60 });
    const id = emu.createSpreadsheet('pace');
    const store = await openGoogleStore({
      spreadsheetId: id,
      auth: testAuth('pacer'),
      rootUrl: emu.url,
      writesPerMinute: 50 * 60, // 50 per emulated minute
      flushDelayMs: 5,
      pollMs: 0,
    });
    closers.push(() => store.close());
    await setupCluster(store, { samples: false });
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 300; i++) {
      writes.push(store.transact((tx) => tx.upsert('Nodes', { name: `n${i % 40}`, last_heartbeat: i })));
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all(writes);
    expect(emu.stats.rejected429).toBe(0);
    // No emulated minute (1 s real) ever saw more than 60 writes.
    const times = emu.stats.writeTimes;
    for (let i = 0; i < times.length; i++) {
      const inWindow = times.filter((t) => t >= times[i] && t - times[i] < 60_000).length;
      expect(inWindow).toBeLessThanOrEqual(60);
    }
    // Batching: far fewer write requests than changes.
    expect(store.writeRequests).toBeLessThan(100);
    expect(store.get('Nodes', 'n19')?.last_heartbeat).toBe(299);
    expect(emu.peek(id, 'Nodes')[20][6]).toEqual({ value: 299 }); // n19 on row 21, last_heartbeat column G
  });

  it('backs off with jitter on 429 and still delivers every acknowledged write', async () => {
    const t0 = Date.now();
    // Quota of 5 writes per (emulated) minute, 1 emulated minute = 300 ms real.
    const emu = await emulator({
      now: () => t0 + (Date.now() - t0) * 200,
      quotas: { writesPerMinutePerUser: 5 },
    });
    const id = emu.createSpreadsheet('backoff');
    const opts = {
      spreadsheetId: id,
      auth: testAuth('eager'),
      rootUrl: emu.url,
      writesPerMinute: 60_000,
      pollMs: 0,
      backoffBaseMs: 50,
    };
    const store = await openGoogleStore(opts);
    closers.push(() => store.close());
    await setupCluster(store, { samples: false });
    for (let i = 0; i < 12; i++)
      await store.transact((tx) => tx.upsert('Deployments', { name: `d${i}`, replicas: i }));
    expect(emu.stats.rejected429).toBeGreaterThan(0);
    expect(store.retries).toBeGreaterThan(0);
    const again = await openGoogleStore(opts);
    closers.push(() => again.close());
    expect(again.rows('Deployments').map((d) => d.replicas)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it("notices an edit made in the Sheet, merges it, and keeps a person's formula in a row we rewrite", async () => {
    const emu = await emulator();
    const id = emu.createSpreadsheet('edit');
    const store = await openGoogleStore({
      spreadsheetId: id,
      auth: testAuth('srv'),
      rootUrl: emu.url,
      pollMs: 0,
      flushDelayMs: 10,
    });
    closers.push(() => store.close());
    await setupCluster(store);
    const person = google.sheets({ version: 'v4', auth: testAuth('person'), rootUrl: emu.url });
    // The person scales "ticker" and types a formula into its mem_req cell (row 3 = ticker).
    await person.spreadsheets.values.update({
      spreadsheetId: id,
      range: 'Deployments!C3:E3',
      valueInputOption: 'USER_ENTERED',
      requestBody: { values: [['5', null, '=16*2']] },
    });
    const seen: string[] = [];
    store.onChange((ev) => ev.source === 'external' && seen.push(...ev.tabs));
    await store.poll();
    expect(seen).toContain('Deployments');
    expect(store.get('Deployments', 'ticker')).toMatchObject({ replicas: 5, mem_req: 32 });
    await store.transact((tx) => tx.update('Deployments', 'ticker', { image: 'nginx:alpine' }));
    const f = await person.spreadsheets.values.get({
      spreadsheetId: id,
      range: 'Deployments!A3:E3',
      valueRenderOption: 'FORMULA',
    });
    expect(f.data.values).toEqual([['ticker', 'nginx:alpine', 5, 50, '=16*2']]);
  });

  it('builds auth from service-account or authorized-user JSON and rejects other credentials clearly', () => {
    const user = authFromCredentials({
      type: 'authorized_user',
      client_id: 'c',
      client_secret: 's',
      refresh_token: 'r',
    });
    expect(user.constructor.name).toBe('UserRefreshClient');
    expect(() => authFromCredentials({ type: 'external_account' })).toThrow(/service-account key/);
  });
});
