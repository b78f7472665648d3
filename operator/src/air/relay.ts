// The air: a UDP relay that hands every 33-byte radio frame to every other station.
// Compatible with the reference relay (kube-on-oberon spec §2.4, qemu-kubevirt spec §4): peers are
// learned from hellos and frames, forgotten after 60 s of silence, frames go to every other peer
// (never back to the sender), other sizes are ignored, and each delivery may be dropped with
// probability `loss`. Added: a per-peer rate ceiling, runtime control (air off/on, cut a station),
// and counters for Prometheus.
import dgram from 'node:dgram';
import dns from 'node:dns';
import { isIP, isIPv6 } from 'node:net';
import { performance } from 'node:perf_hooks';
import { type Logger, logger } from '../util/log.ts';
import { type Clock, systemClock } from './clock.ts';
import { kernelDrops } from './kernel-drops.ts';
import { decodeKubeData } from './kubenet.ts';
import { startRelayControl, startRelayMetrics } from './relay-http.ts';
import type { HttpEndpoint, Relay, RelayEvent, RelayPeer, RelayStats } from './relay-types.ts';
import { AIR_PORT, HELLO_BYTE, TYP, LIMITS as WIRE } from './wire.ts';

/** Limits of the relay, each with its reason. */
export const RELAY_LIMITS = {
  /** Stations hello every 5 s; 60 s of silence (12 missed hellos) means the station is gone. */
  PEER_TTL_MS: WIRE.RELAY_PEER_TTL_MS,
  /**
   * Per-station ceiling. On the wall clock a RISC5 station sends at most ~20 frames/s (SCC waits
   * 50 ms per send). But until something from outside reaches it, a machine runs on machine time
   * (machine.ts), where those 50 ms are 1.25 M instructions: at the translator's ~500 M
   * instructions/s that is ~400 frames/s, the fastest real Kube traffic a station makes here. The
   * ceiling is 2.5× that, so a faster host never clips an honest station; a flood is still cut to it.
   */
  RATE_PER_SECOND: 1_000,
  /** Bursts up to 2 s of the ceiling pass. */
  RATE_BURST: 2_000,
  /** How often silent stations are looked for when no datagram arrives. */
  SWEEP_MS: 1000,
  /** On traffic, look for silent stations at most this often (a flood must not pay per frame). */
  EXPIRE_EVERY_MS: 250,
  /** A station's name and role are read from its frames at most this often (its heartbeat period). */
  LEARN_MS: 1000,
  /** Bounds memory if someone sprays source addresses; far above any real air (8 nodes + plane + tools). */
  MAX_PEERS: 1024,
  /**
   * Stations one IP address may hold: a local `up` runs its plane, nodes and tools from one
   * address; one host spraying hellos from many ports must not take every slot.
   */
  MAX_PEERS_PER_HOST: 32,
  /**
   * Stations that never sent a frame (listeners, and spoofed hellos) that one frame reaches: a
   * real air has a few listeners; thousands would turn each frame into a flood.
   */
  MAX_SILENT_RECEIVERS: 64,
  /**
   * Deliveries per second for the whole air (a token bucket), with the per-station ceiling on: a
   * real air of 21 stations at 20 frames/s makes ~8,400; beyond the budget deliveries are dropped,
   * stations that sent frames first. The raw air (`rate: null`, `--no-rate-limit`) has no budget,
   * as the reference relay: the relay's CPU and MAX_DELAY_MS bound it.
   */
  OUT_PER_SECOND: 20_000,
  OUT_BURST: 40_000,
  /**
   * A station is proven once it is heard again at least this long after it was first heard (a real
   * radio hellos every 5 s and sends frames for as long as it runs); a spoofed source spraying one
   * datagram per address never is. Unproven stations are evicted first and receive little (#28.3).
   */
  PROOF_MS: 1000,
  /**
   * Unproven stations one IP address may hold (of its MAX_PEERS_PER_HOST). A local cluster starts
   * all its machines from one address at once: the largest we run (20 nodes, the plane, a listener
   * or two) must fit, or each newcomer evicts the station nearest to its proof and the start churns.
   * 33 spraying addresses then hold at most 792 of the 1,024 entries.
   */
  MAX_UNPROVEN_PER_HOST: 24,
  /** Unproven stations one frame reaches at most: that fresh air is served whole; a spray is amplified ×24 at most, not ×64. */
  MAX_UNPROVEN_RECEIVERS: 24,
  /**
   * The longest a frame may wait in front of the relay: one SCC send (Wait, 50 ms). Radio does
   * not queue: a frame the air cannot carry now is lost, so later than this it is dropped (#32).
   */
  MAX_DELAY_MS: 50,
  /**
   * The kernel's receive queue is where a flood waits (bench/air/queues.ts: with a 4-MiB buffer it
   * held ~9,000 frames, 1.2 s of the relay's speed, while every other queue on the path stayed
   * empty). It is sized to hold this long of what the relay forwards, timed while it works; the
   * kernel drops the rest on arrival, for free. The other half of MAX_DELAY_MS is for waits no
   * buffer governs: the relay's thread, or a receiver's, waiting for a core on a busy host.
   */
  QUEUE_MS: 25,
  /**
   * Whenever traffic is too light to time the relay (fewer than QUEUE_MIN_SAMPLE datagrams in a
   * timing): the Linux default receive buffer (208 KiB), as the reference relay has. Light traffic
   * builds no queue unless the relay's thread stalls, and then a small queue would not keep the
   * bound (what it holds still waits for the stall) but only lose frames: after a flood timed on a
   * starved core had left 32 datagrams, a station at a steady 400 frames/s lost 168 of 1,200 (bench/air
   * --compare). Real Kube traffic (21 stations at 20 frames/s, ~420/s) always has this.
   * The bound it sets: a stall of the relay's thread loses nothing while it lasts less than 256
   * datagrams of traffic: 0.6 s at the ~420/s of the busiest real air, 6 s at the ~40/s a 20-node
   * air sends at rest (docs/kube-on-oberon.md); a longer stall loses the newest, counted as
   * `queue` drops. Those frames had waited 12 times MAX_DELAY_MS already, and a node is NotReady
   * only after 5 s without a heartbeat. A relay of its own (`air relay`, the OberonAir pod) has no
   * work that long: its heap is small, and at the pod's 200m CPU limit the kernel withholds the
   * core at most 80 ms of every 100 (`retrokube up` shares the relay's loop with its console, its
   * live view and its listener: a stall there shows as `queue` drops). The 4 MiB main asked for
   * held 10,000 datagrams where the host allowed it (net.core.rmem_max): 24 s of that air,
   * delivered late rather than dropped.
   */
  QUEUE_INITIAL_FRAMES: 256,
  /**
   * QUEUE_MS of the slowest relay measured here (~1,300 frames/s to 20 stations on a loaded host).
   * All a timed relay promises to hold: more sent at once than this may lose the excess. A real
   * station sends one frame at a time (SCC), so a burst is one frame per station, and the 21 of
   * the largest air fit; a test that counts what the relay judged sends at most half of it at once
   * (relay.test.ts, BURST).
   */
  QUEUE_MIN_FRAMES: 32,
  /**
   * QUEUE_MS of ~40,000 frames/s (a relay with few stations, or one whose rate ceiling drops a flood
   * for almost nothing). A queue timed that fast holds QUEUE_MS only while the relay keeps its
   * core: on a host that takes the core away, 4,096 datagrams waited 270-305 ms (bench/air
   * --compare, default limits, load 3.8). Kernel memory: 850 KiB.
   */
  QUEUE_MAX_FRAMES: 1024,
  /**
   * Kernel bytes a queued 33-byte datagram takes of the receive buffer (its skb truesize: 832 on
   * Linux loopback, bench/air/queues.ts; a NIC's may be larger, which only shortens the queue).
   */
  DATAGRAM_TRUESIZE: 832,
  /** How often the relay times itself while datagrams flow. */
  QUEUE_MEASURE_MS: 250,
  /** Datagrams a timing needs: fewer time the loop's idle wake-ups, not the relay's speed. */
  QUEUE_MIN_SAMPLE: 200,
  /**
   * The queue shrinks at once when the relay times itself slower, and grows at most this much a
   * timing: one fast window (a flood the rate ceiling drops for free) must not let the next hold
   * frames past the bound.
   */
  QUEUE_MAX_GROWTH: 1.25,
} as const;

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
}

const publicPeer = (p: PeerEntry): RelayPeer => {
  const { tokens: _t, refillAt: _r, learnedAt: _l, proven: _p, ...rest } = p;
  return { ...rest };
};

/**
 * The relay sends only to addresses it heard from (IP literals), yet dgram resolves the address of
 * every send, answering on the next tick: a callback and a deferral per delivery on the flood path.
 * An IP literal is answered at once; a name (a --bind given as a host name) still goes to DNS.
 */
const literalLookup: NonNullable<dgram.SocketOptions['lookup']> = (host, options, callback) => {
  const family = isIP(host);
  if (family === 0) dns.lookup(host, options, callback);
  else callback(null, host, family);
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
  const s: Omit<RelayStats, 'peers' | 'droppedQueue' | 'queueFrames'> = {
    hellos: 0,
    framesIn: 0,
    framesOut: 0,
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
  const socket = dgram.createSocket({ type: isIPv6(bind) ? 'udp6' : 'udp4', lookup: literalLookup });

  // The kernel queue in front of the relay holds QUEUE_MS of the relay's speed: frames handled per
  // ms of its loop's busy time (wall time while the thread works, so a relay sharing its core times
  // itself slower and holds fewer frames: the bound is kept in time, not in frames).
  let queueFrames: number = RELAY_LIMITS.QUEUE_INITIAL_FRAMES;
  const sizeQueue = (frames: number): void => {
    queueFrames = frames;
    // Linux doubles what it is given (the other half is its bookkeeping).
    socket.setRecvBufferSize(Math.ceil((frames * RELAY_LIMITS.DATAGRAM_TRUESIZE) / 2));
  };
  let handled = 0;
  let timedAt = performance.now();
  let timedElu = performance.eventLoopUtilization();
  let timedHandled = 0;
  const timeQueue = (): void => {
    const at = performance.now();
    if (at - timedAt < RELAY_LIMITS.QUEUE_MEASURE_MS) return;
    const elu = performance.eventLoopUtilization();
    const n = handled - timedHandled;
    const busyMs = elu.active - timedElu.active;
    if (n < RELAY_LIMITS.QUEUE_MIN_SAMPLE) {
      if (queueFrames !== RELAY_LIMITS.QUEUE_INITIAL_FRAMES) sizeQueue(RELAY_LIMITS.QUEUE_INITIAL_FRAMES);
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
      if (frames !== queueFrames) sizeQueue(frames);
    }
    timedAt = at;
    timedElu = elu;
    timedHandled = handled;
  };

  let expiredAt = Number.NEGATIVE_INFINITY;
  socket.on('message', (msg, rinfo) => {
    handled++;
    timeQueue();
    const now = clock.now();
    if (now - expiredAt >= RELAY_LIMITS.EXPIRE_EVERY_MS) {
      expiredAt = now;
      expire(now);
    }
    if (msg.length === 1 && msg[0] === HELLO_BYTE) {
      s.hellos++;
      if (on) touch(rinfo.address, rinfo.port, now);
      return;
    }
    if (msg.length !== WIRE.DATAGRAM_BYTES) {
      s.malformed++;
      return;
    }
    s.framesIn++;
    fanOut(msg, rinfo, now);
  });
  const fanOut = (msg: Buffer, rinfo: dgram.RemoteInfo, now: number): void => {
    if (!on) {
      s.droppedOff++;
      return;
    }
    const from = touch(rinfo.address, rinfo.port, now);
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
    let receivers = 0;
    let silent = 0;
    let unproven = 0;
    const lost: string[] = [];
    // proven talkers, proven listeners, then a few unproven stations (talkers first)
    for (const pass of [0, 1, 2, 3]) {
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
        if (late) {
          s.droppedLate++;
          continue;
        }
        outTokens--;
        if (pass === 1) silent++;
        if (pass >= 2) unproven++;
        // One system call per delivery: under a flood it is nearly all of the relay's CPU (93 % in a
        // --cpu-prof of bench/air/profile.ts: the send and the kernel's delivery behind it; the
        // relay's own JS about 2 %, dgram's 1 %). Node has no sendmmsg to batch them; calling the
        // binding under dgram directly saved 4-9 % of CPU per delivery (measured, not used: a
        // private API). A socket connected to each station would save more (no address to parse
        // and route per send: +13 % deliveries per CPU-second to 20 receivers, measured in Node), at
        // the price of SO_REUSEPORT on the relay's port (no busy-port check) and a descriptor each.
        socket.send(msg, p.port, p.host);
        s.framesOut++;
        receivers++;
      }
    }
    if (opts.frameEvents)
      opts.onEvent?.({ type: 'frame', from: publicPeer(from), channel: msg[0], receivers, lost });
  };
  // Failed sends (no callback per send: it costs a closure call per delivery) and ICMP errors of
  // earlier sends arrive here; they are counted and never stop the air.
  const onSocketError = (err: Error): void => {
    s.sendErrors++;
    log.warn({ err: err.message }, 'udp error');
  };

  await new Promise<void>((resolve, reject) => {
    socket.once('error', (err: NodeJS.ErrnoException) => {
      socket.close();
      reject(
        new Error(
          `cannot open the air on udp ${bind}:${opts.port ?? AIR_PORT} (${err.code ?? err.message}); ` +
            (err.code === 'EADDRINUSE'
              ? 'another relay runs there: pick a port with --port'
              : 'check --bind'),
        ),
      );
    });
    socket.bind(opts.port ?? AIR_PORT, bind, () => {
      socket.removeAllListeners('error');
      socket.on('error', onSocketError);
      sizeQueue(queueFrames);
      resolve();
    });
  });
  const address = socket.address();
  let closed = false;
  // Silent stations are also swept on a timer, so "gone" is reported even on a quiet air.
  const sweep = setInterval(() => expire(clock.now()), RELAY_LIMITS.SWEEP_MS);
  sweep.unref();

  const stats = (): RelayStats => ({
    ...s,
    droppedQueue: kernelDrops(address),
    queueFrames,
    peers: peers.size,
  });
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
    close: async () => {
      if (closed) return;
      closed = true;
      clearInterval(sweep);
      await Promise.all([metrics?.close(), control?.close()]);
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

/** One line for people: what the air carried so far. */
export function relaySummary(st: RelayStats, loss: number, on: boolean): string {
  const dropped = st.droppedLoss + st.droppedRate + st.droppedOff + st.droppedCut + st.droppedQueue;
  return (
    `air ${on ? 'on' : 'OFF'}: ${st.peers} stations, ${st.framesIn} frames in, ${st.framesOut} out, ` +
    `${dropped} dropped (loss ${st.droppedLoss}, rate ${st.droppedRate}, off ${st.droppedOff}, cut ${st.droppedCut}, queue full ${st.droppedQueue}), ` +
    `${st.malformed} malformed, loss ${Math.round(loss * 100)}%`
  );
}
