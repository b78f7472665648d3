// The console's Oberon part: the cluster of `retrokube up` as its air carries it. Its own passive
// station judges every frame (verdicts, the cluster view), the break verbs go to the relay and the
// machines, the intruder buttons forge frames, and each machine's RFB (VNC) stream is carried over
// a WebSocket to the page's canvas client.
import type { WebSocket } from 'ws';
import { runInjector } from '../air/inject.ts';
import { keyFromHex } from '../air/kubenet.ts';
import { type Listener, startListener } from '../air/listen.ts';
import { checkLoss, type Relay } from '../air/relay.ts';
import type { FrameRecord } from '../air/view.ts';
import { fromHex } from '../air/wire.ts';
import { BadRequest } from '../util/json-body.ts';
import type { ConsolePart, PageSocket, Pages } from './part.ts';
import { ReplayBook } from './replay.ts';
import { bridgeRfb } from './rfb-bridge.ts';
import type {
  AirOp,
  ConsoleState,
  DeploymentInfo,
  Done,
  InjectReport,
  IntruderKind,
  MachineInfo,
} from './types.ts';
import { INTRUDERS } from './types.ts';

export const LIMITS = {
  maxScreensPerMachine: 8, // RFB streams per machine through the console
  pushMs: 500, // the view and the state are pushed this often (half the heartbeat period)
  keepRecords: 2000, // frames kept for pages that connect later (the reference page keeps 2000)
  replayOnConnect: 300, // of which a new page gets the latest
  commandChars: 120, // Oberon's System.Tool line; longer is not a command a person types
  intruderTimeoutMs: 30_000, // the reference injector's limit for hearing three assignments
  intruderRounds: 3, // forgeries go out after each of the plane's next 3 assignments (reference)
} as const;

/** What the console drives: `retrokube up`'s cluster, seen through the narrow waist it needs. */
export interface KubeTarget {
  name: string;
  cluster: string;
  /** The cluster key (hex): the console's own listener judges frames with it; never sent to pages. */
  key: string;
  deployment: DeploymentInfo;
  relay: Pick<Relay, 'address' | 'state' | 'on' | 'off' | 'setLoss' | 'cut' | 'restore'>;
  machines(): { name: string; role: 'plane' | 'node'; on: boolean; vnc: number | null }[];
  /** The machines' VNC password (#28.2): the console logs in with it; pages never see it. */
  vncPassword?: string;
  power(name: string, on: boolean): Promise<void>;
  type(name: string, command: string): Promise<void>;
}

const COMMAND = /^[A-Za-z][A-Za-z0-9]*\.[A-Za-z][A-Za-z0-9]*( [\x20-\x7e]*)?$/;

/** A typed command must look like one Oberon command: Module.Command and printable parameters. */
export function checkCommand(text: unknown): string {
  if (typeof text !== 'string')
    throw new BadRequest('"command" must be text like "Kube.Apply web 4 Ticker2"');
  const c = text.trim();
  if (c.length === 0 || c.length > LIMITS.commandChars || !COMMAND.test(c))
    throw new BadRequest(
      `"${c.slice(0, 40)}" is not one Oberon command: write Module.Command and its parameters in printable ASCII, at most ${LIMITS.commandChars} characters (e.g. "Kube.Apply web 4 Ticker2")`,
    );
  return c;
}

export async function kubePart(target: KubeTarget, pages: Pages, sheets: boolean): Promise<ConsolePart> {
  const records: FrameRecord[] = [];
  const replays = new ReplayBook();
  const dropped = new WeakMap<PageSocket, number>();
  let pending: FrameRecord[] = [];

  const listener: Listener = await startListener({
    host: '127.0.0.1',
    port: target.relay.address.port,
    cluster: target.cluster,
    key: keyFromHex(target.key),
    output: 'none',
    onRecord: (r) => {
      records.push(r);
      if (records.length > LIMITS.keepRecords) records.shift();
      pending.push(r);
      if (r.verdict === 'ok' && r.kind === 'assign' && r.node && r.ids)
        replays.add(r.node, r.ids, fromHex(r.raw));
    },
  });

  const state = (): ConsoleState => {
    const air = target.relay.state();
    return {
      kind: 'console',
      name: target.name,
      cluster: target.cluster,
      deployment: target.deployment,
      machines: target
        .machines()
        .map((m): MachineInfo => ({ name: m.name, role: m.role, on: m.on, screen: m.vnc !== null })),
      air: { on: air.on, loss: air.loss, cuts: air.cuts },
      sheets,
    };
  };

  // Frames as they come (batched), the view and the state twice a second. A page behind its
  // budget misses frames (counted, and told how many) rather than growing the server's memory.
  const pushTimer = setInterval(() => {
    const batch = pending;
    pending = [];
    const view = listener.view();
    const st = state();
    for (const page of pages.all()) {
      if (page.behind()) {
        dropped.set(page, (dropped.get(page) ?? 0) + batch.length);
        continue;
      }
      if (batch.length > 0) page.send({ t: 'records', records: batch, dropped: dropped.get(page) ?? 0 });
      page.send({ t: 'view', view });
      page.send({ t: 'state', state: st });
    }
  }, LIMITS.pushMs);

  const machineName = (v: unknown): string => {
    const names = target.machines().map((m) => m.name);
    if (typeof v !== 'string' || !names.includes(v))
      throw new BadRequest(`"name" must be one of the machines: ${names.join(', ')}`);
    return v;
  };

  const busiest = (): { node: string; ids: number[] } => {
    const v = listener.view();
    const ready = v.nodes.filter((n) => n.ready);
    if (ready.length === 0) throw new Error('no node is heard on the air: there is nobody to attack');
    const n = ready.reduce((a, b) => (b.running.length > a.running.length ? b : a));
    return { node: n.name, ids: [...n.running] };
  };

  const inject = async (kind: IntruderKind): Promise<InjectReport> => {
    const { node, ids } = busiest();
    const report: InjectReport = { kind, node, times: [], before: ids, forgedIds: [] };
    let raw: Uint8Array[] | undefined;
    if (kind === 'replay') {
      // An old genuine assignment of this node whose ids differ from what it runs now: replayed,
      // obeying it would show. Without one a replay proves nothing, and the button says so.
      const old = replays.pick(node, ids);
      if (!old)
        throw new Error(
          `no old assignment of ${node} with other pods was heard yet; roll out or switch a node off first, then replay`,
        );
      report.forgedIds = old.ids;
      raw = [old.datagram];
    }
    const r = await runInjector({
      host: '127.0.0.1',
      port: target.relay.address.port,
      node,
      cluster: target.cluster,
      key: keyFromHex(target.key),
      forgeries: kind === 'replay' ? [] : [kind],
      raw,
      ids: [],
      rounds: LIMITS.intruderRounds,
      timeoutMs: LIMITS.intruderTimeoutMs,
      onInject: () => report.times.push(Date.now()),
    });
    if (r.timedOut && report.times.length === 0)
      throw new Error(`the plane sent no assignment to ${node} within ${LIMITS.intruderTimeoutMs / 1000} s`);
    const note = r.injected.find((i) => i.note)?.note;
    if (note) report.note = note;
    pages.broadcast({
      t: 'notice',
      text: `intruder "${kind}" sent ${report.times.length} forgeries to ${node}`,
    });
    return report;
  };

  const airOp = (b: Record<string, unknown>): AirOp => {
    switch (b.op) {
      case 'on':
      case 'off':
        return { op: b.op };
      case 'loss':
        try {
          return { op: 'loss', loss: checkLoss(Number(b.loss)) };
        } catch (e) {
          throw new BadRequest((e as Error).message);
        }
      case 'cut':
      case 'restore':
        return { op: b.op, target: machineName(b.target) };
      default:
        throw new BadRequest('"op" must be on, off, loss (with "loss" 0..1), cut or restore (with "target")');
    }
  };

  // WebSocket ⇄ the machine's RFB server, logged in with the screens' password (rfb-bridge.ts).
  const rfbStreams = new Map<string, number>();
  const openScreen = (ws: WebSocket, name: string, port: number): void => {
    rfbStreams.set(name, (rfbStreams.get(name) ?? 0) + 1);
    bridgeRfb(ws, { port, password: target.vncPassword }, () =>
      rfbStreams.set(name, (rfbStreams.get(name) ?? 1) - 1),
    );
  };

  return {
    actions: {
      '/api/machine': async (b) => {
        if (typeof b.on !== 'boolean') throw new BadRequest('"on" must be true or false');
        const name = machineName(b.name);
        await target.power(name, b.on);
        pages.broadcast({ t: 'notice', text: `${name} switched ${b.on ? 'on' : 'off'}` });
        return { at: Date.now() } satisfies Done;
      },
      '/api/air': async (b) => {
        const op = airOp(b);
        if (op.op === 'on') target.relay.on();
        else if (op.op === 'off') target.relay.off();
        else if (op.op === 'loss') target.relay.setLoss(op.loss);
        else if (op.op === 'cut') target.relay.cut(op.target);
        else target.relay.restore(op.target);
        pages.broadcast({ t: 'state', state: state() });
        return { at: Date.now() } satisfies Done;
      },
      '/api/inject': async (b) => {
        if (typeof b.kind !== 'string' || !(INTRUDERS as readonly string[]).includes(b.kind))
          throw new BadRequest(`"kind" must be one of ${INTRUDERS.join(', ')}`);
        return inject(b.kind as IntruderKind);
      },
      '/api/command': async (b) => {
        const command = checkCommand(b.command);
        await target.type('plane', command);
        return { at: Date.now(), text: command } satisfies Done;
      },
    },
    reads: {
      '/api/state': state,
      '/api/view': () => listener.view(),
    },
    upgrades: {
      '/api/rfb': (req, socket, head, wss, refuse) => {
        const url = new URL(req.url ?? '/', 'http://x');
        const m = target.machines().find((x) => x.name === url.searchParams.get('name'));
        if (!m || m.vnc === null) return refuse(404, 'no such machine screen');
        if ((rfbStreams.get(m.name) ?? 0) >= LIMITS.maxScreensPerMachine)
          return refuse(503, `at most ${LIMITS.maxScreensPerMachine} screens of one machine`);
        const vnc = m.vnc;
        wss.handleUpgrade(req, socket, head, (ws) => openScreen(ws, m.name, vnc));
      },
    },
    greet: () => [
      { t: 'state', state: state() },
      { t: 'records', records: records.slice(-LIMITS.replayOnConnect), dropped: 0 },
      { t: 'view', view: listener.view() },
    ],
    close: async () => {
      clearInterval(pushTimer);
      await listener.close();
    },
  };
}
