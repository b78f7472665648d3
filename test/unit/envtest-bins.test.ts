// How the envtest harness finds its binaries, and how it fails when they are missing: loudly,
// with the command that builds them (never a silent pass).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assertTestBins, locateTestBins, REPO_ROOT } from '../envtest/control-plane.ts';

const saved = { ...process.env };
afterEach(() => {
  for (const k of ['CI', 'RETROKUBE_TESTBINS_DIR', 'KUBE_APISERVER_BIN', 'KINE_BIN', 'HELM_BIN']) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

describe('envtest binaries', () => {
  it('hack/build-testbins.sh --print-dir names a versioned folder under XDG_CACHE_HOME without building', () => {
    const cache = mkdtempSync(join(tmpdir(), 'rk-xdg-'));
    try {
      const dir = execFileSync('bash', [join(REPO_ROOT, 'hack/build-testbins.sh'), '--print-dir'], {
        encoding: 'utf8',
        env: { ...process.env, XDG_CACHE_HOME: cache, RETROKUBE_TESTBINS_DIR: '' },
      }).trim();
      expect(dir.startsWith(join(cache, 'retrokube/testbins/'))).toBe(true);
      // Pinned versions: kube-apiserver 1.34 or newer, kine v0.17.5.
      const k8s = /k8s-v1\.(\d+)\.\d+/.exec(dir);
      expect(Number(k8s?.[1])).toBeGreaterThanOrEqual(34);
      expect(dir).toContain('kine-v0.17.5');
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('honours RETROKUBE_TESTBINS_DIR and per-binary overrides', () => {
    process.env.RETROKUBE_TESTBINS_DIR = '/opt/bins';
    process.env.KINE_BIN = '/usr/local/bin/kine';
    const bins = locateTestBins();
    expect(bins.kubeApiserver).toBe('/opt/bins/kube-apiserver');
    expect(bins.kine).toBe('/usr/local/bin/kine');
    expect(bins.helm).toBe('/opt/bins/helm');
  });

  it('fails with the build command when binaries are missing, and says CI must build them when CI is set', () => {
    const nowhere = {
      dir: '/nonexistent',
      kubeApiserver: '/nonexistent/kube-apiserver',
      kine: '/nonexistent/kine',
    };
    const bins = { ...nowhere, helm: '/nonexistent/helm', kubectl: '/nonexistent/kubectl' };
    delete process.env.CI;
    expect(() => assertTestBins(bins)).toThrow(/Run the set-up once with: npm run setup/);
    expect(() => assertTestBins(bins)).toThrow('/nonexistent/kube-apiserver');
    process.env.CI = 'true';
    expect(() => assertTestBins(bins)).toThrow(/CI must build them first: npm test runs the set-up/);
  });
});
