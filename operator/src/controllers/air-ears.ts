// The operator's ears: one passive station per Oberon cluster on its relay, feeding the air
// toolkit's AirView. It sends only hellos (to be forwarded to) and never a frame; everything the
// status says about nodes and pods is what this station heard.

import { keyFromHex } from '../air/kubenet.ts';
import { openStation, type Station } from '../air/station.ts';
import { AirView, type AirView as AirViewT, type ClusterView } from '../air/view.ts';
import { logger } from '../util/log.ts';

const log = logger('air-ears');

export interface EarSettings {
  host: string;
  port: number;
  cluster: string;
  /** Hex, '' = the zero key. Never logged. */
  keyHex: string;
}

interface Ear {
  settings: EarSettings;
  view: AirViewT;
  station: Promise<Station | undefined>;
  since: number;
}

const same = (a: EarSettings, b: EarSettings) =>
  a.host === b.host && a.port === b.port && a.cluster === b.cluster && a.keyHex === b.keyHex;

export class AirEars {
  private readonly ears = new Map<string, Ear>();

  /** Listens for `id` with these settings (re-opening on a change); returns the view now, or null before opening. */
  listen(id: string, settings: EarSettings, now = Date.now()): { view: ClusterView; listeningMs: number } {
    let ear = this.ears.get(id);
    if (ear && !same(ear.settings, settings)) {
      this.close(id);
      ear = undefined;
    }
    if (!ear) {
      const view = new AirView({ cluster: settings.cluster, key: keyFromHex(settings.keyHex) });
      const station = openStation({
        host: settings.host,
        port: settings.port,
        onDatagram: (msg, at) => {
          view.ingest(at, msg);
        },
      }).catch((err: Error) => {
        log.warn(
          { id, host: settings.host, port: settings.port, err: err.message },
          'Cannot open a station on the air',
        );
        this.ears.delete(id);
        return undefined;
      });
      ear = { settings, view, station, since: now };
      this.ears.set(id, ear);
      log.info(
        { id, host: settings.host, port: settings.port, cluster: settings.cluster },
        'Listening to the air',
      );
    }
    return { view: ear.view.view(now), listeningMs: now - ear.since };
  }

  has(id: string): boolean {
    return this.ears.has(id);
  }

  close(id: string): void {
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
}
