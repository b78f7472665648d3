// A small REST client for the Kubernetes API. Configuration and authentication come from the
// kubeconfig, KUBECONFIG or the pod's service account, read as @kubernetes/client-node reads them
// (kubeconfig.ts); that library itself (about 50 MiB of RSS: its generated API, its plugins'
// dependencies) loads only for a user with an exec or auth-provider plugin. Transport is
// node:http(s) with ONE keep-alive agent for the life of the client. We do not use client-node's
// fetch path because it builds a new undici Agent (a new TLS connection) for every request and
// every watch reconnect (operator-practice §1.2), and its Watch gives no way to stop handler
// exceptions from becoming unhandled rejections.
import http from 'node:http';
import https from 'node:https';
import { createInterface } from 'node:readline';
import type { KubeAuth } from './kube-auth.ts';
import { loadKubeAuth } from './kubeconfig.ts';

export const LIMITS = {
  requestTimeoutMs: 30_000, // a plain REST call that takes longer is treated as failed and retried
  maxBodyBytes: 64 * 1024 * 1024, // a LIST larger than this is refused rather than exhausting memory
  retryAfterMaxMs: 60_000, // a server's Retry-After longer than this is not believed (a minute is long enough)
} as const;

/** What the client needs to know about a resource type to build its URLs. */
export interface ResourceType {
  group: string; // '' for the core group
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  deletionTimestamp?: string;
  creationTimestamp?: string;
  managedFields?: Array<{ manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }>;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ObjectList<T> {
  metadata: { resourceVersion?: string; continue?: string };
  items: T[];
}

/** An error answer of the API server, carrying its HTTP status and Status reason. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  readonly body: unknown;
  /** The server's Retry-After (429, 503: API Priority and Fairness, a server starting), in ms. */
  readonly retryAfterMs: number | undefined;
  constructor(status: number, reason: string, message: string, body: unknown, retryAfterMs?: number) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.body = body;
    this.retryAfterMs = retryAfterMs;
  }
}

/**
 * Retry-After as the API server sends it (delay-seconds; an HTTP date is accepted too), in ms,
 * at most LIMITS.retryAfterMaxMs.
 */
export function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v) return undefined;
  let ms: number;
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) ms = Math.round(Number(v) * 1000);
  else {
    if (!/[a-z]/i.test(v)) return undefined; // neither delay-seconds nor a date
    const at = Date.parse(v);
    if (!Number.isFinite(at)) return undefined;
    ms = Math.max(0, at - Date.now());
  }
  return Math.min(ms, LIMITS.retryAfterMaxMs);
}

export function isStatus(err: unknown, status: number): boolean {
  return err instanceof ApiError && err.status === status;
}

export function apiVersionOf(t: ResourceType): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

export function resourcePath(
  t: ResourceType,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let p = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  if (t.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${t.plural}`;
  if (name) p += `/${encodeURIComponent(name)}`;
  if (subresource) p += `/${subresource}`;
  return p;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  contentType?: string;
  timeoutMs?: number;
}

/** Called once per finished request; used for metrics and for counting writes. */
export type RequestObserver = (method: string, path: string, status: number) => void;

export interface WatchHandle {
  /** Resolves when the server closes the stream or abort() is called; rejects on transport errors. */
  done: Promise<void>;
  abort(): void;
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export type { KubeAuth } from './kube-auth.ts';

export class KubeClient {
  readonly kc: KubeAuth;
  readonly server: URL;
  private agent: http.Agent | undefined;
  private readonly observers: RequestObserver[] = [];
  /** Writes (POST/PUT/PATCH/DELETE) sent by this client, whatever their outcome. */
  writes = 0;

  constructor(kc: KubeAuth) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster; set a context with a cluster');
    this.kc = kc;
    this.server = new URL(cluster.server);
  }

  /** A client for the current kubeconfig: KUBECONFIG, ~/.kube/config, or the in-cluster service account. */
  static fromDefault(kubeconfigPath?: string): KubeClient {
    return new KubeClient(loadKubeAuth(kubeconfigPath));
  }

  observe(fn: RequestObserver): void {
    this.observers.push(fn);
  }

  /** Drops idle keep-alive connections (call when the client is no longer used). */
  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }

  private async prepare(
    method: string,
    path: string,
    query: Query | undefined,
  ): Promise<{ url: URL; options: https.RequestOptions }> {
    const url = new URL(this.server.toString().replace(/\/$/, '') + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    // applyToHTTPSOptions runs the auth plugins (tokens may rotate) and gives TLS material.
    const opts: https.RequestOptions = { headers: {} };
    await this.kc.applyToHTTPSOptions(opts);
    if (!this.agent) {
      const tls = {
        ca: opts.ca,
        cert: opts.cert,
        key: opts.key,
        servername: opts.servername,
        rejectUnauthorized: opts.rejectUnauthorized,
      };
      this.agent =
        url.protocol === 'https:'
          ? new https.Agent({ keepAlive: true, ...tls })
          : new http.Agent({ keepAlive: true });
    }
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': 'retrokube' };
    for (const [k, v] of Object.entries((opts.headers ?? {}) as Record<string, unknown>))
      headers[k] = String(v);
    return {
      url,
      options: { method, agent: this.agent, headers, auth: opts.auth },
    };
  }

  private notify(method: string, path: string, status: number): void {
    if (WRITE_METHODS.has(method)) this.writes++;
    for (const o of this.observers) o(method, path, status);
  }

  async request<T = unknown>(method: string, path: string, ro: RequestOptions = {}): Promise<T> {
    const { url, options } = await this.prepare(method, path, ro.query);
    const headers = options.headers as Record<string, string>;
    let payload: string | undefined;
    if (ro.body !== undefined) {
      payload = typeof ro.body === 'string' ? ro.body : JSON.stringify(ro.body);
      headers['Content-Type'] = ro.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const transport = url.protocol === 'https:' ? https : http;
    const { status, text, retryAfter } = await new Promise<{
      status: number;
      text: string;
      retryAfter: string | undefined;
    }>((resolve, reject) => {
      const req = transport.request(url, options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > LIMITS.maxBodyBytes) {
            req.destroy(new Error(`response of ${method} ${path} exceeds ${LIMITS.maxBodyBytes} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            text: Buffer.concat(chunks).toString('utf8'),
            retryAfter: res.headers['retry-after'],
          }),
        );
        res.on('error', reject);
      });
      req.setTimeout(ro.timeoutMs ?? LIMITS.requestTimeoutMs, () =>
        req.destroy(new Error(`${method} ${path} timed out`)),
      );
      req.on('error', reject);
      req.end(payload);
    }).catch((err: unknown) => {
      this.notify(method, path, 0);
      throw err;
    });
    this.notify(method, path, status);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON (e.g. a proxy's HTML error page): keep the text
    }
    if (status >= 400) {
      const st = parsed as { message?: string; reason?: string } | undefined;
      const message = typeof st === 'object' && st?.message ? st.message : `HTTP ${status}`;
      throw new ApiError(
        status,
        (typeof st === 'object' && st?.reason) || '',
        message,
        parsed,
        retryAfterMs(retryAfter),
      );
    }
    return parsed as T;
  }

  /**
   * Opens a watch (or any line-delimited JSON stream). Each parsed line goes to `onEvent`; a
   * throwing `onEvent` aborts the stream and rejects `done` instead of escaping.
   */
  async stream(path: string, query: Query, onEvent: (event: unknown) => void): Promise<WatchHandle> {
    const { url, options } = await this.prepare('GET', path, query);
    const transport = url.protocol === 'https:' ? https : http;
    let req: http.ClientRequest | undefined;
    let aborted = false;
    const done = new Promise<void>((resolve, reject) => {
      req = transport.request(url, options, (res) => {
        this.notify('GET', path, res.statusCode ?? 0);
        if ((res.statusCode ?? 0) >= 400) {
          const chunks: Buffer[] = [];
          res.on('error', reject);
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let st: { message?: string; reason?: string } = {};
            try {
              st = JSON.parse(text);
            } catch {
              // keep defaults
            }
            reject(
              new ApiError(
                res.statusCode ?? 0,
                st.reason ?? '',
                st.message ?? `HTTP ${res.statusCode}`,
                st,
                retryAfterMs(res.headers['retry-after']),
              ),
            );
          });
          return;
        }
        const lines = createInterface({ input: res, crlfDelay: Number.POSITIVE_INFINITY });
        // readline re-emits stream errors; the response's own handler below settles `done`.
        lines.on('error', () => {});
        lines.on('line', (line) => {
          if (!line.trim()) return;
          let ev: unknown;
          try {
            ev = JSON.parse(line);
          } catch (err) {
            req?.destroy(new Error(`watch ${path}: unparsable line: ${(err as Error).message}`));
            return;
          }
          try {
            onEvent(ev);
          } catch (err) {
            req?.destroy(err as Error);
          }
        });
        res.on('close', () => resolve());
        res.on('error', (err) => (aborted ? resolve() : reject(err)));
      });
      req.on('error', (err) => (aborted ? resolve() : reject(err)));
      req.end();
    });
    return {
      done,
      abort: () => {
        aborted = true;
        req?.destroy();
      },
    };
  }

  // --- typed helpers -------------------------------------------------------------------------

  get<T extends KubeObject>(t: ResourceType, namespace: string | undefined, name: string): Promise<T> {
    return this.request<T>('GET', resourcePath(t, namespace, name));
  }

  /** GET that answers undefined for 404. */
  async getOrUndefined<T extends KubeObject>(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<T | undefined> {
    try {
      return await this.get<T>(t, namespace, name);
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  list<T extends KubeObject>(t: ResourceType, namespace?: string, query: Query = {}): Promise<ObjectList<T>> {
    return this.request<ObjectList<T>>('GET', resourcePath(t, namespace), { query });
  }

  create<T extends KubeObject>(t: ResourceType, obj: T): Promise<T> {
    return this.request<T>('POST', resourcePath(t, obj.metadata.namespace), { body: obj });
  }

  replace<T extends KubeObject>(t: ResourceType, obj: T, subresource?: string): Promise<T> {
    return this.request<T>('PUT', resourcePath(t, obj.metadata.namespace, obj.metadata.name, subresource), {
      body: obj,
    });
  }

  delete(t: ResourceType, namespace: string | undefined, name: string): Promise<unknown> {
    return this.request('DELETE', resourcePath(t, namespace, name));
  }

  /**
   * Server-side apply: sends `obj` (only the fields this manager owns) with force, so the API
   * server merges it and records `fieldManager` in managedFields. `subresource` 'status' applies
   * to /status.
   */
  apply<T extends KubeObject>(
    t: ResourceType,
    obj: KubeObject,
    fieldManager: string,
    opts: { subresource?: string; force?: boolean; dryRun?: boolean } = {},
  ): Promise<T> {
    const name = obj.metadata.name;
    if (!name) throw new Error('server-side apply needs metadata.name');
    return this.request<T>('PATCH', resourcePath(t, obj.metadata.namespace, name, opts.subresource), {
      body: { apiVersion: apiVersionOf(t), kind: t.kind, ...obj },
      contentType: 'application/apply-patch+yaml',
      query: {
        fieldManager,
        force: opts.force ?? true,
        fieldValidation: 'Strict',
        dryRun: opts.dryRun ? 'All' : undefined,
      },
    });
  }

  mergePatch<T extends KubeObject>(
    t: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    subresource?: string,
  ): Promise<T> {
    return this.request<T>('PATCH', resourcePath(t, namespace, name, subresource), {
      body: patch,
      contentType: 'application/merge-patch+json',
    });
  }
}

/** Well-known built-in types the runtime and controllers use. */
export const CORE = {
  deployment: { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
  service: { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true },
  secret: { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true },
  configMap: { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true },
  namespace: { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false },
  event: { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
  lease: { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true },
  crd: {
    group: 'apiextensions.k8s.io',
    version: 'v1',
    plural: 'customresourcedefinitions',
    kind: 'CustomResourceDefinition',
    namespaced: false,
  },
} as const satisfies Record<string, ResourceType>;
