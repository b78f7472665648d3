// The console's Sheeternetes part: a sheet cluster's tabs as live tables (never Secrets), its
// events, its Metrics tab, and the controls that make sense for it — scale a deployment, cordon,
// uncordon or drain a node, stop or start a node agent `sheets up` runs, and a command box of
// skctl verbs. Every change goes through the apiserver's contract with the console's client, which
// signs each POST when the cluster has a signing key; the token and key never reach a page.
import type { SheetsClient } from '../sheets/ctl/client.ts';
import { cellTime } from '../sheets/ctl/table.ts';
import { BadRequest, NotFound } from '../util/json-body.ts';
import type { ConsolePart, Pages } from './part.ts';
import { LIMITS as COMMAND, parseSheetsCommand, WORD } from './sheets-command.ts';
import type { Done, SheetsAction, SheetsTabs } from './types.ts';

export { parseSheetsCommand } from './sheets-command.ts';

export const LIMITS = {
  pollMs: 2000, // the tabs are read this often while a page is open (each read is 7 HTTP GETs)
  events: 50, // Sheeternetes events shown
  metricRows: 2000, // Metrics rows plotted (the newest)
} as const;

/** The tabs a page sees. Secrets are never read: nothing of them can reach a screen. */
export const TABS = ['nodes', 'pods', 'deployments', 'images', 'routes'] as const;

/** Node agents the console may stop and start (`sheets up` runs them as child processes). */
export interface AgentControl {
  list(): { name: string; on: boolean }[];
  power(name: string, on: boolean): Promise<void>;
}

export interface SheetsTarget {
  /** Shown as the page's title when the sheet cluster is alone. */
  name: string;
  /** The apiserver contract: holds the token (and the signing key, if any). */
  client: SheetsClient;
  agents?: AgentControl;
  /**
   * When this run started (ms): events before it are an earlier run's (the workbook outlives
   * `up`) and are counted, not shown. Default: when this process started.
   */
  since?: number;
}

const processStart = Date.now() - Math.round(process.uptime() * 1000);

/**
 * The events of the run that started at `since` (ms). The sheet stamps events in whole seconds, so
 * an event of the run's first second reads up to 999 ms earlier than `since`: it is this run's, and
 * so is everything stamped from that second on. An event without a readable time is kept: hiding
 * what cannot be dated would lose it.
 */
export function eventsSince<E extends { ts?: unknown }>(all: readonly E[], since: number): E[] {
  const from = Math.floor(since / 1000) * 1000;
  return all.filter((e) => !((cellTime(e.ts) ?? from) < from));
}

/** The tabs, this run's latest events (since `since`, ms) and metrics, as the page shows them. */
export async function readSheets(c: SheetsClient, since = 0): Promise<SheetsTabs> {
  const rows = await Promise.all(TABS.map((k) => c.get(k)));
  const [all, metrics] = await Promise.all([c.get('events'), c.get('metrics')]);
  const events = eventsSince(all, since);
  return {
    earlierEvents: all.length - events.length,
    tabs: {
      ...Object.fromEntries(TABS.map((k, i) => [k, rows[i]])),
      metrics: metrics.slice(-LIMITS.metricRows),
    },
    events: events.slice(-LIMITS.events).map((e) => `${e.ts} ${e.kind} ${e.object}: ${e.message}`),
  };
}

/** A page's request → the action it names, checked (pure). */
export function checkSheetsAction(b: Record<string, unknown>): SheetsAction {
  switch (b.op) {
    case 'scale': {
      const replicas = Number(b.replicas);
      if (typeof b.deployment !== 'string' || !WORD.test(b.deployment))
        throw new BadRequest('"deployment" must name a deployment');
      if (!Number.isInteger(replicas) || replicas < 0 || replicas > COMMAND.replicasMax)
        throw new BadRequest(`"replicas" must be a whole number 0..${COMMAND.replicasMax}`);
      return { op: 'scale', deployment: b.deployment, replicas };
    }
    case 'cordon':
    case 'uncordon':
    case 'drain':
      if (typeof b.node !== 'string' || !WORD.test(b.node)) throw new BadRequest('"node" must name a node');
      return { op: b.op, node: b.node };
    case 'agent':
      if (typeof b.node !== 'string' || !WORD.test(b.node))
        throw new BadRequest('"node" must name a node agent');
      if (typeof b.on !== 'boolean') throw new BadRequest('"on" must be true or false');
      return { op: 'agent', node: b.node, on: b.on };
    case 'command':
      if (typeof b.text !== 'string') throw new BadRequest('"text" must be a line like "scale web 3"');
      return { op: 'command', text: b.text };
    default:
      throw new BadRequest('"op" must be scale, cordon, uncordon, drain, agent or command');
  }
}

/** What the apiserver answered, in a line a person reads; "not found" is an error the page shows red. */
export function answered(reply: unknown): string {
  if (!reply || typeof reply !== 'object') return 'done';
  const r = reply as Record<string, unknown>;
  if (typeof r.result === 'string') {
    if (r.result === 'not found') throw new NotFound('not found (check the name in the tables)');
    return r.result;
  }
  const lists = ['applied', 'gateways', 'routes'].flatMap((k) =>
    Array.isArray(r[k]) ? (r[k] as unknown[]) : [],
  );
  return lists.length > 0 ? lists.map(String).join(', ') : 'done';
}

export function sheetsPart(target: SheetsTarget, pages: Pages, hasPages: () => boolean): ConsolePart {
  let last: SheetsTabs | null = null;
  let busy = false;
  const fresh = async (): Promise<SheetsTabs> => ({
    ...(await readSheets(target.client, target.since ?? processStart)),
    name: target.name,
    agents: target.agents?.list(),
    controls: true,
  });
  const refresh = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    try {
      last = await fresh();
    } catch (e) {
      // The last tables stay on the page, under the error: losing them would show nothing useful.
      last = {
        ...(last ?? { tabs: {}, events: [] }),
        name: target.name,
        agents: target.agents?.list(),
        controls: true,
        error: (e as Error).message,
      };
    } finally {
      busy = false;
    }
    pages.broadcast({ t: 'sheets', tabs: last });
  };
  const timer = setInterval(() => {
    if (hasPages()) void refresh();
  }, LIMITS.pollMs);

  const act = async (a: SheetsAction): Promise<string> => {
    if (a.op === 'agent') {
      const agents = target.agents;
      if (!agents) throw new Error('this console runs no node agents: stop or start them where they run');
      if (!agents.list().some((x) => x.name === a.node))
        throw new BadRequest(
          `no node agent ${a.node} here (agents: ${agents
            .list()
            .map((x) => x.name)
            .join(', ')})`,
        );
      await agents.power(a.node, a.on);
      return `node agent ${a.node} ${a.on ? 'started' : 'stopped'}`;
    }
    const body =
      a.op === 'scale'
        ? { action: 'scale', name: a.deployment, replicas: a.replicas }
        : a.op === 'command'
          ? parseSheetsCommand(a.text)
          : { action: a.op, name: a.node };
    const reply = await target.client.post(body);
    const what =
      a.op === 'command'
        ? a.text.trim().slice(0, 80)
        : a.op === 'scale'
          ? `scale ${a.deployment} ${a.replicas}`
          : `${a.op} ${a.node}`;
    return `${what}: ${answered(reply)}`;
  };

  return {
    actions: {
      '/api/sheets': async (b) => {
        const text = await act(checkSheetsAction(b));
        pages.broadcast({ t: 'notice', text });
        void refresh(); // every page sees the change at once, not at the next poll
        return { at: Date.now(), text } satisfies Done;
      },
    },
    reads: {
      '/api/sheets': fresh,
    },
    upgrades: {},
    greet: () => {
      void refresh();
      return last ? [{ t: 'sheets', tabs: last }] : [];
    },
    close: async () => {
      clearInterval(timer);
    },
  };
}
