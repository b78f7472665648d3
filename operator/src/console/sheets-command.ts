// The console's skctl box: one line of skctl verbs → the contract body it posts, and the check of
// its names against the tables the page shows. Pure and browser-safe: the page checks a line
// before it sends it (a wrong name is said at once, no request), the server checks it again.
import { BadRequest, NotFound } from '../util/json-body.ts';

export const LIMITS = {
  commandChars: 3000, // one skctl line; `apply {json}` of a few deployments fits
  replicasMax: 1000, // the apiserver caps replicas itself; this only stops typos early
  namesListed: 8, // names offered when one is not found
} as const;

export const WORD = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
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

/** Tab and column of the names each verb's fields refer to. */
const NAMED: Record<string, [field: string, tab: string, what: string][]> = {
  scale: [['name', 'deployments', 'deployment']],
  cordon: [['name', 'nodes', 'node']],
  uncordon: [['name', 'nodes', 'node']],
  drain: [['name', 'nodes', 'node']],
  label: [['name', 'nodes', 'node']],
  taint: [['name', 'nodes', 'node']],
  migrate: [
    ['name', 'pods', 'pod'],
    ['node', 'nodes', 'node'],
  ],
};

/**
 * Throws NotFound naming the missing object and the ones there are, when a command names a
 * deployment, node, pod or route the tables do not hold (pure). Tabs not read yet are not judged.
 */
export function checkNames(
  body: Record<string, unknown>,
  tabs: Record<string, Record<string, unknown>[]>,
): void {
  const action = String(body.action);
  const named =
    action === 'delete'
      ? body.kind === 'deployment'
        ? NAMED.scale
        : body.kind === 'route'
          ? [['name', 'routes', 'route'] as [string, string, string]]
          : []
      : (NAMED[action] ?? []);
  for (const [field, tab, what] of named) {
    const rows = tabs[tab];
    if (!Array.isArray(rows)) continue;
    const names = rows.map((r) => String(r.name ?? ''));
    const name = String(body[field]);
    if (names.includes(name)) continue;
    const some = names.slice(0, LIMITS.namesListed).join(', ');
    throw new NotFound(
      `not found: no ${what} "${name}" (${tab}: ${some || 'none'}${names.length > LIMITS.namesListed ? ', …' : ''})`,
    );
  }
}
