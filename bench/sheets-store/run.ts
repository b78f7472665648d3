// Store benchmarks (Sheeternetes): the xlsx backend under heartbeat-like load on a large cluster,
// and the Google backend's write rate under load against the Sheets emulator's real quota.
// Run: node_modules/.bin/node bench/sheets-store/run.ts   → bench/results/sheets-store.json

import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SheetsEmulator } from '../../operator/src/sheets/google-emulator/server.ts';
import { openGoogleStore } from '../../operator/src/sheets/store/google.ts';
import { setupCluster } from '../../operator/src/sheets/store/setup.ts';
import { testAuth } from '../../operator/src/sheets/store/testing.ts';
import { openXlsxStore } from '../../operator/src/sheets/store/xlsx.ts';
import { startRecording, writeResults } from '../results.ts';

const record = startRecording();

const NODES = 1000;
const PODS = 10_000;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const ms = (x: number) => Math.round(x * 1000) / 1000;

async function benchXlsx() {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-bench-'));
  const file = path.join(dir, 'cluster.xlsx');
  const store = await openXlsxStore(file, { watchMs: 0 });
  await setupCluster(store);
  let t = performance.now();
  await store.transact((tx) => {
    for (let n = 0; n < NODES; n++) {
      tx.insert('Nodes', {
        name: `node-${n}`,
        ip: `10.0.${n >> 8}.${n & 255}`,
        cpu_total: 4000,
        cpu_used: 0,
        mem_total: 8192,
        status: 'Ready',
        last_heartbeat: 0,
        schedulable: true,
      });
    }
    tx.replaceAll(
      'Pods',
      Array.from({ length: PODS }, (_, i) => ({
        name: `web-${i + 1}`,
        deployment: 'web',
        node: `node-${i % NODES}`,
        phase: 'Running',
        container_id: `c${i}`,
      })),
    );
  });
  const fullSaveMs = performance.now() - t; // one durable transaction writing the whole cluster
  const size = (await fsp.stat(file)).size;

  // Heartbeat-like buffered transactions: upsert one node (read-modify-write).
  const hb: number[] = [];
  const savesBefore = store.saves;
  t = performance.now();
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  for (let i = 0; i < 20_000; i++) {
    if (i % 50 === 0) await new Promise((r) => setImmediate(r)); // requests arrive through I/O
    const t0 = performance.now();
    await store.transact(
      (tx) => {
        const name = `node-${i % NODES}`;
        const cur = tx.get('Nodes', name);
        tx.update('Nodes', name, { last_heartbeat: i, cpu_used: Number(cur?.cpu_used ?? 0) });
      },
      { durability: 'buffered' },
    );
    hb.push(performance.now() - t0);
  }
  const hbSecs = (performance.now() - t) / 1000;
  await store.flush();
  loop.disable();
  const loopP99Ms = loop.percentile(99) / 1e6;
  const loopMaxMs = loop.max / 1e6;
  const hbSaves = store.saves - savesBefore;

  // Durable single writes (each waits for its fsync'd save) and 200 concurrent ones (group commit).
  const dur: number[] = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    await store.transact((tx) => tx.update('Deployments', 'web', { replicas: i }));
    dur.push(performance.now() - t0);
  }
  const s0 = store.saves;
  t = performance.now();
  await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      store.transact((tx) => tx.upsert('Deployments', { name: `d${i}`, replicas: 1 })),
    ),
  );
  const burstMs = performance.now() - t;
  const burstSaves = store.saves - s0;
  await store.close();
  await fsp.rm(dir, { recursive: true, force: true });
  return {
    nodes: NODES,
    pods: PODS,
    fileBytes: size,
    fullSaveMs: ms(fullSaveMs),
    bufferedTxPerSec: Math.round(20_000 / hbSecs),
    bufferedTxP50Ms: ms(pct(hb, 50)),
    bufferedTxP99Ms: ms(pct(hb, 99)),
    savesDuring20kBufferedTx: hbSaves,
    eventLoopDelayP99Ms: ms(loopP99Ms),
    eventLoopDelayMaxMs: ms(loopMaxMs),
    durableTxP50Ms: ms(pct(dur, 50)),
    durableTxP99Ms: ms(pct(dur, 99)),
    burst200DurableMs: ms(burstMs),
    burst200Saves: burstSaves,
  };
}

async function benchGoogle() {
  // 1 real second = 1 emulated minute: the real quota (60 writes/min/user) is enforced on the
  // emulated clock, and the store paces to its default 50 writes/min on the same scale.
  const SCALE = 60;
  const t0 = Date.now();
  const emu = new SheetsEmulator({ now: () => t0 + (Date.now() - t0) * SCALE });
  await emu.listen();
  const id = emu.createSpreadsheet('bench');
  const store = await openGoogleStore({
    spreadsheetId: id,
    auth: testAuth('bench'),
    rootUrl: emu.url,
    writesPerMinute: 50 * SCALE,
    flushDelayMs: 2_000 / SCALE,
    pollMs: 0,
  });
  await setupCluster(store);
  const start = Date.now();
  const writesBefore = emu.stats.writes;
  let changes = 0;
  const pending: Promise<unknown>[] = [];
  // 5 emulated minutes of load: 100 nodes heartbeating every 5 emulated seconds, plus a durable
  // user change every emulated second.
  while (Date.now() - start < 5_000) {
    for (let n = 0; n < 100; n++) {
      pending.push(
        store.transact((tx) => tx.upsert('Nodes', { name: `node-${n}`, last_heartbeat: Date.now() }), {
          durability: 'buffered',
        }),
      );
      changes++;
    }
    pending.push(store.transact((tx) => tx.upsert('Deployments', { name: 'web', replicas: changes % 7 })));
    changes++;
    await new Promise((r) => setTimeout(r, 5_000 / SCALE / 1));
  }
  await Promise.all(pending);
  await store.flush();
  const emulatedMinutes = ((Date.now() - start) * SCALE) / 60_000;
  const times = emu.stats.writeTimes;
  let maxWindow = 0;
  for (let i = 0; i < times.length; i++)
    maxWindow = Math.max(maxWindow, times.filter((x) => x >= times[i] && x - times[i] < 60_000).length);
  const writes = emu.stats.writes - writesBefore;
  await store.close();
  await emu.close();
  return {
    emulatedMinutes: Math.round(emulatedMinutes * 10) / 10,
    changes,
    writeRequests: writes,
    writesPerMinute: Math.round(writes / emulatedMinutes),
    maxWritesInAnyMinute: maxWindow,
    quotaPerMinutePerUser: 60,
    rejected429: emu.stats.rejected429,
    changesPerWrite: Math.round(changes / Math.max(1, writes)),
  };
}

const xlsx = await benchXlsx();
console.log('xlsx', xlsx);
const googleRes = await benchGoogle();
console.log('google (emulated)', googleRes);
const out = {
  benchmark: 'sheets-store',
  xlsx,
  google: googleRes,
};
writeResults('sheets-store', out, record);
