// The Kube disk is built with the image's own compiler running in our RISC5 machine: every
// module must compile, System must keep its key, and a second build must come from the cache.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseObjectFile } from '../../operator/src/machine/builder/rsc.ts';
import { OberonVolume } from '../../operator/src/machine/fs/volume.ts';
import { buildKubeDisk, KUBE_MODULES } from '../../operator/src/machine/kube-disk.ts';

describe('retrokube disk build-kube', () => {
  const cacheDir = mkdtempSync(join(tmpdir(), 'retrokube-kube-disk-'));
  afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

  it("compiles every Kube module with the image's ORP and keeps System's key", async () => {
    const t0 = Date.now();
    const r = await buildKubeDisk({ cacheDir, force: true });
    console.log(`kube disk: built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(r.cached).toBe(false);
    const vol = OberonVolume.fromBuffer(readFileSync(r.path));
    for (const m of [...KUBE_MODULES, 'System']) {
      const obj = parseObjectFile(vol.read(`${m}.rsc`));
      expect(obj.module).toBe(m);
    }
    expect(parseObjectFile(vol.read('Kube.rsc')).commands).toEqual(
      expect.arrayContaining([
        'Start',
        'Stop',
        'Apply',
        'Ensure',
        'Get',
        'Save',
        'DeletePod',
        'Reset',
        'Local',
        'Run',
      ]),
    );
    expect(parseObjectFile(vol.read('KubeNet.rsc')).commands).toEqual(
      expect.arrayContaining(['Serve', 'Join', 'Stop']),
    );
    expect(parseObjectFile(vol.read('Ticker.rsc')).commands).toEqual(
      expect.arrayContaining(['Start', 'Stop', 'Show']),
    );
    expect(vol.exists('RkBuild.rsc')).toBe(false); // the builder's helper does not stay
  });

  it('reuses the cached disk when nothing changed', async () => {
    const t0 = Date.now();
    const r = await buildKubeDisk({ cacheDir, out: join(cacheDir, 'copy.dsk') });
    expect(r.cached).toBe(true);
    expect(r.path).toBe(join(cacheDir, 'copy.dsk'));
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('answers --json with one JSON document while it builds (its log lines go to stderr)', () => {
    // A cold cache: the build logs "built the Kube disk", which once landed in stdout and broke
    // hack/build-image.sh --print-path on a fresh machine.
    const cold = mkdtempSync(join(tmpdir(), 'retrokube-kube-disk-cli-'));
    try {
      const main = join(import.meta.dirname, '../../operator/src/cli/main.ts');
      const out = execFileSync(process.execPath, [main, 'disk', 'build-kube', '--json'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, XDG_CACHE_HOME: cold, RETROKUBE_LOG_LEVEL: 'info' },
      });
      const answer = JSON.parse(out) as { cached: boolean; cachePath: string };
      expect(answer.cached).toBe(false);
      expect(answer.cachePath.startsWith(cold)).toBe(true);
    } finally {
      rmSync(cold, { recursive: true, force: true });
    }
  });
});
