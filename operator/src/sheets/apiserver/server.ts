// The apiserver over HTTP (spec §1): any path, GET ?token=&kind= for reads, POST JSON for verbs and
// heartbeats. Order on POST: HMAC over the raw bytes (when a key is set) → JSON → token → shape →
// verb. Reference clients (kubelet.sh, skctl, bridge.py) work unchanged.
import { timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { checkRequest, hostsForBind, isLoopbackAddress } from '../../util/http-guard.ts';
import { logger } from '../../util/log.ts';
import { ClusterMetrics } from '../metrics/metrics.ts';
import { RequestVerifier, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../signing.ts';
import type { Store } from '../store/types.ts';
import { ClosedError, ConflictError, StoreError } from '../store/types.ts';
import { Cluster } from './cluster.ts';
import {
  ActionBodies,
  type ActionName,
  LIMITS as BODY_LIMITS,
  check,
  GetQuery,
  HeartbeatBody,
  InputError,
  PostEnvelope,
  scaleReplicas,
} from './validate.ts';

const log = logger('sheets-apiserver');

import { DEFAULT_TOKEN } from '../default-token.ts';

export { DEFAULT_TOKEN };

/** GET kind → tab (spec §1.2), plus our Metrics tab. */
export const KINDS: Record<string, string> = {
  pods: 'Pods',
  nodes: 'Nodes',
  deployments: 'Deployments',
  events: 'Events',
  images: 'Images',
  layers: 'Layers',
  secrets: 'Secrets',
  gateways: 'Gateways',
  routes: 'Routes',
  metrics: 'Metrics',
};

export interface ApiServerOptions {
  store: Store;
  token?: string;
  /** When set, every POST must carry a valid X-SNCF-Timestamp / X-SNCF-Signature. */
  signingKey?: string;
  signTtlSec?: number;
  nodeTtlSec?: number;
  portRange?: [number, number];
  now?: () => number;
  tickMs?: number;
  metricsIntervalSec?: number;
  metricsRetentionSec?: number;
  /** Write the sample deployments into a brand-new workbook (default true). */
  samples?: boolean;
}

export interface ApiServer {
  app: FastifyInstance;
  cluster: Cluster;
  metrics: ClusterMetrics;
  listen(port: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/**
 * Why serving on `host` with this token and key is unsafe, or undefined. Off loopback every request
 * crosses a network: the well-known default token opens the cluster to anyone, and without signing
 * a token seen once (GETs carry it in the URL) can be used forever.
 */
export function exposureProblem(
  host: string,
  token: string,
  signingKey: string | undefined,
): string | undefined {
  if (isLoopbackAddress(host)) return undefined;
  if (token === DEFAULT_TOKEN)
    return `refusing to listen on ${host} with the well-known default token: set TOKEN (or --token-file) to a secret of your own, or listen on 127.0.0.1`;
  if (!signingKey)
    return `refusing to listen on ${host} without request signing: set SIGNING_KEY (or --key-file) so every POST is signed, or listen on 127.0.0.1`;
  return undefined;
}

function sameSecret(a: unknown, b: string): boolean {
  if (typeof a !== 'string') return false;
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

export async function createApiServer(o: ApiServerOptions): Promise<ApiServer> {
  const token = o.token ?? DEFAULT_TOKEN;
  const now = o.now ?? (() => Math.floor(Date.now() / 1000));
  const cluster = new Cluster({
    store: o.store,
    nodeTtlSec: o.nodeTtlSec,
    portRange: o.portRange,
    now,
    tickMs: o.tickMs,
  });
  const metrics = new ClusterMetrics({
    store: o.store,
    nodeTtlSec: cluster.nodeTtlSec,
    now,
    intervalSec: o.metricsIntervalSec,
    retentionSec: o.metricsRetentionSec,
  });
  const verifier = o.signingKey
    ? new RequestVerifier(o.signingKey, o.signTtlSec, undefined, now())
    : undefined;
  await cluster.start({ samples: o.samples });
  metrics.start();

  const app = Fastify({
    logger: false,
    bodyLimit: BODY_LIMITS.bodyBytes,
    return503OnClosing: true,
  });
  // The body stays raw bytes until the signature over exactly those bytes has been checked.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  // Browsers: only same-origin, JSON, and (while bound to loopback) loopback Host names — see
  // util/http-guard.ts. The reference clients send JSON with no Origin and pass unchanged.
  let hosts: 'loopback' | 'any' = 'loopback';
  app.addHook('onRequest', async (req, reply) => {
    const v = checkRequest(req.raw, { hosts, requireJson: true });
    if (!v.ok) return reply.code(v.status).send({ error: v.error });
  });
  app.addHook('onResponse', async (req, reply) => {
    metrics.requests.inc({ method: req.method, code: String(reply.statusCode) });
  });
  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const status =
      err instanceof HttpError ? err.status : err.statusCode && err.statusCode < 500 ? err.statusCode : 500;
    if (status >= 500) log.error({ err }, 'request failed');
    void reply.code(status).send({ error: status >= 500 ? 'internal error' : err.message });
  });
  app.setNotFoundHandler(
    (req, reply) =>
      void reply
        .code(405)
        .send({ error: `method ${req.method} not allowed; use GET for reads and POST for changes` }),
  );

  app.get('/metrics', async (_req, reply) => {
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
  app.get('/healthz', async () => ({
    ok: true,
    backend: o.store.backend,
    version: o.store.version(),
    reconciles: cluster.reconciles,
    deferred: cluster.deferred,
    handoffs: cluster.handoffs().length,
  }));

  const read = async (req: FastifyRequest, reply: FastifyReply) => {
    const q = req.query as Record<string, unknown>;
    const raw = req.url.indexOf('?') >= 0 ? req.url.slice(req.url.indexOf('?') + 1) : '';
    if (raw.length > BODY_LIMITS.queryChars)
      throw new HttpError(414, `query string longer than ${BODY_LIMITS.queryChars} characters`);
    const problem = check(GetQuery, q);
    if (problem) {
      if (!sameSecret(q.token, token)) throw new HttpError(401, 'unauthorized');
      throw new HttpError(400, `bad query: ${problem}`);
    }
    if (!sameSecret(q.token, token)) return reply.code(401).send({ error: 'unauthorized' });
    const kind = (q.kind as string | undefined) || 'pods';
    const tab = KINDS[kind];
    if (!tab || !o.store.tabs().includes(tab))
      return reply.code(400).send({ error: 'unknown kind', kinds: Object.keys(KINDS) });
    return reply.send({ items: o.store.rows(tab) });
  };

  const write = async (req: FastifyRequest, reply: FastifyReply) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (verifier) {
      const ts = req.headers[TIMESTAMP_HEADER.toLowerCase()];
      const sig = req.headers[SIGNATURE_HEADER.toLowerCase()];
      const r = verifier.verify(
        typeof ts === 'string' ? ts : undefined,
        typeof sig === 'string' ? sig : undefined,
        raw,
        now(),
      );
      if (!r.ok) return reply.code(401).send({ error: 'bad signature', reason: r.reason });
    }
    let body: unknown = {};
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return reply.code(400).send({ error: 'bad json' });
      }
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body))
      return reply.code(400).send({ error: 'bad json', reason: 'the body must be a JSON object' });
    const b = body as Record<string, unknown>;
    if (!sameSecret(b.token, token)) return reply.code(401).send({ error: 'unauthorized' });
    const envProblem = check(PostEnvelope, b);
    if (envProblem) return reply.code(400).send({ error: `bad request: ${envProblem}` });
    const action = b.action;
    if ((action === undefined || action === null || action === '' || action === 'heartbeat') && b.node) {
      const problem = check(HeartbeatBody, b);
      if (problem) return reply.code(400).send({ error: `bad heartbeat: ${problem}` });
      const t0 = performance.now();
      const res = await cluster.heartbeat(b as HeartbeatBody);
      metrics.heartbeatSeconds.observe((performance.now() - t0) / 1000);
      return reply.send(res);
    }
    if (typeof action !== 'string' || !Object.hasOwn(ActionBodies, action))
      return reply.code(400).send({ error: 'unknown action' });
    const problem = check(ActionBodies[action as ActionName], b);
    if (problem) return reply.code(400).send({ error: `bad ${action}: ${problem}` });
    return reply.send(await dispatch(cluster, action as ActionName, b));
  };

  app.get('/*', wrapStore(read));
  app.post('/*', wrapStore(write));

  return {
    app,
    cluster,
    metrics,
    async listen(port: number, host = '127.0.0.1') {
      const unsafe = exposureProblem(host, token, o.signingKey);
      if (unsafe) throw new Error(unsafe);
      hosts = hostsForBind(host);
      return app.listen({ port, host });
    },
    async close() {
      metrics.stop();
      await cluster.stop();
      await app.close();
    },
  };
}

/** Store errors caused by input become 400s; a closed or conflicting store is a 503, never a crash. */
function wrapStore(h: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    try {
      return await h(req, reply);
    } catch (err) {
      if (err instanceof HttpError) throw err;
      if (err instanceof ClosedError || err instanceof ConflictError) throw new HttpError(503, err.message);
      if (err instanceof StoreError) throw new HttpError(400, err.message);
      if (err instanceof InputError) throw new HttpError(400, err.message);
      throw err;
    }
  };
}

async function dispatch(cluster: Cluster, action: ActionName, b: Record<string, unknown>): Promise<unknown> {
  const name = b.name as string;
  switch (action) {
    case 'apply':
      return cluster.apply(b as Parameters<Cluster['apply']>[0]);
    case 'scale':
      return { result: await cluster.scale(name, scaleReplicas(b.replicas)) };
    case 'delete': {
      const kind = typeof b.kind === 'string' && b.kind !== '' ? b.kind : 'deployment';
      return { result: await cluster.delete(name, kind) };
    }
    case 'cordon':
      return { result: await cluster.cordon(name, true) };
    case 'uncordon':
      return { result: await cluster.cordon(name, false) };
    case 'drain':
      return { result: await cluster.drain(name) };
    case 'migrate':
      return { result: await cluster.migrate(name, b.node as string) };
    case 'label':
    case 'taint':
      return { result: await cluster.editNode(action, name, b.spec as string) };
  }
}
