// A fleet FILE for `retrokube up`: several OberonKubes (each run as its own local cluster) and the
// Rollouts walked across them — the same documents users apply to Kubernetes, checked here with
// the Rollout kind's own schema and its validation rules, errors naming the field. Pure.
import { Value } from '@sinclair/typebox/value';
import { RolloutSpec, type RolloutSpecT } from '../api/rollout.ts';
import { type LocalKube, parseKubeDoc, readFileDocs, SpecError } from './spec.ts';

export const LIMITS = {
  maxClusters: 8, // each local cluster is a plane and its nodes as emulated machines on this host
  maxRollouts: 16, // each is one small status; more is a batch job, not a FILE
} as const;

export interface LocalRollout {
  name: string;
  spec: RolloutSpecT;
}

export interface Fleet {
  kubes: LocalKube[];
  rollouts: LocalRollout[];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A FILE is a fleet when it holds more than one OberonKube or any Rollout. */
export function isFleetText(text: string): boolean {
  return (text.match(/^kind:\s*OberonKube\s*$/gm) ?? []).length > 1 || /^kind:\s*Rollout\s*$/m.test(text);
}

/** The rules the API server checks with CEL (x-kubernetes-validations), as plain code. */
function celRules(s: RolloutSpecT): string | null {
  if (s.change.image === undefined && s.change.replicas === undefined)
    return 'spec.change: name an image or replicas to change';
  const t = s.strategy;
  if (t.canary && (t.canary.count === undefined) === (t.canary.percent === undefined))
    return 'spec.strategy.canary: give exactly one of count and percent';
  const needs: Record<string, [unknown, string]> = {
    retry: [t.retry, 'strategy retry needs retry.attempts'],
    canary: [t.canary, 'strategy canary needs canary.count or canary.percent'],
    blueGreen: [t.blueGreen, 'strategy blueGreen needs blueGreen.groupLabel and activeGroup'],
    ordered: [t.ordered, 'strategy ordered needs ordered.label and order'],
  };
  const need = needs[t.type];
  if (need && need[0] === undefined) return `spec.strategy.${t.type}: ${need[1]}`;
  return null;
}

/** One Rollout document, checked as the API server would (schema, then the CEL rules). */
export function parseRolloutDoc(d: Record<string, unknown>, file = 'FILE'): LocalRollout {
  const md = (d.metadata ?? {}) as Record<string, unknown>;
  const name = md.name;
  const where = `${file} Rollout${typeof name === 'string' ? ` ${name}` : ''}`;
  if (typeof name !== 'string' || !DNS_LABEL.test(name) || name.length > 63)
    throw new SpecError(`${where} metadata.name must be a DNS label`);
  const spec = Value.Default(RolloutSpec, structuredClone(d.spec ?? {})) as RolloutSpecT;
  const err = [...Value.Errors(RolloutSpec, spec)][0];
  if (err) throw new SpecError(`${where} spec${err.path.replaceAll('/', '.')}: ${err.message}`);
  const rule = celRules(spec);
  if (rule) throw new SpecError(`${where} ${rule}`);
  return { name, spec };
}

/** Every OberonKube and Rollout of a fleet FILE; names unique per kind. */
export function parseFleetFile(text: string, file = 'FILE'): Fleet {
  const docs = readFileDocs(text, file);
  const kubes = docs.kubes.map((k) => parseKubeDoc(k, docs, file));
  const rollouts = docs.rollouts.map((r) => parseRolloutDoc(r, file));
  if (kubes.length === 0) throw new SpecError(`${file}: a fleet needs at least one OberonKube`);
  if (kubes.length > LIMITS.maxClusters)
    throw new SpecError(
      `${file}: ${kubes.length} OberonKubes; at most ${LIMITS.maxClusters} run on one machine`,
    );
  if (rollouts.length > LIMITS.maxRollouts)
    throw new SpecError(`${file}: ${rollouts.length} Rollouts; at most ${LIMITS.maxRollouts}`);
  for (const [kind, names] of [
    ['OberonKube', kubes.map((k) => k.name)],
    ['Rollout', rollouts.map((r) => r.name)],
  ] as const) {
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new SpecError(`${file}: two ${kind}s are named ${twice}; names must differ`);
  }
  // A rollout names targets by labels; one that can never match is refused here, before anything runs.
  for (const r of rollouts) {
    const want = Object.entries(r.spec.selector.matchLabels);
    if (!kubes.some((k) => want.every(([l, v]) => k.labels?.[l] === v)))
      throw new SpecError(
        `${file} Rollout ${r.name} spec.selector.matchLabels ${want.map(([l, v]) => `${l}=${v}`).join(',')} matches no OberonKube in the FILE; label the clusters (metadata.labels) or change the selector`,
      );
  }
  return { kubes, rollouts };
}
