// The loopback HTTP control endpoint of a running `retrokube up`, used by the companion verbs:
//   GET  /state                       machines, VNC ports, the air
//   GET  /view                        the cluster view heard on the air (ClusterView JSON)
//   POST /machine {"name","on"}       power a machine off or on
//   POST /apply   {"deployment"}      types "Kube.Apply <deployment>" into the plane
//   GET  /screen?name=NAME            the machine's screen as PNG
//   POST /down                        stops the whole cluster
// Bad input gets 400 with a one-line reason; the endpoint never crashes the cluster.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { snapshotToPng } from '../machine/png.ts';
import { guardListener } from '../util/http-guard.ts';
import { BadRequest, readJsonObject } from '../util/json-body.ts';
import type { LocalCluster } from './cluster.ts';
import { parseDeployments } from './spec.ts';

export const LIMITS = {
  maxBodyBytes: 4096, // the largest request is one short command
} as const;

export interface UpControl {
  url: string;
  close(): Promise<void>;
}

export function startUpControl(
  cluster: LocalCluster,
  extra: { down: () => void; state: () => unknown },
): Promise<UpControl> {
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const json = (code: number, body: unknown): void => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify(body)}\n`);
    };
    const name = (v: unknown): string => {
      if (typeof v !== 'string' || !v)
        throw new BadRequest('"name" must name a machine (plane, node-a, ...)');
      if (!cluster.machines().some((m) => m.name === v))
        throw new BadRequest(
          `no machine "${v}" (machines: ${cluster
            .machines()
            .map((m) => m.name)
            .join(', ')})`,
        );
      return v;
    };
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case 'GET /state':
        return json(200, extra.state());
      case 'GET /view':
        return json(200, cluster.view());
      case 'GET /screen': {
        const png = snapshotToPng(await cluster.screen(name(url.searchParams.get('name'))));
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(png);
        return;
      }
      case 'POST /machine': {
        const b = await readJsonObject(req, LIMITS.maxBodyBytes);
        if (typeof b.on !== 'boolean') throw new BadRequest('"on" must be true or false');
        await cluster.power(name(b.name), b.on);
        return json(200, extra.state());
      }
      case 'POST /apply': {
        const b = await readJsonObject(req, LIMITS.maxBodyBytes);
        if (typeof b.deployment !== 'string')
          throw new BadRequest('"deployment" must be "name replicas Module"');
        let d: ReturnType<typeof parseDeployments>;
        try {
          d = parseDeployments(b.deployment, 'deployment');
        } catch (e) {
          throw new BadRequest((e as Error).message);
        }
        if (d.length !== 1) throw new BadRequest('give exactly one deployment, e.g. "web 6 Ticker2"');
        const command = `Kube.Apply ${d[0].name} ${d[0].replicas} ${d[0].module}`;
        await cluster.type('plane', command);
        return json(200, { typed: command });
      }
      case 'POST /down':
        json(200, { stopping: true });
        extra.down();
        return;
      default:
        return json(404, { error: `no ${route}; use GET /state /view /screen, POST /machine /apply /down` });
    }
  };
  return listenControl(handle);
}

/**
 * Serves `handle` on an ephemeral loopback port behind the guard (Origin, Host, JSON: a web page
 * must not steer the cluster); a handler's BadRequest is a 400 with its reason, anything else a 409.
 */
export function listenControl(
  handle: (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>,
): Promise<UpControl> {
  const server = http.createServer(
    guardListener(
      (req, res) => {
        handle(req, res).catch((e: Error) => {
          if (res.headersSent) return;
          res.writeHead(e instanceof BadRequest ? 400 : 409, { 'content-type': 'application/json' });
          res.end(`${JSON.stringify({ error: e.message })}\n`);
        });
      },
      { hosts: 'loopback', requireJson: true },
    ),
  );
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const a = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${a.port}`,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}
