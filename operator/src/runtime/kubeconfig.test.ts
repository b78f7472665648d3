// kubeconfig.ts reads a kubeconfig as @kubernetes/client-node's KubeConfig does: every case here is
// loaded by both, and what our client takes from a configuration (client.ts prepare: the cluster,
// TLS material, headers, basic auth, or the error) must come out the same.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { SERVICE_ACCOUNT_DIR } from './in-cluster-auth.ts';
import type { KubeAuth } from './kube-auth.ts';
import { loadKubeAuth } from './kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'rk-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(join(dir, 'ca.crt'), 'CA PEM');
writeFileSync(join(dir, 'client.crt'), 'CERT PEM');
writeFileSync(join(dir, 'client.key'), 'KEY PEM');
writeFileSync(join(dir, 'token'), 'file-token');
const b64 = (s: string) => Buffer.from(s).toString('base64');

let n = 0;
function file(text: string): string {
  const f = join(dir, `config-${n++}`);
  writeFileSync(f, text);
  return f;
}

/** What our client takes from a configuration, or the error it gets. */
async function seen(auth: () => KubeAuth): Promise<unknown> {
  try {
    const a = auth();
    const cluster = a.getCurrentCluster();
    const opts: https.RequestOptions = { headers: {} };
    try {
      await a.applyToHTTPSOptions(opts);
    } catch (err) {
      return { cluster, requestError: (err as Error).message };
    }
    const { ca, cert, key, servername, rejectUnauthorized, headers, auth: basic } = opts;
    const text = (b: unknown) => (b === undefined ? undefined : String(b));
    return {
      cluster,
      ca: text(ca),
      cert: text(cert),
      key: text(key),
      servername,
      rejectUnauthorized,
      headers,
      auth: basic,
    };
  } catch (err) {
    return { loadError: (err as Error).message };
  }
}

const theirs = (path?: string) => () => {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
};

/** The fields of client-node's cluster entry our callers read (name, server, CA, TLS). */
function clusterFields(c: unknown): unknown {
  if (!c || typeof c !== 'object') return c;
  const { name, server, caData, caFile, skipTLSVerify, tlsServerName } = c as Record<string, unknown>;
  return { name, server, caData, caFile, skipTLSVerify: !!skipTLSVerify, tlsServerName };
}
const normal = (s: unknown) =>
  s && typeof s === 'object' && 'cluster' in s ? { ...s, cluster: clusterFields(s.cluster) } : s;

const yamlConfig = (cluster: string, user: string, context = '    cluster: c\n    user: u') => `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
${cluster}
users:
- name: u
  user:
${user}
contexts:
- name: x
  context:
${context}
current-context: x
`;

const CASES: Record<string, string> = {
  'a token and a CA file (the envtest harness)': yamlConfig(
    '    server: https://127.0.0.1:6443/\n    certificate-authority: ca.crt',
    '    token: abc',
  ),
  'client certificate and key as data, CA as data, a TLS server name': yamlConfig(
    `    server: https://k.example:443\n    certificate-authority-data: ${b64('CA DATA')}\n    tls-server-name: kubernetes`,
    `    client-certificate-data: ${b64('CERT DATA')}\n    client-key-data: ${b64('KEY DATA')}`,
  ),
  'client certificate and key as (relative) files, impersonation': yamlConfig(
    `    server: https://k.example\n    certificate-authority: ${join(dir, 'ca.crt')}`,
    '    client-certificate: client.crt\n    client-key: client.key\n    as: someone',
  ),
  'insecure, basic auth': yamlConfig(
    '    server: https://k.example\n    insecure-skip-tls-verify: true',
    '    username: ada\n    password: secret',
  ),
  'basic auth without a password': yamlConfig('    server: https://k.example', '    username: ada'),
  'a token file (read at load, relative to the working directory)': yamlConfig(
    '    server: https://k.example',
    `    token-file: ${join(dir, 'token')}`,
  ),
  'plain http without insecure-skip-tls-verify (refused per request)': yamlConfig(
    '    server: http://127.0.0.1:8080',
    '    token: t',
  ),
  'plain http with insecure-skip-tls-verify': yamlConfig(
    '    server: http://127.0.0.1:8080\n    insecure-skip-tls-verify: true',
    '    token: t',
  ),
  'a context without a user (nothing applied, not even the CA)': yamlConfig(
    `    server: https://k.example\n    certificate-authority-data: ${b64('CA')}`,
    '    token: t',
    '    cluster: c',
  ),
  'a current context that is not there': yamlConfig('    server: https://k.example', '    token: t').replace(
    'current-context: x',
    'current-context: nope',
  ),
  JSON: JSON.stringify({
    clusters: [{ name: 'c', cluster: { server: 'https://k.example', 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'u', user: { token: 'j' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  }),
  'merge keys (not merged: a plain key to both)': `clusters:
- name: c
  cluster: &base
    server: https://k.example
users:
- name: u
  user: {token: m}
contexts:
- name: x
  context: {cluster: c, user: u}
- name: y
  context:
    <<: {cluster: c}
    user: u
current-context: y
`,
  'a cluster without a server': yamlConfig('    insecure-skip-tls-verify: true', '    token: t'),
  'a user without a name': 'users:\n- user: {token: t}\n',
  'a context without a cluster': yamlConfig('    server: https://k.example', '    token: t', '    user: u'),
  'a missing CA file (refused per request)': yamlConfig(
    '    server: https://k.example\n    certificate-authority: /nonexistent/ca.crt',
    '    token: t',
  ),
};

describe('loadKubeAuth reads a kubeconfig as client-node does', () => {
  for (const [name, text] of Object.entries(CASES)) {
    it(name, async () => {
      const f = file(text);
      const ours = normal(await seen(() => loadKubeAuth(f)));
      expect(ours).toEqual(normal(await seen(theirs(f))));
      expect(ours).not.toHaveProperty('loadError', expect.stringMatching(/Cannot read|undefined/));
    });
  }

  it('a user with an exec plugin is handed to client-node (its object, its behaviour)', () => {
    const f = file(
      yamlConfig(
        '    server: https://k.example',
        '    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/true',
      ),
    );
    expect(loadKubeAuth(f)).toBeInstanceOf(KubeConfig);
    const plain = file(yamlConfig('    server: https://k.example', '    token: t'));
    expect(loadKubeAuth(plain)).not.toBeInstanceOf(KubeConfig);
  });
});

describe('loadKubeAuth without a path: KUBECONFIG, ~/.kube/config, in-cluster, nothing', () => {
  const withEnv = async (env: Record<string, string | undefined>, body: () => Promise<void>) => {
    const saved = { ...process.env };
    for (const [k, v] of Object.entries(env)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    try {
      await body();
    } finally {
      for (const k of Object.keys(env)) {
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      }
    }
  };
  const one = (cluster: string, user: string, ctx: string, current?: string) =>
    JSON.stringify({
      clusters: [{ name: cluster, cluster: { server: `https://${cluster}.example` } }],
      users: [{ name: user, user: { token: user } }],
      contexts: [{ name: ctx, context: { cluster, user } }],
      ...(current ? { 'current-context': current } : {}),
    });

  it('KUBECONFIG files merged: the later current-context wins', async () => {
    const a = file(one('a', 'ua', 'ca', 'ca'));
    const b = file(one('b', 'ub', 'cb', 'cb'));
    await withEnv({ KUBECONFIG: `${a}${delimiter}${b}` }, async () => {
      const ours = normal(await seen(() => loadKubeAuth()));
      expect(ours).toEqual(normal(await seen(theirs())));
      expect(ours).toMatchObject({ headers: { Authorization: 'Bearer ub' } });
    });
  });

  it('KUBECONFIG files that repeat a name are refused', async () => {
    const a = file(one('a', 'ua', 'ca', 'ca'));
    const b = file(one('a', 'ub', 'cb'));
    await withEnv({ KUBECONFIG: `${a}${delimiter}${b}` }, async () => {
      expect(await seen(() => loadKubeAuth())).toEqual(await seen(theirs()));
      expect(await seen(() => loadKubeAuth())).toEqual({ loadError: 'Duplicate cluster: a' });
    });
  });

  it('~/.kube/config when there is no KUBECONFIG', async () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(join(home, '.kube', 'config'), one('h', 'uh', 'ch', 'ch'));
    await withEnv({ KUBECONFIG: undefined, HOME: home }, async () => {
      const ours = normal(await seen(() => loadKubeAuth()));
      expect(ours).toEqual(normal(await seen(theirs())));
      expect(ours).toMatchObject({ headers: { Authorization: 'Bearer uh' } });
    });
  });

  it('nothing at all (no home config, no service account): http://localhost:8080, refused', async () => {
    await withEnv({ KUBECONFIG: undefined, HOME: join(dir, 'nobody') }, async () => {
      const ours = normal(
        await seen(() => loadKubeAuth(undefined, process.env, process.platform, join(dir, 'no-sa'))),
      );
      expect(ours).toMatchObject({ requestError: expect.stringMatching(/HTTP protocol is not allowed/) });
      // client-node always reads the real service-account folder: compare where it is absent (a host,
      // not a pod).
      if (!existsSync(join(SERVICE_ACCOUNT_DIR, 'token'))) expect(ours).toEqual(normal(await seen(theirs())));
    });
  });
});
