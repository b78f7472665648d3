// The relay's shapes, shared by the relay (relay.ts) and its HTTP faces (relay-http.ts) so that
// neither imports the other's module for them: relay.ts starts the HTTP faces, relay-http.ts only
// reads a Relay through this interface.
import type { AddressInfo } from 'node:net';

export interface HttpEndpoint {
  address: AddressInfo;
  url: string;
  close(): Promise<void>;
}

export interface RelayPeer {
  /** "IP:PORT" as the relay sees the station ("[IPv6]:PORT" for IPv6). */
  address: string;
  host: string;
  port: number;
  firstSeenMs: number;
  lastSeenMs: number;
  /** The node name heard in this station's heartbeats, if any. */
  name?: string;
  /** The cluster tag heard in this station's messages, if any. */
  cluster?: number;
  /** True once the station sent an assignment or a spec: a control plane. */
  plane: boolean;
  framesIn: number;
  rateDropped: number;
  cut: boolean;
}

export interface RelayStats {
  hellos: number;
  framesIn: number;
  /** Deliveries: one frame handed to one receiver. */
  framesOut: number;
  /** Of framesOut, those the send thread made (`sendThread`); 0 without one. */
  framesOutThread: number;
  /** Datagrams the send thread's socket received and handed to the relay; 0 without one. */
  handedOver: number;
  malformed: number;
  droppedLoss: number;
  droppedRate: number;
  droppedOff: number;
  droppedCut: number;
  /** Deliveries not made because the air's output budget was spent, or to silent stations over the cap. */
  droppedBudget: number;
  /** Deliveries dropped because the kernel still held earlier sends: radio drops rather than queues. */
  droppedLate: number;
  /**
   * Datagrams the kernel dropped on arrival because the queue in front of the relay was full
   * (RELAY_LIMITS.QUEUE_MS of its speed): frames that would have waited past MAX_DELAY_MS. 0 where
   * the kernel does not say (not Linux).
   */
  droppedQueue: number;
  /** Datagrams the kernel queue in front of the relay holds now. */
  queueFrames: number;
  /**
   * Whether that queue is sized from a timing of the relay's speed (traffic heavy enough to time)
   * rather than the one for light traffic (RELAY_LIMITS.QUEUE_INITIAL_FRAMES and
   * STATION_QUEUE_INITIAL_FRAMES).
   */
  queueTimed: boolean;
  /** Stations refused or evicted because their address or the table was full. */
  refusedPeers: number;
  sendErrors: number;
  peers: number;
  joined: number;
  gone: number;
}

export type RelayEvent =
  | { type: 'joined'; peer: RelayPeer }
  | { type: 'gone'; peer: RelayPeer }
  /**
   * `lost`: the stations ("IP:PORT") this frame was meant for and did not reach: the air's loss,
   * or dropped late (the kernel still held earlier sends). Not those the relay leaves out by rule
   * (cut, over the air's budget): its stats count those.
   */
  | { type: 'frame'; from: RelayPeer; channel: number; receivers: number; lost: string[] };

export interface RelayState {
  on: boolean;
  loss: number;
  address: string;
  cuts: string[];
  peers: RelayPeer[];
  stats: RelayStats;
}

export interface Relay {
  /** Where the relay listens. */
  readonly address: AddressInfo;
  /** The metrics endpoint, when `metricsPort` was given. */
  readonly metrics?: HttpEndpoint;
  /** The control endpoint, when `controlPort` was given. */
  readonly control?: HttpEndpoint;
  readonly stats: () => RelayStats;
  readonly state: () => RelayState;
  readonly peers: () => RelayPeer[];
  setLoss(p: number): void;
  readonly loss: () => number;
  /** Stops forwarding. With forgetPeers the table empties too, as when the relay is replaced. */
  off(opts?: { forgetPeers?: boolean }): void;
  on(): void;
  readonly isOn: () => boolean;
  /**
   * Cuts stations off the air (nothing from them is forwarded and nothing reaches them) by
   * "IP:PORT", by IP, or by the node name heard in heartbeats. The cut outlives the peer entry,
   * so a restarted machine stays cut. Returns how many current peers match.
   */
  cut(target: string): number;
  /** Undoes `cut(target)`; "*" restores every station. Returns whether something was cut. */
  restore(target: string): boolean;
  /** Drops peers silent for longer than the TTL (also done on every datagram). */
  expire(): void;
  /** CPU µs the send thread used so far (0 without one): a benchmark adds it to the relay's. */
  sendThreadCpuUs(): Promise<number>;
  close(): Promise<void>;
}
