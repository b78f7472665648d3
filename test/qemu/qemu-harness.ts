// Runs our qemu-system-risc5 (qemu/build.sh) for tests and benchmarks: a machine in a temp
// folder, driven over QMP on a unix socket. The binary must have been built by the set-up step;
// under CI=true a missing binary is a failure, elsewhere the suite is skipped with the reason.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bootRom } from '../../operator/src/machine/boot-rom.ts';
import type { FrameSnapshot } from '../../operator/src/machine/screen-input.ts';

export const LIMITS = {
  qmpConnectMs: 15_000, // QEMU creates the QMP socket within a second or two, even when starved
  baseMemLim: 0xe7ef0, // the 2020 image's MemLim (display start − 16)
  baseStackOrg: 0x80000, // the 2020 image's stack origin
  displayStart: 0xe7f00, // framebuffer address on the board
  displayBytes: (1024 * 768) / 8, // 1 bpp
  keyGapMs: 8, // between key events (the reference paced 5 ms; Oberon drops nothing at this rate)
  holdMs: 120, // a mouse button is held this long so Oberon's loop surely sees it down
} as const;

export const REPO = resolve(import.meta.dirname, '../..');
export const BASE_DISK = '/work/shared/oberon/Oberon-2020-08-18.dsk';

/** The built binary, or null with the reason. */
export function qemuBinary(): { path: string | null; reason: string } {
  const path = execFileSync('bash', [join(REPO, 'qemu/build.sh'), '--print-path'], {
    encoding: 'utf8',
  }).trim();
  if (existsSync(path)) return { path, reason: '' };
  return { path: null, reason: `qemu-system-risc5 is not built (${path}); run qemu/build.sh` };
}

/** Resolves the binary for a suite: fails under CI=true when it is missing, else skips. */
export function requireQemu(): string | null {
  const { path, reason } = qemuBinary();
  if (path === null && process.env.CI === 'true') throw new Error(reason);
  return path;
}

/** Our boot ROM (boot-rom.ts), or another ROM program, as the prom.bin QEMU's -bios takes. */
export function writeProm(dir: string, rom?: Int32Array): string {
  const words = rom ?? bootRom(LIMITS.baseMemLim, LIMITS.baseStackOrg);
  const path = join(dir, 'prom.bin');
  writeFileSync(path, Buffer.from(words.buffer, words.byteOffset, words.byteLength));
  return path;
}

/** A framebuffer read from the board's memory as the screen helpers (screen-scan.ts) take it. */
export function snapshotOf(fb: Buffer): FrameSnapshot {
  const words = new Uint32Array(fb.buffer.slice(fb.byteOffset, fb.byteOffset + fb.byteLength));
  return { width: 1024, height: 768, words, version: 0 };
}

export class Qmp {
  private buf = '';
  private readonly waiting: Array<(msg: Record<string, unknown>) => void> = [];
  private readonly sock: Socket;
  private constructor(sock: Socket) {
    this.sock = sock;
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      this.buf += d;
      for (let i = this.buf.indexOf('\n'); i >= 0; i = this.buf.indexOf('\n')) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        const msg = JSON.parse(line) as Record<string, unknown>;
        if ('return' in msg || 'error' in msg || 'QMP' in msg) this.waiting.shift()?.(msg);
      }
    });
  }

  static async connect(path: string): Promise<Qmp> {
    const deadline = Date.now() + LIMITS.qmpConnectMs;
    for (;;) {
      try {
        const sock = await new Promise<Socket>((ok, fail) => {
          const s = createConnection(path, () => ok(s));
          s.once('error', fail);
        });
        const q = new Qmp(sock);
        await new Promise((ok) => q.waiting.push(ok)); // the greeting
        await q.cmd('qmp_capabilities');
        return q;
      } catch (e) {
        if (Date.now() > deadline) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async cmd(execute: string, args?: Record<string, unknown>): Promise<unknown> {
    const reply = new Promise<Record<string, unknown>>((ok) => this.waiting.push(ok));
    this.sock.write(`${JSON.stringify(args ? { execute, arguments: args } : { execute })}\n`);
    const msg = await reply;
    if ('error' in msg) throw new Error(`QMP ${execute}: ${JSON.stringify(msg.error)}`);
    return msg.return;
  }

  async prop<T>(property: string): Promise<T> {
    return (await this.cmd('qom-get', { path: '/machine', property })) as T;
  }

  close(): void {
    this.sock.destroy();
  }
}

export interface QemuMachine {
  dir: string;
  proc: ChildProcess;
  qmp: Qmp;
  output: () => string;
  /** The framebuffer as Oberon lays it out (pmemsave). */
  framebuffer(): Promise<Buffer>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Extra -machine oberon properties, e.g. "clock=deterministic". */
  machine?: string[];
  args?: string[];
  disk?: string;
  /** Another ROM program (≤ 512 words) instead of our boot ROM. */
  rom?: Int32Array;
}

export async function startQemu(bin: string, opts: StartOptions = {}): Promise<QemuMachine> {
  const dir = mkdtempSync(join(tmpdir(), 'retrokube-qemu-'));
  const disk = join(dir, 'oberon.dsk');
  copyFileSync(opts.disk ?? BASE_DISK, disk);
  const prom = writeProm(dir, opts.rom);
  const sockPath = join(dir, 'qmp.sock');
  const machine = ['oberon', ...(opts.machine ?? [])].join(',');
  const proc = spawn(
    bin,
    [
      '-M',
      machine,
      '-bios',
      prom,
      '-drive',
      `if=none,id=sd0,file=${disk},format=raw`,
      '-display',
      'none',
      '-qmp',
      `unix:${sockPath},server=on,wait=off`,
      ...(opts.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  proc.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<void>((ok) => proc.once('exit', () => ok()));
  let qmp: Qmp;
  try {
    qmp = await Promise.race([
      Qmp.connect(sockPath),
      exited.then(() => {
        throw new Error(`qemu exited: ${out}`);
      }),
    ]);
  } catch (e) {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    dir,
    proc,
    qmp,
    output: () => out,
    async framebuffer() {
      const file = join(dir, `fb-${Date.now()}.bin`);
      await qmp.cmd('pmemsave', { val: LIMITS.displayStart, size: LIMITS.displayBytes, filename: file });
      const { readFileSync } = await import('node:fs');
      return readFileSync(file);
    },
    async stop() {
      try {
        await Promise.race([qmp.cmd('quit'), new Promise((r) => setTimeout(r, 2000))]);
      } catch {
        // already gone
      }
      qmp.close();
      if (proc.exitCode === null) proc.kill('SIGKILL');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Run QEMU expecting it to refuse to start; returns its exit code and output. */
export function runToFailure(bin: string, args: string[]): { code: number | null; output: string } {
  try {
    execFileSync(bin, args, { encoding: 'utf8', stdio: 'pipe', timeout: 20_000 });
    return { code: 0, output: '' };
  } catch (e) {
    const err = e as { status: number | null; stdout?: string; stderr?: string };
    return { code: err.status, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
  ms: number,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits until QEMU's instruction trace holds `records` records (8 bytes each). */
export function traceWritten(trace: string, records: number, ms: number): Promise<true> {
  const probe = async () => {
    try {
      return statSync(trace).size >= records * 8;
    } catch {
      return false; // QEMU has not created it yet
    }
  };
  return until('QEMU to write its trace', probe, ms);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SHIFTED: Record<string, string> = { '*': '8', '~': 'grave_accent', '!': '1', '@': '2', '^': '6' };
const PLAIN: Record<string, string> = { '.': 'dot', ' ': 'spc', '\r': 'ret', '/': 'slash', '-': 'minus' };

/** Keyboard and mouse through QEMU's own input layer (QMP input-send-event), as a VNC client would. */
export function qemuInput(m: QemuMachine) {
  const send = (events: unknown[]) => m.qmp.cmd('input-send-event', { events });
  const key = (down: boolean, code: string) => ({
    type: 'key',
    data: { down, key: { type: 'qcode', data: code } },
  });
  const press = async (code: string, shift: boolean) => {
    if (shift) await send([key(true, 'shift')]);
    await send([key(true, code)]);
    await sleep(LIMITS.keyGapMs);
    await send([key(false, code)]);
    if (shift) await send([key(false, 'shift')]);
    await sleep(LIMITS.keyGapMs);
  };
  return {
    /** Types text on a US keyboard ('\r' is Return). */
    async type(text: string) {
      for (const ch of text) {
        if (SHIFTED[ch]) await press(SHIFTED[ch], true);
        else if (PLAIN[ch]) await press(PLAIN[ch], false);
        else if (/^[a-z0-9]$/.test(ch)) await press(ch, false);
        else if (/^[A-Z]$/.test(ch)) await press(ch.toLowerCase(), true);
        else throw new Error(`no key for ${JSON.stringify(ch)}`);
      }
    },
    /** Moves to (x, yTop) — picture coordinates, y from the top — and clicks a button. */
    async click(button: 'left' | 'middle' | 'right', x: number, yTop: number) {
      await send([
        { type: 'abs', data: { axis: 'x', value: Math.ceil((x * 32767) / 1023) } },
        { type: 'abs', data: { axis: 'y', value: Math.ceil((yTop * 32767) / 767) } },
      ]);
      await sleep(LIMITS.holdMs);
      await send([{ type: 'btn', data: { down: true, button } }]);
      await sleep(LIMITS.holdMs);
      await send([{ type: 'btn', data: { down: false, button } }]);
      await sleep(LIMITS.holdMs);
    },
  };
}
