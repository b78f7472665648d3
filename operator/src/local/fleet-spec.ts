// A fleet FILE for `retrokube up`: several OberonKubes (each run as its own local cluster) and the
// Rollouts walked across them — the same documents users apply to Kubernetes, checked here with
// the Rollout kind's own schema and its validation rules, errors naming the field. Pure.
import { Value } from '@sinclair/typebox/value';
import { parseAllDocuments, stringify } from 'yaml';
import { RolloutSpec, type RolloutSpecT } from '../api/rollout.ts';
import { type LocalSheets, parseSheetsFile } from './sheets.ts';
import { type LocalKube, parseKubeDoc, readFileDocs, SpecError } from './spec.ts';

export const LIMITS = {
  maxClusters: 8, // each local cluster is a plane and its nodes as emulated machines on this host
  maxRollouts: 16, // each is one small status; more is a batch job, not a FILE
} as const;

export interface LocalRollout {
  name: string;
  spec: RolloutSpecT;
}

/** A SheetCluster of the fleet with the labels a Rollout (selector.kind: SheetCluster) matches. */
export interface FleetSheets {
  sheets: LocalSheets;
  labels: Record<string, string>;
}

export interface Fleet {
  kubes: LocalKube[];
  sheets: FleetSheets[];
  rollouts: LocalRollout[];
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** A FILE is a fleet when it holds more than one OberonKube or SheetCluster, or any Rollout. */
export function isFleetText(text: string): boolean {
  const count = (kind: string) => (text.match(new RegExp(`^kind:\\s*${kind}\\s*$`, 'gm')) ?? []).length;
  return count('OberonKube') > 1 || count('SheetCluster') > 1 || count('Rollout') > 0;
}

/** Each SheetCluster of the FILE, read as `up` reads a FILE with one (sheets.ts), with its labels. */
function parseSheetDocs(text: string, file: string): FleetSheets[] {
  const docs = parseAllDocuments(text)
    .map((d) => d.toJSON() as unknown)
    .filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null && !Array.isArray(d));
  const secrets = docs.filter((d) => d.kind === 'Secret').map((d) => stringify(d));
  return docs
    .filter((d) => d.kind === 'SheetCluster')
    .map((d) => {
      const sheets = parseSheetsFile([stringify(d), ...secrets].join('---\n'), file) as LocalSheets;
      const labels = ((d.metadata as Record<string, unknown> | undefined)?.labels ?? {}) as Record<
        string,
        unknown
      >;
      for (const [l, v] of Object.entries(labels))
        if (typeof v !== 'string')
          throw new SpecError(
            `${file} SheetCluster ${sheets.cluster.metadata.name} metadata.labels.${l} must be a string`,
          );
      return { sheets, labels: labels as Record<string, string> };
    });
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
  const bad = Object.keys(s.selector.matchLabels).find((k) => !LABEL_KEY.test(k));
  if (bad) return `spec.selector.matchLabels: "${bad}" is not a label key`;
  if (t.type === 'blueGreen' && s.selector.kind === 'SheetCluster')
    return "spec.strategy: blue/green over Sheeternetes switches a federation's active member: select SheetFederations (selector.kind: SheetFederation)";
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
  const sheets = parseSheetDocs(text, file);
  const rollouts = docs.rollouts.map((r) => parseRolloutDoc(r, file));
  if (kubes.length + sheets.length === 0)
    throw new SpecError(`${file}: a fleet needs at least one OberonKube or SheetCluster`);
  if (kubes.length + sheets.length > LIMITS.maxClusters)
    throw new SpecError(
      `${file}: ${kubes.length + sheets.length} clusters; at most ${LIMITS.maxClusters} run on one machine`,
    );
  if (rollouts.length > LIMITS.maxRollouts)
    throw new SpecError(`${file}: ${rollouts.length} Rollouts; at most ${LIMITS.maxRollouts}`);
  // Cluster names are unique across kinds: the CLI and the control API name a cluster alone.
  for (const [kind, names] of [
    [
      'clusters',
      [...kubes.map((k) => k.name), ...sheets.map((x) => x.sheets.cluster.metadata.name as string)],
    ],
    ['Rollouts', rollouts.map((r) => r.name)],
  ] as const) {
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new SpecError(`${file}: two ${kind} are named ${twice}; names must differ`);
  }
  // A rollout names targets by labels; one that can never match is refused here, before anything runs.
  for (const r of rollouts) {
    const want = Object.entries(r.spec.selector.matchLabels);
    const kind = r.spec.selector.kind ?? 'OberonKube';
    if (kind === 'SheetFederation')
      throw new SpecError(
        `${file} Rollout ${r.name} spec.selector.kind: SheetFederation targets need the operator (a federation of local clusters is not run by "retrokube up"); select OberonKube or SheetCluster`,
      );
    if (r.spec.check?.httpGet)
      throw new SpecError(
        `${file} Rollout ${r.name} spec.check.httpGet is judged by the operator only; "retrokube up" judges from the sheet — remove it here`,
      );
    const labelled = kind === 'OberonKube' ? kubes.map((k) => k.labels ?? {}) : sheets.map((x) => x.labels);
    if (!labelled.some((labels) => want.every(([l, v]) => labels[l] === v)))
      throw new SpecError(
        `${file} Rollout ${r.name} spec.selector.matchLabels ${want.map(([l, v]) => `${l}=${v}`).join(',')} matches no ${kind} in the FILE; label the clusters (metadata.labels) or change the selector`,
      );
  }
  return { kubes, sheets, rollouts };
}
