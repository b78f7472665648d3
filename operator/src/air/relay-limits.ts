// The relay's limits, each with its reason, in one place (relay.ts and its send thread read them).
import { LIMITS as WIRE } from './wire.ts';

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
   * delivered late rather than dropped. This is the shared socket's (and the send thread's); a
   * proven station's own socket has STATION_QUEUE_INITIAL_FRAMES.
   */
  QUEUE_INITIAL_FRAMES: 256,
  /**
   * The untimed queue of a proven station's own socket (relay-conns.ts), which carries that one
   * station's frames: 128 datagrams are 320 ms of the fastest real station (~400 frames/s on
   * machine time, RATE_PER_SECOND) and 6.4 s at the ~20 frames/s of the wall clock, longer than
   * the OberonAir pod's CPU limit ever withholds the core (80 ms of every 100). With the Linux
   * default there, a flood's onset broke MAX_DELAY_MS: each frame goes to every other station, so
   * before the first timing 256 queued frames to 20 stations took 30-47 ms to hand on
   * (`bench/air --compare`, a quiet host; half the frames, half the wait).
   */
  STATION_QUEUE_INITIAL_FRAMES: 128,
  /**
   * QUEUE_MS of the slowest relay measured here (~1,300 frames/s to 20 stations on a loaded host).
   * All a timed relay promises to hold: more sent at once than this may lose the excess. A real
   * station sends one frame at a time (SCC), so a burst is one frame per station, and the 21 of
   * the largest air fit; a test that counts what the relay judged sends at most half of it at once
   * (relay-probes.test-helper.ts, BURST).
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
  /**
   * Stations a relay keeps a connected socket for (relay-conns.ts; IPv4): one file descriptor
   * each. Far above a real air (8 nodes, the plane, a few tools); stations beyond it are served
   * through the relay's shared socket(s).
   */
  MAX_CONNECTED: 64,
  /**
   * The kernel's queue drops (stats().droppedQueue) are read from /proc at most this often: one
   * read per Prometheus scrape, not one per counter, and none per call of a caller polling stats().
   */
  DROPS_READ_MS: 500,
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
