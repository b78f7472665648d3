// Sheeternetes benchmarks (`node_modules/.bin/node bench/sheets/run.ts [--quick]`):
//  1. heartbeats/s and p50/p99 latency with 100, 500 and 1,000 nodes on the xlsx backend, the
//     apiserver in its own process; open loop at the real rate (every node every 5 s) and closed loop;
//  2. scheduler time for 1,000 nodes × 10,000 pods (fresh placement and the sticky steady state);
//  3. Google-backend writes per minute under heartbeat load, against the Sheets emulator's quota.
// Writes bench/results/sheets.json.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createApiServer } from '../../operator/src/sheets/apiserver/server.ts';
import { SheetsEmulator } from '../../operator/src/sheets/google-emulator/server.ts';
import {
  type DeploymentIn,
  deploymentFromRow,
  type ExistingPod,
  type NodeIn,
  nodeFromRow,
} from '../../operator/src/sheets/scheduler/model.ts';
import { schedule } from '../../operator/src/sheets/scheduler/schedule.ts';
import { openGoogleStore } from '../../operator/src/sheets/store/google.ts';
import { testAuth } from '../../operator/src/sheets/store/testing.ts';
import { startRecording, writeResults } from '../results.ts';
import { spreadDeployments } from './deployments.ts';

const record = startRecording();

const QUICK = process.argv.includes('--quick');
const MAIN = fileURLToPath(new URL('../../operator/src/sheets/apiserver/main.ts', import.meta.url));
const TOKEN = 'bench';
const HEARTBEAT_PERIOD_S = 5;
const OPEN_LOOP_S = QUICK ? 10 : 20; // the first HEARTBEAT_PERIOD_S follow registration (catch-up); the rest is steady state
const CLOSED_LOOP_S = QUICK ? 3 : 5;
const GOOGLE_S = QUICK ? 20 : 60;
const ONLY = process.argv.includes('--nodes') ? Number(process.argv[process.argv.indexOf('--nodes') + 1]) : 0;

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const r2 = (x: number) => Math.round(x * 100) / 100;
// CPU seconds (user + system, all threads incl. the xlsx worker) a process has used so far (Linux).
const cpuSeconds = (pid: number | undefined): number => {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return Number.NaN;
  }
};

function startServer(file: string): Promise<{ proc: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(
      process.execPath,
      [MAIN, '--workbook', file, '--port', '0', '--token', TOKEN, '--no-samples'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    proc.stdout?.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ proc, url: m[1] });
    });
    proc.once('exit', (c) => reject(new Error(`apiserver exited ${c}`)));
  });
}

async function post(
  url: string,
  body: Record<string, unknown>,
): Promise<{ status: number; json: unknown; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(url, {
    method: 'POST',
    body: JSON.stringify({ token: TOKEN, ...body }),
    headers: { 'content-type': 'application/json' },
  });
  const json = await r.json();
  return { status: r.status, json, ms: performance.now() - t0 };
}

type Orders = { pods: { name: string; desired: string }[] };
const runningOf = (o: Orders) =>
  o.pods
    .filter((p) => p.desired === 'Running')
    .map((p) => ({ name: p.name, phase: 'Running', container_id: `c-${p.name}` }));

async function heartbeatBench(nodes: number) {
  const dir = await mkdtemp(path.join(tmpdir(), 'sk-bench-'));
  const { proc, url } = await startServer(path.join(dir, 'cluster.xlsx'));
  try {
    const pods = nodes * 2;
    await post(url, { action: 'apply', deployments: spreadDeployments(pods) });
    const names = Array.from({ length: nodes }, (_, i) => `node-${i}`);
    const reported = new Map<string, unknown[]>();
    // A node's heartbeat: its capacity and the pods it last reported Running.
    const heartbeat = (n: string) =>
      post(url, { node: n, ip: '10.0.0.1', cpu_total: 4000, mem_total: 8192, pods: reported.get(n) ?? [] });
    // Register every node, then let each report its pods Running (two passes, 20 at a time).
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < names.length; i += 20) {
        await Promise.all(
          names.slice(i, i + 20).map(async (n) => {
            const r = await heartbeat(n);
            reported.set(n, runningOf(r.json as Orders));
          }),
        );
      }
    }
    // Open loop at the real rate: every node every 5 s, evenly spread.
    const rate = nodes / HEARTBEAT_PERIOD_S;
    const lat: number[] = [];
    const burst: number[] = []; // sent in the first period after registration
    const steady: number[] = []; // sent after it
    let errors = 0;
    const t0 = performance.now();
    const cpu0 = cpuSeconds(proc.pid);
    let cpuSteady0 = Number.NaN;
    const inflight: Promise<void>[] = [];
    let sent = 0;
    while (performance.now() - t0 < OPEN_LOOP_S * 1000) {
      const due = Math.floor(((performance.now() - t0) / 1000) * rate);
      if (Number.isNaN(cpuSteady0) && performance.now() - t0 >= HEARTBEAT_PERIOD_S * 1000)
        cpuSteady0 = cpuSeconds(proc.pid);
      while (sent < due) {
        const n = names[sent % nodes];
        sent++;
        const sentAt = performance.now() - t0;
        inflight.push(
          heartbeat(n)
            .then((r) => {
              if (r.status === 200) {
                lat.push(r.ms);
                (sentAt < HEARTBEAT_PERIOD_S * 1000 ? burst : steady).push(r.ms);
              } else errors++;
            })
            .catch(() => {
              errors++;
            }),
        );
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    await Promise.all(inflight);
    const elapsed = (performance.now() - t0) / 1000;
    const cpu1 = cpuSeconds(proc.pid);
    // Closed loop: how many heartbeats per second the apiserver can answer at all.
    const closed: number[] = [];
    const tc = performance.now();
    let k = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (performance.now() - tc < CLOSED_LOOP_S * 1000) {
          const n = names[k++ % nodes];
          const r = await heartbeat(n);
          if (r.status === 200) closed.push(r.ms);
        }
      }),
    );
    const closedS = (performance.now() - tc) / 1000;
    const health = (await (await fetch(`${url}/healthz`)).json()) as { reconciles: number; deferred: number };
    return {
      nodes,
      pods,
      offered_rps: r2(rate),
      achieved_rps: r2(lat.length / elapsed),
      p50_ms: r2(pct(lat, 50)),
      p99_ms: r2(pct(lat, 99)),
      first_period_p50_ms: r2(pct(burst, 50)),
      first_period_p99_ms: r2(pct(burst, 99)),
      steady_p50_ms: r2(pct(steady, 50)),
      steady_p99_ms: r2(pct(steady, 99)),
      steady_max_ms: r2(Math.max(...steady)),
      errors,
      // apiserver process CPU (both threads) as % of one core: whole open loop / steady part only
      server_cpu_pct: r2(((cpu1 - cpu0) / elapsed) * 100),
      server_cpu_steady_pct: r2(((cpu1 - cpuSteady0) / (elapsed - HEARTBEAT_PERIOD_S)) * 100),
      max_heartbeats_per_s: r2(closed.length / closedS),
      closed_p50_ms: r2(pct(closed, 50)),
      closed_p99_ms: r2(pct(closed, 99)),
      reconciles: health.reconciles,
      deferred_heartbeats: health.deferred,
      load_average: os.loadavg()[0],
    };
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  }
}

function schedulerBench() {
  const nodes: NodeIn[] = Array.from(
    { length: 1000 },
    (_, i) =>
      nodeFromRow({
        name: `n${i}`,
        cpu_total: 4000,
        mem_total: 8192,
        last_heartbeat: 1_000,
        labels: i % 2 ? 'zone=a' : 'zone=b',
      }) as NodeIn,
  );
  const deployments: DeploymentIn[] = Array.from(
    { length: 100 },
    (_, i) =>
      deploymentFromRow({
        name: `d${i}`,
        replicas: 100,
        cpu_req: 100,
        mem_req: 64,
        node_selector: i % 10 === 0 ? 'zone=a' : '',
      }) as DeploymentIn,
  );
  const input = {
    deployments,
    nodes,
    now: 1_010,
    nodeTtlSec: 30,
    portRange: [30000, 32767] as [number, number],
  };
  const t0 = performance.now();
  const fresh = schedule({ ...input, existing: new Map() });
  const freshMs = performance.now() - t0;
  const existing = new Map<string, ExistingPod>(
    fresh.placements.map((p) => [p.name, { name: p.name, node: p.node, ports: p.ports }]),
  );
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    schedule({ ...input, existing });
    times.push(performance.now() - t);
  }
  return {
    nodes: 1000,
    pods: fresh.placements.length,
    placed: fresh.placements.filter((p) => p.node).length,
    fresh_ms: r2(freshMs),
    sticky_ms: r2(pct(times, 50)),
  };
}

async function googleBench() {
  const emu = new SheetsEmulator();
  await emu.listen();
  const id = emu.createSpreadsheet('bench', ['Sheet1']);
  const store = await openGoogleStore({
    spreadsheetId: id,
    auth: testAuth('bench'),
    rootUrl: emu.url,
    pollMs: 0,
  });
  const server = await createApiServer({ store, token: TOKEN, samples: false, metricsIntervalSec: 15 });
  const url = await server.listen(0, '127.0.0.1');
  try {
    await post(url, { action: 'apply', deployments: [{ name: 'web', image: 'x', replicas: 100 }] });
    const writesBefore = emu.stats.writes;
    const t0 = Date.now();
    const nodes = 50;
    let beats = 0;
    let applies = 0;
    while (Date.now() - t0 < GOOGLE_S * 1000) {
      await Promise.all(
        Array.from({ length: nodes }, (_, i) =>
          post(url, { node: `g${i}`, cpu_total: 4000, mem_total: 8192 }).then(() => beats++),
        ),
      );
      if (beats % 500 < nodes) {
        await post(url, { action: 'scale', name: 'web', replicas: 100 + (applies++ % 5) });
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const minutes = (Date.now() - t0) / 60_000;
    const times = emu.stats.writeTimes.filter((t) => t >= t0);
    let worstWindow = 0;
    for (let i = 0; i < times.length; i++) {
      let j = i;
      while (j < times.length && times[j] - times[i] < 60_000) j++;
      worstWindow = Math.max(worstWindow, j - i);
    }
    return {
      seconds: Math.round((Date.now() - t0) / 1000),
      heartbeats: beats,
      heartbeats_per_s: r2(beats / (minutes * 60)),
      control_writes: applies,
      sheet_writes: emu.stats.writes - writesBefore,
      writes_per_minute: r2((emu.stats.writes - writesBefore) / minutes),
      worst_60s_window: worstWindow,
      quota_per_minute: 60,
      rejected_429: emu.stats.rejected429,
    };
  } finally {
    await server.close();
    await store.close();
    await emu.close();
  }
}

const results: Record<string, unknown> = { date: new Date().toISOString(), quick: QUICK };
if (!ONLY) {
  results.scheduler = schedulerBench();
  console.log('scheduler', results.scheduler);
}
const hb = [];
for (const n of ONLY ? [ONLY] : [100, 500, 1000]) {
  const r = await heartbeatBench(n);
  console.log('heartbeats', r);
  hb.push(r);
}
results.heartbeats_xlsx = hb;
if (ONLY) process.exit(0); // a single-size probe (profiling); results are written only by full runs
results.google = await googleBench();
console.log('google', results.google);
writeResults('sheets', results, record);
