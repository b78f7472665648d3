import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { StringPool } from './intern.ts';

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

  it('takes less heap for many parsed copies of the same objects (a fresh Node, measured with gc)', () => {
    const module = fileURLToPath(new URL('./intern.ts', import.meta.url));
    const heapMiB = (intern: boolean) =>
      Number(
        execFileSync(
          process.execPath,
          [
            '--expose-gc',
            '--input-type=module',
            '-e',
            `const { StringPool } = await import(${JSON.stringify(module)});
             const p = new StringPool();
             const text = (i) => JSON.stringify({ metadata: { name: 'k' + i, labels: { 'app.kubernetes.io/managed-by': 'retrokube', 'retrokube.io/air': 'k' + i + '-air' } },
               spec: { template: { spec: { containers: [{ image: 'localhost/retrokube:51de46aef4cf111c', command: ['node', 'operator/src/cli/main.ts'], args: ['machine', 'run', '/disk/oberon.dsk', '--in-place', '--vnc', '5900'],
                 volumeMounts: [{ name: 'disk', mountPath: '/disk' }, { name: 'status', mountPath: '/run/retrokube' }] }] } } } });
             gc(); const h0 = process.memoryUsage().heapUsed; const keep = [];
             for (let i = 0; i < 5000; i++) { const o = JSON.parse(text(i)); keep.push(${intern ? 'p.intern(o)' : 'o'}); }
             gc(); console.log((process.memoryUsage().heapUsed - h0) / 2 ** 20, keep.length);`,
          ],
          { encoding: 'utf8' },
        ).split(' ')[0],
      );
    const plain = heapMiB(false);
    const interned = heapMiB(true);
    expect(interned).toBeLessThan(plain * 0.85);
  });
});
