// No render, chart default or marketplace default names an image this project does not build
// (#25: the fill Job of a kubevirt machine once pulled another project's moving `:dev` tag).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { imageRepository, isOurImage } from '../images.ts';
import type { KubeObject } from '../runtime/client.ts';
import { defaultImage, render as renderAir, withDefaults } from './oberonair.ts';
import { kubeSettings, type OberonKube, renderKube } from './oberonkube-render.ts';
import { machineSettings, type OberonMachine, renderKubeVirt, renderPod } from './oberonmachine-render.ts';
import { derivedSecret, renderSheetCluster, sheetSettings } from './sheetcluster-render.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Every image a value names: `image`/`repository` string fields, `*image=` flags, `images` maps. */
function imagesIn(v: unknown, out: string[] = [], key = ''): string[] {
  if (typeof v === 'string') {
    if (key === 'image' || key === 'repository' || key === 'images') out.push(v);
    const flag = /^--[a-z-]*image=(.+)$/.exec(v);
    if (flag) out.push(flag[1] as string);
  } else if (Array.isArray(v)) {
    v.forEach((x, i) => {
      imagesIn(x, out, key === 'args' && i > 0 && /image$/.test(String(v[i - 1])) ? 'image' : '');
    });
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) imagesIn(x, out, key === 'images' ? 'images' : k);
  }
  return out;
}

const foreign = (v: unknown): string[] => imagesIn(v).filter((i) => !isOurImage(i));

const machine = (runtime: 'pod' | 'kubevirt'): OberonMachine => ({
  apiVersion: 'retrokube.io/v1alpha1',
  kind: 'OberonMachine',
  metadata: { name: 'p', namespace: 'lab', uid: 'u1' },
  spec: { air: 'lab', role: 'plane', keySecretRef: { name: 's', key: 'key' }, runtime },
});

function valuesFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : valuesFiles(p);
    return e.name === 'values.yaml' ? [p] : [];
  });
}

describe('images: only the ones this project builds', () => {
  it('reads repositories of tags and digests, and the walk finds images where they hide', () => {
    expect(imageRepository('localhost:5000/a/b:1@sha256:00')).toBe('localhost:5000/a/b');
    expect(imageRepository('ghcr.io/retrokube/retrokube@sha256:00')).toBe('ghcr.io/retrokube/retrokube');
    expect(isOurImage('ghcr.io/tym83/paleocomputing/oberon-run:dev')).toBe(false);
    // The walk itself must catch a foreign image in each of the shapes it looks for.
    expect(foreign({ spec: { containers: [{ image: 'busybox' }] } })).toEqual(['busybox']);
    expect(foreign({ args: ['--air-image=quay.io/x:1'] })).toEqual(['quay.io/x:1']);
    expect(foreign({ args: ['--launcher-image', 'quay.io/kubevirt/virt-launcher:v1.8.4'] })).toEqual([
      'quay.io/kubevirt/virt-launcher:v1.8.4',
    ]);
    expect(foreign({ launcher: { images: { 'v1.8.4': 'example.org/l:1' } } })).toEqual(['example.org/l:1']);
    expect(foreign({ image: { repository: 'docker.io/x' } })).toEqual(['docker.io/x']);
  });

  it('every controller render with the defaults', () => {
    const prev = process.env.RETROKUBE_IMAGE;
    delete process.env.RETROKUBE_IMAGE; // the built-in default, not a developer's override
    try {
      const image = defaultImage();
      expect(isOurImage(image)).toBe(true);
      const pod = machine('pod');
      const kv = machine('kubevirt');
      const kube: OberonKube = {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonKube',
        metadata: { name: 'k', namespace: 'lab', uid: 'u2' },
        spec: { nodes: 3, runtime: 'kubevirt' },
      } as OberonKube;
      const sheets: KubeObject = {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'SheetCluster',
        metadata: { name: 'demo', namespace: 'lab', uid: 'u3' },
        spec: { nodes: 2 },
      };
      const air = {
        apiVersion: 'retrokube.io/v1alpha1',
        kind: 'OberonAir',
        metadata: { name: 'lab', namespace: 'lab', uid: 'u4' },
      };
      const rendered = [
        renderPod(pod, machineSettings(pod), image),
        renderKubeVirt(kv, machineSettings(kv), image, { seeded: false }),
        renderKubeVirt(kv, machineSettings(kv), image, { seeded: true }),
        renderKube(kube, kubeSettings(kube), true),
        renderSheetCluster(sheets, sheetSettings(sheets, image), {
          token: derivedSecret('seed', 'token', 'u3'),
          signingKey: derivedSecret('seed', 'signing', 'u3'),
        }),
        renderAir(air, withDefaults(undefined, image)),
      ];
      expect(imagesIn(rendered).length).toBeGreaterThanOrEqual(5); // the walk saw the images
      expect(foreign(rendered)).toEqual([]);
      // The fill Job in particular: the product image, the ROM and disk of `machine payload`.
      const job = renderKubeVirt(kv, machineSettings(kv), image, { seeded: false }).job as unknown as {
        spec: { template: { spec: { containers: Array<{ image: string; args: string[] }> } } };
      };
      expect(job.spec.template.spec.containers[0]).toMatchObject({
        image,
        args: ['machine', 'payload', '/payload', '--key-file', '/key/key'],
      });
    } finally {
      if (prev !== undefined) process.env.RETROKUBE_IMAGE = prev;
    }
  });

  it("the chart's values and every marketplace values.yaml", () => {
    const files = [join(ROOT, 'charts/retrokube/values.yaml'), ...valuesFiles(join(ROOT, 'marketplace'))];
    expect(files.length).toBeGreaterThan(5);
    const chart = parse(readFileSync(files[0] as string, 'utf8'));
    expect(imagesIn(chart)).toContain('ghcr.io/retrokube/retrokube'); // the walk reads the chart
    for (const f of files)
      expect({ file: f, foreign: foreign(parse(readFileSync(f, 'utf8'))) }).toEqual({ file: f, foreign: [] });
  });
});
