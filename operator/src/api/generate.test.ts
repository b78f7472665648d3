import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { crdStream } from './generate.ts';

describe('generated CRDs', () => {
  it('every CRD is structural: status subresource, group retrokube.io, distinct short names', () => {
    const docs = crdStream()
      .split(/^---$/m)
      .map((d) => parse(d));
    expect(docs.length).toBeGreaterThan(0);
    for (const crd of docs) {
      expect(crd.spec.group).toBe('retrokube.io');
      const v = crd.spec.versions[0];
      expect(v.subresources).toEqual({ status: {} });
      expect(crd.spec.names.shortNames.every((s: string) => s.startsWith('rk'))).toBe(true);
      const walk = (s: Record<string, unknown>, path: string): void => {
        if (s.properties && s.additionalProperties)
          throw new Error(`${path}: properties and additionalProperties`);
        if (!s.type && !s['x-kubernetes-int-or-string'] && !s['x-kubernetes-preserve-unknown-fields']) {
          throw new Error(`${path}: no type`);
        }
        for (const [k, sub] of Object.entries(
          (s.properties ?? {}) as Record<string, Record<string, unknown>>,
        )) {
          walk(sub, `${path}.${k}`);
        }
        if (s.items) walk(s.items as Record<string, unknown>, `${path}[]`);
        if (s.additionalProperties && typeof s.additionalProperties === 'object') {
          walk(s.additionalProperties as Record<string, unknown>, `${path}{}`);
        }
      };
      walk(v.schema.openAPIV3Schema, crd.metadata.name);
    }
  });
});
