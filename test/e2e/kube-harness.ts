// A Kube cluster for the e2e suites: a real air relay on 127.0.0.1, a passive listener that
// judges every frame (AirView), a plane and N nodes as emulated RISC5 machines booted from the
// Kube disk with their role commands on the serial port. Everything is judged from the air, as
// the reference's harness does (kube-on-oberon spec §8.1): never by asking the plane.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterTag, decodeKubeFrame, keyFromHex, macValid } from '../../operator/src/air/kubenet.ts';
import { type Listener, startListener } from '../../operator/src/air/listen.ts';
import { type Relay, type RelayEvent, startRelay } from '../../operator/src/air/relay.ts';
import type { FrameRecord } from '../../operator/src/air/view.ts';
import { encodeDatagram, TYP } from '../../operator/src/air/wire.ts';
import { OberonVolume } from '../../operator/src/machine/fs/volume.ts';
import { buildKubeDisk } from '../../operator/src/machine/kube-disk.ts';
import { endCommands } from '../../operator/src/machine/machine.ts';
import { QemuRunner } from '../../operator/src/machine/qemu-runner.ts';
import { MachineRunner, type RunnerOptions } from '../../operator/src/machine/runner.ts';

export const HARNESS = {
  beatMs: 1000, // heartbeat and assignment period
  ttlMs: 5000, // a node unheard this long is NotReady
  evictMs: 2000, // and its pods are unbound this much later if it is still unheard
  pollMs: 500, // wait() re-checks this often, as the reference harness does
} as const;

/** The Kube disk for tests: RETROKUBE_KUBE_DISK if set, else built (and cached) from images/oberon. */
export async function kubeDisk(): Promise<string> {
  const env = process.env.RETROKUBE_KUBE_DISK;
  if (env) return env;
  return (await buildKubeDisk()).path;
}

/**
 * RETROKUBE_E2E_QEMU=plane,node-a runs those machines of every e2e cluster as qemu-system-risc5
 * (RETROKUBE_QEMU_BINARY, else what qemu/build.sh built): the same suites, judged the same way.
 */
function qemuFromEnv(): ClusterOptions['qemu'] {
  const names = process.env.RETROKUBE_E2E_QEMU;
  if (!names) return undefined;
  const binary =
    process.env.RETROKUBE_QEMU_BINARY ??
    execFileSync('bash', [join(import.meta.dirname, '../../qemu/build.sh'), '--print-path'], {
      encoding: 'utf8',
    }).trim();
  return { binary, machines: names.split(',').map((n) => n.trim()) };
}

export interface ClusterOptions {
  nodes: string[];
  key?: string;
  cluster?: string;
  /** Boot commands of the plane; default Start, Serve (no deployment). */
  plane?: string;
  /** Give each node its Join command at boot (default true). */
  join?: boolean;
  /** Another disk for every machine (default: the Kube disk). */
  disk?: string;
  /** Machines (plane or node names) that run as qemu-system-risc5 instead of the TS emulator. */
  qemu?: { binary: string; machines: string[] };
}

/** One assignment round of the plane: when it was heard, its first counter, ids per node. */
export interface PlaneRound {
  t: number;
  counter: number;
  ids: Map<string, number[]>;
}

export interface WindowView {
  running: Map<string, number[]>;
  assigned: Map<string, number[]>;
}

const sameSet = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length &&
  [...a].sort((x, y) => x - y).every((x, i) => x === [...b].sort((p, q) => p - q)[i]);

export class KubeCluster {
  readonly records: FrameRecord[] = [];
  /**
   * Heartbeats the relay handed to the plane (time, node): what the plane could hear, which the
   * listener's records are not (the air's loss drops each delivery independently, so the listener
   * may hear a beat the plane lost). Kept from the relay's frame events.
   */
  readonly toPlane: { t: number; node: string }[] = [];
  /**
   * Heartbeats the plane read from its radio (time, node), signed with the key: what the plane
   * heard and when, late or lost on a busy host as they may be after the relay handed them over
   * (RunnerOptions.onRadioFrame; a QEMU plane: its board's radio log, QemuRunnerOptions).
   */
  readonly planeHeard: { t: number; node: string }[] = [];
  private planeAddress = '';
  readonly tag: number;
  readonly key: string;
  private readonly keyBytes: Uint8Array; // `key` decoded once: the plane's radio frames are checked with it
  readonly cluster: string;
  readonly machines = new Map<string, MachineRunner>();
  /** The machines that run as QEMU processes (ClusterOptions.qemu). */
  readonly qemuMachines = new Map<string, QemuRunner>();
  private readonly qemu: ClusterOptions['qemu'];
  private readonly disks = new Map<string, string>();
  private readonly commands = new Map<string, string>();
  listener!: Listener;
  readonly relay: Relay;
  private readonly dir: string;
  private readonly disk: string;
  private constructor(relay: Relay, dir: string, disk: string, opts: ClusterOptions) {
    this.relay = relay;
    this.dir = dir;
    this.disk = disk;
    this.key = opts.key ?? '0123456789abcdef';
    this.keyBytes = keyFromHex(this.key);
    this.cluster = opts.cluster ?? 'kube';
    this.tag = clusterTag(this.cluster);
    this.qemu = opts.qemu;
  }

  static async start(options: ClusterOptions): Promise<KubeCluster> {
    const opts = { ...options, qemu: options.qemu ?? qemuFromEnv() };
    const disk = opts.disk ?? (await kubeDisk());
    let c: KubeCluster | undefined;
    const relay = await startRelay({
      port: 0,
      bind: '127.0.0.1',
      rate: null,
      frameEvents: true,
      onEvent: (e) => c?.relayEvent(e),
    });
    const dir = mkdtempSync(join(tmpdir(), 'retrokube-kube-e2e-'));
    c = new KubeCluster(relay, dir, disk, opts);
    const { cluster, key } = c;
    c.listener = await startListener({
      host: '127.0.0.1',
      port: relay.address.port,
      cluster,
      key: c.keyBytes,
      output: 'none',
      onRecord: (r) => c.records.push(r),
    });
    c.commands.set('plane', opts.plane ?? `Kube.Start;KubeNet.Serve ${cluster} ${key}`);
    for (const n of opts.nodes)
      c.commands.set(n, opts.join === false ? '' : `KubeNet.Join ${n} ${cluster} ${key}`);
    await Promise.all(['plane', ...opts.nodes].map((m) => c.on(m)));
    return c;
  }

  /** A frame through the relay: a node's heartbeat, and whether the plane (its latest address) got it. */
  private relayEvent(e: RelayEvent): void {
    if (e.type !== 'frame') return;
    if (e.from.plane) this.planeAddress = e.from.address;
    else if (e.from.name && this.planeAddress && !e.lost.includes(this.planeAddress))
      this.toPlane.push({ t: Date.now(), node: e.from.name });
  }

  /** What the machine called `name` reports of its radio: the plane's reads, kept by planeRadio. */
  private planeRadioIf(name: string): RunnerOptions['onRadioFrame'] {
    return name === 'plane' ? (at, channel, payload) => this.planeRadio(at, channel, payload) : undefined;
  }

  /** A frame the plane read from its radio: kept when it is a heartbeat of this cluster with a good MAC. */
  private planeRadio(at: number, channel: number, payload: Uint8Array): void {
    const f = decodeKubeFrame(encodeDatagram(channel, payload));
    if (!f?.kube.ok || f.kube.msg.typ !== TYP.HEARTBEAT || f.kube.msg.cluster !== this.tag) return;
    if (macValid(this.keyBytes, f.kube)) this.planeHeard.push({ t: at, node: f.kube.msg.node });
  }

  /**
   * The longest time in [from, to] between two heartbeats of `node` that reached the plane: those
   * it read from its radio (`heard`), or those the relay handed it (`handed`).
   */
  planeGap(node: string, from: number, to: number, by: 'heard' | 'handed' = 'heard'): number {
    const beats = by === 'heard' ? this.planeHeard : this.toPlane;
    const ts = [
      from,
      ...beats.filter((b) => b.node === node && b.t >= from && b.t <= to).map((b) => b.t),
      to,
    ];
    return Math.max(...ts.slice(1).map((t, i) => t - ts[i]));
  }

  /** Each machine has its own disk for the whole run, so a restart keeps what it wrote. */
  diskOf(name: string): string {
    let d = this.disks.get(name);
    if (!d) {
      d = join(this.dir, `${name}.dsk`);
      copyFileSync(this.disk, d);
      this.disks.set(name, d);
    }
    return d;
  }

  /** Power on (a cold boot from the machine's disk, with its boot commands). */
  async on(name: string, commands?: string): Promise<void> {
    if (this.machines.has(name) || this.qemuMachines.has(name)) throw new Error(`${name} is already on`);
    if (this.qemu?.machines.includes(name)) {
      const q = await QemuRunner.start({
        qemu: this.qemu.binary,
        disk: this.diskOf(name),
        // ended as the emulator ends them (endCommands): a later run() must not join the last one
        commands: endCommands(commands ?? this.commands.get(name) ?? ''),
        air: { host: '127.0.0.1', port: this.relay.address.port },
        onRadioFrame: this.planeRadioIf(name),
      });
      this.qemuMachines.set(name, q);
      return;
    }
    const m = await MachineRunner.start({
      disk: this.diskOf(name),
      inPlace: true,
      commands: commands ?? this.commands.get(name) ?? '',
      air: { host: '127.0.0.1', port: this.relay.address.port },
      frames: false,
      onRadioFrame: this.planeRadioIf(name),
    });
    this.machines.set(name, m);
  }

  /**
   * Waits until the machine's disk has been quiet for `quietMs` (its clock, the host's time): the plane's
   * store task writes a changed store every 500 ms, so a power cut sooner after a change loses it
   * (the restarted plane comes back with the older state). Resolves with the writes seen meanwhile.
   * A QEMU machine does not report its disk writes: there the wait is `quietMs` of wall time.
   */
  async diskQuiet(name: string, quietMs: number, timeoutMs = 30_000): Promise<number> {
    if (this.qemuMachines.has(name)) {
      await sleep(quietMs);
      return Number.NaN;
    }
    const m = this.machines.get(name);
    if (!m) throw new Error(`${name} is not running`);
    const first = await m.state();
    let last = first;
    const end = Date.now() + timeoutMs;
    for (;;) {
      await sleep(100);
      const now = await m.state();
      if (now.diskWrites !== last.diskWrites) last = now;
      else if (now.timerMs - last.timerMs >= quietMs) return now.diskWrites - first.diskWrites;
      if (Date.now() > end)
        throw new Error(
          `${name}'s disk was never quiet for ${quietMs} ms of its clock within ${timeoutMs} ms`,
        );
    }
  }

  /** Power off: the machine stops at once; its disk keeps what was written. */
  async off(name: string): Promise<void> {
    const q = this.qemuMachines.get(name);
    if (q) {
      this.qemuMachines.delete(name);
      await q.stop();
      return;
    }
    const m = this.machines.get(name);
    if (!m) return;
    this.machines.delete(name);
    await m.stop();
  }

  /** Runs Oberon commands on a machine (sent on its serial port, read by Boot's task). */
  run(name: string, commands: string): void {
    const m = this.machines.get(name) ?? this.qemuMachines.get(name);
    if (!m) throw new Error(`${name} is off`);
    m.serialFeed(`${commands};`);
  }

  /**
   * Frames each emulated machine's radio dropped so far (its 3-frame FIFO full, or a frame that
   * waited too long for the machine to listen): a starved machine loses frames this way on top of
   * the air's loss. QEMU machines are not counted (their model does not report it).
   */
  async radioDrops(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [name, m] of this.machines) out.set(name, (await m.state()).radio.dropped);
    return out;
  }

  /** A file from a machine's disk (the machine should be off so that everything is written). */
  readFile(name: string, file: string): string {
    const vol = OberonVolume.fromBuffer(readFileSync(this.diskOf(name)));
    return vol.read(file).toString('latin1').replace(/\r/g, '\n');
  }

  /** Frames of this cluster that the listener accepted (signed with the key and fresh). */
  air(sinceMs = 0): FrameRecord[] {
    return this.records.filter(
      (r) => r.t >= sinceMs && r.kind !== undefined && r.cluster === this.tag && r.verdict === 'ok',
    );
  }

  /** The last heartbeat and the last assignment of each node heard in the window. */
  view(windowMs: number = HARNESS.ttlMs): WindowView {
    const since = Date.now() - windowMs;
    const running = new Map<string, number[]>();
    const assigned = new Map<string, number[]>();
    for (const r of this.air(since)) {
      if (r.kind === 'heartbeat' && r.node) running.set(r.node, r.ids ?? []);
      if (r.kind === 'assign' && r.node) assigned.set(r.node, r.ids ?? []);
    }
    return { running, assigned };
  }

  /** Reported ids total R with no duplicates, and each reporting node runs what it was assigned. */
  converged(replicas: number, nodes?: string[]): boolean {
    const v = this.view();
    const reporting = [...v.running.keys()].filter((n) => !nodes || nodes.includes(n));
    const all = reporting.flatMap((n) => v.running.get(n) ?? []);
    if (all.length !== replicas || new Set(all).size !== all.length) return false;
    return reporting.every(
      (n) => v.assigned.has(n) && sameSet(v.assigned.get(n) ?? [], v.running.get(n) ?? []),
    );
  }

  /**
   * Assignment rounds since a time, exactly as the plane sent them: one round is the assignments
   * the plane sends back to back in one tick, one to every Ready node (KubeNet's PlaneTick), so
   * their counters follow one another (+1 each, mod 2^16) and no node comes twice; anything the
   * plane sends between two rounds (specs) breaks the run of counters. No timing is involved, so
   * a busy machine or listener cannot merge two rounds or split one (the reference groups by a
   * 0.3-s gap, which a late listener can get wrong). A lost frame ends its round early, and a
   * round without every node is then left out by the caller.
   */
  rounds(sinceMs: number): PlaneRound[] {
    const out: PlaneRound[] = [];
    let prev = -1;
    for (const r of this.air(sinceMs)) {
      if (r.kind !== 'assign' || !r.node || r.counter === undefined) continue;
      const current = out.at(-1);
      if (!current || r.counter !== (prev + 1) % 0x10000 || current.ids.has(r.node))
        out.push({ t: r.t, counter: r.counter, ids: new Map() });
      out[out.length - 1].ids.set(r.node, r.ids ?? []);
      prev = r.counter;
    }
    return out;
  }

  /** Polls until test() holds; returns the ms it took, or throws naming what did not happen. */
  async wait(test: () => boolean, timeoutMs: number, what: string): Promise<number> {
    const t0 = Date.now();
    for (;;) {
      if (test()) return Date.now() - t0;
      if (Date.now() - t0 > timeoutMs) {
        const v = this.view();
        throw new Error(
          `${what}: not within ${timeoutMs / 1000} s (running ${JSON.stringify([...v.running])}, assigned ${JSON.stringify([...v.assigned])})`,
        );
      }
      await sleep(HARNESS.pollMs);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.machines.keys(), ...this.qemuMachines.keys()].map((m) => this.off(m)));
    await this.listener.close();
    await this.relay.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
