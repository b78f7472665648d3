import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KubeClient, type KubeObject, type ObjectList, type WatchHandle } from './client.ts';
import { dropManagedFields, Informer } from './informer.ts';
import { offlineKubeConfig, THING } from './offline.testkit.ts';

const T = THING;

/** A client whose LIST answers `items` and whose one WATCH the test feeds by hand. */
class FakeClient extends KubeClient {
  push: (ev: unknown) => void = () => {};
  private readonly items: KubeObject[];
  private opened: () => void = () => {};
  /** Resolves once the informer has opened its watch (after its first LIST). */
  readonly watching = new Promise<void>((r) => {
    this.opened = r;
  });
  constructor(items: KubeObject[]) {
    super(offlineKubeConfig());
    this.items = items;
  }
  override async list<T2 extends KubeObject>(): Promise<ObjectList<T2>> {
    return { metadata: { resourceVersion: '10' }, items: structuredClone(this.items) as T2[] };
  }
  override async stream(_p: string, _q: unknown, onEvent: (e: unknown) => void): Promise<WatchHandle> {
    this.push = onEvent;
    this.opened();
    let end = () => {};
    return { done: new Promise<void>((r) => (end = r)), abort: () => end() };
  }
}

const child = (name: string, owner: string | undefined, rv = '1'): KubeObject => ({
  metadata: {
    name,
    namespace: 'ns',
    resourceVersion: rv,
    uid: `uid-${name}`,
    managedFields: [{ manager: 'retrokube' }],
    ...(owner
      ? {
          ownerReferences: [
            { apiVersion: 'v1', kind: 'K', name: owner, uid: `uid-${owner}`, controller: true },
          ],
        }
      : {}),
  },
  spec: { image: 'img:1', args: ['machine', 'run'] },
});

describe('Informer: what the controllers read from the cache', () => {
  it('answers a parent’s children by its uid from LIST and WATCH, following adds, re-parenting and deletes', async () => {
    const c = new FakeClient([
      child('a-0', 'a'),
      child('a-1', 'a'),
      child('b-0', 'b'),
      child('loose', undefined),
    ]);
    const inf = new Informer(c, { type: T });
    await inf.start();
    await c.watching;
    const names = (uid: string) =>
      inf
        .controlledBy(uid)
        .map((o) => o.metadata.name)
        .sort();
    expect(names('uid-a')).toEqual(['a-0', 'a-1']);
    expect(names('uid-b')).toEqual(['b-0']);
    c.push({ type: 'ADDED', object: child('b-1', 'b', '11') });
    c.push({ type: 'MODIFIED', object: child('a-1', 'b', '12') }); // taken over by b
    c.push({ type: 'DELETED', object: child('a-0', 'a', '13') });
    expect(names('uid-a')).toEqual([]);
    expect(names('uid-b')).toEqual(['a-1', 'b-0', 'b-1']);
    expect(names('uid-nobody')).toEqual([]);
    await inf.stop();
  });

  it('answers the same when first asked only after changes (the index is built at the first ask)', async () => {
    const c = new FakeClient([child('a-0', 'a'), child('a-1', 'a'), child('b-0', 'b')]);
    const inf = new Informer(c, { type: T });
    await inf.start();
    await c.watching;
    c.push({ type: 'MODIFIED', object: child('a-1', 'b', '12') });
    c.push({ type: 'DELETED', object: child('b-0', 'b', '13') });
    const names = (uid: string) =>
      inf
        .controlledBy(uid)
        .map((o) => o.metadata.name)
        .sort();
    expect(names('uid-a')).toEqual(['a-0']);
    expect(names('uid-b')).toEqual(['a-1']);
    c.push({ type: 'ADDED', object: child('b-2', 'b', '14') }); // kept up to date once built
    expect(names('uid-b')).toEqual(['a-1', 'b-2']);
    await inf.stop();
  });

  it('keeps every field a controller compares, drops only managedFields', async () => {
    const c = new FakeClient([child('a-0', 'a')]);
    const inf = new Informer(c, { type: T });
    await inf.start();
    await c.watching;
    c.push({ type: 'MODIFIED', object: child('a-0', 'a', '11') });
    const cached = inf.get('ns', 'a-0');
    const { managedFields: _dropped, ...meta } = child('a-0', 'a', '11').metadata;
    expect(cached).toEqual({
      apiVersion: 'retrokube.io/v1alpha1',
      kind: 'Thing',
      ...child('a-0', 'a', '11'),
      metadata: meta,
    });
    await inf.stop();
  });

  it('leaves a cached metadata without managedFields as compact as a parsed one (no dictionary mode)', () => {
    const module = fileURLToPath(new URL('./informer.ts', import.meta.url));
    const obj = JSON.stringify(child('a-0', 'a'));
    const out = execFileSync(
      process.execPath,
      [
        '--allow-natives-syntax',
        '--input-type=module',
        '-e',
        `const { dropManagedFields } = await import(${JSON.stringify(module)});
         const o = JSON.parse(${JSON.stringify(obj)});
         dropManagedFields(o);
         const d = JSON.parse(${JSON.stringify(obj)});
         delete d.metadata.managedFields;
         console.log(%HasFastProperties(o.metadata), %HasFastProperties(d.metadata), 'managedFields' in o.metadata);`,
      ],
      { encoding: 'utf8' },
    ).trim();
    // The second figure shows what `delete` would do: the reason for the helper.
    expect(out).toBe('true false false');
    const same = child('b-0', undefined);
    dropManagedFields(same);
    expect(same.metadata).toEqual({ name: 'b-0', namespace: 'ns', resourceVersion: '1', uid: 'uid-b-0' });
  });
});
