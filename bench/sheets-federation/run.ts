// Federation benchmarks (Sheeternetes): bridge migrate wall time — ours and, when it is on this
// machine, the reference bridge.py side by side on the same two clusters in the same run — and
// Sheetwire round-trip latency and throughput per backend against Google's quota.
// Run: node_modules/.bin/node bench/sheets-federation/run.ts   → bench/results/sheets-federation.json
// Reference: REF_BRIDGE=/path/to/bridge.py (sncfoundation/sheeternetes-onprem; never vendored here).
// Both tools start as a person starts them: ours through the checkout's `retrokube` launcher (Node's
// compile cache), the reference with the python3 on PATH resolved to its interpreter once (a pyenv
// shim would add its own start to every run of the reference; REF_PYTHON names another).
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, promises as fsp } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { google } from 'googleapis';
import type { Member } from '../../operator/src/sheets/bridge/client.ts';
import { bridgeFlags, deploySleeper, startSheetCluster } from '../../operator/src/sheets/bridge/testkit.ts';
import { SheetsEmulator } from '../../operator/src/sheets/google-emulator/server.ts';
import { MemoryStore } from '../../operator/src/sheets/store/memory.ts';
import { testAuth } from '../../operator/src/sheets/store/testing.ts';
import { openXlsxStore } from '../../operator/src/sheets/store/xlsx.ts';
import { WireExpose, WireServe } from '../../operator/src/sheets/wire/relay.ts';
import {
  GoogleTransport,
  StoreTransport,
  type WireTransport,
} from '../../operator/src/sheets/wire/transport.ts';
import { REPO, startRecording, writeResults } from '../results.ts';

const record = startRecording();

const run = promisify(execFile);
const LAUNCHER = path.join(REPO, 'retrokube');
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const REF = process.env.REF_BRIDGE;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const r2 = (x: number) => Math.round(x * 100) / 100;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** Runs a command to its exit: wall seconds, seconds to its first stdout line, and its stdout. */
function timed(
  cmd: string,
  args: string[],
): Promise<{ seconds: number; firstLineSeconds: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let first = Number.NaN;
    let stdout = '';
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      if (Number.isNaN(first) && stdout.includes('\n')) first = (performance.now() - t0) / 1000;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = (performance.now() - t0) / 1000;
      if (code !== 0) reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')} exited ${code}: ${stdout}`));
      else resolve({ seconds, firstLineSeconds: Number.isNaN(first) ? seconds : first, stdout });
    });
  });
}

// ---------------------------------------------------------------- migrate

async function benchMigrate() {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-fed-bench-'));
  const xlsx = (name: string) => openXlsxStore(path.join(dir, `${name}.xlsx`), { flushDelayMs: 100 });
  const local = await startSheetCluster({ name: 'local', cpuTotal: 4000, store: await xlsx('local') });
  const peer = await startSheetCluster({ name: 'peer', cpuTotal: 4000, store: await xlsx('peer') });
  const flags = bridgeFlags(local, peer);
  const refAvailable = Boolean(REF && existsSync(REF));
  const python = refAvailable
    ? (process.env.REF_PYTHON ??
      (await run('python3', ['-c', 'import sys; print(sys.executable)'])).stdout.trim())
    : undefined;
  const ours = (a: string[]) => run(LAUNCHER, ['sheets', 'bridge', ...a]);
  await ours(['--help']); // a person's second command: the compile cache holds the bridge's modules
  // status and sync first, from the same state for both tools: the reference's lines must equal
  // the first lines of ours (ours adds per-member lines after them).
  let statusSyncSame: boolean | null = null;
  if (refAvailable) {
    await deploySleeper(peer, 'only-on-peer', 0);
    const ref = async (...a: string[]) =>
      (await run(python as string, [REF as string, ...a, ...flags])).stdout;
    const our = async (...a: string[]) => (await ours([...a, ...flags])).stdout;
    const refStatus = (await ref('status')).trim().split('\n');
    const ourStatus = (await our('status')).trim().split('\n');
    const refSync = (await ref('sync')).trim();
    await local.api.delete('only-on-peer'); // the same starting point for ours
    const ourSync = (await our('sync')).trim().split('\n')[0];
    statusSyncSame =
      refStatus.every((l, i) => ourStatus[i] === l) &&
      refSync === '[sync] +1 -> local, +0 -> peer' &&
      ourSync === refSync;
    console.log({ refStatus, ourStatus, refSync, ourSync, statusSyncSame });
    for (const c of [local, peer]) await c.api.delete('only-on-peer');
  }

  await deploySleeper(local, 'mover', 2);
  const runningOn = async (m: Member) =>
    (await m.get('pods')).filter((p) => p.deployment === 'mover' && p.phase === 'Running').length;
  while ((await runningOn(local.api)) < 2) await new Promise((r) => setTimeout(r, 200));

  const oursS: number[] = [];
  const reference: number[] = [];
  // Time to the first line on stdout ("[migrate] mover (x2): applying on target…"): the tool's start
  // and one read of the source, the part of a migration the wait for the target's pods does not hide.
  const firstLine: { ours: number[]; reference: number[] } = { ours: [], reference: [] };
  const lines: { ours: string[]; reference: string[] } = { ours: [], reference: [] };
  // Unmeasured: a migration there and back first, so both tools are timed on clusters in their
  // steady state (the first one, right after the status and sync runs, took a poll more in every
  // run so far: it was always ours, the first tool of the first round).
  for (const [from, to] of [
    ['local', 'peer'],
    ['peer', 'local'],
  ])
    await ours(['migrate', 'mover', '--from', from, '--to', to, '--poll', '1', '--wait', '60', ...flags]);
  let from = 'local';
  for (let i = 0; i < ROUNDS; i++) {
    // Each tool goes first in every other round, so neither always finds the node agents in the same
    // phase of their heartbeat (which decides whether the target's pods are up at the first poll).
    const order = refAvailable ? (i % 2 ? ['reference', 'ours'] : ['ours', 'reference']) : ['ours'];
    for (const tool of order as ('ours' | 'reference')[]) {
      const to = from === 'local' ? 'peer' : 'local';
      const args = ['migrate', 'mover', '--from', from, '--to', to, '--poll', '1', '--wait', '60', ...flags];
      const r =
        tool === 'ours'
          ? await timed(LAUNCHER, ['sheets', 'bridge', ...args])
          : await timed(python as string, ['-u', REF as string, ...args]); // -u: each line when printed
      (tool === 'ours' ? oursS : reference).push(r.seconds);
      firstLine[tool].push(r.firstLineSeconds);
      const last = r.stdout.trim().split('\n').pop() ?? '';
      lines[tool].push(last);
      console.log(
        `migrate ${from}->${to} by ${tool}: ${r.seconds.toFixed(2)} s (first line ${r.firstLineSeconds.toFixed(2)} s)  ${last}`,
      );
      from = to;
    }
  }
  // Same results: the last line of every run must be the same success line.
  const same = refAvailable
    ? lines.ours.every((l) => l === lines.reference[0]) && lines.reference.every((l) => l === lines.ours[0])
    : null;
  await local.close();
  await peer.close();
  await fsp.rm(dir, { recursive: true, force: true });
  return {
    load: 'two xlsx apiservers (signing on) + one node agent each (heartbeat 1.1 s), deployment x2 process pods, --poll 1',
    rounds: ROUNDS,
    oursCommand: 'retrokube sheets bridge migrate (the checkout launcher, compile cache warm)',
    oursSeconds: oursS.map(r2),
    oursMedianSeconds: r2(median(oursS)),
    oursFirstLineSeconds: firstLine.ours.map(r3),
    oursFirstLineMedianSeconds: r3(median(firstLine.ours)),
    reference: refAvailable
      ? {
          interpreter: python,
          seconds: reference.map(r2),
          firstLineSeconds: firstLine.reference.map(r3),
          firstLineMedianSeconds: r3(median(firstLine.reference)),
          medianSeconds: r2(median(reference)),
          sameResultLines: same,
          statusAndSyncLinesSame: statusSyncSame,
        }
      : 'not run: set REF_BRIDGE=/path/to/bridge.py (python3, standard library only)',
  };
}

// ---------------------------------------------------------------- sheetwire

const BIG = randomBytes(1024 * 1024);

async function origin(): Promise<{ port: number; close: () => Promise<void> }> {
  const s = http.createServer((req, res) => {
    if (req.url === '/big') res.end(BIG);
    else res.end('pong');
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return {
    port: (s.address() as AddressInfo).port,
    close: async () => {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
  };
}

async function benchWire(
  backend: string,
  a: WireTransport,
  b: WireTransport,
  tickMs: number,
  pings: number,
  quota?: () => unknown,
) {
  const o = await origin();
  const serve = new WireServe({
    transport: b,
    service: 'bench',
    tickMs,
    target: { host: '127.0.0.1', port: o.port },
  });
  await serve.start();
  const expose = new WireExpose({
    transport: a,
    service: 'bench',
    tickMs,
    listen: { host: '127.0.0.1', port: 0 },
  });
  const { port } = await expose.listenAndStart();
  const rtt: number[] = [];
  for (let i = 0; i < pings; i++) {
    const t0 = performance.now();
    const r = await fetch(`http://127.0.0.1:${port}/ping`, { headers: { connection: 'close' } });
    await r.text();
    rtt.push((performance.now() - t0) / 1000);
  }
  const t0 = performance.now();
  const got = Buffer.from(
    await (await fetch(`http://127.0.0.1:${port}/big`, { headers: { connection: 'close' } })).arrayBuffer(),
  );
  const secs = (performance.now() - t0) / 1000;
  const exact =
    createHash('sha256').update(got).digest('hex') === createHash('sha256').update(BIG).digest('hex');
  await expose.stop();
  await serve.stop();
  await o.close();
  const res = {
    backend,
    tickSeconds: tickMs / 1000,
    requestRoundTripSeconds: { median: r2(median(rtt)), max: r2(Math.max(...rtt)), n: rtt.length },
    oneMiBDownload: { seconds: r2(secs), kibPerSecond: Math.round(1024 / secs), byteExact: exact },
    appends: serve.stats.flushes + expose.stats.flushes,
    backoffs: serve.stats.retries + expose.stats.retries,
    ...(quota ? { quota: quota() } : {}),
  };
  console.log('sheetwire', res);
  return res;
}

async function benchWires() {
  const out = [];
  const mem = new MemoryStore();
  out.push(
    await benchWire(
      'memory (one process)',
      new StoreTransport(mem, 'a2b'),
      new StoreTransport(mem, 'b2a'),
      20,
      10,
    ),
  );
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-wire-bench-'));
  const file = path.join(dir, 'wire.xlsx');
  const sa = await openXlsxStore(file, { flushDelayMs: 50 });
  const sb = await openXlsxStore(file, { flushDelayMs: 50 });
  out.push(
    await benchWire(
      'xlsx (one workbook, two stores)',
      new StoreTransport(sa, 'a2b', true),
      new StoreTransport(sb, 'b2a', true),
      100,
      10,
    ),
  );
  await fsp.rm(dir, { recursive: true, force: true });
  const emu = new SheetsEmulator(); // Google's default quotas: 60 reads and 60 writes per minute per user
  await emu.listen();
  const id = emu.createSpreadsheet('wire-bench');
  const api = (u: string) =>
    google.sheets({ version: 'v4', auth: testAuth(u), rootUrl: emu.url, retry: false });
  out.push(
    await benchWire(
      'google (emulator, 60 writes/min/user, one user per side)',
      new GoogleTransport({ api: api('side-a'), spreadsheetId: id, outbound: 'a2b' }),
      new GoogleTransport({ api: api('side-b'), spreadsheetId: id, outbound: 'b2a' }),
      1100,
      5,
      () => ({ readsPerMinutePerUser: 60, writesPerMinutePerUser: 60, rejected429: emu.stats.rejected429 }),
    ),
  );
  await emu.close();
  return out;
}

const wire = await benchWires();
const migrate = await benchMigrate();
const result = {
  benchmark: 'sheets-federation',
  date: new Date().toISOString(),
  node: process.versions.node,
  cores: os.availableParallelism(),
  loadavg: os.loadavg().map(r2),
  migrate,
  sheetwire: wire,
};
writeResults('sheets-federation', result, record);
console.log(JSON.stringify(result, null, 2));
process.exit(0);
