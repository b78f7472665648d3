// What an informer does when its watch breaks: resume from the last resourceVersion, LIST only
// on 410 Gone, wait as long as the server's Retry-After says, and LIST in turn with the others.
import { describe, expect, it } from 'vitest';
import { ApiError, KubeClient, type KubeObject, type ObjectList, type WatchHandle } from './client.ts';
import { Informer } from './informer.ts';
import { offlineKubeConfig, THING } from './offline.testkit.ts';
import { Reconnect } from './reconnect.ts';
import { RelistGate } from './relist-gate.ts';

const obj = (name: string, rv: string): KubeObject => ({
  metadata: { name, namespace: 'ns', resourceVersion: rv, uid: `uid-${name}` },
});

type WatchStep = { fail: ApiError | Error } | { events: unknown[] };

/** A client whose LISTs answer `lists` in turn and whose WATCHes play `watches` in turn. */
class ScriptedClient extends KubeClient {
  readonly listCalls: Array<{ at: number }> = [];
  readonly watchRvs: string[] = [];
  private readonly lists: Array<() => ObjectList<KubeObject>>;
  private readonly watches: WatchStep[];
  /** Resolves when the WATCH numbered `n` (from 1) opens. */
  private readonly opened: Array<() => void> = [];
  private readonly openedP: Promise<void>[] = [];

  constructor(lists: Array<() => ObjectList<KubeObject>>, watches: WatchStep[]) {
    super(offlineKubeConfig());
    this.lists = lists;
    this.watches = watches;
    for (let i = 0; i < watches.length + 1; i++)
      this.openedP.push(new Promise<void>((r) => this.opened.push(r)));
  }

  watchOpened(n: number): Promise<void> {
    return this.openedP[n - 1] as Promise<void>;
  }

  override async list<T2 extends KubeObject>(): Promise<ObjectList<T2>> {
    this.listCalls.push({ at: Date.now() });
    await new Promise((r) => setTimeout(r, 5)); // a LIST takes time: long enough for two to overlap
    const next = this.lists.shift();
    if (!next) throw new Error('no more LISTs scripted');
    return next() as ObjectList<T2>;
  }

  override async stream(
    _p: string,
    q: Record<string, unknown>,
    onEvent: (e: unknown) => void,
  ): Promise<WatchHandle> {
    this.watchRvs.push(String(q.resourceVersion));
    this.opened[this.watchRvs.length - 1]?.();
    const step = this.watches.shift();
    if (!step) {
      // No more script: a watch that stays open until aborted.
      let end = () => {};
      return { done: new Promise<void>((r) => (end = r)), abort: () => end() };
    }
    if ('fail' in step) throw step.fail;
    for (const e of step.events) onEvent(e);
    return { done: Promise.resolve(), abort: () => {} };
  }
}

const page =
  (rv: string, ...items: KubeObject[]) =>
  () => ({ metadata: { resourceVersion: rv }, items });

describe('Informer: a broken watch', () => {
  it('resumes from the last resourceVersion after a refused connection or a 5xx, without a LIST', async () => {
    const c = new ScriptedClient(
      [page('10', obj('a', '10'))],
      [
        { events: [{ type: 'MODIFIED', object: obj('a', '12') }] }, // then the stream ends
        { fail: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) },
        { fail: new ApiError(503, 'ServiceUnavailable', 'starting', undefined) },
      ],
    );
    const inf = new Informer(c, { type: THING, backoffMaxMs: 20 });
    await inf.start();
    await c.watchOpened(4);
    expect(c.listCalls.length).toBe(1);
    expect(c.watchRvs).toEqual(['10', '12', '12', '12']);
    expect(inf.get('ns', 'a')?.metadata.resourceVersion).toBe('12');
    await inf.stop();
  });

  it('LISTs again on 410 Gone, and the relist deletes what vanished and updates what changed in place', async () => {
    const c = new ScriptedClient(
      [page('10', obj('a', '10'), obj('b', '10')), page('20', obj('a', '15'), obj('c', '18'))],
      [{ fail: new ApiError(410, 'Expired', 'too old resource version', undefined) }],
    );
    const inf = new Informer(c, { type: THING, backoffMaxMs: 20 });
    const seen: string[] = [];
    inf.on((type, o) => seen.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`));
    await inf.start();
    await c.watchOpened(2);
    expect(c.listCalls.length).toBe(2);
    expect(c.watchRvs).toEqual(['10', '20']);
    expect(seen).toEqual(['add a@10', 'add b@10', 'update a@15', 'add c@18', 'delete b@10']);
    expect(
      inf
        .list()
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(['a', 'c']);
    await inf.stop();
  });
});

/** How long after a 429 with `retryAfterMs` an informer with that backoff opens its watch again. */
async function retryAfter429(
  retryAfterMs: number,
  backoff: { backoffBaseMs?: number; backoffMaxMs?: number },
) {
  const c = new ScriptedClient(
    [page('10', obj('a', '10'))],
    [{ fail: new ApiError(429, 'TooManyRequests', 'storage is (re)initializing', undefined, retryAfterMs) }],
  );
  const inf = new Informer(c, { type: THING, ...backoff });
  await inf.start();
  await c.watchOpened(1);
  const t0 = Date.now();
  await c.watchOpened(2);
  const ms = Date.now() - t0;
  expect(c.watchRvs).toEqual(['10', '10']); // resumed, no LIST
  expect(c.listCalls.length).toBe(1);
  await inf.stop();
  return ms;
}

describe('Informer: the server says when to come back', () => {
  it('waits as long as its Retry-After when that is longer than the informer’s own backoff', async () => {
    expect(await retryAfter429(300, { backoffMaxMs: 20 })).toBeGreaterThanOrEqual(290);
  });

  it('retries after a Retry-After shorter than the backoff it had reached', async () => {
    // Alone, its backoff would be 5 s (±20 %).
    expect(await retryAfter429(100, { backoffBaseMs: 5_000 })).toBeLessThan(2_000);
  });
});

describe('Reconnect: the server is back', () => {
  it('wakes an informer waiting out a long backoff as soon as another one reaches the server', async () => {
    const reconnect = new Reconnect();
    const refused = () => ({
      fail: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    });
    const slow = new ScriptedClient([page('10', obj('a', '10'))], [refused()]);
    const quick = new ScriptedClient([page('10', obj('b', '10'))], [refused()]);
    // Alone, the slow one would retry in 5 s (±20 %); the quick one in 50 ms.
    const a = new Informer(slow, { type: THING, backoffBaseMs: 5_000, reconnect });
    const b = new Informer(quick, { type: THING, backoffBaseMs: 50, reconnect });
    await a.start();
    await slow.watchOpened(1);
    const t0 = Date.now();
    await b.start();
    await slow.watchOpened(2);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(quick.watchRvs).toEqual(['10', '10']);
    expect(reconnect.sleeping).toBe(0);
    await Promise.all([a.stop(), b.stop()]);
  });
});

describe('RelistGate: the LISTs of a process take turns', () => {
  it('lets one informer LIST at a time, and every one gets its turn', async () => {
    const gate = new RelistGate();
    const clients = Array.from({ length: 4 }, () => new ScriptedClient([page('10', obj('a', '10'))], []));
    let inFlight = 0;
    let most = 0;
    const informers = clients.map((c) => {
      // Count across clients: each client's list() is wrapped to see the others'.
      const list = c.list.bind(c);
      c.list = (async (...args: Parameters<typeof list>) => {
        inFlight++;
        most = Math.max(most, inFlight);
        try {
          return await list(...args);
        } finally {
          inFlight--;
        }
      }) as typeof c.list;
      return new Informer(c, { type: THING, relistGate: gate });
    });
    await Promise.all(informers.map((i) => i.start()));
    expect(most).toBe(1);
    expect(informers.every((i) => i.hasSynced)).toBe(true);
    await Promise.all(informers.map((i) => i.stop()));
  });

  it('passes the turn on when a LIST fails', async () => {
    const gate = new RelistGate();
    await expect(gate.run(() => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
    await expect(gate.run(async () => 'next')).resolves.toBe('next');
    expect(gate.queued).toBe(0);
  });
});
