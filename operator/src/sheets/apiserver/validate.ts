// Request shapes of the apiserver contract (spec §1) as JSON Schemas (TypeBox), and the checks that
// turn a client's object into cells. A shape error is a 400 naming the field; a semantic error in
// one applied object is that object's `invalid: <reason>` result, as in the reference.
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { ValueError } from '@sinclair/typebox/errors';
import { isObjectName, LIMITS as NAME_LIMITS, nameProblem } from '../names.ts';
import { parseKv, parseTaints, LIMITS as SHEET_LIMITS } from '../scheduler/model.ts';
import { RESTART_POLICIES } from '../scheduler/phases.ts';
import { formatPortSpecs, parsePorts } from '../scheduler/ports.ts';
import { TABS } from '../store/schema.ts';
import type { Row } from '../store/types.ts';

export const LIMITS = {
  bodyBytes: 8 * 1024 * 1024, // one POST: an apply of many objects or a big secret fits, a flood does not
  queryChars: 4096, // a GET query string: token + kind are short
  objectsPerApply: 1000, // objects of one kind per apply
  podsPerHeartbeat: 5000, // pods one node may report
  nameChars: NAME_LIMITS.nameChars, // a DNS subdomain, as Kubernetes names
  textChars: 30_000, // a free-text cell (command, env, ...): under Excel's 32,767 cell limit
  replicasMax: SHEET_LIMITS.replicasMax, // per Deployment; more is a typo (the same cap as cells typed in the sheet)
  resourceMax: 100_000_000, // millicores / MiB a request or a node may state
} as const;

const NumOrStr = Type.Union([Type.Number(), Type.String({ maxLength: 64 }), Type.Null()]);
const ReportedPod = Type.Object({
  name: Type.String({ minLength: 1, maxLength: LIMITS.nameChars }),
  phase: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  container_id: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])),
  ports: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
  restarts: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
  exit_code: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  message: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
  spec_hash: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
});

export const HeartbeatBody = Type.Object({
  node: Type.String({ minLength: 1, maxLength: LIMITS.nameChars, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' }),
  ip: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
  cpu_total: Type.Optional(NumOrStr),
  mem_total: Type.Optional(NumOrStr),
  pods: Type.Optional(
    Type.Union([Type.Array(ReportedPod, { maxItems: LIMITS.podsPerHeartbeat }), Type.Null()]),
  ),
});
export type HeartbeatBody = Static<typeof HeartbeatBody>;

const AnyObjects = Type.Optional(
  Type.Union([
    Type.Array(Type.Record(Type.String(), Type.Unknown()), { maxItems: LIMITS.objectsPerApply }),
    Type.Null(),
  ]),
);
const Name = Type.String({ minLength: 1, maxLength: LIMITS.nameChars });
const Spec = Type.String({ minLength: 1, maxLength: 1024 });

export const ActionBodies = {
  apply: Type.Object({
    deployments: AnyObjects,
    gateways: AnyObjects,
    routes: AnyObjects,
    secrets: AnyObjects,
  }),
  scale: Type.Object({
    name: Name,
    replicas: Type.Union([
      Type.Integer({ minimum: 0, maximum: LIMITS.replicasMax }),
      Type.String({ pattern: '^\\s*\\d+(\\.0*)?\\s*$', maxLength: 16 }),
    ]),
  }),
  delete: Type.Object({
    name: Name,
    kind: Type.Optional(Type.Union([Type.String({ maxLength: 32 }), Type.Null()])),
  }),
  cordon: Type.Object({ name: Name }),
  uncordon: Type.Object({ name: Name }),
  drain: Type.Object({ name: Name }),
  migrate: Type.Object({ name: Name, node: Name }),
  label: Type.Object({ name: Name, spec: Spec }),
  taint: Type.Object({ name: Name, spec: Spec }),
} satisfies Record<string, TSchema>;
export type ActionName = keyof typeof ActionBodies;

export const PostEnvelope = Type.Object({
  token: Type.Optional(Type.Unknown()),
  action: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
});

export const GetQuery = Type.Object({
  token: Type.Optional(Type.String({ maxLength: 1024 })),
  kind: Type.Optional(Type.String({ maxLength: 64 })),
});

const compiled = new Map<TSchema, ReturnType<typeof TypeCompiler.Compile>>();
/** null when valid; otherwise "<path> <message>" of the first problem. */
export function check(schema: TSchema, value: unknown): string | null {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  if (c.Check(value)) return null;
  // Unions report one vague error; descend into their alternatives and name the deepest problem.
  let best: { path: string; message: string } | undefined;
  const visit = (it: Iterable<ValueError>) => {
    for (const e of it) {
      if (!best || e.path.length > best.path.length) best = { path: e.path, message: e.message };
      for (const sub of e.errors) visit(sub);
    }
  };
  visit(c.Errors(value));
  if (!best) return 'does not match the expected shape';
  const where = best.path === '' ? 'body' : best.path.slice(1).replaceAll('/', '.');
  return `${where}: ${best.message.toLowerCase()}`;
}

/** Bad input found while applying a verb (→ 400 naming the problem). */
export class InputError extends Error {
  override name = 'InputError';
}

// ---- objects of apply --------------------------------------------------------------------

function str(v: unknown, field: string): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') {
    if (v.length > LIMITS.textChars)
      throw new Error(`${field} is longer than ${LIMITS.textChars} characters`);
    return v;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new Error(`${field} must be a string`);
}

function joined(v: unknown, field: string, sep = ','): string {
  if (Array.isArray(v)) return v.map((x, i) => str(x, `${field}[${i}]`)).join(sep);
  if (v !== null && typeof v === 'object') {
    return Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}=${str(x, `${field}.${k}`)}`)
      .join(sep);
  }
  return str(v, field);
}

/**
 * The replicas of a `scale`: a number or a numeric string, range-checked AFTER parsing (a string
 * such as "99999999999999" passes any shape check and must still be refused).
 */
export function scaleReplicas(v: unknown): number {
  try {
    const n = nonNegInt(v, 'replicas', LIMITS.replicasMax);
    if (n === undefined) throw new Error(`replicas must be an integer from 0 to ${LIMITS.replicasMax}`);
    return n;
  } catch (e) {
    throw new InputError(`bad scale: ${(e as Error).message}`);
  }
}

function nonNegInt(v: unknown, field: string, max: number): number | undefined {
  if (v === null || v === undefined || v === '') return undefined;
  const n =
    typeof v === 'number'
      ? v
      : typeof v === 'string' && /^\s*\d+(\.\d*)?\s*$/.test(v)
        ? Number(v)
        : Number.NaN;
  if (!Number.isFinite(n) || n < 0 || Math.trunc(n) !== n || n > max)
    throw new Error(`${field} must be an integer from 0 to ${max}`);
  return n;
}

function checkName(v: unknown): string {
  if (v === null || v === undefined || v === '') throw new Error('name is required');
  const name = str(v, 'name').trim();
  if (!name) throw new Error('name is required');
  if (!isObjectName(name)) throw new Error(nameProblem(name));
  return name;
}

/** The fields a deployment may carry: exactly the Deployments tab's columns. */
export const DEPLOYMENT_FIELDS = TABS.Deployments.headers;

/** A Deployment object of `apply` → the cells to write (only the keys present). Throws on bad input. */
export function deploymentCells(obj: Record<string, unknown>): Row {
  const out: Row = { name: checkName(obj.name) };
  if ('image' in obj) out.image = str(obj.image, 'image');
  for (const f of ['replicas', 'cpu_req', 'mem_req'] as const) {
    if (!(f in obj)) continue;
    const n = nonNegInt(obj[f], f, f === 'replicas' ? LIMITS.replicasMax : LIMITS.resourceMax);
    out[f] = n === undefined ? '' : n;
  }
  if ('command' in obj)
    out.command = Array.isArray(obj.command)
      ? joined(obj.command, 'command', ' ')
      : str(obj.command, 'command');
  if ('node_selector' in obj) {
    const s = joined(obj.node_selector, 'node_selector');
    for (const part of s.split(','))
      if (part.trim() && !part.includes('='))
        throw new Error(`node_selector item ${JSON.stringify(part)} must be k=v`);
    out.node_selector = s;
  }
  if ('tolerations' in obj) out.tolerations = joined(obj.tolerations, 'tolerations');
  if ('env' in obj) {
    const s = joined(obj.env, 'env');
    for (const part of s.split(','))
      if (part.trim() && !/^[A-Za-z_][A-Za-z0-9_]*=/.test(part.trim()))
        throw new Error(`env item ${JSON.stringify(part.slice(0, 64))} must be NAME=value`);
    out.env = s;
  }
  if ('secret_files' in obj) {
    const s = joined(obj.secret_files, 'secret_files');
    for (const part of s.split(','))
      if (part.trim() && !/^[^:]+:\/.+/.test(part.trim()))
        throw new Error(
          `secret_files item ${JSON.stringify(part.slice(0, 64))} must be secretName:/absolute/path`,
        );
    out.secret_files = s;
  }
  if ('ports' in obj) out.ports = formatPortSpecs(parsePorts(obj.ports === null ? '' : obj.ports));
  // The Kubernetes spelling is accepted too, so a pod spec's word can be pasted as it is.
  const policyKey =
    'restart_policy' in obj ? 'restart_policy' : 'restartPolicy' in obj ? 'restartPolicy' : '';
  if (policyKey) {
    const p = str(obj[policyKey], policyKey).trim();
    if (p !== '' && !(RESTART_POLICIES as readonly string[]).includes(p))
      throw new Error(
        `${policyKey} ${JSON.stringify(p.slice(0, 32))} must be one of ${RESTART_POLICIES.join(', ')} (or empty for the reference behaviour: restart on every exit)`,
      );
    out.restart_policy = p;
  }
  return out;
}

/** A Secret object of `apply` (our extension): {name, data: base64}. */
export function secretCells(obj: Record<string, unknown>): Row {
  const name = checkName(obj.name);
  const data = str(obj.data, 'data').trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data) || data.length % 4 !== 0)
    throw new Error('data must be standard base64');
  return { name, data };
}

// SheetGate objects: the reference rejects anything that could inject into the generated nginx
// config (spec §10 test_sheetgate: `;`, spaces, braces, upper-case hosts, `a..b`, `$` in rewrite).
const HOST_RE = /^(\*|([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)$/;
const PATH_RE = /^\/[A-Za-z0-9._~\-/]*$/;

export function gatewayCells(obj: Record<string, unknown>): Row {
  const name = checkName(obj.name);
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(name))
    throw new Error('gateway name must be lower-case letters, digits and -');
  const out: Row = { name };
  if ('listen' in obj) {
    const l = str(obj.listen, 'listen').trim();
    if (l !== '') parsePorts(l);
    out.listen = l;
  }
  if ('replicas' in obj) out.replicas = nonNegInt(obj.replicas, 'replicas', LIMITS.replicasMax) ?? '';
  if ('node_selector' in obj) out.node_selector = joined(obj.node_selector, 'node_selector');
  if ('image' in obj) out.image = str(obj.image, 'image');
  return out;
}

export function routeCells(obj: Record<string, unknown>): Row {
  const name = checkName(obj.name);
  const out: Row = { name };
  if ('gateway' in obj) {
    const g = str(obj.gateway, 'gateway').trim();
    if (g !== '' && !/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(g))
      throw new Error(`gateway ${JSON.stringify(g.slice(0, 64))} is not a gateway name`);
    out.gateway = g;
  }
  if ('host' in obj) {
    const h = str(obj.host, 'host').trim();
    if (h !== '' && (!HOST_RE.test(h) || h.includes('..')))
      throw new Error(`host ${JSON.stringify(h.slice(0, 64))} must be a lower-case DNS name`);
    out.host = h;
  }
  if ('path' in obj) {
    const p = str(obj.path, 'path').trim();
    if (p !== '' && !PATH_RE.test(p))
      throw new Error(
        `path ${JSON.stringify(p.slice(0, 64))} must start with / and use only URL path characters`,
      );
    out.path = p;
  }
  const service = str(obj.service, 'service').trim();
  if (!/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(service))
    throw new Error('service is required (a Deployment name)');
  out.service = service;
  if ('port' in obj) out.port = nonNegInt(obj.port, 'port', 65535) ?? '';
  if ('rewrite' in obj) {
    const r = str(obj.rewrite, 'rewrite').trim();
    if (r !== '' && !PATH_RE.test(r))
      throw new Error(`rewrite ${JSON.stringify(r.slice(0, 64))} must be a plain path`);
    out.rewrite = r;
  }
  return out;
}

/** `label` spec: `k=v` sets, `k-` removes. Returns the new labels cell. */
export function applyLabel(cell: unknown, spec: string): string {
  const labels = parseKv(cell);
  const s = spec.trim();
  if (/^[A-Za-z0-9._/-]+-$/.test(s)) {
    delete labels[s.slice(0, -1)];
  } else {
    const m = /^([A-Za-z0-9._/-]+)=([A-Za-z0-9._/-]*)$/.exec(s);
    if (!m) throw new InputError(`label spec ${JSON.stringify(s.slice(0, 64))}: use key=value or key-`);
    labels[m[1]] = m[2];
  }
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** `taint` spec: `k=v:Effect` adds or replaces by key, `k-` removes by key. Returns the new taints cell. */
export function applyTaint(cell: unknown, spec: string): string {
  const taints = parseTaints(cell);
  const s = spec.trim();
  let next = taints;
  if (/^[A-Za-z0-9._/-]+-$/.test(s)) {
    next = taints.filter((t) => t.key !== s.slice(0, -1));
  } else {
    const m = /^([A-Za-z0-9._/-]+)(=([A-Za-z0-9._/-]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(s);
    if (!m)
      throw new InputError(
        `taint spec ${JSON.stringify(s.slice(0, 64))}: use key=value:NoSchedule (or PreferNoSchedule, NoExecute) or key-`,
      );
    next = taints.filter((t) => t.key !== m[1]);
    next.push({ key: m[1], value: m[3] ?? '', effect: m[4] });
  }
  return next.map((t) => `${t.key}${t.value !== '' ? `=${t.value}` : ''}:${t.effect}`).join(',');
}
