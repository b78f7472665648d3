// A kubeconfig as a KubeAuth (client.ts) without @kubernetes/client-node. That library was loaded
// by every process that made a client only to read this file, and it is most of the operator's
// memory at start: its generated API and its auth plugins' dependencies (undici, jose, openid-client,
// socks, ...) are ~50 MiB of RSS in a process whose goal is 100 MiB (#32). What our client uses of a
// configuration is small (client.ts KubeClient.prepare: the server, TLS material, headers, basic
// auth), so this reads it the way client-node 2.x's KubeConfig does — the same sources in the same
// order, the same fields, the same errors — and hands anything that needs code to run (an `exec`
// credential plugin, an `auth-provider`) or that we do not mirror (Windows homes) to client-node,
// which is then loaded on that path only.
import { accessSync, existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import { createRequire } from 'node:module';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { inClusterAuth, SERVICE_ACCOUNT_DIR } from './in-cluster-auth.ts';
import type { KubeAuth } from './kube-auth.ts';

const require = createRequire(import.meta.url);

/** A cluster entry, with client-node's field names (tests and tools read caData/caFile from it). */
export interface KubeconfigCluster {
  name: string;
  server: string;
  caData?: string;
  caFile?: string;
  skipTLSVerify: boolean;
  tlsServerName?: string;
  proxyUrl?: string;
}

interface KubeconfigUser {
  name: string;
  token?: string;
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
  username?: string;
  password?: string;
  impersonateUser?: string;
  /** Set when the user needs a credential plugin: client-node runs those, not us. */
  plugin: boolean;
}

interface KubeconfigContext {
  name: string;
  cluster: string;
  user?: string;
}

interface Parsed {
  clusters: KubeconfigCluster[];
  users: KubeconfigUser[];
  contexts: KubeconfigContext[];
  currentContext?: string;
}

// Ports client-node's in-cluster config reaches over plain http (it then refuses them, see
// `agentCheck`); such a pod is left to client-node to keep that behaviour.
const IN_CLUSTER_HTTP_PORTS = new Set(['80', '8080', '8001']);

type Raw = Record<string, unknown> | undefined;
const str = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : (v as string));

function parseText(text: string): Raw {
  // The files tools write are often JSON (a subset of YAML): no YAML parser for those. The parser
  // (`yaml`, a dependency of the CLI anyway) loads on the first YAML file. No merge keys (`<<`):
  // client-node's js-yaml takes them as a plain key too (kubeconfig.test.ts).
  if (/^\s*\{/.test(text)) {
    try {
      return JSON.parse(text) as Raw;
    } catch {
      // not JSON after all: YAML below says why
    }
  }
  const { parse } = require('yaml') as typeof import('yaml');
  return parse(text) as Raw;
}

/** One file's entries, validated as client-node validates them (same messages). */
export function parseKubeconfig(text: string): Parsed {
  const obj = parseText(text);
  if (!obj || typeof obj !== 'object') throw new Error('the kubeconfig is empty or not a mapping');
  const list = (v: unknown): Array<Record<string, unknown>> =>
    Array.isArray(v) ? (v as Array<Record<string, unknown>>) : [];
  const clusters = list(obj.clusters).map((e, i): KubeconfigCluster => {
    if (!e.name) throw new Error(`clusters[${i}].name is missing`);
    const c = e.cluster as Raw;
    if (!c) throw new Error(`clusters[${i}].cluster is missing`);
    if (!c.server) throw new Error(`clusters[${i}].cluster.server is missing`);
    return {
      name: e.name as string,
      server: String(c.server).replace(/\/$/, ''),
      caData: str(c['certificate-authority-data']),
      caFile: str(c['certificate-authority']),
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      tlsServerName: str(c['tls-server-name']),
      proxyUrl: str(c['proxy-url']),
    };
  });
  const users = list(obj.users).map((e, i): KubeconfigUser => {
    if (!e.name) throw new Error(`users[${i}].name is missing`);
    const u = (e.user ?? {}) as Record<string, unknown>;
    // client-node reads a token-file once, at load, relative to the working directory.
    const token = u.token
      ? String(u.token)
      : u['token-file']
        ? readFileSync(String(u['token-file'])).toString()
        : undefined;
    return {
      name: e.name as string,
      token,
      certData: str(u['client-certificate-data']),
      certFile: str(u['client-certificate']),
      keyData: str(u['client-key-data']),
      keyFile: str(u['client-key']),
      username: str(u.username),
      password: str(u.password),
      impersonateUser: str(u.as),
      plugin: !!(u.exec || u['auth-provider']),
    };
  });
  const contexts = list(obj.contexts).map((e, i): KubeconfigContext => {
    if (!e.name) throw new Error(`contexts[${i}].name is missing`);
    const c = e.context as Raw;
    if (!c) throw new Error(`contexts[${i}].context is missing`);
    if (!c.cluster) throw new Error(`contexts[${i}].context.cluster is missing`);
    return { name: e.name as string, cluster: c.cluster as string, user: str(c.user) || undefined };
  });
  return { clusters, users, contexts, currentContext: str(obj['current-context']) };
}

function readKubeconfigFile(file: string): Parsed {
  const parsed = parseKubeconfig(readFileSync(file).toString('utf-8'));
  // Relative certificate and key paths are relative to the file (not the token-file: see above).
  const root = dirname(file);
  const abs = (p: string | undefined) => (p && root && !isAbsolute(p) ? join(root, p) : p);
  for (const c of parsed.clusters) c.caFile = abs(c.caFile);
  for (const u of parsed.users) {
    u.certFile = abs(u.certFile);
    u.keyFile = abs(u.keyFile);
  }
  return parsed;
}

/** KUBECONFIG's files merged as client-node merges them: a later current-context wins, a repeated name throws. */
function merge(into: Parsed, more: Parsed): void {
  if (more.currentContext) into.currentContext = more.currentContext;
  const add = <T extends { name: string }>(list: T[], items: T[], what: string) => {
    for (const x of items) {
      if (list.some((y) => y.name === x.name)) throw new Error(`Duplicate ${what}: ${x.name}`);
      list.push(x);
    }
  };
  add(into.clusters, more.clusters, 'cluster');
  add(into.users, more.users, 'user');
  add(into.contexts, more.contexts, 'context');
}

const b64OrFile = (file: string | undefined, data: string | undefined): Buffer | undefined =>
  file ? readFileSync(file) : data ? Buffer.from(data, 'base64') : undefined;

/** The current context's cluster and user as a KubeAuth. */
class KubeconfigAuth implements KubeAuth {
  private readonly cluster: KubeconfigCluster | null;
  private readonly user: KubeconfigUser | null;

  constructor(p: Parsed) {
    const context = p.contexts.find((c) => c.name === p.currentContext);
    this.cluster = (context && p.clusters.find((c) => c.name === context.cluster)) || null;
    this.user = (context && p.users.find((u) => u.name === context.user)) || null;
  }

  get needsPlugin(): boolean {
    return !!this.user?.plugin;
  }

  getCurrentCluster(): KubeconfigCluster | null {
    return this.cluster;
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const { cluster, user } = this;
    // client-node applies nothing, not even the CA, to a context without a user.
    if (user) {
      if (cluster?.skipTLSVerify) opts.rejectUnauthorized = false;
      if (cluster?.tlsServerName) opts.servername = cluster.tlsServerName;
      // Read on every call as client-node does (our client builds its agent from the first).
      const ca = cluster ? b64OrFile(cluster.caFile, cluster.caData) : undefined;
      if (ca) opts.ca = ca;
      const cert = b64OrFile(user.certFile, user.certData);
      if (cert) opts.cert = cert;
      const key = b64OrFile(user.keyFile, user.keyData);
      if (key) opts.key = key;
      const headers = (opts.headers ?? {}) as Record<string, string>;
      opts.headers = headers;
      if (user.impersonateUser !== undefined) headers['Impersonate-User'] = user.impersonateUser;
      if (user.token) headers.Authorization = `Bearer ${user.token}`;
      if (user.username) opts.auth = `${user.username}:${user.password}`;
    }
    // client-node refuses plain http unless the cluster says insecure-skip-tls-verify (createAgent).
    if (cluster && !cluster.proxyUrl && cluster.server.startsWith('http:') && !cluster.skipTLSVerify)
      throw new Error('HTTP protocol is not allowed when skipTLSVerify is not set or false');
  }
}

/** client-node's KubeConfig, loaded only for what this module leaves to it. */
function clientNodeConfig(kubeconfigPath: string | undefined): KubeConfig {
  const { KubeConfig: Config } = require('@kubernetes/client-node') as { KubeConfig: new () => KubeConfig };
  const kc = new Config();
  if (kubeconfigPath) kc.loadFromFile(kubeconfigPath);
  else kc.loadFromDefault();
  return kc;
}

/** What a client authenticates with: `kubeconfigPath`, else KUBECONFIG, ~/.kube/config, the pod's service account. */
export function loadKubeAuth(
  kubeconfigPath?: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  serviceAccountDir: string = SERVICE_ACCOUNT_DIR,
): KubeAuth {
  const fromParsed = (p: Parsed): KubeAuth => {
    const auth = new KubeconfigAuth(p);
    return auth.needsPlugin ? clientNodeConfig(kubeconfigPath) : auth;
  };
  if (kubeconfigPath) return fromParsed(readKubeconfigFile(kubeconfigPath));
  if (platform === 'win32') return clientNodeConfig(undefined); // its home folder rules and WSL
  if (env.KUBECONFIG) {
    const [first, ...rest] = env.KUBECONFIG.split(delimiter).filter((f) => f);
    const parsed = readKubeconfigFile(first as string);
    for (const f of rest) merge(parsed, readKubeconfigFile(f));
    return fromParsed(parsed);
  }
  const home = homeDir(env);
  if (home && existsSync(join(home, '.kube', 'config')))
    return fromParsed(readKubeconfigFile(join(home, '.kube', 'config')));
  if (existsSync(join(serviceAccountDir, 'token'))) {
    // The same service account as client-node's in-cluster config (token re-read once a minute, as
    // its FileAuth does); the odd pods it reaches otherwise (no API Service address, an http port,
    // an unreadable CA) keep client-node's behaviour.
    const port = env.KUBERNETES_SERVICE_PORT ?? '';
    const auth = IN_CLUSTER_HTTP_PORTS.has(port) ? undefined : inClusterAuth(env, serviceAccountDir);
    return auth ?? clientNodeConfig(undefined);
  }
  // Nothing configured: client-node's last resort, which every request then refuses (plain http).
  return new KubeconfigAuth({
    clusters: [{ name: 'cluster', server: 'http://localhost:8080', skipTLSVerify: false }],
    users: [{ name: 'user', plugin: false }],
    contexts: [{ name: 'loaded-context', cluster: 'cluster', user: 'user' }],
    currentContext: 'loaded-context',
  });
}

/** $HOME if it exists (client-node's rule off Windows). */
function homeDir(env: NodeJS.ProcessEnv): string | undefined {
  if (!env.HOME) return undefined;
  try {
    accessSync(env.HOME);
    return env.HOME;
  } catch {
    return undefined;
  }
}
