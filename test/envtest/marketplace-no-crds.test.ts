// A catalog app ordered on a cluster without the platform package (issue #30 item 2): `helm
// install` of the app must fail naming the missing kind, and create nothing. This needs an API
// server that has never seen our CRDs — the shared envtest server and the real node have them
// (CRDs outlive their release on purpose) — so the file starts its own kube-apiserver + kine
// without CRDs (startControlPlane({ installCrds: false })) and runs on every run, CI included.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { APPS } from '../../operator/src/marketplace/apps.ts';
import { APPS_REPO, prefixOf } from '../../operator/src/marketplace/render.ts';
import { type ControlPlane, kubeRequest, REPO_ROOT, startControlPlane } from './control-plane.ts';

const tmp = mkdtempSync(join(tmpdir(), 'rk-market-nocrds-'));
let cp: ControlPlane;

beforeAll(async () => {
  cp = await startControlPlane({ installCrds: false });
}, 180_000);
afterAll(async () => {
  await cp?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const target = () => ({
  server: cp.server,
  token: cp.adminToken,
  ca: readFileSync(join(cp.dir, 'certs', 'apiserver.crt')),
});

function helm(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      cp.bins.helm,
      [...args, '--kubeconfig', cp.kubeconfigPath],
      { maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the catalog on a cluster without the platform package (its own API server, no CRDs)', () => {
  it('the API server really has no retrokube.io kinds', async () => {
    const r = await kubeRequest(target(), 'GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
    expect(r.status).toBe(200);
    const names = (JSON.parse(r.body).items as { spec: { group: string } }[]).map((c) => c.spec.group);
    expect(names).not.toContain('retrokube.io');
  });

  for (const a of APPS) {
    it(`${a.name}: helm install fails naming ${a.def.kind}, creating nothing`, async () => {
      const values = join(tmp, `${a.name}.yaml`);
      writeFileSync(
        values,
        stringify({ ...a.example, _cluster: { name: 'root' }, _namespace: { host: 'x' } }),
      );
      const chart = join(REPO_ROOT, APPS_REPO, 'packages/apps', a.name);
      const r = await helm(['install', `${prefixOf(a)}early`, chart, '--namespace', 'default', '-f', values]);
      expect(r.code, r.stdout).not.toBe(0);
      expect(r.stderr).toContain(`no matches for kind "${a.def.kind}" in version "retrokube.io/v1alpha1"`);
      expect(r.stderr).toContain('ensure CRDs are installed first');
      // Nothing recorded: no release in any state (Helm's storage Secrets, owner=helm) anywhere.
      const secrets = await kubeRequest(target(), 'GET', '/api/v1/secrets?labelSelector=owner%3Dhelm');
      expect(secrets.status).toBe(200);
      expect(JSON.parse(secrets.body).items).toEqual([]);
    }, 130_000);
  }
});
