import { describe, expect, it } from 'vitest';
import type { KubeObject } from './client.ts';
import { APPLIED_HASH, controllerRef, isSubset, quantityValue, withAppliedHash } from './objects.ts';

describe('change detection before an apply', () => {
  it('ignores fields the API server adds', () => {
    const desired = {
      spec: { replicas: 1, template: { spec: { containers: [{ name: 'relay', image: 'x' }] } } },
    };
    const observed = {
      spec: {
        replicas: 1,
        revisionHistoryLimit: 10,
        template: {
          spec: {
            containers: [{ name: 'relay', image: 'x', terminationMessagePath: '/dev/termination-log' }],
          },
        },
      },
    };
    expect(isSubset(desired, observed)).toBe(true);
  });

  it('sees a changed value, a missing field, and a list of different length', () => {
    expect(isSubset({ a: { b: 1 } }, { a: { b: 2 } })).toBe(false);
    expect(isSubset({ a: { b: 1 } }, { a: {} })).toBe(false);
    expect(isSubset({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
    expect(isSubset({ a: ['--loss', '0.1'] }, { a: ['--loss', '0.2'] })).toBe(false);
  });

  it('compares quantities under resources by value, and nowhere else', () => {
    expect(
      isSubset({ resources: { limits: { memory: '1024Mi' } } }, { resources: { limits: { memory: '1Gi' } } }),
    ).toBe(true);
    expect(
      isSubset({ resources: { requests: { cpu: '0.1' } } }, { resources: { requests: { cpu: '100m' } } }),
    ).toBe(true);
    expect(
      isSubset({ resources: { requests: { cpu: '0.2' } } }, { resources: { requests: { cpu: '100m' } } }),
    ).toBe(false);
    expect(isSubset({ args: ['1024Mi'] }, { args: ['1Gi'] })).toBe(false);
  });

  it('parses quantities', () => {
    expect(quantityValue('10m')).toBeCloseTo(0.01);
    expect(quantityValue('32Mi')).toBe(32 * 2 ** 20);
    expect(quantityValue('1e3')).toBe(1000);
    expect(quantityValue('2')).toBe(2);
    expect(quantityValue('lots')).toBeUndefined();
  });

  it('the applied hash changes when a field is dropped from the desired object', () => {
    const a = withAppliedHash<KubeObject>({ metadata: { name: 'x' }, spec: { a: 1, b: 2 } });
    const b = withAppliedHash<KubeObject>({ metadata: { name: 'x' }, spec: { a: 1 } });
    expect(a.metadata.annotations?.[APPLIED_HASH]).not.toBe(b.metadata.annotations?.[APPLIED_HASH]);
    // An observed object that still carries the old field and old hash is not a subset of the new intent.
    expect(isSubset(b, a)).toBe(false);
    // Stamping is stable and independent of key order.
    const c = withAppliedHash<KubeObject>({ spec: { b: 2, a: 1 }, metadata: { name: 'x' } });
    expect(c.metadata.annotations?.[APPLIED_HASH]).toBe(a.metadata.annotations?.[APPLIED_HASH]);
  });

  it('a controller reference blocks owner deletion and names one controller', () => {
    const ref = controllerRef({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonAir',
      metadata: { name: 'lab', uid: 'u-1' },
    });
    expect(ref).toEqual({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'OberonAir',
      name: 'lab',
      uid: 'u-1',
      controller: true,
      blockOwnerDeletion: true,
    });
    expect(() => controllerRef({ metadata: { name: 'x' } })).toThrow(/uid/);
  });
});
