// The passive listener: a station that only says hello (never a frame), decodes everything it
// hears into an AirView, and prints frames as text or JSON lines, or redraws the view as a table.
import { openStation, type Station } from './station.ts';
import {
  AirView,
  type AirViewOptions,
  type ClusterView,
  type FrameRecord,
  formatRecord,
  formatView,
} from './view.ts';

export const LISTEN_LIMITS = {
  /** The table is redrawn this often: fast enough to watch a 1-s heartbeat, slow enough to read. */
  REDRAW_MS: 1000,
} as const;

export type ListenOutput = 'text' | 'json' | 'table' | 'none';

export interface ListenOptions extends AirViewOptions {
  host: string;
  port?: number;
  output?: ListenOutput;
  /** Where lines go (default process.stdout). */
  write?: (text: string) => void;
  onRecord?: (rec: FrameRecord) => void;
  helloIntervalMs?: number;
  /** Told once when nothing is heard for a few seconds (see openStation). */
  onSilence?: (silenceMs: number) => void;
  silenceMs?: number;
}

export interface Listener {
  readonly view: () => ClusterView;
  readonly airView: AirView;
  readonly station: Station;
  close(): Promise<void>;
}

export async function startListener(opts: ListenOptions): Promise<Listener> {
  const airView = new AirView(opts);
  const output = opts.output ?? 'text';
  const write = opts.write ?? ((s: string) => void process.stdout.write(s));
  const since = Date.now();
  const station = await openStation({
    host: opts.host,
    port: opts.port,
    helloIntervalMs: opts.helloIntervalMs,
    onSilence: opts.onSilence,
    silenceMs: opts.silenceMs,
    onDatagram: (msg, at) => {
      const rec = airView.ingest(at, msg);
      if (!rec) return;
      opts.onRecord?.(rec);
      if (output === 'json') write(`${JSON.stringify(rec)}\n`);
      else if (output === 'text') write(`${formatRecord(rec, since)}\n`);
    },
  });
  // Clear the screen, home the cursor, draw: the table replaces itself in place.
  const redraw = (): void => write(`\x1b[H\x1b[2J${formatView(airView.view(Date.now()))}\n`);
  const timer = output === 'table' ? setInterval(redraw, LISTEN_LIMITS.REDRAW_MS) : undefined;
  if (output === 'table') redraw();
  return {
    view: () => airView.view(Date.now()),
    airView,
    station,
    close: async () => {
      if (timer) clearInterval(timer);
      await station.close();
    },
  };
}
