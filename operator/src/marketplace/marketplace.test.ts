// The catalog generator and checker (issue 15): marketplace/ is what the generator writes, the
// checker finds nothing wrong with it, and breaking each rule once makes the checker say so
// (mutation controls). The staged artifacts are self-contained.
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { toCrd } from '../api/crd.ts';
import { OberonKubeKind } from '../api/oberonkube.ts';
import { APPS } from './apps.ts';
import { checkMarketplace, type Rule } from './check.ts';
import { committedFiles, stage, symlinks } from './generate.ts';
import { marketplaceFiles } from './render.ts';

const files = marketplaceFiles();
const KUBE = 'marketplace/apps/packages/apps/oberon-kube';
const KUBE_AD = 'marketplace/apps/packages/system/retrokube-rd/cozyrds/oberon-kube.yaml';

type Json = Record<string, unknown>;
function mutate(edit: (m: Map<string, string>) => void): Map<string, string> {
  const m = new Map(files);
  edit(m);
  return m;
}
function editJson(m: Map<string, string>, path: string, fn: (j: Json) => void): void {
  const j = JSON.parse(m.get(path) as string) as Json;
  fn(j);
  m.set(path, JSON.stringify(j, null, 2));
}
const props = (j: Json) => j.properties as Record<string, Json>;

describe('marketplace', () => {
  it('is exactly what `npm run marketplace` writes (nothing stale, nothing extra)', () => {
    const committed = committedFiles();
    expect([...committed.keys()].sort()).toEqual([...files.keys()].sort());
    for (const [p, text] of files) expect(committed.get(p), p).toBe(text);
  });

  it('passes every rule of the checker', () => {
    expect(checkMarketplace(files)).toEqual([]);
  });

  it('the form schema is the CRD schema: same fields and limits from the one TypeBox source', () => {
    const crd = toCrd(OberonKubeKind) as Json;
    const versions = (crd.spec as Json).versions as Json[];
    const crdSpec = props((versions[0].schema as Json).openAPIV3Schema as Json as Json).spec;
    const form = JSON.parse(files.get(`${KUBE}/values.schema.json`) as string) as Json;
    expect(Object.keys(props(form))).toEqual(Object.keys(props(crdSpec)));
    for (const f of ['nodes', 'cluster', 'deployments', 'memory', 'loss']) {
      const { description: _d, ...limits } = props(crdSpec)[f];
      for (const [k, v] of Object.entries(limits))
        if (!k.startsWith('x-kubernetes')) expect(props(form)[f][k], `${f}.${k}`).toEqual(v);
    }
  });

  // One mutation per rule: the checker must name that rule.
  const mutations: [Rule, (m: Map<string, string>) => void][] = [
    [
      'schema-identical',
      (m) => editJson(m, `${KUBE}/values.schema.json`, (j) => (props(j).nodes.maximum = 21)),
    ],
    ['root-open', (m) => editJson(m, `${KUBE}/values.schema.json`, (j) => (j.additionalProperties = false))],
    [
      'nested-closed',
      (m) =>
        editJson(m, `${KUBE}/values.schema.json`, (j) => delete props(j).keySecretRef.additionalProperties),
    ],
    [
      'fields-described',
      (m) => editJson(m, `${KUBE}/values.schema.json`, (j) => delete props(j).cluster.description),
    ],
    [
      'fields-bounded',
      (m) => editJson(m, `${KUBE}/values.schema.json`, (j) => delete props(j).nodes.maximum),
    ],
    [
      'fields-bounded',
      (m) =>
        editJson(m, `${KUBE}/values.schema.json`, (j) => {
          delete props(j).storageClass.maxLength;
        }),
    ],
    [
      'refs-resolve',
      (m) => {
        const ad = parse(m.get(KUBE_AD) as string) as Json;
        (((ad.spec as Json).release as Json).chartRef as Json).name = 'retrokube-apps-default-oberon-kub';
        m.set(KUBE_AD, stringify(ad));
      },
    ],
    ['refs-resolve', (m) => m.delete(`${KUBE}/Chart.yaml`)],
    [
      'no-hooks',
      (m) =>
        m.set(
          `${KUBE}/templates/fill.yaml`,
          'apiVersion: batch/v1\nkind: Job\nmetadata:\n  annotations:\n    helm.sh/hook: post-install\n',
        ),
    ],
    [
      'images-pinned',
      (m) => m.set(`${KUBE}/templates/relay.yaml`, 'spec:\n  image: ghcr.io/retrokube/retrokube:dev\n'),
    ],
    [
      'params-documented',
      (m) =>
        m.set(
          `${KUBE}/values.yaml`,
          (m.get(`${KUBE}/values.yaml`) as string).replace('## @param {int} nodes=2', '## nodes'),
        ),
    ],
    [
      'index-fields',
      (m) =>
        m.set(
          'marketplace/index/retrokube-apps.yaml',
          `${m.get('marketplace/index/retrokube-apps.yaml')}extra: 1\n`,
        ),
    ],
  ];
  it.each(mutations.map(([rule, fn], i) => [`${rule} #${i}`, rule, fn] as const))(
    'mutation control %s: the checker catches it',
    (_label, rule, fn) => {
      const problems = checkMarketplace(mutate(fn));
      expect(problems.map((p) => p.rule)).toContain(rule);
    },
  );

  it("keysOrder and the ApplicationDefinition name coexist with Cozystack's own Oberon kinds", () => {
    for (const a of APPS) {
      const ad = parse(
        files.get(`marketplace/apps/packages/system/retrokube-rd/cozyrds/${a.name}.yaml`) as string,
      ) as Json;
      const app = (ad.spec as Json).application as Json;
      expect(['OberonVM', 'OberonAir', 'OberonKube']).not.toContain(app.kind);
      expect(String(((ad.spec as Json).release as Json).prefix)).toMatch(/^rk-/);
    }
  });

  it('the staged artifacts are self-contained: no symlinks, the operator chart inside the platform package', () => {
    const out = mkdtempSync(join(tmpdir(), 'rk-stage-'));
    try {
      const s = stage(out);
      expect(symlinks(s.apps)).toEqual([]);
      expect(symlinks(s.platform)).toEqual([]);
      expect(
        existsSync(join(s.platform, 'packages/system/retrokube-operator/charts/retrokube/Chart.yaml')),
      ).toBe(true);
      expect(
        existsSync(join(s.platform, 'packages/system/retrokube-operator/charts/retrokube/files/crds')),
      ).toBe(true);
      // and the symlink finder finds one when there is one (control)
      symlinkSync('/etc/hostname', join(s.apps, 'link'));
      expect(symlinks(s.apps)).toEqual([join(s.apps, 'link')]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
