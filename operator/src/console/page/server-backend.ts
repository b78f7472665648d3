// The page against the console server of `retrokube up` or `retrokube sheets up`: events over one
// WebSocket (reconnected with back-off when the server goes away), actions as JSON POSTs, screens
// over RFB WebSockets.
import type { AirOp, ConsoleEvent, Done, InjectReport, IntruderKind, SheetsAction } from '../types.ts';
import type { Backend, BackendEvents, ScreenLink } from './backend.ts';
import { RfbClient } from './rfb-client.ts';

export const LIMITS = {
  retryMinMs: 500, // first reconnect after the server went away
  retryMaxMs: 5000, // back-off ceiling: a restarted `up` is found within this
} as const;

const wsUrl = (path: string): string =>
  `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${path}`;

export class ServerBackend implements Backend {
  readonly kind = 'console' as const;
  private ev: BackendEvents | null = null;
  private retry: number = LIMITS.retryMinMs;
  /** The link was up once: while the server is away, the page says it went away, not that it never came. */
  private wasUp = false;

  connect(ev: BackendEvents): void {
    this.ev = ev;
    this.open();
  }

  private open(): void {
    const ev = this.ev;
    if (!ev) return;
    const ws = new WebSocket(wsUrl('/api/events'));
    let opened = false;
    ws.onopen = () => {
      opened = true;
      this.wasUp = true;
      this.retry = LIMITS.retryMinMs;
      ev.link(true, 'connected');
    };
    ws.onmessage = (m) => {
      const e = JSON.parse(String(m.data)) as ConsoleEvent;
      if (e.t === 'state') ev.state(e.state);
      else if (e.t === 'view') ev.view(e.view);
      else if (e.t === 'records') ev.records(e.records, e.dropped);
      else if (e.t === 'sheets') ev.sheets(e.tabs);
      else if (e.t === 'notice') ev.notice(e.text);
    };
    ws.onclose = () => {
      ev.link(
        false,
        this.wasUp
          ? `the console server went away (is "retrokube up" or "retrokube sheets up" still running?); ${opened ? 'reconnecting' : 'still trying'}`
          : 'the console server does not answer; retrying',
      );
      setTimeout(() => this.open(), this.retry);
      this.retry = Math.min(this.retry * 2, LIMITS.retryMaxMs);
    };
  }

  private async post<T>(path: string, body: unknown): Promise<T> {
    let r: Response;
    try {
      r = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    } catch {
      throw new Error('the console server does not answer');
    }
    const reply = (await r.json().catch(() => ({}))) as { error?: string };
    if (!r.ok) throw new Error(reply.error ?? `HTTP ${r.status}`);
    return reply as T;
  }

  power(name: string, on: boolean): Promise<Done> {
    return this.post('/api/machine', { name, on });
  }
  air(op: AirOp): Promise<Done> {
    return this.post('/api/air', op);
  }
  inject(kind: IntruderKind): Promise<InjectReport> {
    return this.post('/api/inject', { kind });
  }
  command(text: string): Promise<Done> {
    return this.post('/api/command', { command: text });
  }
  sheets(a: SheetsAction): Promise<Done> {
    return this.post('/api/sheets', a);
  }
  screen(name: string, canvas: HTMLCanvasElement, status: (text: string) => void): ScreenLink {
    return new RfbClient(wsUrl(`/api/rfb?name=${encodeURIComponent(name)}`), canvas, status);
  }
}
