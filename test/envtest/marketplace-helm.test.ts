// The catalog's charts as Helm sees them (issue 15): lint and template every tenant app with its
// example values, with the values Cozystack injects (_cluster, _namespace: the root stays open),
// and with hostile values (refused by the schema, the field named); the ApplicationDefinitions
// package and the staged platform package (the operator chart, CRDs included).
import { execFile } from 'node:child_process';
import { globSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { APPS } from '../../operator/src/marketplace/apps.ts';
import { stage } from '../../operator/src/marketplace/generate.ts';
import { APPS_REPO, prefixOf } from '../../operator/src/marketplace/render.ts';
import { REPO_ROOT } from './control-plane.ts';
import { testBins } from './harness.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rk-market-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(testBins().helm, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
function valuesFile(name: string, v: unknown): string {
  const f = join(tmp, `${name}.yaml`);
  writeFileSync(f, stringify(v));
  return f;
}
const docs = (text: string) =>
  parseAllDocuments(text)
    .map((d) => d.toJSON() as Record<string, unknown>)
    .filter((d) => d);

/**
 * Every chart of the catalog as shipped: the artifacts `stage()` makes for Flux (the platform
 * package with its dependency inside), tenant apps and system packages alike; vendored
 * dependencies are linted as part of their parent.
 */
const shipped = stage(join(tmp, 'shipped'));
function packages(): string[] {
  return [shipped.apps, shipped.platform]
    .flatMap((root) =>
      globSync('**/Chart.yaml', { cwd: root })
        .filter((f) => !/(^|\/)charts\//.test(f))
        .map((f) => join(root, dirname(f))),
    )
    .sort();
}

describe('every catalog package lints clean as shipped (issue #30 item 15)', () => {
  it('finds the packages (tenant apps, system packages, the platform package)', () => {
    expect(packages().length).toBeGreaterThanOrEqual(APPS.length + 2);
  });
  for (const dir of packages()) {
    it(`${dir.slice(tmp.length + 1)}: helm lint --strict with its own values.yaml`, async () => {
      const lint = await helm(['lint', '--strict', dir]);
      expect(lint.code, lint.stdout + lint.stderr).toBe(0);
      expect(lint.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }, 60_000);
  }
});

describe('marketplace charts under helm', () => {
  for (const a of APPS) {
    const chart = join(REPO_ROOT, APPS_REPO, 'packages/apps', a.name);
    it(`${a.name}: lint --strict and template render our ${a.def.kind} from the example (and Cozystack's injected keys)`, async () => {
      const f = valuesFile(`${a.name}-example`, {
        ...a.example,
        _cluster: { name: 'root' },
        _namespace: { host: 'x' },
      });
      const lint = await helm(['lint', '--strict', chart, '-f', f]);
      expect(lint.code, lint.stdout + lint.stderr).toBe(0);
      const r = await helm(['template', `${prefixOf(a)}demo`, chart, '-f', f, '--namespace', 'tenant-a']);
      expect(r.code, r.stderr).toBe(0);
      const out = docs(r.stdout);
      expect(out).toHaveLength(1);
      expect(out[0]).toMatchObject({
        apiVersion: 'retrokube.io/v1alpha1',
        kind: a.def.kind,
        metadata: { name: 'demo' },
      });
      const spec = out[0].spec as Record<string, unknown>;
      expect(spec).toMatchObject(a.example);
      expect(Object.keys(spec)).not.toContain('_cluster');
      expect(r.stdout).not.toMatch(/helm\.sh\/hook/);
    }, 60_000);

    for (const h of a.hostile) {
      it(`${a.name}: hostile ${JSON.stringify(h.values)} is refused before anything renders, naming ${h.field}`, async () => {
        const r = await helm([
          'template',
          `${prefixOf(a)}bad`,
          chart,
          '-f',
          valuesFile(`${a.name}-bad`, h.values),
        ]);
        expect(r.code).not.toBe(0);
        expect(r.stderr).toMatch(/values don't meet the specifications of the schema/);
        expect(r.stderr).toContain(h.field);
        expect(r.stdout).toBe('');
      }, 60_000);
    }
  }

  it('the ApplicationDefinitions package renders one ApplicationDefinition per app', async () => {
    const r = await helm([
      'template',
      'retrokube-rd',
      join(REPO_ROOT, APPS_REPO, 'packages/system/retrokube-rd'),
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = docs(r.stdout);
    expect(out.map((d) => d.kind)).toEqual(APPS.map(() => 'ApplicationDefinition'));
    expect(out.map((d) => (d.metadata as { name: string }).name).sort()).toEqual(
      APPS.map((a) => a.name).sort(),
    );
  }, 60_000);

  it('the staged platform package installs the operator chart with its CRDs', async () => {
    const s = stage(join(tmp, 'staged'));
    const pkg = join(s.platform, 'packages/system/retrokube-operator');
    const lint = await helm(['lint', pkg]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const r = await helm(['template', 'retrokube', pkg, '--include-crds', '--namespace', 'retrokube-system']);
    expect(r.code, r.stderr).toBe(0);
    const kinds = docs(r.stdout).map((d) => `${d.kind}/${(d.metadata as { name: string }).name}`);
    for (const crd of ['oberonairs', 'oberonkubes', 'oberonmachines'])
      expect(kinds).toContain(`CustomResourceDefinition/${crd}.retrokube.io`);
    expect(kinds.some((k) => k.startsWith('Deployment/'))).toBe(true);
  }, 60_000);
});
