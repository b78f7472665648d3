// MachineRunner: a RISC5 machine in a worker thread, driven from the main thread.
//
//   const m = await MachineRunner.start({ disk: 'Oberon.dsk', commands: 'Boot.Run' });
//   await m.waitForBoot();
//   m.runCommand('System.Directory *.Mod');   // types the command and middle-clicks it
//   await m.waitForIdle();
//   const shot = await m.freshSnapshot();      // or m.snapshot() (last pushed frame, sync)
//   m.serialText();                            // everything Oberon wrote to RS232
//   await m.stop();
//
// The disk runs on a temporary copy unless `inPlace` is set. Real-time by default: 25 MHz
// paced to the wall clock; while Oberon idles the worker sleeps (≈ no host CPU) and wakes on
// input or radio frames. `clock: 'deterministic'` makes the ms timer instructions/25,000.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MessageChannel, type MessagePort, Worker } from 'node:worker_threads';
import { type BootImage, sameBlocks } from './boot-image.ts';
import { bootImageDir, loadBootImages, saveBootImage } from './boot-image-store.ts';
import type { ButtonName, ClockMode } from './machine.ts';
import type { FromWorker, HostMessage, MachineState, ToWorker, WorkerInit } from './protocol.ts';
import { imageId } from './protocol.ts';
import { textToPs2 } from './ps2.ts';
import type { FrameSnapshot, MachineInput, MachineScreen, MouseButtons } from './screen-input.ts';
import { DiskImage } from './sd-card.ts';

const WORKER_ENTRY = `
const m = require('node:module');
if (typeof m.enableCompileCache === 'function') m.enableCompileCache();
import(${JSON.stringify(new URL('./worker.ts', import.meta.url).href)});
`;

export const LIMITS = {
  serialKeepBytes: 1 << 20, // RS232 output kept on the main side
  pollMs: 25, // how often wait helpers re-check their condition
  defaultWaitMs: 30_000, // default timeout of wait helpers
  stopReplyMs: 5_000, // stop() waits this long for the worker to flush its disk, then terminates it anyway
  bootImages: 4, // boot images kept per process (~1 MiB each; the newest first)
} as const;

/**
 * Boot images recorded by this process's machines (boot-image.ts): a new machine whose
 * configuration and disk blocks match one starts from it instead of executing its boot again,
 * so the nodes of a cluster boot once. Newest first, at most LIMITS.bootImages.
 */
const bootImages: BootImage[] = [];
let storeLoaded = false;

/** This process's images, first filled from the on-disk store (boot-image-store.ts). */
function processBootImages(): BootImage[] {
  if (!storeLoaded) {
    storeLoaded = true;
    bootImages.push(...loadBootImages(bootImageDir()).slice(0, LIMITS.bootImages));
  }
  return bootImages;
}

function keepBootImage(image: BootImage): void {
  const same = bootImages.findIndex((b) => b.key === image.key && b.readsHash === image.readsHash);
  if (same >= 0) bootImages.splice(same, 1);
  bootImages.unshift(image);
  bootImages.length = Math.min(bootImages.length, LIMITS.bootImages);
  saveBootImage(bootImageDir(), image);
}

/**
 * A worker thread shared by several machines (worker.ts, shared mode): a machine started on it
 * costs a boot-image restore instead of a Node thread of its own (~50 ms of CPU, and seconds of
 * wall time when 20 threads start at once on a loaded host), and the machines share translated
 * code. The thread starts with its first machine and ends with its last.
 */
export class MachineThread {
  private worker: Worker | null = null;
  private machines = 0;
  /** Boot images the running thread holds (imageId). */
  private readonly imagesSent = new Set<string>();

  /** Of these images, those the thread does not hold yet (noted as sent). */
  unsent(images: readonly BootImage[]): BootImage[] {
    const fresh = images.filter((b) => !this.imagesSent.has(imageId(b)));
    for (const b of fresh) this.imagesSent.add(imageId(b));
    return fresh;
  }

  /** The thread while it runs. */
  get current(): Worker | null {
    return this.worker;
  }

  /** Start the thread ahead of its first machine (its modules load meanwhile). */
  prestart(): Worker {
    if (this.worker === null) {
      this.worker = new Worker(WORKER_ENTRY, { eval: true, workerData: { shared: true } });
      this.imagesSent.clear();
    }
    return this.worker;
  }

  /** The thread, started if needed, counting one more machine on it. */
  acquire(): Worker {
    this.machines++;
    return this.prestart();
  }

  /** End a thread that was started but has no machine (once machines ran, the last one ends it). */
  async close(): Promise<void> {
    if (this.machines > 0 || this.worker === null) return;
    const w = this.worker;
    this.worker = null;
    await w.terminate();
  }

  /** One machine fewer; the last one ends the thread. */
  async release(): Promise<void> {
    this.machines--;
    await this.close();
  }
}

export interface RunnerOptions {
  /** The .dsk file. Copied to a temporary file first unless inPlace is true. */
  disk: string;
  inPlace?: boolean;
  clock?: ClockMode;
  /** Deterministic clock only: do not pace to the wall clock (runs flat out). */
  fast?: boolean;
  memoryMiB?: number;
  width?: number;
  height?: number;
  /** Text fed to RS232 receive from power-on (e.g. "Boot.Run" commands separated by ';'). */
  commands?: string;
  switches?: number;
  /** The air relay (UDP) for the radio; localPort 0 = any. */
  air?: { host: string; port: number; localPort?: number };
  /** Keep a current screen for snapshot() (pushed by the worker when the screen changes). Default true. */
  frames?: boolean;
  /** Translate hot code to WebAssembly (see MachineOptions.jit; default on). */
  jit?: boolean;
  /** 'native' boot (default) or our assembled ROM running on the CPU (boot-rom.ts). */
  boot?: 'native' | 'assembled';
  /**
   * Start from a boot image of this process when one fits, and record one otherwise (default
   * true; boot-image.ts). The timer then runs on machine time until the first outside event.
   */
  bootImages?: boolean;
  /** Run on this shared thread instead of a thread of its own. */
  thread?: MachineThread;
  /**
   * Every frame Oberon reads from the radio, as it reads it (wall time in the machine's thread):
   * what this machine heard, and when, not what was sent to it. A message per frame: for tests.
   */
  onRadioFrame?: (at: number, channel: number, payload: Uint8Array) => void;
}

/**
 * Whether this process holds a boot image (its own or the on-disk store's) for the blocks of this
 * disk: a machine started on it (in the default configuration) restores instead of booting.
 */
export function hasBootImage(diskPath: string): boolean {
  const images = processBootImages();
  if (images.length === 0) return false;
  const disk = new DiskImage(fs.readFileSync(diskPath));
  return images.some((b) => sameBlocks(disk, b));
}

export class MachineRunner implements MachineScreen, MachineInput {
  /** The machine's own thread, or its port on a shared thread. */
  private readonly worker: Worker | MessagePort;
  private readonly thread: MachineThread | null;
  readonly diskPath: string;
  private readonly tempDir: string | null;
  private serial: number[] = [];
  private serialTotal = 0;
  private lastFrame: FrameSnapshot;
  private nextId = 1;
  private readonly pending = new Map<number, (msg: FromWorker) => void>();
  private bootedFlag = false;
  private imageSent = false;
  private exited = false;
  private error: Error | null = null;
  leds = 0;
  /** Local UDP port of the radio's air socket (when an air was given). */
  airPort: number | null = null;
  onClipboard: ((text: string) => void) | null = null;
  onSerial: ((bytes: Uint8Array) => void) | null = null;
  onFrame: ((snap: FrameSnapshot) => void) | null = null;
  private onRadioFrame: RunnerOptions['onRadioFrame'] | null = null;

  private constructor(
    worker: Worker | MessagePort,
    thread: MachineThread | null,
    diskPath: string,
    tempDir: string | null,
    width: number,
    height: number,
  ) {
    this.worker = worker;
    this.thread = thread;
    this.diskPath = diskPath;
    this.tempDir = tempDir;
    this.lastFrame = { width, height, words: new Uint32Array((width / 32) * height), version: -1 };
  }

  static async start(opts: RunnerOptions): Promise<MachineRunner> {
    if (!fs.existsSync(opts.disk)) throw new Error(`disk image ${opts.disk} does not exist`);
    let diskPath = path.resolve(opts.disk);
    let tempDir: string | null = null;
    if (!opts.inPlace) {
      tempDir = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-machine-'));
      const copy = path.join(tempDir, path.basename(diskPath));
      fs.copyFileSync(diskPath, copy);
      diskPath = copy;
    }
    const init: WorkerInit = {
      diskPath,
      clock: opts.clock ?? 'realtime',
      fast: opts.fast ?? false,
      memoryMiB: opts.memoryMiB,
      width: opts.width,
      height: opts.height,
      commands: opts.commands,
      switches: opts.switches,
      air: opts.air,
      frames: opts.frames ?? true,
      jit: opts.jit ?? true,
      boot: opts.boot ?? 'native',
      bootImages: (opts.bootImages ?? true) ? [...processBootImages()] : undefined,
      radioTrace: opts.onRadioFrame !== undefined,
    };
    const custom = opts.memoryMiB !== undefined || opts.width !== undefined || opts.height !== undefined;
    const width = custom ? Math.floor((opts.width ?? 1024) / 32) * 32 : 1024;
    const height = custom ? (opts.height ?? 768) : 768;
    // A tiny JS entry turns on Node's compile cache before worker.ts loads: the type-stripped
    // sources and V8's code come from the cache, so a worker starts without re-stripping its
    // modules (about 100 ms of CPU each start). The cache is an optimisation; without it (an
    // unwritable cache folder) the worker loads the same modules the slow way.
    let runner: MachineRunner;
    if (opts.thread !== undefined) {
      const { port1, port2 } = new MessageChannel();
      // Boot images go to a shared thread once (each is ~1.4 MB: cloned for 20 nodes, four
      // images each, they cost the main thread half a second); a machine names the ones it may use.
      const images = init.bootImages;
      const thread = opts.thread.acquire(); // first: a thread (re)started holds no images
      const host: HostMessage = {
        t: 'host',
        init: { ...init, bootImages: undefined },
        port: port2,
        images: opts.thread.unsent(images ?? []),
        imageIds: images === undefined ? null : images.map(imageId),
      };
      thread.postMessage(host, [port2]);
      runner = new MachineRunner(port1, opts.thread, diskPath, tempDir, width, height);
    } else {
      const worker = new Worker(WORKER_ENTRY, { eval: true, workerData: init });
      runner = new MachineRunner(worker, null, diskPath, tempDir, width, height);
    }
    runner.onRadioFrame = opts.onRadioFrame ?? null;
    try {
      await runner.attach();
    } catch (err) {
      await runner.detach();
      throw err;
    }
    return runner;
  }

  /** What the runner needs of its endpoint (a Worker or a MessagePort). */
  private get endpoint(): {
    on(event: string, fn: (arg: never) => void): void;
    off(event: string, fn: (arg: never) => void): void;
    postMessage(msg: unknown): void;
  } {
    return this.worker as unknown as {
      on(event: string, fn: (arg: never) => void): void;
      off(event: string, fn: (arg: never) => void): void;
      postMessage(msg: unknown): void;
    };
  }

  /** Listeners on a shared thread's worker, removed when this machine leaves it. */
  private unhook: (() => void) | null = null;
  private detached = false;

  private attach(): Promise<void> {
    return new Promise((resolve, reject) => {
      let ready = false;
      this.endpoint.on('message', (msg: FromWorker) => {
        switch (msg.t) {
          case 'ready':
            ready = true;
            this.airPort = msg.airPort;
            resolve();
            return;
          case 'serial': {
            for (const b of msg.bytes) this.serial.push(b);
            this.serialTotal += msg.bytes.length;
            if (this.serial.length > LIMITS.serialKeepBytes) this.serial.splice(0, this.serial.length >> 1);
            this.onSerial?.(msg.bytes);
            return;
          }
          case 'leds':
            this.leds = msg.value;
            return;
          case 'clipboard':
            this.onClipboard?.(msg.text);
            return;
          case 'booted':
            this.bootedFlag = true;
            return;
          case 'radio':
            this.onRadioFrame?.(msg.at, msg.channel, msg.payload);
            return;
          case 'bootImage':
            keepBootImage(msg.image);
            this.imageSent = true;
            return;
          case 'frame':
            this.lastFrame = msg.snap;
            this.onFrame?.(msg.snap);
            return;
          case 'error':
            this.error = new Error(`machine: ${msg.message}`);
            if (!ready) reject(this.error);
            return;
          default: {
            const cb = this.pending.get(msg.id);
            if (cb !== undefined) {
              this.pending.delete(msg.id);
              cb(msg);
            }
          }
        }
      });
      const onError = (err: Error) => {
        this.error = err;
        if (!ready) reject(err);
      };
      const onGone = () => {
        if (this.exited) return;
        this.exited = true;
        for (const cb of this.pending.values()) cb({ t: 'error', message: 'machine worker exited' });
        this.pending.clear();
        if (!ready) reject(this.error ?? new Error('machine worker exited during start'));
      };
      if (this.worker instanceof Worker) {
        this.worker.on('error', onError);
        this.worker.on('exit', onGone);
        return;
      }
      // On a shared thread: the port closes when the machine stops; the thread may fail as a whole.
      const threadWorker = (this.thread as MachineThread).current;
      this.worker.on('close', onGone);
      threadWorker?.on('error', onError);
      threadWorker?.on('exit', onGone);
      this.unhook = () => {
        threadWorker?.off('error', onError);
        threadWorker?.off('exit', onGone);
      };
    });
  }

  /** Leave the thread: end the own thread, or close the port and release the shared one. */
  private async detach(): Promise<void> {
    if (this.detached) return;
    this.detached = true;
    if (this.worker instanceof Worker) {
      await this.worker.terminate();
      return;
    }
    this.unhook?.();
    this.unhook = null;
    this.exited = true;
    this.worker.close();
    await this.thread?.release();
  }

  private send(msg: ToWorker): void {
    if (this.exited) throw new Error('the machine is stopped');
    this.endpoint.postMessage(msg);
  }

  private request(make: (id: number) => ToWorker): Promise<FromWorker> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, (msg) => (msg.t === 'error' ? reject(new Error(msg.message)) : resolve(msg)));
      try {
        this.send(make(id));
      } catch (err) {
        this.pending.delete(id);
        reject(err);
      }
    });
  }

  // ------------------------------------------------------------------ input

  ps2(bytes: readonly number[]): void {
    this.send({ t: 'ps2', bytes: [...bytes] });
  }
  mouse(x: number, y: number, buttons: MouseButtons): void {
    this.send({
      t: 'mouse',
      x,
      y,
      buttons: { left: buttons.left, middle: buttons.middle, right: buttons.right },
    });
  }
  /** Type text on a US keyboard ('\n' = Return), one key at a time as Oberon consumes them. */
  typeText(text: string): void {
    textToPs2(text); // throws here, in the caller, on a character without a key
    this.send({ t: 'typeText', text });
  }
  /** Click at (x, y) in Oberon coordinates (y from the bottom; see screenToOberon). */
  click(x: number, y: number, button: ButtonName = 'left', holdMs?: number): void {
    this.send({ t: 'click', x, y, button, holdMs });
  }
  moveMouse(x: number, y: number, buttons: ButtonName[] = []): void {
    this.send({ t: 'move', x, y, buttons });
  }
  /** Type the command on a new line of the lowest system-track viewer and middle-click it. */
  runCommand(command: string): void {
    if (/[\r\n]/.test(command)) throw new Error('runCommand takes one line; call it once per command');
    textToPs2(command);
    this.send({ t: 'runCommand', command });
  }
  pause(ms: number): void {
    this.send({ t: 'pause', ms });
  }
  /** More bytes for RS232 receive. */
  serialFeed(data: string): void {
    this.send({ t: 'serialIn', data });
  }
  setClipboard(text: string): void {
    this.send({ t: 'clipboard', text });
  }
  screenToOberon(yFromTop: number): number {
    return this.lastFrame.height - 1 - yFromTop;
  }

  // ------------------------------------------------------------------ output

  /** The last screen the worker pushed (it pushes when the screen changes). */
  snapshot(): FrameSnapshot {
    return this.lastFrame;
  }
  /** The screen right now. */
  async freshSnapshot(): Promise<FrameSnapshot> {
    const msg = await this.request((id) => ({ t: 'snapshot', id }));
    if (msg.t !== 'snapshot') throw new Error('unexpected reply');
    this.lastFrame = msg.snap;
    return msg.snap;
  }
  async state(): Promise<MachineState> {
    const msg = await this.request((id) => ({ t: 'query', id }));
    if (msg.t !== 'state') throw new Error('unexpected reply');
    return msg.state;
  }
  serialText(): string {
    return Buffer.from(this.serial).toString('latin1');
  }
  get booted(): boolean {
    return this.bootedFlag;
  }

  // ------------------------------------------------------------------ waiting

  /** Resolve when pred() is true (checked every 25 ms); reject after timeoutMs. */
  async waitFor(
    pred: () => boolean | Promise<boolean>,
    timeoutMs: number = LIMITS.defaultWaitMs,
    what = 'condition',
  ): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (this.error !== null) throw this.error;
      if (await pred()) return;
      if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, LIMITS.pollMs));
    }
  }
  waitForBoot(timeoutMs: number = LIMITS.defaultWaitMs): Promise<void> {
    return this.waitFor(() => this.bootedFlag, timeoutMs, 'Oberon to boot');
  }
  /**
   * Until this machine has given the process its boot image (or booted without one): machines
   * started after that with the same disk start from it instead of booting (boot-image.ts).
   */
  waitForBootImage(timeoutMs: number = LIMITS.defaultWaitMs): Promise<void> {
    return this.waitFor(() => this.imageSent || this.bootedFlag, timeoutMs, 'a boot image');
  }
  /** Until all queued input is consumed and Oberon idles. */
  waitForIdle(timeoutMs: number = LIMITS.defaultWaitMs): Promise<void> {
    return this.waitFor(async () => (await this.state()).idle, timeoutMs, 'the machine to idle');
  }
  waitForSerial(match: string | RegExp, timeoutMs: number = LIMITS.defaultWaitMs): Promise<void> {
    const test = () =>
      typeof match === 'string' ? this.serialText().includes(match) : match.test(this.serialText());
    return this.waitFor(test, timeoutMs, `serial output ${String(match)}`);
  }

  // ------------------------------------------------------------------ power

  powerCycle(): void {
    this.bootedFlag = false;
    this.send({ t: 'powerCycle' });
  }
  reset(): void {
    this.send({ t: 'reset' });
  }
  /** Stop the machine, flush the disk, remove the temporary copy (unless keepDisk). */
  async stop(opts: { keepDisk?: boolean } = {}): Promise<void> {
    if (!this.exited) {
      // A worker that does not answer (starved, or stuck) must not hang whoever stops it.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, LIMITS.stopReplyMs);
      });
      await Promise.race([this.request((id) => ({ t: 'stop', id })).catch(() => undefined), late]);
      clearTimeout(timer);
      await this.detach();
    } else await this.detach(); // gone already (its port closed, or its thread ended): still leave
    if (this.tempDir !== null && !opts.keepDisk) fs.rmSync(this.tempDir, { recursive: true, force: true });
  }
}
