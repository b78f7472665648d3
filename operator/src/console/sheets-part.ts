// The console's Sheeternetes part: a sheet cluster's tabs as live tables (never Secrets), its
// events, its Metrics tab, and the controls that make sense for it — scale a deployment, cordon,
// uncordon or drain a node, stop or start a node agent `sheets up` runs, and a command box of
// skctl verbs. Every change goes through the apiserver's contract with the console's client, which
// signs each POST when the cluster has a signing key; the token and key never reach a page.
import type { SheetsClient } from '../sheets/ctl/client.ts';
import { BadRequest } from '../util/json-body.ts';
import type { ConsolePart, Pages } from './part.ts';
import type { Done, SheetsAction, SheetsTabs } from './types.ts';

export const LIMITS = {
  pollMs: 2000, // the tabs are read this often while a page is open (each read is 7 HTTP GETs)
  events: 50, // Sheeternetes events shown
  metricRows: 2000, // Metrics rows plotted (the newest)
  commandChars: 3000, // one skctl line; `apply {json}` of a few deployments fits
  replicasMax: 1000, // the apiserver caps replicas itself; this only stops typos early
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
}

/** The tabs, the latest events and metrics, as the page shows them. */
export async function readSheets(c: SheetsClient): Promise<SheetsTabs> {
  const rows = await Promise.all(TABS.map((k) => c.get(k)));
  const [events, metrics] = await Promise.all([c.get('events'), c.get('metrics')]);
  return {
    tabs: {
      ...Object.fromEntries(TABS.map((k, i) => [k, rows[i]])),
      metrics: metrics.slice(-LIMITS.metricRows),
    },
    events: events.slice(-LIMITS.events).map((e) => `${e.ts} ${e.kind} ${e.object}: ${e.message}`),
  };
}

const WORD = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
const word = (v: string | undefined, what: string, usage: string): string => {
  if (v === undefined || !WORD.test(v)) throw new BadRequest(`${what} missing or not a name: ${usage}`);
  return v;
};

/**
 * One line of skctl verbs → the contract body it posts (pure). The verbs that change the cluster:
 * scale, cordon, uncordon, drain, delete, migrate, label, taint, and `apply {json}` (deployments,
 * gateways, routes — Secrets are refused: they never travel through a page).
 */
export function parseSheetsCommand(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string') throw new BadRequest('"text" must be a line like "scale web 3"');
  const line = text.trim().replace(/^skctl\s+/, '');
  if (line.length === 0 || line.length > LIMITS.commandChars || /[\r\n]/.test(line))
    throw new BadRequest(
      `one line of at most ${LIMITS.commandChars} characters, e.g. "scale web 3", "cordon node-a", "apply {\\"deployments\\":[...]}"`,
    );
  const [verb, ...args] = line.split(/\s+/);
  const usage = (u: string) => `usage: ${u}`;
  switch (verb) {
    case 'scale': {
      const u = usage('scale DEPLOYMENT REPLICAS');
      const name = word(args[0], 'the deployment', u);
      if (!/^\d+$/.test(args[1] ?? '') || Number(args[1]) > LIMITS.replicasMax || args.length > 2)
        throw new BadRequest(`replicas must be a whole number 0..${LIMITS.replicasMax}: ${u}`);
      return { action: 'scale', name, replicas: Number(args[1]) };
    }
    case 'cordon':
    case 'uncordon':
    case 'drain':
      if (args.length !== 1) throw new BadRequest(usage(`${verb} NODE`));
      return { action: verb, name: word(args[0], 'the node', usage(`${verb} NODE`)) };
    case 'delete': {
      const u = usage('delete [deployment|gateway|route] NAME');
      if (args.length === 1)
        return { action: 'delete', kind: 'deployment', name: word(args[0], 'the name', u) };
      if (args.length !== 2 || !['deployment', 'gateway', 'route'].includes(args[0]))
        throw new BadRequest(`${u} (Secrets are deleted with skctl, not through a page)`);
      return { action: 'delete', kind: args[0], name: word(args[1], 'the name', u) };
    }
    case 'migrate': {
      const u = usage('migrate POD NODE');
      if (args.length !== 2) throw new BadRequest(u);
      return { action: 'migrate', name: word(args[0], 'the pod', u), node: word(args[1], 'the node', u) };
    }
    case 'label':
    case 'taint': {
      const u = usage(verb === 'label' ? 'label NODE k=v | k-' : 'taint NODE k=v:NoSchedule | k-');
      if (args.length !== 2 || args[1].length > 1024) throw new BadRequest(u);
      return { action: verb, name: word(args[0], 'the node', u), spec: args[1] };
    }
    case 'apply': {
      const u = 'usage: apply {"deployments":[{"name":"web","image":"nginx:alpine","replicas":2}]}';
      let doc: unknown;
      try {
        doc = JSON.parse(line.slice(verb.length));
      } catch (e) {
        throw new BadRequest(`apply needs a JSON object (${(e as Error).message}); ${u}`);
      }
      if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new BadRequest(u);
      const d = doc as Record<string, unknown>;
      if ('secrets' in d)
        throw new BadRequest('Secrets never travel through a page: apply them with skctl apply FILE');
      const extra = Object.keys(d).filter((k) => !['deployments', 'gateways', 'routes'].includes(k));
      if (extra.length > 0)
        throw new BadRequest(`apply takes deployments, gateways, routes (not ${extra.join(', ')})`);
      return {
        action: 'apply',
        deployments: d.deployments ?? [],
        gateways: d.gateways ?? [],
        routes: d.routes ?? [],
      };
    }
    default:
      throw new BadRequest(
        `"${String(verb).slice(0, 20)}" is not a verb here: scale, cordon, uncordon, drain, delete, migrate, label, taint or apply`,
      );
  }
}

/** A page's request → the action it names, checked (pure). */
export function checkSheetsAction(b: Record<string, unknown>): SheetsAction {
  switch (b.op) {
    case 'scale': {
      const replicas = Number(b.replicas);
      if (typeof b.deployment !== 'string' || !WORD.test(b.deployment))
        throw new BadRequest('"deployment" must name a deployment');
      if (!Number.isInteger(replicas) || replicas < 0 || replicas > LIMITS.replicasMax)
        throw new BadRequest(`"replicas" must be a whole number 0..${LIMITS.replicasMax}`);
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
    if (r.result === 'not found') throw new Error('not found (check the name in the tables)');
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
    ...(await readSheets(target.client)),
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
