// The loopback control endpoint of `retrokube up` with a fleet FILE (same guard as control.ts):
//   GET  /state                          the clusters, their machines (CLUSTER/MACHINE), the rollouts
//   GET  /view?cluster=NAME              a cluster as heard on its air (default: the first)
//   GET  /clusters                       each cluster's labels, desired deployments and air summary
//   POST /machine {"name","on"}          power CLUSTER/MACHINE off or on
//   GET  /screen?name=CLUSTER/MACHINE    the machine's screen as PNG
//   GET  /rollouts                       every rollout: spec, status, newest events
//   GET  /rollouts/NAME                  one rollout
//   POST /rollouts/NAME {"promote"|"abort"|"paused": boolean}   what the CLI's verbs set
//   POST /down                           stops everything
import type http from 'node:http';
import { snapshotToPng } from '../machine/png.ts';
import { cliName } from '../util/cli-name.ts';
import { BadRequest, readJsonObject } from '../util/json-body.ts';
import { listenControl, type UpControl } from './control.ts';
import type { FleetKube } from './fleet-kube.ts';
import type { FleetSheet } from './fleet-sheet.ts';
import type { LocalRollouts, Steering } from './rollout-runner.ts';

export const LIMITS = {
  maxBodyBytes: 1024, // the largest request is one small JSON object
} as const;

const STEERING = ['promote', 'abort', 'paused'] as const;

export function startFleetControl(o: {
  kubes: FleetKube[];
  sheets: FleetSheet[];
  rollouts: LocalRollouts;
  down: () => void;
  state: () => unknown;
}): Promise<UpControl> {
  const kube = (name: string | null): FleetKube => {
    const k = name === null ? o.kubes[0] : o.kubes.find((x) => x.name === name);
    const sheet = o.sheets.find((x) => x.name === name);
    if (sheet)
      throw new BadRequest(
        `${name} is a SheetCluster: read it with "${cliName()} skctl --server ${sheet.sheets.url} get pods"`,
      );
    if (!k)
      throw new BadRequest(
        `no Oberon cluster "${name ?? ''}" (Oberon clusters: ${o.kubes.map((x) => x.name).join(', ') || 'none'})`,
      );
    return k;
  };
  /** "CLUSTER/MACHINE" → the cluster and the machine's name in it. */
  const machine = (name: unknown): [FleetKube, string] => {
    const [c, m] = typeof name === 'string' ? name.split('/') : [];
    if (!c || !m) throw new BadRequest('"name" must be CLUSTER/MACHINE, e.g. "c1/node-a"');
    const k = kube(c);
    const names = k.cluster.machines().map((x) => x.name);
    if (!names.includes(m)) throw new BadRequest(`no machine "${m}" in ${c} (machines: ${names.join(', ')})`);
    return [k, m];
  };
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const json = (code: number, body: unknown): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(body)}\n`);
    };
    const rollout = /^\/rollouts\/([a-z0-9-]{1,63})$/.exec(url.pathname)?.[1];
    const route = `${req.method} ${rollout ? '/rollouts/NAME' : url.pathname}`;
    switch (route) {
      case 'GET /state':
        return json(200, o.state());
      case 'GET /view':
        return json(200, kube(url.searchParams.get('cluster')).cluster.view());
      case 'GET /clusters':
        return json(200, [
          ...o.kubes.map((k) => {
            const v = k.cluster.view();
            return {
              name: k.name,
              kind: k.kind,
              labels: k.labels,
              deployments: k.deployments(),
              nodes: `${v.readyNodes}/${k.cluster.spec.nodes}`,
              running: v.running,
              converged: v.converged,
            };
          }),
          ...o.sheets.map((x) => ({ name: x.name, kind: x.kind, labels: x.labels, url: x.sheets.url })),
        ]);
      case 'GET /screen': {
        const [k, m] = machine(url.searchParams.get('name'));
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(snapshotToPng(await k.cluster.screen(m)));
        return;
      }
      case 'POST /machine': {
        const b = await readJsonObject(req, LIMITS.maxBodyBytes);
        if (typeof b.on !== 'boolean') throw new BadRequest('"on" must be true or false');
        const [k, m] = machine(b.name);
        await k.cluster.power(m, b.on);
        return json(200, o.state());
      }
      case 'GET /rollouts':
        return json(
          200,
          o.rollouts.names().map((n) => o.rollouts.view(n)),
        );
      case 'GET /rollouts/NAME': {
        const v = o.rollouts.view(rollout as string);
        if (!v)
          return json(404, { error: `no rollout "${rollout}" (rollouts: ${o.rollouts.names().join(', ')})` });
        return json(200, v);
      }
      case 'POST /rollouts/NAME': {
        const b = await readJsonObject(req, LIMITS.maxBodyBytes);
        const change: Steering = {};
        for (const [f, v] of Object.entries(b)) {
          if (!STEERING.includes(f as (typeof STEERING)[number]) || typeof v !== 'boolean')
            throw new BadRequest(`set ${STEERING.join(', ')} to true or false; "${f}" is not one of them`);
          change[f as (typeof STEERING)[number]] = v;
        }
        if (!o.rollouts.view(rollout as string))
          return json(404, { error: `no rollout "${rollout}" (rollouts: ${o.rollouts.names().join(', ')})` });
        return json(200, o.rollouts.steer(rollout as string, change));
      }
      case 'POST /down':
        json(200, { stopping: true });
        o.down();
        return;
      default:
        return json(404, {
          error: `no ${route}; use GET /state /view /clusters /screen /rollouts /rollouts/NAME, POST /machine /rollouts/NAME /down`,
        });
    }
  };
  return listenControl(handle);
}
