// Sheetwire end to end: a real HTTP server behind `serve`, real TCP clients in front of `expose`,
// the frames travelling through a real store — one xlsx workbook shared by two `retrokube`
// processes, and the Google Sheets emulator with Google's quotas through the googleapis client.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { google } from 'googleapis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SheetsEmulator } from '../google-emulator/server.ts';
import { MemoryStore } from '../store/memory.ts';
import { testAuth } from '../store/testing.ts';
import { dataFrames, LIMITS as FRAME_LIMITS, type Frame, fromRow, toRow, WIRE_HEADERS } from './frames.ts';
import { LIMITS, WireExpose, WireServe } from './relay.ts';
import { GoogleTransport, StoreTransport, type WireTransport } from './transport.ts';

const runFile = promisify(execFile);

/** A transport that records, for every append, how many frames went and how many were queued. */
class Recording implements WireTransport {
  readonly name: string;
  endpoint: { queuedFrames(): number } | undefined;
  readonly appends: { sent: number; queued: number }[] = [];
  polls = 0;
  private readonly inner: WireTransport;
  constructor(inner: WireTransport) {
    this.inner = inner;
    this.name = inner.name;
  }
  ensure(): Promise<void> {
    return this.inner.ensure();
  }
  skipHistory(): Promise<void> {
    return this.inner.skipHistory();
  }
  async append(frames: Frame[]): Promise<void> {
    const queued = this.endpoint?.queuedFrames() ?? Number.NaN; // the queue still holds the batch
    await this.inner.append(frames);
    this.appends.push({ sent: frames.length, queued });
  }
  poll(): Promise<Frame[]> {
    this.polls++;
    return this.inner.poll();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
const MAIN = new URL('../../cli/main.ts', import.meta.url).pathname;
const BIG = randomBytes(1024 * 1024); // 1 MiB served by the origin at /big
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

let origin: http.Server;
let originPort = 0;
let tmp: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'sk-wire-'));
  origin = http.createServer((req, res) => {
    if (req.url === '/big') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG.length });
      res.end(BIG);
      return;
    }
    if (req.url === '/endless') {
      // as fast as the wire takes it, for as long as the connection lives
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = randomBytes(64 * 1024);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
      return;
    }
    if (req.method === 'POST') {
      const h = createHash('sha256');
      let n = 0;
      req.on('data', (c: Buffer) => {
        h.update(c);
        n += c.length;
      });
      req.on('end', () => res.end(JSON.stringify({ bytes: n, sha256: h.digest('hex') })));
      return;
    }
    res.end(`hello through the sheet ${req.url}\n`);
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
  originPort = (origin.address() as AddressInfo).port;
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

afterAll(async () => {
  origin.closeAllConnections();
  await new Promise((r) => origin.close(r));
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function getBytes(port: number, p: string): Promise<Buffer> {
  const r = await fetch(`http://127.0.0.1:${port}${p}`, { signal: AbortSignal.timeout(120_000) });
  return Buffer.from(await r.arrayBuffer());
}

describe('Wire tab frames', () => {
  it('shards payloads under the cell limit and round-trips through rows', () => {
    const bytes = randomBytes(65_536); // one socket read → at most 3 frames, as in the reference
    const frames = dataFrames('abcdef012345', 'a2b', bytes);
    expect(frames.length).toBe(3);
    for (const f of frames) expect(f.payload.length).toBeLessThanOrEqual(FRAME_LIMITS.maxPayloadChars);
    const back = Buffer.concat(frames.map((f) => Buffer.from((fromRow(toRow(f)) ?? f).payload, 'base64')));
    expect(back.equals(bytes)).toBe(true);
    expect(fromRow(['not a conn!', 'data', 'a2b'])).toBeUndefined();
    expect(fromRow(['abc', 'open', 'a2b'])).toEqual({
      conn: 'abc',
      kind: 'open',
      dir: 'a2b',
      service: '',
      payload: '',
    });
  });
});

describe('Sheetwire over a store', () => {
  it('carries HTTP and a 1 MiB download byte-exact (both sides on one memory store)', async () => {
    const store = new MemoryStore();
    const serve = new WireServe({
      transport: new StoreTransport(store, 'b2a'),
      service: 'web',
      tickMs: 20,
      target: { host: '127.0.0.1', port: originPort },
    });
    await serve.start();
    const expose = new WireExpose({
      transport: new StoreTransport(store, 'a2b'),
      service: 'web',
      tickMs: 20,
      listen: { host: '127.0.0.1', port: 0 },
    });
    const addr = await expose.listenAndStart();
    cleanups.push(
      () => expose.stop(),
      () => serve.stop(),
    );
    expect((await getBytes(addr.port, '/hi')).toString()).toBe('hello through the sheet /hi\n');
    expect(sha(await getBytes(addr.port, '/big'))).toBe(sha(BIG));
    // the Wire tab holds exactly the contract's columns
    expect(store.headers('Wire')).toEqual([...WIRE_HEADERS]);
  });

  it('#28.8 a local client that never reads: bounded memory, the tab paused, then dropped with a log line', async () => {
    const store = new MemoryStore();
    const serve = new WireServe({
      transport: new StoreTransport(store, 'b2a'),
      service: 'web',
      tickMs: 100,
      target: { host: '127.0.0.1', port: originPort },
    });
    await serve.start();
    const expose = new WireExpose({
      transport: new StoreTransport(store, 'a2b'),
      service: 'web',
      tickMs: 100,
      inboundStallMs: 3_000,
      listen: { host: '127.0.0.1', port: 0 },
    });
    const addr = await expose.listenAndStart();
    const client = net.connect(addr.port, '127.0.0.1');
    cleanups.push(
      async () => client.destroy(),
      () => expose.stop(),
      () => serve.stop(),
    );
    await new Promise((r) => client.once('connect', r));
    client.write('GET /endless HTTP/1.1\r\nHost: x\r\n\r\n');
    client.pause(); // and never reads
    const closed = new Promise((r) => client.once('close', r));
    await expect.poll(() => expose.stats.dropped, { timeout: 120_000, interval: 200 }).toBe(1);
    client.resume(); // reading now, it sees the connection end
    await closed;
    expect(expose.stats.bytesIn).toBeGreaterThan(LIMITS.maxInboundBytesPerConn); // it was really flooded
    expect(expose.stats.maxInboundWaiting).toBeLessThanOrEqual(LIMITS.hardInboundBytesPerConn);
    // other clients are served again once the non-reader is gone
    expect((await getBytes(addr.port, '/after')).toString()).toBe('hello through the sheet /after\n');
  }, 180_000);

  it('curl → expose → one xlsx workbook → serve → HTTP server, two separate processes, 1 MiB both ways', async () => {
    const wb = path.join(tmp, 'wire.xlsx');
    const start = (args: string[]) => {
      const p = spawn(process.execPath, [MAIN, 'sheets', 'wire', ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cleanups.push(async () => {
        p.kill('SIGTERM');
        await new Promise((r) => p.once('exit', r));
      });
      return p;
    };
    const firstLine = (p: ChildProcess) =>
      new Promise<string>((resolve, reject) => {
        let out = '';
        p.stdout?.on('data', (b: Buffer) => {
          out += b.toString();
          if (out.includes('\n')) resolve(out.split('\n')[0]);
        });
        p.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
      });
    const serve = start([
      'serve',
      '--wire',
      wb,
      '--service',
      'web',
      '--target',
      `127.0.0.1:${originPort}`,
      '--tick',
      '0.1',
    ]);
    expect(await firstLine(serve)).toContain('[sheetwire] serve web');
    const expose = start([
      'expose',
      '--wire',
      wb,
      '--service',
      'web',
      '--listen',
      '127.0.0.1:0',
      '--tick',
      '0.1',
    ]);
    const line = await firstLine(expose);
    const port = Number(/:(\d+) via/.exec(line)?.[1]);
    expect(port).toBeGreaterThan(0);
    const curl = (...a: string[]) =>
      runFile('curl', ['-sS', '--max-time', '120', ...a], { encoding: 'buffer', maxBuffer: 4 * 1024 * 1024 });
    expect((await curl(`http://127.0.0.1:${port}/x`)).stdout.toString()).toBe('hello through the sheet /x\n');
    expect(sha((await curl(`http://127.0.0.1:${port}/big`)).stdout)).toBe(sha(BIG));
    const up = path.join(tmp, 'up.bin');
    await fsp.writeFile(up, BIG);
    const posted = JSON.parse(
      (await curl('--data-binary', `@${up}`, `http://127.0.0.1:${port}/up`)).stdout.toString(),
    );
    expect(posted).toEqual({ bytes: BIG.length, sha256: sha(BIG) });
  }, 240_000);
});

describe('Sheetwire over Google Sheets (the emulator, Google quotas)', () => {
  async function emulator(o: ConstructorParameters<typeof SheetsEmulator>[0] = {}) {
    const emu = new SheetsEmulator(o);
    await emu.listen();
    cleanups.push(() => emu.close());
    return emu;
  }
  const api = (emu: SheetsEmulator, user: string) =>
    google.sheets({ version: 'v4', auth: testAuth(user), rootUrl: emu.url, retry: false });

  it('both sides race to create the tab: both succeed, one header row', async () => {
    const emu = await emulator();
    const id = emu.createSpreadsheet('race');
    const a = new GoogleTransport({ api: api(emu, 'a'), spreadsheetId: id, outbound: 'a2b' });
    const b = new GoogleTransport({ api: api(emu, 'b'), spreadsheetId: id, outbound: 'b2a' });
    await Promise.all([a.ensure(), b.ensure()]);
    const r = await api(emu, 'c').spreadsheets.values.get({ spreadsheetId: id, range: 'Wire!A1:E5' });
    expect(r.data.values).toEqual([[...WIRE_HEADERS]]);
  });

  it('moves 1 MiB byte-exact within the real 60 writes/min/user quota, one append per tick', async () => {
    const emu = await emulator();
    const id = emu.createSpreadsheet('wire');
    const recorded = new Recording(
      new GoogleTransport({ api: api(emu, 'side-b'), spreadsheetId: id, outbound: 'b2a' }),
    );
    const serve = new WireServe({
      transport: recorded,
      service: 'web',
      target: { host: '127.0.0.1', port: originPort },
    });
    recorded.endpoint = serve;
    await serve.start();
    const expose = new WireExpose({
      transport: new GoogleTransport({ api: api(emu, 'side-a'), spreadsheetId: id, outbound: 'a2b' }),
      service: 'web',
      listen: { host: '127.0.0.1', port: 0 },
    });
    const addr = await expose.listenAndStart();
    cleanups.push(
      () => expose.stop(),
      () => serve.stop(),
    );
    expect(sha(await getBytes(addr.port, '/big'))).toBe(sha(BIG));
    expect(emu.stats.rejected429).toBe(0);
    // What coalescing promises: every append takes all the frames queued at that moment (up to
    // the per-append cap), and there is at most one append per tick (a tick polls once). The
    // response (47 data frames of 22,500 bytes and a close) is read from a local origin in well
    // under a tick, so it goes out in very few appends, never one append per frame.
    expect(recorded.appends.length).toBeGreaterThan(0);
    for (const a of recorded.appends) expect(a.sent).toBe(Math.min(a.queued, LIMITS.maxFramesPerFlush));
    expect(recorded.appends.length).toBeLessThanOrEqual(recorded.polls);
    const frames = recorded.appends.reduce((n, a) => n + a.sent, 0);
    expect(frames).toBe(serve.stats.framesOut);
    expect(frames).toBeGreaterThanOrEqual(Math.ceil(BIG.length / FRAME_LIMITS.maxPayloadBytes) + 1);
    expect(recorded.appends.length).toBeLessThanOrEqual(4);
  }, 120_000);

  it('a 429 keeps the frames queued and backs off; the transfer still arrives intact', async () => {
    // Time runs 30x faster in the emulator's quota window (2 s real = 1 min); 4 writes per minute.
    const t0 = Date.now();
    const emu = await emulator({
      now: () => t0 + (Date.now() - t0) * 30,
      quotas: { writesPerMinutePerUser: 2 },
    });
    const id = emu.createSpreadsheet('throttled');
    const serve = new WireServe({
      transport: new GoogleTransport({
        api: api(emu, 'b'),
        spreadsheetId: id,
        outbound: 'b2a',
        backoffBaseMs: 100,
      }),
      service: 'web',
      tickMs: 50,
      target: { host: '127.0.0.1', port: originPort },
    });
    await serve.start();
    const expose = new WireExpose({
      transport: new GoogleTransport({
        api: api(emu, 'a'),
        spreadsheetId: id,
        outbound: 'a2b',
        backoffBaseMs: 100,
      }),
      service: 'web',
      tickMs: 50,
      listen: { host: '127.0.0.1', port: 0 },
    });
    const addr = await expose.listenAndStart();
    cleanups.push(
      () => expose.stop(),
      () => serve.stop(),
    );
    const ids = [1, 2, 3, 4, 5, 6];
    const bodies = await Promise.all(ids.map((i) => getBytes(addr.port, `/n${i}`)));
    expect(bodies.map((b) => b.toString())).toEqual(ids.map((i) => `hello through the sheet /n${i}\n`));
    expect(emu.stats.rejected429).toBeGreaterThan(0);
    expect(serve.stats.retries + expose.stats.retries).toBeGreaterThan(0);
  }, 120_000);
});
