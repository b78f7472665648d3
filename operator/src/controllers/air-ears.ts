// The operator's ears: one passive station per OberonAir on its relay. It sends only hellos (to
// be forwarded to) and never a frame. Every datagram feeds the air's census (what the air sounds
// like, keyless: the OberonAir status) and the AirView of each cluster a subscriber asked about
// with its key (the OberonKube status). Several clusters on one air share its one station.
import { keyFromHex } from '../air/kubenet.ts';
import { openStation, type Station } from '../air/station.ts';
import { AirView, type ClusterView } from '../air/view.ts';
import { logger } from '../util/log.ts';
import { AirCensus, type AirHeard } from './air-census.ts';

const log = logger('air-ears');

export const EARS_LIMITS = {
  // A station's hello can be lost (its relay's name not resolvable yet in a pod just started, the
  // relay away): the relay forwards nothing until a later hello, 5 s on. So a window of listening
  // starts at the first datagram heard — or, on an air where nothing is heard, this long after the
  // station opened (three hello periods: a silent air is then judged silent).
  silentAirMs: 15_000,
} as const;

/** Where an air's relay is heard: by default its Service. */
export type AirAddress = (namespace: string, air: string, port: number) => { host: string; port: number };

export const serviceAddress: AirAddress = (ns, air, port) => ({
  host: `rk-air-${air}.${ns}.svc.cluster.local`,
  port,
});

/** Which air: the OberonAir's namespace, name and relay port. */
export interface AirRef {
  namespace: string;
  air: string;
  port: number;
}

export interface ClusterSettings {
  cluster: string;
  /** Hex, '' = the zero key. Never logged. */
  keyHex: string;
}

interface Subscription {
  settings: ClusterSettings;
  view: AirView;
  since: number;
}

interface Ear {
  host: string;
  port: number;
  census: AirCensus;
  /** Cluster views by subscriber (for example an OberonKube's namespace/name). */
  clusters: Map<string, Subscription>;
  station: Promise<Station | undefined>;
  since: number;
  /** When the station first heard a datagram (the relay forwards to it): listening really began. */
  firstHeardMs: number | null;
}

/** How long `ear` has truly listened for a subscriber that asked at `since` (see EARS_LIMITS). */
function listened(ear: Ear, since: number, now: number): number {
  const began = ear.firstHeardMs ?? ear.since + EARS_LIMITS.silentAirMs;
  return Math.max(0, now - Math.max(since, began));
}

const airId = (ref: Pick<AirRef, 'namespace' | 'air'>) => `${ref.namespace}/${ref.air}`;

export class AirEars {
  private readonly ears = new Map<string, Ear>();
  private readonly address: AirAddress;

  constructor(opts: { address?: AirAddress } = {}) {
    this.address = opts.address ?? serviceAddress;
  }

  /**
   * Whether a station may be opened (or is open) for this air: when it finds the relay by its
   * Service's name, only once the relay is ready (`relayReady`) or a station is open already. A
   * name looked up before the cluster's DNS knows it is cached as absent (CoreDNS `cache 30`) for
   * every pod of the namespace, so the machines starting meanwhile could not find their relay for
   * 30 s (and QEMU exits on it). An address given instead (tests, a relay outside the cluster) has
   * no such cache.
   */
  mayListen(ref: Pick<AirRef, 'namespace' | 'air'>, relayReady: boolean): boolean {
    return this.address !== serviceAddress || relayReady || this.has(ref);
  }

  /** Listens to the air (opening its station, or re-opening it on a new address); its census now. */
  hear(ref: AirRef, now = Date.now()): { heard: AirHeard; listeningMs: number } {
    const ear = this.ear(ref, now);
    const known = new Map<number, { name: string; forgedFrames: number }>();
    for (const sub of ear.clusters.values()) {
      known.set(sub.view.tag, {
        name: sub.settings.cluster,
        forgedFrames: sub.view.view(now).counts.forged,
      });
    }
    return { heard: ear.census.summary(now, known), listeningMs: listened(ear, ear.since, now) };
  }

  /** One cluster on the air, judged with its key for `subscriber`; opens the air's station if needed. */
  cluster(
    ref: AirRef,
    subscriber: string,
    settings: ClusterSettings,
    now = Date.now(),
  ): { view: ClusterView; listeningMs: number } {
    const ear = this.ear(ref, now);
    let sub = ear.clusters.get(subscriber);
    if (sub && (sub.settings.cluster !== settings.cluster || sub.settings.keyHex !== settings.keyHex))
      sub = undefined;
    if (!sub) {
      sub = {
        settings,
        view: new AirView({ cluster: settings.cluster, key: keyFromHex(settings.keyHex) }),
        since: now,
      };
      ear.clusters.set(subscriber, sub);
    }
    return { view: sub.view.view(now), listeningMs: listened(ear, sub.since, now) };
  }

  /** The subscriber no longer needs its cluster view (the station stays while the air exists). */
  forget(ref: Pick<AirRef, 'namespace' | 'air'>, subscriber: string): void {
    this.ears.get(airId(ref))?.clusters.delete(subscriber);
  }

  has(ref: Pick<AirRef, 'namespace' | 'air'>): boolean {
    return this.ears.has(airId(ref));
  }

  /** Open stations (one per air). */
  get size(): number {
    return this.ears.size;
  }

  /** Stops listening to the air (it is gone). */
  close(ref: Pick<AirRef, 'namespace' | 'air'>): void {
    const id = airId(ref);
    const ear = this.ears.get(id);
    if (!ear) return;
    this.ears.delete(id);
    void ear.station.then((s) => s?.close());
  }

  async closeAll(): Promise<void> {
    const all = [...this.ears.values()];
    this.ears.clear();
    await Promise.all(all.map(async (e) => (await e.station)?.close()));
  }

  private ear(ref: AirRef, now: number): Ear {
    const id = airId(ref);
    const { host, port } = this.address(ref.namespace, ref.air, ref.port);
    let ear = this.ears.get(id);
    if (ear && (ear.host !== host || ear.port !== port)) {
      // A new port: a new station; what was heard so far stays (the clusters are the same).
      const old = ear.station;
      void old.then((s) => s?.close());
      ear.host = host;
      ear.port = port;
      ear.station = this.open(id, ear);
      return ear;
    }
    if (!ear) {
      ear = {
        host,
        port,
        census: new AirCensus(),
        clusters: new Map(),
        station: Promise.resolve(undefined),
        since: now,
        firstHeardMs: null,
      };
      ear.station = this.open(id, ear);
      this.ears.set(id, ear);
    }
    return ear;
  }

  private open(id: string, ear: Ear): Promise<Station | undefined> {
    log.info({ air: id, host: ear.host, port: ear.port }, 'Listening to the air');
    return openStation({
      host: ear.host,
      port: ear.port,
      onDatagram: (msg, at) => {
        ear.firstHeardMs ??= at;
        ear.census.ingest(at, msg);
        for (const sub of ear.clusters.values()) sub.view.ingest(at, msg);
      },
    }).catch((err: Error) => {
      log.warn(
        { air: id, host: ear.host, port: ear.port, err: err.message },
        'Cannot open a station on the air',
      );
      if (this.ears.get(id) === ear) this.ears.delete(id); // the next reconcile tries again
      return undefined;
    });
  }
}
