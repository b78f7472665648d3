// #28.2 for `retrokube up`: every machine screen needs a password by default. `up` generates it
// into its state folder (0600) and `retrokube status` says where; an RFB client that asks for
// security None is refused, one with the password gets a frame; the web console still shows the
// screens to holders of its token (it logs in on their behalf; the page never sees the password).
// The real CLI in its own process, real emulated machines, a real RFB client over TCP.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { vncAuthResponse } from '../../operator/src/machine/rfb/des.ts';
import { upSession } from './up-harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'retrokube-up-vnc-'));
const state = join(dir, 'state');
const env = { ...process.env, RETROKUBE_STATE: state, LOG_LEVEL: 'warn' };
const FILE = `apiVersion: retrokube.io/v1alpha1
kind: OberonKube
metadata: {name: tiny}
spec:
  nodes: 1
  deployments: "web 1 Ticker"
`;

interface UpJson {
  machines: { name: string; vnc: number | null }[];
  console?: string;
  vncPasswordFile?: string;
}

/** Reads exact byte counts from a byte stream (a TCP socket, or a WebSocket's messages). */
class Bytes {
  private buf = Buffer.alloc(0);
  private wake: (() => void) | null = null;
  closed = false;
  push(d: Buffer): void {
    this.buf = Buffer.concat([this.buf, d]);
    this.wake?.();
  }
  end(): void {
    this.closed = true;
    this.wake?.();
  }
  async read(n: number, what: string): Promise<Buffer> {
    const t0 = Date.now();
    while (this.buf.length < n) {
      if (this.closed) throw new Error(`closed while waiting for ${what}`);
      if (Date.now() - t0 > 15_000) throw new Error(`no ${what} within 15 s`);
      await new Promise<void>((r) => {
        this.wake = r;
        setTimeout(r, 200);
      });
    }
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    return out;
  }
}

/** After SecurityResult OK: ClientInit, ServerInit, one full update request; the first update's size. */
async function firstFrame(
  bytes: Bytes,
  send: (b: Buffer) => void,
): Promise<{ w: number; h: number; rects: number }> {
  send(Buffer.from([1])); // ClientInit, shared
  const init = await bytes.read(24, 'ServerInit');
  await bytes.read(init.readUInt32BE(20), 'desktop name');
  send(
    Buffer.from([
      3,
      0,
      0,
      0,
      0,
      0,
      init.readUInt16BE(0) >> 8,
      init.readUInt16BE(0) & 255,
      init.readUInt16BE(2) >> 8,
      init.readUInt16BE(2) & 255,
    ]),
  );
  const head = await bytes.read(4, 'FramebufferUpdate');
  expect(head[0]).toBe(0);
  return { w: init.readUInt16BE(0), h: init.readUInt16BE(2), rects: head.readUInt16BE(2) };
}

async function tcp(port: number): Promise<{ s: Socket; bytes: Bytes }> {
  const s = connect(port, '127.0.0.1');
  const bytes = new Bytes();
  s.on('data', (d: Buffer) => bytes.push(d));
  s.on('close', () => bytes.end());
  s.on('error', () => bytes.end());
  await new Promise<void>((r, j) => {
    s.once('connect', () => r());
    s.once('error', j);
  });
  return { s, bytes };
}

const session = upSession(state, env);

describe.sequential('retrokube up: machine screens need the VNC password (#28.2)', () => {
  let st: UpJson;
  beforeAll(async () => {
    writeFileSync(join(dir, 'tiny.yaml'), FILE);
    await buildKubeDisk();
    session.start([join(dir, 'tiny.yaml'), '--no-view'], { RETROKUBE_LOG_LEVEL: 'info' });
    await session.until((v) => v.nodes.some((n) => n.ready), 120_000, 'node-a Ready');
    const t0 = Date.now();
    for (;;) {
      st = JSON.parse(readFileSync(join(state, 'up.json'), 'utf8')) as UpJson;
      if (st.console || Date.now() - t0 > 30_000) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  }, 300_000);
  afterAll(async () => {
    await session.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('generates the password into the state folder (0600) and status says where', async () => {
    expect(st.vncPasswordFile).toBe(join(state, 'vnc-password'));
    const file = st.vncPasswordFile ?? '';
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toMatch(/^[\x20-\x7e]{8}$/);
    const status = await session.cli('status');
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`VNC password +the first line of ${file}`));
    expect(status.stdout).not.toContain(readFileSync(file, 'utf8').trim());
    expect(session.log()).not.toContain(readFileSync(file, 'utf8').trim());
  });

  it('refuses an RFB client that asks for security None, on every machine', async () => {
    expect(st.machines.length).toBe(2);
    for (const m of st.machines) {
      const { s, bytes } = await tcp(m.vnc ?? 0);
      try {
        expect((await bytes.read(12, 'version')).toString('latin1')).toBe('RFB 003.008\n');
        s.write('RFB 003.008\n');
        const n = (await bytes.read(1, 'security types'))[0];
        const types = [...(await bytes.read(n, 'security types'))];
        expect(types).toEqual([2]); // VNC Authentication only
        s.write(Buffer.from([1])); // None anyway
        const result = await bytes.read(4, 'SecurityResult').catch(() => null);
        if (result) expect(result.readUInt32BE(0)).not.toBe(0);
        // the server hangs up (after a reason, if it gives one)
        const t0 = Date.now();
        while (!bytes.closed && Date.now() - t0 < 15_000) await new Promise((r) => setTimeout(r, 100));
        expect(bytes.closed).toBe(true);
      } finally {
        s.destroy();
      }
    }
  });

  it('gives a frame to an RFB client with the password, and refuses a wrong one', async () => {
    const password = readFileSync(st.vncPasswordFile ?? '', 'utf8').trim();
    const plane = st.machines.find((m) => m.name === 'plane')?.vnc ?? 0;
    const login = async (pw: string) => {
      const c = await tcp(plane);
      await c.bytes.read(12, 'version');
      c.s.write('RFB 003.008\n');
      await c.bytes.read(2, 'security types');
      c.s.write(Buffer.from([2]));
      const challenge = await c.bytes.read(16, 'challenge');
      c.s.write(vncAuthResponse(pw, challenge));
      return { ...c, ok: (await c.bytes.read(4, 'SecurityResult')).readUInt32BE(0) === 0 };
    };
    const wrong = await login('wrong!!');
    wrong.s.destroy();
    expect(wrong.ok).toBe(false);
    const right = await login(password);
    try {
      expect(right.ok).toBe(true);
      const f = await firstFrame(right.bytes, (b) => right.s.write(b));
      expect(f).toMatchObject({ w: 1024, h: 768 });
      expect(f.rects).toBeGreaterThan(0);
    } finally {
      right.s.destroy();
    }
  });

  it('the web console still shows a screen to holders of its token, without the password', async () => {
    expect(st.console).toBeTruthy();
    const url = `${(st.console ?? '').replace(/^http/, 'ws').replace(/\/$/, '')}/api/rfb?name=node-a`;
    const token = readFileSync(join(state, 'console-token'), 'utf8').trim();
    const open = (headers: Record<string, string>) => {
      const ws = new WebSocket(url, { headers: { origin: new URL(st.console ?? '').origin, ...headers } });
      const bytes = new Bytes();
      let status = 0;
      ws.on('message', (d: Buffer) => bytes.push(Buffer.from(d)));
      ws.on('close', () => bytes.end());
      ws.on('error', () => bytes.end());
      const opened = new Promise<boolean>((r) => {
        // with this listener, ws emits neither 'error' nor 'close' for a refused upgrade
        ws.on('unexpected-response', (_req, res) => {
          status = res.statusCode ?? 0;
          bytes.end();
          r(false);
        });
        ws.once('open', () => r(true));
        ws.once('close', () => r(false));
        ws.once('error', () => r(false));
      });
      return { ws, bytes, opened, status: () => status };
    };
    const anon = open({});
    expect(await anon.opened).toBe(false);
    expect(anon.status()).toBe(401);
    const page = open({ authorization: `Bearer ${token}` });
    expect(await page.opened).toBe(true);
    try {
      const send = (b: Buffer | string) => page.ws.send(typeof b === 'string' ? Buffer.from(b, 'latin1') : b);
      expect((await page.bytes.read(12, 'version')).toString('latin1')).toBe('RFB 003.008\n');
      send('RFB 003.008\n');
      expect([...(await page.bytes.read(2, 'security types'))]).toEqual([1, 1]); // None: the console logged in
      send(Buffer.from([1]));
      expect((await page.bytes.read(4, 'SecurityResult')).readUInt32BE(0)).toBe(0);
      const f = await firstFrame(page.bytes, send);
      expect(f).toMatchObject({ w: 1024, h: 768 });
      expect(f.rects).toBeGreaterThan(0);
    } finally {
      page.ws.close();
    }
  });
});
