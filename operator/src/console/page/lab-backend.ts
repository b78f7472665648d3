// The browser lab: a plane and two nodes, each our emulator in a Web Worker, on an air that lives
// in the page (loss, cut, off, intruders), judged by the same AirView the operator uses. Nothing
// leaves the page once it is loaded: the Kube disk comes with it (kube.dsk.gz).
import { type Forgery, forge } from '../../air/forge.ts';
import { clusterTag, keyFromHex } from '../../air/kubenet.ts';
import { AirView, type FrameRecord } from '../../air/view.ts';
import { encodeDatagram } from '../../air/wire.ts';
import { ReplayBook } from '../replay.ts';
import type { AirOp, ConsoleState, Done, InjectReport, IntruderKind, MachineInfo } from '../types.ts';
import type { Backend, BackendEvents, ScreenLink } from './backend.ts';
import { drawOberonFrame } from './screen.ts';
import type { FromLabWorker, ToLabWorker } from './worker-protocol.ts';

export const LIMITS = {
  pushMs: 500, // the view goes to the page this often, as the console server pushes it
  intruderRounds: 3, // forgeries follow each of the plane's next 3 assignments (reference)
  intruderTimeoutMs: 30_000, // ...heard within this, or the button gives up
  ahead: 2, // forged counter = heard + 2 (reference)
  bootMs: 30_000, // a machine reports booted within this, or the page says so
} as const;

/** The reference lab's cluster: public key, one deployment. */
export const LAB = {
  cluster: 'kube',
  key: '00c0ffee00c0ffee',
  nodes: ['node-a', 'node-b'],
  deployment: { name: 'web', replicas: 4, module: 'Ticker' },
} as const;

interface Station {
  name: string;
  role: 'plane' | 'node';
  worker: Worker;
  on: boolean;
  canvas: { ctx: CanvasRenderingContext2D; image: ImageData } | null;
  instrPerSecond: number;
  busy: number;
}

interface Attack {
  kind: IntruderKind;
  node: string;
  report: InjectReport;
  replay: Uint8Array | null;
  done: (r: InjectReport) => void;
}

export class LabBackend implements Backend {
  readonly kind = 'lab' as const;
  private readonly view = new AirView({ cluster: LAB.cluster, key: keyFromHex(LAB.key) });
  private readonly stations = new Map<string, Station>();
  private readonly ether = { on: true, loss: 0, cuts: new Set<string>() };
  private pending: FrameRecord[] = [];
  private readonly replays = new ReplayBook();
  private attack: Attack | null = null;
  private ev: BackendEvents | null = null;

  connect(ev: BackendEvents): void {
    this.ev = ev;
    ev.link(false, 'loading the Kube disk');
    this.boot().catch((e: Error) => ev.link(false, `the lab could not start: ${e.message}`));
  }

  private async boot(): Promise<void> {
    const ev = this.ev;
    if (!ev) return;
    const r = await fetch('kube.dsk.gz');
    if (!r.ok || !r.body) throw new Error(`kube.dsk.gz: HTTP ${r.status}`);
    const disk = await new Response(r.body.pipeThrough(new DecompressionStream('gzip'))).arrayBuffer();
    const plane = `Kube.Start;KubeNet.Serve ${LAB.cluster} ${LAB.key};Kube.Ensure ${LAB.deployment.name} ${LAB.deployment.replicas} ${LAB.deployment.module}`;
    this.start('plane', 'plane', disk, plane);
    for (const n of LAB.nodes) this.start(n, 'node', disk, `KubeNet.Join ${n} ${LAB.cluster} ${LAB.key}`);
    ev.link(true, 'the lab runs in this page: three machines in Web Workers, the air in the page');
    ev.state(this.state());
    setInterval(() => {
      const batch = this.pending;
      this.pending = [];
      if (batch.length) ev.records(batch, 0);
      ev.view(this.view.view(Date.now()));
      ev.state(this.state());
    }, LIMITS.pushMs);
    // For people and the benchmark: the machines' speed, from the page's console.
    (globalThis as { retrokubeLab?: unknown }).retrokubeLab = {
      speeds: () =>
        Object.fromEntries(
          [...this.stations].map(([n, s]) => [n, { instrPerSecond: s.instrPerSecond, busy: s.busy }]),
        ),
      bench: (name: string, ms: number) => this.bench(name, ms),
    };
  }

  private start(name: string, role: 'plane' | 'node', disk: ArrayBuffer, commands: string): void {
    const worker = new Worker('worker.js', { type: 'module', name });
    const s: Station = { name, role, worker, on: true, canvas: null, instrPerSecond: 0, busy: 0 };
    this.stations.set(name, s);
    worker.onmessage = (e: MessageEvent<FromLabWorker>) => this.fromWorker(s, e.data);
    worker.onerror = (e) => this.ev?.notice(`${name}: ${e.message}`);
    this.post(s, { t: 'init', disk: disk.slice(0), commands });
  }

  private post(s: Station, m: ToLabWorker, transfer: Transferable[] = []): void {
    s.worker.postMessage(m, transfer);
  }

  private fromWorker(s: Station, m: FromLabWorker): void {
    switch (m.t) {
      case 'radio':
        if (s.on) this.transmit(s.name, m.channel, m.payload);
        return;
      case 'frame':
        if (s.canvas) drawOberonFrame(s.canvas.ctx, s.canvas.image, m.words, m.width, m.height);
        return;
      case 'stats':
        s.instrPerSecond = (m.instructions / m.ms) * 1000;
        s.busy = m.busyMs / m.ms;
        return;
      case 'booted':
        this.ev?.notice(`${s.name} booted`);
        return;
      case 'error':
        this.ev?.notice(`${s.name}: ${m.message}`);
        return;
      case 'bench':
        this.benchReply?.(m.perSecond);
        return;
    }
  }

  /**
   * A frame from a station (or the intruder, from = null) onto the air. The page's listener is a
   * station like the others: it hears nothing while the air is off or from a cut machine, and
   * loses deliveries as they do.
   */
  private transmit(from: string | null, channel: number, payload: Uint8Array): void {
    if (!this.ether.on || (from !== null && this.ether.cuts.has(from))) return;
    const lost = (): boolean => this.ether.loss > 0 && Math.random() < this.ether.loss;
    for (const s of this.stations.values()) {
      if (s.name === from || !s.on || this.ether.cuts.has(s.name) || lost()) continue;
      this.post(s, { t: 'radio', channel, payload });
    }
    if (lost()) return;
    const datagram = encodeDatagram(channel, payload);
    const rec = this.view.ingest(Date.now(), datagram);
    if (!rec) return;
    this.pending.push(rec);
    if (from !== null) this.heard(rec, datagram);
  }

  /** Genuine assignments are replay material, and the trigger of a pending intruder. */
  private heard(rec: FrameRecord, datagram: Uint8Array): void {
    if (rec.verdict !== 'ok' || rec.kind !== 'assign' || !rec.node || !rec.ids) return;
    const a = this.attack;
    if (a && a.node === rec.node && a.report.times.length < LIMITS.intruderRounds) {
      const forged: Forgery[] = a.replay
        ? [{ kind: 'replay', datagram: a.replay }]
        : forge([a.kind], datagram, {
            tag: clusterTag(LAB.cluster),
            key: keyFromHex(LAB.key),
            ids: [],
            ahead: LIMITS.ahead,
            recorded: [],
          });
      for (const f of forged) this.transmit(null, f.datagram[0], f.datagram.subarray(1));
      a.report.times.push(Date.now());
      if (a.report.times.length >= LIMITS.intruderRounds) {
        this.attack = null;
        a.done(a.report);
      }
    }
    this.replays.add(rec.node, rec.ids, datagram);
  }

  private state(): ConsoleState {
    const machines: MachineInfo[] = [...this.stations.values()].map((s) => ({
      name: s.name,
      role: s.role,
      on: s.on,
      screen: true,
    }));
    return {
      kind: 'lab',
      name: 'browser lab',
      cluster: LAB.cluster,
      deployment: { ...LAB.deployment },
      machines,
      air: { on: this.ether.on, loss: this.ether.loss, cuts: [...this.ether.cuts] },
      sheets: false,
    };
  }

  private station(name: string): Station {
    const s = this.stations.get(name);
    if (!s) throw new Error(`no machine "${name}" (machines: ${[...this.stations.keys()].join(', ')})`);
    return s;
  }

  private done(text?: string): Done {
    this.ev?.state(this.state());
    return { at: Date.now(), text };
  }

  async power(name: string, on: boolean): Promise<Done> {
    const s = this.station(name);
    s.on = on;
    this.post(s, { t: 'power', on });
    this.ev?.notice(`${name} switched ${on ? 'on' : 'off'}`); // as the console server tells every page
    return this.done();
  }

  async air(op: AirOp): Promise<Done> {
    if (op.op === 'on' || op.op === 'off') this.ether.on = op.op === 'on';
    else if (op.op === 'loss') {
      if (!(op.loss >= 0 && op.loss <= 1)) throw new Error(`loss ${op.loss} must be between 0 and 1`);
      this.ether.loss = op.loss;
    } else if (op.op === 'cut') this.ether.cuts.add(this.station(op.target).name);
    else this.ether.cuts.delete(op.target);
    return this.done();
  }

  inject(kind: IntruderKind): Promise<InjectReport> {
    if (this.attack) return Promise.reject(new Error('an intruder is already waiting for the plane'));
    const v = this.view.view(Date.now());
    const ready = v.nodes.filter((n) => n.ready);
    if (ready.length === 0) return Promise.reject(new Error('no node is heard on the air: nobody to attack'));
    const target = ready.reduce((a, b) => (b.running.length > a.running.length ? b : a));
    const report: InjectReport = {
      kind,
      node: target.name,
      times: [],
      before: [...target.running],
      forgedIds: [],
    };
    let replay: Uint8Array | null = null;
    if (kind === 'replay') {
      const old = this.replays.pick(target.name, target.running);
      if (!old)
        return Promise.reject(
          new Error(
            `no old assignment of ${target.name} with other pods heard yet; roll out or switch a node off first`,
          ),
        );
      replay = old.datagram;
      report.forgedIds = old.ids;
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.attack?.report !== report) return;
        this.attack = null;
        if (report.times.length > 0) resolve(report);
        else
          reject(
            new Error(
              `the plane sent no assignment to ${target.name} within ${LIMITS.intruderTimeoutMs / 1000} s`,
            ),
          );
      }, LIMITS.intruderTimeoutMs);
      this.attack = {
        kind,
        node: target.name,
        report,
        replay,
        done: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
      };
    });
  }

  async command(text: string): Promise<Done> {
    this.post(this.station('plane'), { t: 'command', text });
    return this.done(text);
  }

  screen(name: string, canvas: HTMLCanvasElement, status: (text: string) => void): ScreenLink {
    const s = this.station(name);
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('no 2D canvas in this browser');
    s.canvas = { ctx, image: ctx.createImageData(canvas.width, canvas.height) };
    status('live (in this page)');
    return {
      key: (keysym, down) => this.post(s, { t: 'key', keysym, down }),
      pointer: (x, y, mask) => this.post(s, { t: 'pointer', x, y, mask }),
      close: () => {
        s.canvas = null;
      },
    };
  }

  private benchReply: ((perSecond: number) => void) | null = null;

  /** Runs one machine flat out for `ms` (it misses the air meanwhile): the emulator's speed here. */
  bench(name: string, ms: number): Promise<number> {
    const s = this.station(name);
    return new Promise((resolve) => {
      this.benchReply = (v) => {
        this.benchReply = null;
        resolve(v);
      };
      this.post(s, { t: 'bench', ms });
    });
  }
}
