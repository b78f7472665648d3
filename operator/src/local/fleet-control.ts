// The loopback control endpoint of `retrokube up` with a fleet FILE (same guard as control.ts):
//   GET  /state                          the clusters, their machines (CLUSTER/MACHINE), the rollouts
//   GET  /view?cluster=NAME              a cluster as heard on its air (default: the first)
//   GET  /clusters                       each cluster's labels, desired deployments and air summary
//   POST /machine {"name","on"}          power CLUSTER/MACHINE off or on
//   GET  /rollouts                       every rollout: spec, status, newest events
//   GET  /rollouts/NAME                  one rollout
//   POST /rollouts/NAME {"promote"|"abort"|"paused": boolean}   what the CLI's verbs set
//   POST /down                           stops everything
import type http from 'node:http';
import { BadRequest, readJsonObject } from '../util/json-body.ts';
import { listenControl, type UpControl } from './control.ts';
import type { FleetKube } from './fleet-kube.ts';
import type { LocalRollouts, Steering } from './rollout-runner.ts';

export const LIMITS = {
  maxBodyBytes: 1024, // the largest request is one small JSON object
} as const;

const STEERING = ['promote', 'abort', 'paused'] as const;

export function startFleetControl(o: {
  kubes: FleetKube[];
  rollouts: LocalRollouts;
  down: () => void;
  state: () => unknown;
}): Promise<UpControl> {
  const kube = (name: string | null): FleetKube => {
    const k = name === null ? o.kubes[0] : o.kubes.find((x) => x.name === name);
    if (!k) throw new BadRequest(`no cluster "${name}" (clusters: ${o.kubes.map((x) => x.name).join(', ')})`);
    return k;
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
        return json(
          200,
          o.kubes.map((k) => {
            const v = k.cluster.view();
            return {
              name: k.name,
              labels: k.labels,
              deployments: k.deployments(),
              nodes: `${v.readyNodes}/${k.cluster.spec.nodes}`,
              running: v.running,
              converged: v.converged,
            };
          }),
        );
      case 'POST /machine': {
        const b = await readJsonObject(req, LIMITS.maxBodyBytes);
        if (typeof b.on !== 'boolean') throw new BadRequest('"on" must be true or false');
        const [c, m] = typeof b.name === 'string' ? b.name.split('/') : [];
        if (!c || !m) throw new BadRequest('"name" must be CLUSTER/MACHINE, e.g. "blue-1/node-a"');
        const k = kube(c);
        if (!k.cluster.machines().some((x) => x.name === m))
          throw new BadRequest(
            `no machine "${m}" in ${c} (machines: ${k.cluster
              .machines()
              .map((x) => x.name)
              .join(', ')})`,
          );
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
          error: `no ${route}; use GET /state /view /clusters /rollouts /rollouts/NAME, POST /machine /rollouts/NAME /down`,
        });
    }
  };
  return listenControl(handle);
}
