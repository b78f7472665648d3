// An Oberon cluster on this machine: an air relay (in-process, control on loopback), a passive
// listener keeping the cluster view heard on the air, a plane and N nodes as emulated RISC5
// machines booted from the Kube disk with their role commands on the serial port, and a VNC port
// per machine. Disks live in a state folder for the whole life of the cluster, so a plane that is
// switched off and on (or a restarted `up`) restores its store from its own disk.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { keyFromHex } from '../air/kubenet.ts';
import { type Listener, startListener } from '../air/listen.ts';
import { type Relay, startRelay } from '../air/relay.ts';
import type { ClusterView } from '../air/view.ts';
import { QemuRunner } from '../machine/qemu-runner.ts';
import { type RfbServer, startRfbServer } from '../machine/rfb/server.ts';
import { hasBootImage, MachineRunner, MachineThread } from '../machine/runner.ts';
import type { FrameSnapshot, MachineInput, MachineScreen, MouseButtons } from '../machine/screen-input.ts';
import { cliName } from '../util/cli-name.ts';
import { logger } from '../util/log.ts';
import { ensureCommands, type LocalKube, nodeCommands, planeCommands } from './spec.ts';

const log = logger('local-kube');

export const LIMITS = {
  joinWaitMs: 60_000, // nodes get this long to be Ready at the plane before deployments go in anyway
  pollMs: 50, // how often waits look at the view (a view of 21 nodes costs well under a ms)
  readyWindowMs: 2_500, // "Ready at the plane" = an assignment to the node heard this recently
  bootWaitMs: 60_000, // a machine must finish booting within this before commands are typed
  bootImageWaitMs: 5_000, // nodes wait at most this for the plane's boot image (else they boot alone)
  nodeThreads: 2, // the nodes share this many threads (this host's 2 cores); the plane has its own
} as const;

export type Role = 'plane' | 'node';

export interface MachineInfo {
  name: string;
  role: Role;
  on: boolean;
  vnc: number | null;
  disk: string;
}

export interface LocalClusterOptions {
  spec: LocalKube;
  /** The cluster key as hex (from the FILE's Secret or the state folder). */
  key: string;
  /** The Kube disk every machine's disk starts as. */
  kubeDisk: string;
  /** Cache key of the Kube disk: machine disks made from another build are made afresh. */
  kubeDiskKey: string;
  dir: string;
  /** First VNC port (machine i gets base + i); 0 = any free port; null = no VNC. */
  vncBase: number | null;
  /** VNC Authentication with this password on every screen (#28.2); without, security None. */
  vncPassword?: string;
  /** Progress lines for people. */
  progress?: (line: string) => void;
  /** Machines that run as qemu-system-risc5 (our QEMU model) instead of the TS emulator. */
  qemu?: { binary: string; machines: string[] };
  /** Threads the nodes share (default LIMITS.nodeThreads); 0: a thread per node (bench/kube compares). */
  nodeThreads?: number;
}

/** Screen and input of whichever runner is the machine now (VNC outlives power cycles). */
class MachineSlot implements MachineScreen, MachineInput {
  runner: MachineRunner | null = null;
  private last: FrameSnapshot = {
    width: 1024,
    height: 768,
    words: new Uint32Array((1024 / 32) * 768),
    version: 0,
  };
  snapshot(): FrameSnapshot {
    if (this.runner) this.last = this.runner.snapshot();
    return this.last;
  }
  ps2(bytes: readonly number[]): void {
    this.runner?.ps2(bytes);
  }
  mouse(x: number, y: number, buttons: MouseButtons): void {
    this.runner?.mouse(x, y, buttons);
  }
}

export class LocalCluster {
  readonly spec: LocalKube;
  readonly relay: Relay;
  readonly listener: Listener;
  private readonly o: LocalClusterOptions;
  private readonly slots = new Map<string, MachineSlot>();
  private readonly vnc = new Map<string, RfbServer>();
  private readonly roles = new Map<string, Role>();
  /** Machines running as QEMU processes now (LocalClusterOptions.qemu). */
  private readonly qemus = new Map<string, QemuRunner>();
  /**
   * The threads the nodes run on, each shared by several (a node then starts with a boot-image
   * restore, not a Node thread of its own: 20 nodes start in ~0.4 s of CPU instead of ~1.2 s).
   */
  private readonly nodeThreads: MachineThread[];
  /** The plane's thread (its own: the plane is the busiest machine). */
  private readonly planeThread = new MachineThread();
  private closed = false;

  private constructor(o: LocalClusterOptions, relay: Relay, listener: Listener) {
    this.o = o;
    this.spec = o.spec;
    this.nodeThreads = Array.from({ length: o.nodeThreads ?? LIMITS.nodeThreads }, () => new MachineThread());
    this.relay = relay;
    this.listener = listener;
  }

  /** Starts the air, the listener and (unless start is false) every machine. */
  static async start(o: LocalClusterOptions, start = true): Promise<LocalCluster> {
    mkdirSync(o.dir, { recursive: true });
    const relay = await startRelay({
      port: 0,
      bind: '127.0.0.1',
      loss: o.spec.loss,
      rate: null,
      controlPort: 0,
      controlBind: '127.0.0.1',
    });
    const listener = await startListener({
      host: '127.0.0.1',
      port: relay.address.port,
      cluster: o.spec.cluster,
      key: keyFromHex(o.key),
      output: 'none',
    });
    const c = new LocalCluster(o, relay, listener);
    // The machines' threads load their modules while the disks are prepared and the plane boots.
    if (!o.qemu?.machines.includes('plane')) c.planeThread.prestart();
    for (const t of c.nodeThreads) t.prestart();
    c.prepareDisks();
    c.roles.set('plane', 'plane');
    for (const n of o.spec.nodeNames) c.roles.set(n, 'node');
    for (const name of c.roles.keys()) c.slots.set(name, new MachineSlot());
    if (o.vncBase !== null) {
      let i = 0;
      for (const [name, slot] of c.slots) {
        const port = o.vncBase === 0 ? 0 : o.vncBase + i;
        i++;
        c.vnc.set(
          name,
          await startRfbServer({
            screen: slot,
            input: slot,
            port,
            host: '127.0.0.1',
            name: `Oberon ${name}`,
            password: o.vncPassword,
          }),
        );
      }
    }
    if (start) await c.startAll();
    return c;
  }

  private progress(line: string): void {
    this.o.progress?.(line);
  }

  diskOf(name: string): string {
    return join(this.o.dir, `${name}.dsk`);
  }

  /** Each machine keeps its disk across runs, unless the Kube disk was rebuilt since. */
  private prepareDisks(): void {
    const stamp = join(this.o.dir, 'disk-key');
    const same = existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === this.o.kubeDiskKey;
    for (const name of ['plane', ...this.spec.nodeNames]) {
      const d = this.diskOf(name);
      if (!same || !existsSync(d)) copyFileSync(this.o.kubeDisk, d);
    }
    if (!same) writeFileSync(stamp, `${this.o.kubeDiskKey}\n`);
  }

  /**
   * Plane first (Start, Serve), then the nodes with their Join; once every node is Ready at the
   * plane (an assignment to it heard) the deployments go in with Ensure, so pods spread.
   */
  async startAll(): Promise<void> {
    this.progress(`starting the plane and ${this.spec.nodes} nodes`);
    const key = this.o.key;
    const plane = () => this.power('plane', true, planeCommands(this.spec, key, false));
    const nodes = () => Promise.all(this.spec.nodeNames.map((n) => this.power(n, true)));
    // The nodes' disks are copies of the plane's. With a boot image for it at hand already (an
    // earlier run's, from the store), plane and nodes start together, each from the image: the
    // nodes are then heard before the plane's first assignment rounds, not ~0.5 s later.
    if (!this.o.qemu?.machines.includes('plane') && hasBootImage(this.diskOf('plane'))) {
      await Promise.all([plane(), nodes()]);
    } else {
      await plane();
      // Otherwise, once the plane's boot has reached its commands (a boot image, ~0.1 s), every
      // node starts from there instead of booting on its own.
      // (A plane in QEMU makes no boot image: the nodes then boot on their own.)
      if (!this.qemus.has('plane'))
        await this.runner('plane')
          .waitForBootImage(LIMITS.bootImageWaitMs)
          .catch(() => this.progress('the plane gave no boot image in time; the nodes boot on their own'));
      await nodes();
    }
    this.progress('machines booting; waiting for every node to be Ready at the plane');
    const ready = await this.waitFor(() => {
      const view = this.view(); // once per look, not once per node
      return this.spec.nodeNames.every((n) => this.readyAtPlane(view, n));
    }, LIMITS.joinWaitMs);
    if (!ready) this.progress(`not every node is Ready after ${LIMITS.joinWaitMs / 1000} s; applying anyway`);
    const ensure = ensureCommands(this.spec);
    if (ensure.length > 0) {
      this.serial('plane', ensure.join(';'));
      this.progress(
        `deployments ensured: ${this.spec.deployments.map((d) => `${d.name} ${d.replicas} ${d.module}`).join('; ')}`,
      );
    }
  }

  private readyAtPlane(view: ClusterView, node: string): boolean {
    const n = view.nodes.find((x) => x.name === node);
    return !!n && n.ready && n.assignedAtMs !== null && Date.now() - n.assignedAtMs < LIMITS.readyWindowMs;
  }

  async waitFor(test: () => boolean, timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end && !this.closed) {
      if (test()) return true;
      await new Promise((r) => setTimeout(r, LIMITS.pollMs));
    }
    return test();
  }

  machines(): MachineInfo[] {
    return [...this.roles].map(([name, role]) => ({
      name,
      role,
      on: this.slots.get(name)?.runner !== null || this.qemus.has(name),
      vnc: this.vnc.get(name)?.port ?? null,
      disk: this.diskOf(name),
    }));
  }

  private slot(name: string): MachineSlot {
    const s = this.slots.get(name);
    if (!s)
      throw new Error(
        `no machine "${name}" in this cluster (machines: ${[...this.slots.keys()].join(', ')})`,
      );
    return s;
  }

  /** The boot commands of a machine (the plane's include Ensure: a no-op when the store has the deployment). */
  commandsOf(name: string): string {
    return this.roles.get(name) === 'plane'
      ? planeCommands(this.spec, this.o.key)
      : nodeCommands(this.spec, name, this.o.key);
  }

  /** Power on (a cold boot from the machine's own disk) or off (stops at once; the disk keeps what was written). */
  async power(name: string, on: boolean, commands?: string): Promise<void> {
    const s = this.slot(name);
    if (this.o.qemu?.machines.includes(name)) {
      const q = this.qemus.get(name);
      if (on && !q) {
        this.qemus.set(
          name,
          await QemuRunner.start({
            qemu: this.o.qemu.binary,
            disk: this.diskOf(name),
            commands: commands ?? this.commandsOf(name),
            air: { host: '127.0.0.1', port: this.relay.address.port },
          }),
        );
        log.info({ machine: name, runtime: 'qemu' }, 'machine on');
      } else if (!on && q) {
        this.qemus.delete(name);
        await q.stop();
        log.info({ machine: name, runtime: 'qemu' }, 'machine off');
      }
      return;
    }
    if (on) {
      if (s.runner) return;
      const index = this.spec.nodeNames.indexOf(name);
      s.runner = await MachineRunner.start({
        disk: this.diskOf(name),
        inPlace: true,
        commands: commands ?? this.commandsOf(name),
        air: { host: '127.0.0.1', port: this.relay.address.port },
        frames: this.o.vncBase !== null,
        thread:
          index < 0
            ? this.planeThread
            : this.nodeThreads.length > 0
              ? this.nodeThreads[index % this.nodeThreads.length]
              : undefined,
      });
      log.info({ machine: name }, 'machine on');
    } else {
      const r = s.runner;
      if (!r) return;
      s.runner = null;
      await r.stop();
      log.info({ machine: name }, 'machine off');
    }
  }

  private runner(name: string): MachineRunner {
    if (this.o.qemu?.machines.includes(name))
      throw new Error(`${name} runs in QEMU: its screen and keyboard are QEMU's own (not served here yet)`);
    const r = this.slot(name).runner;
    if (!r) throw new Error(`${name} is off (switch it on with "${cliName()} machine on ${name}")`);
    return r;
  }

  /** Commands on the serial port, read by Boot's task (how boot commands arrive). */
  serial(name: string, commands: string): void {
    const q = this.qemus.get(name);
    if (q) q.serialFeed(`${commands};`);
    else this.runner(name).serialFeed(`${commands};`);
  }

  /** Types a command into System.Tool and middle-clicks it, as a person would. */
  async type(name: string, command: string): Promise<void> {
    const r = this.runner(name);
    await r.waitForBoot(LIMITS.bootWaitMs);
    r.runCommand(command);
  }

  async screen(name: string): Promise<FrameSnapshot> {
    return this.runner(name).freshSnapshot();
  }

  view(): ClusterView {
    return this.listener.view();
  }

  get airControl(): string {
    return this.relay.control?.url ?? '';
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.slots.keys()].map((n) => this.power(n, false).catch(() => undefined)));
    await Promise.all([this.planeThread, ...this.nodeThreads].map((t) => t.close()));
    await Promise.all([...this.vnc.values()].map((v) => v.close()));
    await this.listener.close();
    await this.relay.close();
  }
}
