import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { internForCache, StringPool, SubtreePool } from './intern.ts';

describe('StringPool: one copy of each repeated string in the caches', () => {
  it('leaves every value as it was (strings, numbers, nesting), and skips the per-object unique ones', () => {
    const p = new StringPool();
    const obj = {
      metadata: { name: 'k1-node-a', uid: 'u-1', resourceVersion: '42', labels: { a: 'retrokube' } },
      spec: { replicas: 1, containers: [{ image: 'img:1', args: ['machine', 'run'] }], on: true, none: null },
    };
    const before = structuredClone(obj);
    expect(p.intern(obj)).toEqual(before);
    // name, label value, image, two args, and the key 'a' is not a value: 5 pooled strings
    expect(p.size).toBe(5);
  });

  it('is bounded: when full it starts over', () => {
    const p = new StringPool(3);
    for (const s of ['a', 'b', 'c', 'd']) p.string(s);
    expect(p.size).toBe(1);
    expect(p.string('d')).toBe('d');
  });

  it('takes less heap for many parsed copies of the same objects, less again with subtrees shared (a fresh Node, measured with gc)', () => {
    // 20,000 objects and two collections: with 5,000 and one, a busy host (CI, and here under load)
    // moved a 4 MiB figure by 0.4 MiB, enough to cross the bound; at 17 MiB it stays within 0.1 %.
    const module = fileURLToPath(new URL('./intern.ts', import.meta.url));
    const heapMiB = (keep: 'o' | 'p.intern(o)' | 'internForCache(o)') =>
      Number(
        execFileSync(
          process.execPath,
          [
            '--expose-gc',
            '--input-type=module',
            '-e',
            `const { StringPool, internForCache } = await import(${JSON.stringify(module)});
             const p = new StringPool();
             const text = (i) => JSON.stringify({ metadata: { name: 'k' + i, labels: { 'app.kubernetes.io/managed-by': 'retrokube', 'retrokube.io/air': 'k' + i + '-air' } },
               spec: { template: { spec: { containers: [{ image: 'localhost/retrokube:51de46aef4cf111c', command: ['node', 'operator/src/cli/main.ts'], args: ['machine', 'run', '/disk/oberon.dsk', '--in-place', '--vnc', '5900'],
                 volumeMounts: [{ name: 'disk', mountPath: '/disk' }, { name: 'status', mountPath: '/run/retrokube' }] }] } } } });
             gc(); const h0 = process.memoryUsage().heapUsed; const keep = [];
             for (let i = 0; i < 20000; i++) { const o = JSON.parse(text(i)); keep.push(${keep}); }
             gc(); gc(); console.log((process.memoryUsage().heapUsed - h0) / 2 ** 20, keep.length);`,
          ],
          { encoding: 'utf8' },
        ).split(' ')[0],
      );
    const plain = heapMiB('o');
    const interned = heapMiB('p.intern(o)');
    const shared = heapMiB('internForCache(o)');
    expect(interned).toBeLessThan(plain * 0.85);
    expect(shared).toBeLessThan(interned * 0.6); // the spec is alike in all 20,000: one copy
  });
});

describe('SubtreePool: one frozen copy of each repeated object below metadata', () => {
  const plane = (i: number) =>
    JSON.parse(
      JSON.stringify({
        metadata: { name: `k${i}-plane`, labels: { app: 'plane' } },
        spec: {
          replicas: 1,
          selector: { matchLabels: { 'retrokube.io/cluster': `k${i}` } },
          template: {
            spec: {
              containers: [
                {
                  name: 'machine',
                  image: 'img:1',
                  ports: [{ containerPort: 5900, protocol: 'TCP' }],
                  args: ['run', `k${i}`],
                },
              ],
              volumes: [{ name: 'disk', emptyDir: {} }],
            },
          },
        },
      }),
    ) as { metadata: { name: string }; spec: Record<string, unknown> };

  it('shares equal subtrees across objects, keeps unequal ones apart, and changes no value', () => {
    const pool = new SubtreePool(new StringPool());
    const [a, b] = [plane(1), plane(2)];
    const before = [structuredClone(a), structuredClone(b)];
    const sa = pool.share(a.spec) as typeof a.spec;
    const sb = pool.share(b.spec) as typeof b.spec;
    expect([
      { ...a, spec: sa },
      { ...b, spec: sb },
    ]).toEqual(before);
    const podSpec = (s: typeof a.spec) =>
      (s.template as { spec: { containers: { ports: unknown }[]; volumes: unknown } }).spec;
    expect(podSpec(sb).volumes).toBe(podSpec(sa).volumes); // equal: one copy
    expect(podSpec(sb).containers[0]?.ports).toBe(podSpec(sa).containers[0]?.ports);
    expect(podSpec(sb).containers).not.toBe(podSpec(sa).containers); // args differ
    expect(sb.selector).not.toBe(sa.selector);
    expect(pool.share(plane(1).spec)).toBe(sa); // a third, equal to the first: the first's copy
  });

  it('freezes what it shares, so a write to a cached spec throws instead of changing every copy', () => {
    const obj = internForCache(plane(3));
    const ports = (obj.spec.template as { spec: { containers: { ports: { containerPort: number }[] }[] } })
      .spec.containers[0]?.ports;
    expect(() => {
      if (ports?.[0]) ports[0].containerPort = 1;
    }).toThrow(TypeError);
    expect(Object.isFrozen(obj.spec)).toBe(true);
    expect(Object.isFrozen(obj.metadata)).toBe(false); // an object's own fields are not shared
    obj.metadata.name = 'renamed';
  });

  it('tells apart values whose text is alike: types, key order, nesting', () => {
    const pool = new SubtreePool(new StringPool());
    const values = [
      { a: 1 },
      { a: '1' },
      { a: true },
      { a: 'true' },
      { a: null },
      { a: 'null' },
      [1, 2],
      [2, 1],
      { a: 1, b: 2 },
      { b: 2, a: 1 },
      { a: [1] },
      { a: { 0: 1 } },
      [],
      {},
    ];
    const shared = values.map((v) => pool.share(structuredClone(v)));
    expect(shared).toEqual(values);
    expect(new Set(shared).size).toBe(values.length);
  });

  it('is bounded: when full it starts over', () => {
    const pool = new SubtreePool(new StringPool(), 2);
    for (const v of [{ a: 1 }, { b: 1 }, { c: 1 }]) pool.share(v);
    expect(pool.size).toBe(1);
  });
});
