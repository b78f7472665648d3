// A SheetCluster from a FILE, run on this machine by `retrokube up FILE`: the operator's own
// rendering (sheetcluster-render.ts) of the apiserver and node-agent pods, each container run as
// a local process (pods.ts) — the workbook in the state folder instead of a PVC, generated Secrets
// derived from the state folder's seed, Secrets the spec names taken from the FILE — and
// spec.deployments kept in the sheet by the same ownership rule as the operator's.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TypeRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseAllDocuments } from 'yaml';
import { API_VERSION } from '../api/schema.ts';
import { SheetClusterSpec } from '../api/sheetcluster.ts';
import { applyDeployments, deploymentsToApply } from '../controllers/sheetcluster-observe.ts';
import {
  derivedSecret,
  renderSheetCluster,
  type SheetClusterObject,
  type SheetSettings,
  sheetNodeName,
  sheetSettings,
} from '../controllers/sheetcluster-render.ts';
import type { KubeObject } from '../runtime/client.ts';
import { SheetsClient } from '../sheets/ctl/client.ts';
import { type Container, type LocalProcess, localArgs, resolveEnv, runCli } from './pods.ts';
import { SpecError } from './spec.ts';

export const LIMITS = {
  startMs: 60_000, // the apiserver must print its address within this
  enforceMs: 5_000, // spec.deployments are compared with the sheet this often
  nodeCpu: '1000', // what an agent advertises by default locally (its container limit in a cluster)
  nodeMemory: '512',
} as const;

type Doc = Record<string, unknown>;
const isObj = (x: unknown): x is Doc => typeof x === 'object' && x !== null && !Array.isArray(x);

export interface LocalSheets {
  cluster: SheetClusterObject;
  /** Secret name → entry → value, from the FILE's Secrets (stringData or base64 data). */
  secrets: Map<string, Record<string, string>>;
}

/** The FILE's SheetCluster (at most one) and its Secrets; null when the FILE has none. Errors name the field. */
export function parseSheetsFile(text: string, file = 'FILE'): LocalSheets | null {
  const docs = parseAllDocuments(text)
    .map((d) => d.toJSON() as unknown)
    .filter(isObj);
  const found = docs.filter((d) => d.kind === 'SheetCluster');
  if (found.length === 0) return null;
  if (found.length > 1) throw new SpecError(`${file}: at most one SheetCluster, found ${found.length}`);
  const d = found[0];
  const where = `${file} SheetCluster`;
  if (d.apiVersion !== API_VERSION) throw new SpecError(`${where} apiVersion must be ${API_VERSION}`);
  const md = isObj(d.metadata) ? d.metadata : {};
  const name = md.name;
  if (typeof name !== 'string' || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 30)
    throw new SpecError(`${where} metadata.name must be a DNS label of at most 30 characters`);
  const spec = isObj(d.spec) ? d.spec : {};
  // Quantities are Unsafe schemas (int-or-string for the API server); TypeBox checks them as such.
  if (!TypeRegistry.Has('Unsafe'))
    TypeRegistry.Set('Unsafe', (_s, v) => typeof v === 'string' || Number.isInteger(v));
  const withDefaults = Value.Default(SheetClusterSpec, structuredClone(spec));
  const err = [...Value.Errors(SheetClusterSpec, withDefaults)][0];
  if (err) throw new SpecError(`${where} spec${err.path.replaceAll('/', '.')}: ${err.message}`);
  const runtimes = (spec.runtimes as string[] | undefined) ?? [];
  if (runtimes.includes('docker') !== (spec.dockerSocket !== undefined))
    throw new SpecError(`${where} spec.dockerSocket: the docker runtime and dockerSocket go together`);
  const secrets = new Map<string, Record<string, string>>();
  for (const s of docs.filter((x) => x.kind === 'Secret')) {
    const sname = isObj(s.metadata) ? String(s.metadata.name) : '';
    const entries: Record<string, string> = {};
    if (isObj(s.data))
      for (const [k, v] of Object.entries(s.data))
        entries[k] = Buffer.from(String(v), 'base64').toString('utf8');
    if (isObj(s.stringData)) for (const [k, v] of Object.entries(s.stringData)) entries[k] = String(v);
    secrets.set(sname, entries);
  }
  return {
    cluster: {
      apiVersion: API_VERSION,
      kind: 'SheetCluster',
      metadata: { name, namespace: 'local', uid: `local-${name}` },
      spec: withDefaults as SheetClusterObject['spec'],
    },
    secrets,
  };
}

export interface RunningSheets {
  url: string;
  settings: SheetSettings;
  client: SheetsClient;
  stop(): Promise<void>;
}

/**
 * Starts the SheetCluster's apiserver and agents as local processes (the state folder holds the
 * workbook) and keeps spec.deployments in the sheet. `seed` derives the generated token and key.
 */
export async function startLocalSheets(
  f: LocalSheets,
  o: { dir: string; seed: string; out: (line: string) => void },
): Promise<RunningSheets> {
  const s = sheetSettings(f.cluster, 'local');
  const uid = f.cluster.metadata.uid as string;
  const values = {
    token: derivedSecret(o.seed, 'token', uid),
    signingKey: derivedSecret(o.seed, 'signing', uid),
  };
  const generated = new Map(
    renderSheetCluster(f.cluster, s, values).secrets.map((x) => [x.metadata.name, x]),
  );
  const secret = (ref: { name: string; key: string }): string => {
    const g = generated.get(ref.name) as { stringData?: Record<string, string> } | undefined;
    const v = g?.stringData?.[ref.key] ?? f.secrets.get(ref.name)?.[ref.key];
    if (v === undefined)
      throw new SpecError(
        `Secret ${ref.name} entry "${ref.key}" is named by the SheetCluster but not in the FILE`,
      );
    return v;
  };
  const token = secret(s.token);
  const key = secret(s.signingKey);
  const pods = renderSheetCluster(f.cluster, s, values);
  const home = join(o.dir, `sheets-${s.name}`);
  mkdirSync(home, { recursive: true });
  const mounts: Record<string, string> = { workbook: home, tmp: home };
  if (s.store.type === 'google') {
    const creds = secret(s.store.credentials);
    writeFileSync(join(home, s.store.credentials.key), creds, { mode: 0o600 });
    mounts.google = home;
  }
  const container = (x: KubeObject): Container =>
    (x as unknown as { spec: { template: { spec: { containers: Container[] } } } }).spec.template.spec
      .containers[0];
  const procs: LocalProcess[] = [];
  const stop = async () => {
    clearInterval(timer);
    await Promise.all(procs.map((p) => p.stop()));
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const api = container(pods.deployment);
    const apiserver = runCli(
      localArgs(api, mounts, { '--host': '127.0.0.1', '--port': '0' }),
      await resolveEnv(api, { secret, fields: {} }),
    );
    procs.push(apiserver);
    const url = (await apiserver.waitFor(/listening on (http:\/\/\S+)/, LIMITS.startMs))[1];
    o.out(
      `SheetCluster ${s.name}: apiserver on ${url} (workbook ${s.store.type === 'xlsx' ? join(home, 'cluster.xlsx') : `google:${s.store.spreadsheetId}`})`,
    );
    const agent = container(pods.agents);
    for (let i = 0; i < s.nodes; i++) {
      const work = join(home, sheetNodeName(i));
      mkdirSync(work, { recursive: true, mode: 0o700 });
      const env = await resolveEnv(agent, {
        secret,
        fields: { "metadata.labels['apps.kubernetes.io/pod-index']": String(i), 'status.podIP': '127.0.0.1' },
        resources: { 'limits.cpu': LIMITS.nodeCpu, 'limits.memory': LIMITS.nodeMemory },
      });
      procs.push(runCli(localArgs(agent, { work, tmp: work }), { ...env, WEBAPP_URL: url }));
    }
    o.out(
      `SheetCluster ${s.name}: ${s.nodes} node agent(s) (${s.runtimes.join(', ')}${s.runtimes.includes('process') ? ': process RUNS SHELL COMMANDS FROM CELLS on this machine' : ''})`,
    );
    const client = new SheetsClient({ url, token, key });
    // spec.deployments, by the operator's ownership rule: the spec owns the fields it sets.
    const enforce = async () => {
      const toApply = await deploymentsToApply(s.deployments, await client.get('deployments'));
      if (!toApply.length) return;
      const r = await applyDeployments(
        url,
        token,
        key,
        toApply.map((t) => t.deployment),
      );
      for (const line of [...r.applied, ...r.refused])
        o.out(`SheetCluster ${s.name}: spec.deployments ${line}`);
    };
    await enforce();
    timer = setInterval(() => void enforce().catch(() => undefined), LIMITS.enforceMs);
    return { url, settings: s, client, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
