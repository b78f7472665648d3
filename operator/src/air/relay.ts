// The air: a UDP relay that hands every 33-byte radio frame to every other station.
// Compatible with the reference relay (kube-on-oberon spec §2.4, qemu-kubevirt spec §4): peers are
// learned from hellos and frames, forgotten after 60 s of silence, frames go to every other peer
// (never back to the sender), other sizes are ignored, and each delivery may be dropped with
// probability `loss`. Added: a per-peer rate ceiling, runtime control (air off/on, cut a station),
// and counters for Prometheus.
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type Logger, logger } from '../util/log.ts';
import { type Clock, systemClock } from './clock.ts';
import { dropsReader } from './kernel-drops.ts';
import { decodeKubeData } from './kubenet.ts';
import { bindRelay } from './relay-bind.ts';
import { type StationSockets, stationSockets } from './relay-conns.ts';
import { startRelayControl, startRelayMetrics } from './relay-http.ts';
import { RELAY_LIMITS } from './relay-limits.ts';
import { literalLookup } from './relay-lookup.ts';
import { ip4Number, ip4Text } from './relay-rings.ts';
import { type SendThread, startSendThread } from './relay-thread.ts';
import type { HttpEndpoint, Relay, RelayEvent, RelayPeer, RelayStats } from './relay-types.ts';
import { AIR_PORT, HELLO_BYTE, TYP, LIMITS as WIRE } from './wire.ts';

export { RELAY_LIMITS } from './relay-limits.ts';

export type { Relay, RelayEvent, RelayPeer, RelayState, RelayStats } from './relay-types.ts';

export interface RelayOptions {
  /** UDP port; 0 picks a free one. Default 7524. */
  port?: number;
  /** Address to bind. Default 0.0.0.0 (machines reach the relay from elsewhere). */
  bind?: string;
  /** Probability 0..1 that one delivery is dropped. Default 0. */
  loss?: number;
  peerTtlMs?: number;
  /** Per-peer ceiling (token bucket); null switches it off. */
  rate?: { perSecond: number; burst: number } | null;
  clock?: Clock;
  /** Uniform 0..1 source for loss decisions (tests may seed one). */
  random?: () => number;
  /** Called for joins, departures and (if `frameEvents`) every frame. */
  onEvent?: (e: RelayEvent) => void;
  frameEvents?: boolean;
  /**
   * Make part of the deliveries from a second thread (relay-sender.ts), on the host's other core:
   * for a relay that has one (`air relay --send-thread`); IPv4 only. Its socket shares the relay's
   * port (SO_REUSEPORT). Default: off.
   */
  sendThread?: boolean;
  log?: Logger;
  /** Serve Prometheus GET /metrics on this TCP port (0 = any free port). Default: none. */
  metricsPort?: number;
  /** Default 0.0.0.0, so a Prometheus elsewhere can scrape. */
  metricsBind?: string;
  /** Serve the control API on this TCP port (0 = any free port). Default: none. */
  controlPort?: number;
  /** Default 127.0.0.1: whoever reaches the control endpoint can silence the air. */
  controlBind?: string;
}

export function checkLoss(p: number): number {
  if (typeof p !== 'number' || !Number.isFinite(p) || p < 0 || p > 1) {
    throw new RangeError(`loss ${p} must be a probability between 0 and 1 (for example 0.3)`);
  }
  return p;
}

interface PeerEntry extends RelayPeer {
  tokens: number;
  refillAt: number;
  learnedAt: number;
  proven: boolean;
  /** The IPv4 address as a number (the send thread's job names it so); -1 for IPv6. */
  ip4: number;
  /** Its connected socket (relay-conns.ts), once connected (IPv4). */
  conn?: dgram.Socket;
  /** framesIn at the relay's last timing: whether its socket carried frames since. */
  framesTimed: number;
}

/** `lost` of a frame when no one asked for frame events: no array per frame. */
const NO_LOST: string[] = [];

const publicPeer = (p: PeerEntry): RelayPeer => {
  const {
    tokens: _t,
    refillAt: _r,
    learnedAt: _l,
    proven: _p,
    ip4: _i,
    conn: _c,
    framesTimed: _f,
    ...rest
  } = p;
  return { ...rest };
};

/** Starts a relay on a UDP socket. Resolves once it listens. */
export async function startRelay(opts: RelayOptions = {}): Promise<Relay> {
  const clock = opts.clock ?? systemClock;
  const random = opts.random ?? Math.random;
  const ttl = opts.peerTtlMs ?? RELAY_LIMITS.PEER_TTL_MS;
  const rate =
    opts.rate === null
      ? null
      : (opts.rate ?? { perSecond: RELAY_LIMITS.RATE_PER_SECOND, burst: RELAY_LIMITS.RATE_BURST });
  const log = opts.log ?? logger('air-relay');
  let loss = checkLoss(opts.loss ?? 0);
  let on = true;
  const cuts = new Set<string>();
  const peers = new Map<string, PeerEntry>();
  const s: Omit<RelayStats, 'peers' | 'droppedQueue' | 'queueFrames' | 'queueTimed'> = {
    hellos: 0,
    framesIn: 0,
    framesOut: 0,
    framesOutThread: 0,
    handedOver: 0,
    malformed: 0,
    droppedLoss: 0,
    droppedRate: 0,
    droppedOff: 0,
    droppedCut: 0,
    droppedBudget: 0,
    droppedLate: 0,
    refusedPeers: 0,
    sendErrors: 0,
    joined: 0,
    gone: 0,
  };

  const isCut = (p: PeerEntry): boolean =>
    cuts.size > 0 && (cuts.has(p.address) || cuts.has(p.host) || (p.name !== undefined && cuts.has(p.name)));

  const perHost = new Map<string, number>();
  const unprovenPerHost = new Map<string, number>();
  const count = (m: Map<string, number>, host: string, d: number): void => {
    const n = (m.get(host) ?? 0) + d;
    if (n <= 0) m.delete(host);
    else m.set(host, n);
  };
  const forget = (p: PeerEntry): void => {
    peers.delete(p.address);
    disconnect(p);
    count(perHost, p.host, -1);
    if (!p.proven) count(unprovenPerHost, p.host, -1);
  };
  /**
   * Makes room for a new station by forgetting (of `host` only, when given) the oldest unproven
   * station (silent ones before talkers), else the oldest proven one that never sent a frame. Proven stations that sent frames
   * are never evicted. False if there is none.
   */
  const evict = (host?: string, unprovenOnly = false): boolean => {
    // unproven silent, unproven talkers, then (unless unprovenOnly) proven silent
    for (const pass of unprovenOnly ? [0, 1] : [0, 1, 2]) {
      for (const p of peers.values()) {
        if (host !== undefined && p.host !== host) continue;
        if (pass < 2 ? p.proven || p.framesIn > 0 !== (pass === 1) : !p.proven || p.framesIn > 0) continue;
        forget(p);
        s.refusedPeers++;
        opts.onEvent?.({ type: 'gone', peer: publicPeer(p) });
        return true;
      }
    }
    return false;
  };

  const expire = (now: number): void => {
    for (const [k, p] of peers) {
      if (now - p.lastSeenMs > ttl) {
        forget(p);
        s.gone++;
        log.debug({ station: k }, 'station gone');
        opts.onEvent?.({ type: 'gone', peer: publicPeer(p) });
      }
    }
  };

  const touch = (host: string, port: number, now: number): PeerEntry | undefined => {
    const key = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    let p = peers.get(key);
    if (p) {
      p.lastSeenMs = now;
      if (!p.proven && now - p.firstSeenMs >= RELAY_LIMITS.PROOF_MS) {
        p.proven = true;
        count(unprovenPerHost, host, -1);
        connect(p);
      }
      return p;
    }
    const full =
      ((unprovenPerHost.get(host) ?? 0) >= RELAY_LIMITS.MAX_UNPROVEN_PER_HOST && !evict(host, true)) ||
      ((perHost.get(host) ?? 0) >= RELAY_LIMITS.MAX_PEERS_PER_HOST && !evict(host)) ||
      (peers.size >= RELAY_LIMITS.MAX_PEERS && !evict());
    if (full) {
      s.refusedPeers++;
      return undefined;
    }
    p = {
      address: key,
      host,
      port,
      firstSeenMs: now,
      lastSeenMs: now,
      plane: false,
      framesIn: 0,
      rateDropped: 0,
      cut: false,
      tokens: rate?.burst ?? 0,
      refillAt: now,
      learnedAt: Number.NEGATIVE_INFINITY,
      proven: false,
      ip4: ip4Number(host),
      framesTimed: 0,
    };
    peers.set(key, p);
    count(perHost, host, 1);
    count(unprovenPerHost, host, 1);
    s.joined++;
    log.debug({ station: key }, 'station joined');
    opts.onEvent?.({ type: 'joined', peer: publicPeer(p) });
    return p;
  };

  let outTokens: number = RELAY_LIMITS.OUT_BURST;
  let outRefillAt = clock.now();
  const refillOut = (now: number): void => {
    const elapsed = now - outRefillAt;
    if (elapsed <= 0) return;
    outTokens = Math.min(RELAY_LIMITS.OUT_BURST, outTokens + (elapsed * RELAY_LIMITS.OUT_PER_SECOND) / 1000);
    outRefillAt = now;
  };

  const withinRate = (p: PeerEntry, now: number): boolean => {
    if (!rate) return true;
    const elapsed = now - p.refillAt;
    if (elapsed > 0) {
      p.tokens = Math.min(rate.burst, p.tokens + (elapsed * rate.perSecond) / 1000);
      p.refillAt = now;
    }
    if (p.tokens < 1) return false;
    p.tokens -= 1;
    return true;
  };

  /** Labels a station from what it says: heartbeats name a node, assignments/specs mark a plane. */
  const learn = (p: PeerEntry, msg: Buffer, now: number): void => {
    if (now - p.learnedAt < RELAY_LIMITS.LEARN_MS) return;
    const typ = msg[4];
    if (typ !== TYP.HEARTBEAT && typ !== TYP.ASSIGN && typ !== TYP.SPEC) return;
    const len = msg[5] | (msg[6] << 8) | (msg[7] << 16) | (msg[8] << 24);
    if (len < 0 || len > WIRE.DATA_BYTES) return;
    const d = decodeKubeData(typ, msg.subarray(1 + WIRE.SCC_HEADER_BYTES, 1 + WIRE.SCC_HEADER_BYTES + len));
    if (!d.ok) return;
    p.learnedAt = now;
    p.cluster = d.msg.cluster;
    if (d.msg.typ === TYP.HEARTBEAT) p.name = d.msg.node;
    else p.plane = true;
  };

  const bind = opts.bind ?? '0.0.0.0';
  const v6 = isIPv6(bind);
  const threaded = Boolean(opts.sendThread) && !v6;
  // Proven stations get a connected socket on the relay's port (relay-conns.ts; IPv4), which
  // needs SO_REUSEPORT on the relay's own socket too.
  const connected = !v6;
  const socket = dgram.createSocket({
    type: v6 ? 'udp6' : 'udp4',
    lookup: literalLookup,
    reusePort: connected,
  });
  let thread: SendThread | undefined;

  // The kernel queue in front of the relay holds QUEUE_MS of the relay's speed: frames handled per
  // ms of its loop's busy time (wall time while the thread works, so a relay sharing its core times
  // itself slower and holds fewer frames: the bound is kept in time, not in frames).
  let queueFrames: number = RELAY_LIMITS.QUEUE_INITIAL_FRAMES;
  let queueTimed = false;
  const sizeQueue = (frames: number, timed = true): void => {
    queueFrames = frames;
    queueTimed = timed;
    // With a send thread this thread drains several kernel queues (the thread's socket hands it what
    // it receives; each station's connected socket): a timed queue is split between the two shared
    // ones and the stations' that carried frames in the last timing, so together they hold QUEUE_MS
    // (a silent station's holds nothing; split over all, a flood's queue was so short that the relay
    // idled whenever its sender waited for a core). For light traffic the shared sockets keep the
    // Linux default (QUEUE_INITIAL_FRAMES: there a smaller queue only loses frames) and each
    // station's own socket what one station needs (STATION_QUEUE_INITIAL_FRAMES).
    const sockets = (thread ? 2 : 1) + talking;
    const each = timed ? Math.ceil(frames / sockets) : frames;
    thread?.sizeQueue(each);
    conns?.sizeQueue(timed ? each : RELAY_LIMITS.STATION_QUEUE_INITIAL_FRAMES);
    // Linux doubles what it is given (the other half is its bookkeeping).
    socket.setRecvBufferSize(Math.ceil((each * RELAY_LIMITS.DATAGRAM_TRUESIZE) / 2));
  };
  let conns: StationSockets | undefined;
  /** Stations with a connected socket that sent frames in the last timing. */
  let talking = 0;
  /** A proven station gets its connected socket (with a send thread; IPv4). */
  const connect = (p: PeerEntry): void => {
    if (!conns || p.ip4 < 0) return;
    const before = conns.size;
    conns.open(p.address, p.host, p.port, (s) => {
      if (peers.get(p.address) === p) p.conn = s;
    });
    if (conns.size !== before) sizeQueue(queueFrames, queueTimed);
  };
  const disconnect = (p: PeerEntry): void => {
    if (!conns) return;
    p.conn = undefined;
    conns.close(p.address);
  };
  /** Datagrams the send thread received but could not hand over (its ring full): queue drops. */
  let inboundDropped = 0;
  /** Adds what the send thread counted to the relay's counters. */
  const foldThread = (): void => {
    if (!thread) return;
    const c = thread.takeCounts();
    s.framesOut += c.sent;
    s.framesOutThread += c.sent;
    s.droppedLate += c.late;
    s.sendErrors += c.sendErrors;
    inboundDropped += c.inboundDropped;
  };
  let handled = 0;
  let timedAt = performance.now();
  let timedElu = performance.eventLoopUtilization();
  let timedHandled = 0;
  const timeQueue = (): void => {
    const at = performance.now();
    // A burst on the untimed queue is timed as soon as it makes a sample: waiting out the window, the
    // onset of a flood ran on the queue for light traffic, far longer than QUEUE_MS at its speed.
    const early = !queueTimed && handled - timedHandled >= RELAY_LIMITS.QUEUE_MIN_SAMPLE;
    if (at - timedAt < RELAY_LIMITS.QUEUE_MEASURE_MS && !early) return;
    foldThread();
    const elu = performance.eventLoopUtilization();
    const n = handled - timedHandled;
    const busyMs = elu.active - timedElu.active;
    thread?.balance(busyMs, at - timedAt);
    const was = talking;
    talking = 0;
    for (const p of conns ? peers.values() : [])
      if (p.conn && p.framesIn !== p.framesTimed) {
        talking++;
        p.framesTimed = p.framesIn;
      }
    if (n < RELAY_LIMITS.QUEUE_MIN_SAMPLE) {
      if (queueTimed) sizeQueue(RELAY_LIMITS.QUEUE_INITIAL_FRAMES, false);
    } else if (busyMs > 0) {
      const frames = Math.round(
        Math.max(
          RELAY_LIMITS.QUEUE_MIN_FRAMES,
          Math.min(
            RELAY_LIMITS.QUEUE_MAX_FRAMES,
            (n / busyMs) * RELAY_LIMITS.QUEUE_MS,
            queueFrames * RELAY_LIMITS.QUEUE_MAX_GROWTH,
          ),
        ),
      );
      if (!queueTimed || frames !== queueFrames || talking !== was) sizeQueue(frames);
    }
    timedAt = at;
    timedElu = elu;
    timedHandled = handled;
  };

  let expiredAt = Number.NEGATIVE_INFINITY;
  /** This thread's receivers of the frame at hand (one array for all frames: no garbage per frame). */
  const mine: PeerEntry[] = [];
  /** Every datagram, from the relay's socket or (handed over) the send thread's. */
  const onDatagram = (msg: Buffer, host: string, port: number): void => {
    handled++;
    timeQueue();
    const now = clock.now();
    if (now - expiredAt >= RELAY_LIMITS.EXPIRE_EVERY_MS) {
      expiredAt = now;
      expire(now);
    }
    if (msg.length === 1 && msg[0] === HELLO_BYTE) {
      s.hellos++;
      if (on) touch(host, port, now);
      return;
    }
    if (msg.length !== WIRE.DATAGRAM_BYTES) {
      s.malformed++;
      return;
    }
    s.framesIn++;
    fanOut(msg, host, port, now);
  };
  const onMessage = (msg: Buffer, rinfo: dgram.RemoteInfo): void =>
    onDatagram(msg, rinfo.address, rinfo.port);
  socket.on('message', onMessage);
  const fanOut = (msg: Buffer, host: string, port: number, now: number): void => {
    if (!on) {
      s.droppedOff++;
      return;
    }
    const from = touch(host, port, now);
    if (!from) return;
    from.framesIn++;
    if (!withinRate(from, now)) {
      from.rateDropped++;
      s.droppedRate++;
      return;
    }
    learn(from, msg, now);
    if (isCut(from)) {
      s.droppedCut++;
      return;
    }
    // Stations that sent frames first, then at most MAX_SILENT_RECEIVERS silent ones, all within
    // the air's output budget.
    if (rate) refillOut(now);
    // The kernel refused earlier sends (its send buffer is full): drop, as radio does, not queue.
    const late = socket.getSendQueueCount() > 0;
    // The send thread's share of the deliveries goes to it while it has room; the rest this thread sends.
    const jobs = thread?.jobs;
    const toThread = !late && jobs !== undefined && jobs.begin(msg);
    mine.length = 0;
    let receivers = 0;
    let silent = 0;
    let unproven = 0;
    const lost: string[] = opts.frameEvents ? [] : NO_LOST;
    // proven talkers, proven listeners, then a few unproven stations (talkers first)
    for (let pass = 0; pass < 4; pass++) {
      const talkers = pass === 0 || pass === 2;
      for (const p of peers.values()) {
        if (p === from || p.proven !== pass < 2 || p.framesIn > 0 !== talkers) continue;
        if (pass >= 2 && unproven >= RELAY_LIMITS.MAX_UNPROVEN_RECEIVERS) {
          s.droppedBudget++;
          continue;
        }
        if (isCut(p)) {
          s.droppedCut++;
          continue;
        }
        if (loss > 0 && random() < loss) {
          s.droppedLoss++;
          if (opts.frameEvents) lost.push(p.address);
          continue;
        }
        if ((rate && outTokens < 1) || (pass === 1 && silent >= RELAY_LIMITS.MAX_SILENT_RECEIVERS)) {
          s.droppedBudget++;
          continue;
        }
        if (late || (p.conn !== undefined && p.conn.getSendQueueCount() > 0)) {
          s.droppedLate++;
          if (opts.frameEvents) lost.push(p.address);
          continue;
        }
        outTokens--;
        if (pass === 1) silent++;
        if (pass >= 2) unproven++;
        receivers++;
        if (toThread && p.ip4 >= 0 && jobs?.take() && jobs.add(p.ip4, p.port)) continue;
        mine.push(p);
      }
    }
    // the thread's share first, so both threads send at once
    if (toThread) jobs?.commit();
    for (const p of mine) {
      // One system call per delivery: under a flood it is nearly all of the relay's CPU (93 % in a
      // --cpu-prof of bench/air/profile.ts: the send and the kernel's delivery behind it; the
      // relay's own JS about 2 %, dgram's 1 %). Node has no sendmmsg to batch them; calling the
      // binding under dgram directly saved 4-9 % of CPU per delivery (measured, not used: a
      // private API). A station's connected socket saves more (no address to parse and route per
      // send: +5-13 % sends per CPU-second, measured in Node), in one thread as with the send
      // thread (relay-conns.ts: they need SO_REUSEPORT on the relay's port, and a descriptor each).
      if (p.conn) p.conn.send(msg);
      else socket.send(msg, p.port, p.host);
    }
    s.framesOut += mine.length;
    if (opts.frameEvents)
      opts.onEvent?.({ type: 'frame', from: publicPeer(from), channel: msg[0], receivers, lost });
  };
  // Failed sends (no callback per send: it costs a closure call per delivery) and ICMP errors of
  // earlier sends arrive here; they are counted and never stop the air.
  const onSocketError = (err: Error): void => {
    s.sendErrors++;
    log.warn({ err: err.message }, 'udp error');
  };

  await bindRelay(socket, bind, opts.port ?? AIR_PORT, connected);
  socket.on('error', onSocketError);
  const address = socket.address();
  if (threaded) {
    try {
      thread = await startSendThread(address.port, bind, (msg, ip, port) => {
        s.handedOver++;
        onDatagram(msg, ip4Text(ip), port);
      });
    } catch (e) {
      socket.close();
      throw new Error(`cannot start the relay's send thread: ${(e as Error).message}`);
    }
  }
  // A departed station's socket hears the kernel's ICMP errors of sends to it: counted, not logged.
  if (connected) conns = stationSockets(address.port, bind, onMessage, () => s.sendErrors++);
  sizeQueue(queueFrames, false);
  const kernelDrops = dropsReader(address, RELAY_LIMITS.DROPS_READ_MS);
  let closed = false;
  // Silent stations are also swept on a timer, so "gone" is reported even on a quiet air.
  const sweep = setInterval(() => expire(clock.now()), RELAY_LIMITS.SWEEP_MS);
  sweep.unref();

  const stats = (): RelayStats => {
    foldThread();
    return {
      ...s,
      droppedQueue: kernelDrops() + inboundDropped,
      queueFrames,
      queueTimed,
      peers: peers.size,
    };
  };
  const peerList = (): RelayPeer[] => [...peers.values()].map((p) => ({ ...publicPeer(p), cut: isCut(p) }));

  const relay: Relay = {
    address,
    stats,
    peers: () => {
      expire(clock.now());
      return peerList();
    },
    state: () => {
      expire(clock.now());
      return {
        on,
        loss,
        address: `${address.address}:${address.port}`,
        cuts: [...cuts],
        peers: peerList(),
        stats: stats(),
      };
    },
    setLoss: (p) => {
      loss = checkLoss(p);
      log.info({ loss }, 'loss set');
    },
    loss: () => loss,
    off: (o = {}) => {
      on = false;
      if (o.forgetPeers) {
        for (const p of peers.values()) {
          s.gone++;
          disconnect(p);
          opts.onEvent?.({ type: 'gone', peer: publicPeer(p) });
        }
        peers.clear();
        perHost.clear();
        unprovenPerHost.clear();
      }
      log.info({ forgetPeers: Boolean(o.forgetPeers) }, 'air off');
    },
    on: () => {
      on = true;
      log.info('air on');
    },
    isOn: () => on,
    cut: (target) => {
      const t = target.trim();
      if (!t) throw new Error('cut needs a station: IP:PORT, IP, or a node name heard on the air');
      cuts.add(t);
      log.info({ target: t }, 'station cut off the air');
      return [...peers.values()].filter((p) => p.address === t || p.host === t || p.name === t).length;
    },
    restore: (target) => {
      const t = target.trim();
      if (t === '*') {
        const had = cuts.size > 0;
        cuts.clear();
        return had;
      }
      return cuts.delete(t);
    },
    expire: () => expire(clock.now()),
    sendThreadCpuUs: async () => (thread ? thread.cpuUs() : 0),
    close: async () => {
      if (closed) return;
      closed = true;
      clearInterval(sweep);
      await Promise.all([metrics?.close(), control?.close(), thread?.close(), conns?.closeAll()]);
      await new Promise<void>((resolve) => socket.close(() => resolve()));
    },
  };
  let metrics: HttpEndpoint | undefined;
  let control: HttpEndpoint | undefined;
  try {
    if (opts.metricsPort !== undefined)
      metrics = await startRelayMetrics(relay, opts.metricsPort, opts.metricsBind);
    if (opts.controlPort !== undefined)
      control = await startRelayControl(relay, opts.controlPort, opts.controlBind);
  } catch (e) {
    await relay.close();
    throw e;
  }
  return { ...relay, metrics, control };
}
