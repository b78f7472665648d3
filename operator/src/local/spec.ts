// The local reading of the resources `retrokube up FILE` runs: the same `OberonKube` (and optional
// `OberonAir`, `Secret`) documents users apply to Kubernetes (issue 7's OberonKube fields), parsed
// and checked here with errors that name the field. Pure: no I/O except what the caller hands in.
import { parseAllDocuments } from 'yaml';
import { checkClusterName, keyFromHex } from '../air/kubenet.ts';

export const LIMITS = {
  minNodes: 1, // a cluster needs one node to run anything
  maxNodes: 20, // OberonKube's ceiling (issue 7): 20 nodes + plane fit one host core with our idle sleep
  nodeNameChars: 6, // heartbeat layout: 1 tag + 6 name + 1 count + 10 ids + 2 counter + 4 MAC
  maxReplicas: 200, // 20 nodes × capacity 10
  deploymentNameChars: 24, // Kube's object names are ARRAY 40 and the plane appends "-rsN-seq"
  moduleNameChars: 15, // the image name on the air (spec message) is at most 15 characters
  maxDeployments: 8, // boot commands are at most 240 printable characters in all
  bootChars: 240, // Boot's documented limit on the serial command text
  keyHexDigits: 16, // HalfSipHash key: 64 bits
} as const;

export const API_VERSION = 'retrokube.io/v1alpha1';

export interface Deployment {
  name: string;
  replicas: number;
  module: string;
}

/** One Oberon cluster to run on this machine. */
export interface LocalKube {
  /** metadata.name of the OberonKube. */
  name: string;
  nodes: number;
  /** Node names (node-a, node-b, ...). */
  nodeNames: string[];
  cluster: string;
  /** The key as hex, from the Secret of keySecretRef; null = generate one (kept in the state folder). */
  key: string | null;
  deployments: Deployment[];
  loss: number;
  runtime: 'pod' | 'kubevirt';
  memory?: string;
  /** metadata.labels: what a Rollout's selector matches (and blue/green's groups). */
  labels?: Record<string, string>;
}

export const SAMPLE_DEPLOYMENTS = 'web 4 Ticker; api 2 Ticker2';

/** The embedded default: a plane and 3 nodes running the sample deployments. */
export const SAMPLE_YAML = `apiVersion: ${API_VERSION}
kind: OberonKube
metadata:
  name: sample
spec:
  nodes: 3
  cluster: kube
  deployments: "${SAMPLE_DEPLOYMENTS}"
`;

export class SpecError extends Error {}

const fail = (doc: string, field: string, why: string): never => {
  throw new SpecError([doc, field, why].filter((x) => x !== '').join(' '));
};

export const nodeName = (i: number): string => `node-${String.fromCharCode(97 + i)}`;

/** "web 4 Ticker; api 2 Ticker2" → deployments; errors name the field and the entry. */
export function parseDeployments(text: string, where = 'spec.deployments'): Deployment[] {
  if (typeof text !== 'string') fail(where, '', 'must be a string like "web 4 Ticker; api 2 Ticker2"');
  const entries = text
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (entries.length > LIMITS.maxDeployments)
    fail(
      where,
      '',
      `lists ${entries.length} deployments; at most ${LIMITS.maxDeployments} fit the boot commands`,
    );
  const seen = new Set<string>();
  return entries.map((e) => {
    const parts = e.split(/\s+/);
    if (parts.length !== 3) fail(where, `"${e}"`, 'is not "name replicas Module" (e.g. "web 4 Ticker")');
    const [name, rep, module] = parts;
    if (!/^[a-z][a-z0-9]*$/.test(name) || name.length > LIMITS.deploymentNameChars)
      fail(
        where,
        `"${e}"`,
        `has a bad name "${name}" (lower-case letters and digits, ≤ ${LIMITS.deploymentNameChars})`,
      );
    const replicas = Number(rep);
    if (!/^\d+$/.test(rep) || replicas > LIMITS.maxReplicas)
      fail(where, `"${e}"`, `has a bad replica count "${rep}" (a whole number 0..${LIMITS.maxReplicas})`);
    if (!/^[A-Za-z][A-Za-z0-9]*$/.test(module) || module.length > LIMITS.moduleNameChars)
      fail(
        where,
        `"${e}"`,
        `has a bad module "${module}" (an Oberon module name, ≤ ${LIMITS.moduleNameChars} chars)`,
      );
    if (seen.has(name)) fail(where, `"${e}"`, `repeats the deployment "${name}"`);
    seen.add(name);
    return { name, replicas, module };
  });
}

type Doc = Record<string, unknown>;
const isObj = (x: unknown): x is Doc => typeof x === 'object' && x !== null && !Array.isArray(x);

function checkKeyHex(hex: string, where: string): string {
  if (!/^[0-9a-fA-F]{0,16}$/.test(hex)) fail(where, '', `must be 0–${LIMITS.keyHexDigits} hex digits`);
  keyFromHex(hex);
  return hex.toLowerCase();
}

/** The key held by a Secret (stringData or base64 data), under `key` unless keySecretRef names another. */
function secretKey(secret: Doc, entry: string, where: string): string {
  const sd = isObj(secret.stringData) ? secret.stringData : {};
  const d = isObj(secret.data) ? secret.data : {};
  if (typeof sd[entry] === 'string')
    return checkKeyHex(String(sd[entry]).trim(), `${where}.stringData.${entry}`);
  if (typeof d[entry] === 'string')
    return checkKeyHex(
      Buffer.from(String(d[entry]), 'base64').toString('utf8').trim(),
      `${where}.data.${entry}`,
    );
  return fail(where, `data.${entry}`, 'is missing (the key as up to 16 hex digits)');
}

function quantity(x: unknown, where: string): string {
  if (typeof x !== 'string' || !/^\d+(\.\d+)?(Ki|Mi|Gi|k|M|G)?$/.test(x))
    fail(where, '', `must be a quantity like "128Mi", got ${JSON.stringify(x)}`);
  return x as string;
}

/** A FILE's documents by kind (Secrets by name); unknown kinds and bad apiVersions refused, naming the field. */
export interface FileDocs {
  kubes: Doc[];
  airs: Doc[];
  secrets: Map<string, Doc>;
  rollouts: Doc[];
}

export function readFileDocs(text: string, file = 'FILE'): FileDocs {
  const out: FileDocs = { kubes: [], airs: [], secrets: new Map(), rollouts: [] };
  parseAllDocuments(text).forEach((d, i) => {
    if (d.errors.length > 0)
      throw new SpecError(`${file}: document ${i + 1} is not YAML: ${d.errors[0].message}`);
    const o = d.toJSON() as unknown;
    if (o === null || o === undefined) return;
    if (!isObj(o)) throw new SpecError(`${file}: document ${i + 1} is not a mapping`);
    const kind = o.kind;
    const where = `${file} document ${i + 1} (${String(kind)})`;
    if (kind === 'Secret') {
      if (o.apiVersion !== 'v1') fail(where, 'apiVersion', 'must be v1 for a Secret');
      const name = isObj(o.metadata) ? o.metadata.name : undefined;
      if (typeof name !== 'string' || !name) fail(where, 'metadata.name', 'is required');
      out.secrets.set(name as string, o);
      return;
    }
    if (kind === 'SheetCluster') return; // run beside the OberonKube (local/sheets.ts reads it)
    if (kind !== 'OberonKube' && kind !== 'OberonAir' && kind !== 'Rollout')
      fail(
        where,
        'kind',
        `"${String(kind)}" is not known here; use OberonKube, OberonAir, SheetCluster, Rollout or Secret`,
      );
    if (o.apiVersion !== API_VERSION) fail(where, 'apiVersion', `must be ${API_VERSION}`);
    (kind === 'OberonKube' ? out.kubes : kind === 'OberonAir' ? out.airs : out.rollouts).push(o);
  });
  return out;
}

/**
 * Reads a FILE's documents: exactly one OberonKube, optional OberonAir (its loss) and Secrets
 * (the key of keySecretRef). Unknown kinds and bad fields are refused with the field named.
 * (A FILE with several OberonKubes or Rollouts is a fleet: local/fleet-spec.ts reads it.)
 */
export function parseLocalFile(text: string, file = 'FILE'): LocalKube {
  const docs = readFileDocs(text, file);
  if (docs.kubes.length !== 1)
    throw new SpecError(`${file}: kind must hold exactly one OberonKube, found ${docs.kubes.length}`);
  return parseKubeDoc(docs.kubes[0], docs, file);
}

/** One OberonKube document (its key from the FILE's Secrets, its loss from an OberonAir). */
export function parseKubeDoc(k: Doc, docs: Pick<FileDocs, 'airs' | 'secrets'>, file = 'FILE'): LocalKube {
  const { airs, secrets } = docs;
  const where = `${file} OberonKube`;
  const md = isObj(k.metadata) ? k.metadata : {};
  const name = typeof md.name === 'string' ? md.name : fail(where, 'metadata.name', 'is required');
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) fail(where, 'metadata.name', 'must be a DNS label');
  const labels: Record<string, string> = {};
  if (md.labels !== undefined) {
    if (!isObj(md.labels)) fail(where, 'metadata.labels', 'must be a map of label: value');
    for (const [l, v] of Object.entries(md.labels as Doc)) {
      if (typeof v !== 'string') fail(where, `metadata.labels.${l}`, 'must be a string (quote numbers)');
      labels[l] = v as string;
    }
  }
  const spec = isObj(k.spec) ? k.spec : fail(where, 'spec', 'is required');
  const known = [
    'nodes',
    'cluster',
    'keySecretRef',
    'deployments',
    'runtime',
    'memory',
    'storageClass',
    'loss',
  ];
  // Accepting an air and then using another would be worse than saying no (issue 17 item 14).
  if (spec.air !== undefined)
    fail(
      where,
      'spec.air',
      'is not used by "retrokube up": it runs its own air (a relay on loopback, its key in the state folder). Remove spec.air; set the loss with spec.loss or an OberonAir in the FILE, and join single machines to another relay with "retrokube machine run DISK --air HOST:PORT"',
    );
  for (const f of Object.keys(spec))
    if (!known.includes(f))
      fail(where, `spec.${f}`, `is not an OberonKube field (known: ${known.join(', ')})`);

  const nodes = spec.nodes ?? 2;
  if (!Number.isInteger(nodes) || (nodes as number) < LIMITS.minNodes || (nodes as number) > LIMITS.maxNodes)
    fail(
      where,
      'spec.nodes',
      `must be a whole number ${LIMITS.minNodes}..${LIMITS.maxNodes}, got ${JSON.stringify(nodes)}`,
    );
  const cluster = spec.cluster ?? 'kube';
  if (typeof cluster !== 'string') fail(where, 'spec.cluster', 'must be a string');
  try {
    checkClusterName(cluster as string);
  } catch (e) {
    fail(where, 'spec.cluster', (e as Error).message);
  }
  const deployments = parseDeployments((spec.deployments ?? '') as string, `${where} spec.deployments`);
  const runtime = spec.runtime ?? 'pod';
  if (runtime !== 'pod' && runtime !== 'kubevirt') fail(where, 'spec.runtime', 'must be pod or kubevirt');
  const memory = spec.memory === undefined ? undefined : quantity(spec.memory, `${where} spec.memory`);
  let loss: unknown = spec.loss;
  for (const a of airs) {
    const as = isObj(a.spec) ? a.spec : {};
    if (loss === undefined && as.loss !== undefined) loss = as.loss;
  }
  loss = loss ?? 0;
  if (typeof loss !== 'number' || !(loss >= 0 && loss <= 1))
    fail(where, 'spec.loss', 'must be a probability 0..1');

  let key: string | null = null;
  if (spec.keySecretRef !== undefined) {
    const ref = spec.keySecretRef;
    if (!isObj(ref) || typeof ref.name !== 'string')
      fail(where, 'spec.keySecretRef', 'must be {name: SECRET, key?: ENTRY}');
    const r = ref as Doc;
    const secret = secrets.get(r.name as string);
    if (!secret)
      fail(where, 'spec.keySecretRef.name', `names Secret "${String(r.name)}", which is not in ${file}`);
    key = secretKey(
      secret as Doc,
      typeof r.key === 'string' ? r.key : 'key',
      `${file} Secret ${String(r.name)}`,
    );
  }
  const n = nodes as number;
  const out: LocalKube = {
    name,
    nodes: n,
    nodeNames: Array.from({ length: n }, (_, i) => nodeName(i)),
    cluster: cluster as string,
    key,
    deployments,
    loss: loss as number,
    runtime: runtime as 'pod' | 'kubevirt',
    memory,
    labels,
  };
  const plane = planeCommands(out, '0'.repeat(LIMITS.keyHexDigits));
  if (plane.length > LIMITS.bootChars)
    fail(
      where,
      'spec.deployments',
      `make the plane's boot commands ${plane.length} characters; at most ${LIMITS.bootChars}`,
    );
  return out;
}

/** The plane's boot commands: start, serve, and Ensure (never Apply: a reboot must not undo a rollout). */
export function planeCommands(k: LocalKube, key: string, withDeployments = true): string {
  const parts = ['Kube.Start', `KubeNet.Serve ${k.cluster} ${key}`];
  if (withDeployments) parts.push(...ensureCommands(k));
  return parts.join(';');
}

export const ensureCommands = (k: LocalKube): string[] =>
  k.deployments.map((d) => `Kube.Ensure ${d.name} ${d.replicas} ${d.module}`);

export const nodeCommands = (k: LocalKube, node: string, key: string): string =>
  `KubeNet.Join ${node} ${k.cluster} ${key}`;

export const totalReplicas = (k: LocalKube): number => k.deployments.reduce((s, d) => s + d.replicas, 0);
