// Test helpers: a real apiserver on 127.0.0.1 over a store, and a client speaking the reference's
// wire format (GET ?token=&kind=, POST JSON, optional HMAC headers).
import { signRequest } from '../signing.ts';
import { MemoryStore } from '../store/memory.ts';
import type { Store } from '../store/types.ts';
import { type ApiServer, type ApiServerOptions, createApiServer } from './server.ts';

export const TOKEN = 'test-token';

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON replies field by field; each assertion checks the shape.
export type Json = any;
export interface Reply {
  status: number;
  body: Json;
}
export interface PostOptions {
  token?: string | null;
  key?: string;
  raw?: string;
  headers?: Record<string, string>;
}

export interface Kit {
  server: ApiServer;
  store: Store;
  url: string;
  get(kind?: string, token?: string, path?: string): Promise<Reply>;
  post(body: unknown, o?: PostOptions): Promise<Reply>;
  heartbeat(node: string, pods?: unknown[], extra?: Record<string, unknown>): Promise<Json>;
  close(): Promise<void>;
}

export async function startKit(o: Partial<ApiServerOptions> = {}): Promise<Kit> {
  const store = o.store ?? new MemoryStore();
  const server = await createApiServer({
    token: TOKEN,
    samples: false,
    metricsIntervalSec: 3600,
    ...o,
    store,
  });
  const addr = await server.listen(0, '127.0.0.1');
  const url = addr.replace('[::1]', '127.0.0.1');
  const kit: Kit = {
    server,
    store,
    url,
    async get(kind, token = TOKEN, path = '/') {
      const q = new URLSearchParams({ token });
      if (kind !== undefined) q.set('kind', kind);
      const r = await fetch(`${url}${path}?${q}`);
      return { status: r.status, body: await r.json() };
    },
    async post(body, opt = {}) {
      const withToken = opt.token === null ? body : { token: opt.token ?? TOKEN, ...(body as object) };
      const raw = opt.raw ?? JSON.stringify(withToken);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        ...(opt.key ? signRequest(opt.key, raw) : {}),
        ...opt.headers,
      };
      const r = await fetch(`${url}/`, { method: 'POST', headers, body: raw });
      const text = await r.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: r.status, body: parsed };
    },
    async heartbeat(node, pods = [], extra = {}) {
      const r = await kit.post({ node, ip: '10.0.0.1', cpu_total: 4000, mem_total: 4096, pods, ...extra });
      if (r.status !== 200) throw new Error(`heartbeat ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body;
    },
    async close() {
      await server.close();
      await store.close();
    },
  };
  return kit;
}

/** Reports every Running order as running (what a healthy node agent does). */
export function running(orders: { pods: { name: string; desired: string }[] }) {
  return orders.pods
    .filter((p) => p.desired === 'Running')
    .map((p) => ({ name: p.name, phase: 'Running', container_id: `c-${p.name}` }));
}
