// Phases of the operator benchmarks that run once every object is complete and the operator is at
// rest:
//   change latency  one object's spec is changed at a time; the time from just before the PATCH to
//                   the moment a watch of this bench sees the operator's write of the changed child
//                   (so it includes the PATCH's round trip and two watch deliveries: an upper bound
//                   of what the operator itself takes)
//   overload        the kube-apiserver is paused (SIGSTOP: an API server that answers nothing, the
//                   worst kind of slow), then restarted (every watch breaks, requests are refused
//                   until it is back); the operator's LISTs, WATCHes, failures and requests are
//                   counted from its own /metrics over each phase.
import type { KubeClient, KubeObject, ResourceType, WatchHandle } from '../../operator/src/runtime/client.ts';
import { resourcePath } from '../../operator/src/runtime/client.ts';

const LIMITS = {
  changeTimeoutMs: 30_000, // a change not seen by then counts as lost (and fails the run)
  changeGapMs: 200, // between changes: one at a time, each into an operator at rest
  recoveryPollMs: 250, // how often the overload phase checks the operator's recovery
} as const;

/** What a bench changes to measure the latency to a child write. */
export interface ChangeProbe {
  /** The kind of the child the operator rewrites after the change. */
  child: ResourceType;
  /** The kind changed (watched too, to tell the API server's share of a change from the operator's). */
  primary?: ResourceType;
  /** Changes object `index` (the `round`-th change); returns the child's name and how to recognise its new state. */
  change(
    k: KubeClient,
    namespace: string,
    index: number,
    round: number,
  ): Promise<{ child: string; primaryName?: string; done(obj: KubeObject): boolean }>;
}

/**
 * Where one change's time went, ms from just before the PATCH: its answer, the moment this bench's
 * watch of the primary kind saw the change (≈ when the operator's own watch could: the same API
 * server's watch cache), and the child write seen. child − primarySeen is the operator's share
 * (its queue, its reconcile, its write) plus one watch delivery.
 */
export interface ChangeStages {
  patchMs: number;
  primarySeenMs: number;
  childSeenMs: number;
}

export interface Percentiles {
  samples: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** The stages' percentiles, and the slowest changes' stages (where an outlier's time went). */
export function stagePercentiles(stages: ChangeStages[], slowest = 3) {
  const r = (x: number) => +x.toFixed(1);
  return {
    patch: percentiles(stages.map((s) => s.patchMs)),
    primarySeen: percentiles(stages.map((s) => s.primarySeenMs)),
    operator: percentiles(stages.map((s) => s.childSeenMs - s.primarySeenMs)),
    slowest: [...stages]
      .sort((a, b) => b.childSeenMs - a.childSeenMs)
      .slice(0, slowest)
      .map((s) => ({
        patchMs: r(s.patchMs),
        primarySeenMs: r(s.primarySeenMs),
        childSeenMs: r(s.childSeenMs),
      })),
  };
}

export function percentiles(xs: number[]): Percentiles {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => +(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? 0).toFixed(1);
  return { samples: s.length, p50Ms: at(0.5), p90Ms: at(0.9), p99Ms: at(0.99), maxMs: at(1) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `rounds` changes, one at a time, each to a different object (spread over all `count` of them);
 * resolves with the latency of each, in ms.
 */
export async function changeLatency(
  k: KubeClient,
  namespace: string,
  probe: ChangeProbe,
  count: number,
  rounds: number,
  firstRound = 0,
  /** Filled with each change's stages when the probe names its primary kind. */
  stages?: ChangeStages[],
): Promise<number[]> {
  // Watch the child kind from now on: the list's resourceVersion, so no replay of old objects.
  const list = await k.list<KubeObject>(probe.child, namespace, { limit: 1 });
  let waiting: { child: string; done(o: KubeObject): boolean; seen(): void } | undefined;
  const watch = await k.stream(
    resourcePath(probe.child, namespace),
    { watch: 1, resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: false },
    (raw) => {
      const ev = raw as { type: string; object: KubeObject };
      const w = waiting;
      if (w && ev.object.metadata?.name === w.child && ev.type !== 'DELETED' && w.done(ev.object)) w.seen();
    },
  );
  // A watch that breaks (an API server restarting answers 429 "storage is (re)initializing") fails
  // the round it was waiting for, never the process: the overload phase retries its probe.
  const childBroken = watch.done.then(() => Promise.reject(new Error('the child watch closed')));
  childBroken.catch(() => {});
  // When each object was first seen MODIFIED in this round: the changed one's first is the change
  // (at rest nothing else writes it), whether it comes before or after the PATCH's answer.
  const modifiedAt = new Map<string, number>();
  let primaryWatch: WatchHandle | undefined;
  const out: number[] = [];
  try {
    if (probe.primary) {
      const from = await k.list<KubeObject>(probe.primary, namespace, { limit: 1 });
      primaryWatch = await k.stream(
        resourcePath(probe.primary, namespace),
        { watch: 1, resourceVersion: from.metadata.resourceVersion, allowWatchBookmarks: false },
        (raw) => {
          const ev = raw as { type: string; object: KubeObject };
          const name = ev.object.metadata?.name;
          if (ev.type === 'MODIFIED' && name && !modifiedAt.has(name))
            modifiedAt.set(name, performance.now());
        },
      );
      primaryWatch.done.catch(() => {}); // broken, a change only lacks its stages
    }
    for (let r = firstRound; r < firstRound + rounds; r++) {
      // 7919 is prime, so coprime with any count that is not a multiple of it: distinct objects.
      const index = (r * 7919) % count;
      let seen = () => {};
      const seenP = new Promise<void>((ok) => {
        seen = ok;
      });
      modifiedAt.clear();
      const t0 = performance.now();
      const target = await probe.change(k, namespace, index, r);
      const patchMs = performance.now() - t0;
      waiting = { ...target, seen };
      // The event may have come before `waiting` was set: look at the child once.
      const now = await k.getOrUndefined<KubeObject>(probe.child, namespace, target.child);
      if (now && target.done(now)) seen();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        seenP,
        childBroken,
        new Promise((_, fail) => {
          timer = setTimeout(
            () =>
              fail(new Error(`change ${r} of object ${index}: child ${target.child} not rewritten in time`)),
            LIMITS.changeTimeoutMs,
          );
        }),
      ]).finally(() => clearTimeout(timer));
      const childSeenMs = performance.now() - t0;
      out.push(childSeenMs);
      const primaryAt = target.primaryName === undefined ? undefined : modifiedAt.get(target.primaryName);
      if (stages && primaryAt !== undefined)
        stages.push({ patchMs, primarySeenMs: primaryAt - t0, childSeenMs });
      waiting = undefined;
      await sleep(LIMITS.changeGapMs);
    }
  } finally {
    watch.abort();
    if (primaryWatch) primaryWatch.abort();
  }
  return out;
}

/** The operator's counters the overload phase compares. */
export interface OpCounters {
  lists: number;
  watches: number;
  failures: number;
  requests: number;
  unanswered: number;
  tooMany: number;
  serverErrors: number;
  writes: number;
}

export function opCounters(m: Map<string, number>): OpCounters {
  const sum = (re: RegExp, prefix: string) => {
    let n = 0;
    for (const [k, v] of m) if (k.startsWith(prefix) && re.test(k)) n += v;
    return n;
  };
  const inf = 'informer_operations_total{';
  const rest = 'rest_client_requests_total{';
  return {
    lists: sum(/operation="list"/, inf),
    watches: sum(/operation="watch"/, inf),
    failures: sum(/operation="failure"/, inf),
    requests: sum(/./, rest),
    unanswered: sum(/code="0"/, rest),
    tooMany: sum(/code="429"/, rest),
    serverErrors: sum(/code="5\d\d"/, rest),
    writes: sum(/method="(POST|PUT|PATCH|DELETE)"/, rest),
  };
}

export function diff(a: OpCounters, b: OpCounters): OpCounters {
  const out = { ...b };
  for (const key of Object.keys(out) as (keyof OpCounters)[]) out[key] = b[key] - a[key];
  return out;
}

export interface OverloadHooks {
  metrics(): Promise<Map<string, number>>;
  /** The kube-apiserver's pid now (it changes with a restart). */
  apiPid(): number;
  restart(downMs: number): Promise<{ downMs: number; readyMs: number }>;
  /** Resolves once the operator answers a change again (its latency, ms). */
  probeChange(round: number): Promise<number>;
}

export interface OverloadResult {
  pause: { pausedMs: number; counters: OpCounters; firstChangeAfterMs: number; windowMs: number };
  restart: {
    downMs: number;
    readyMs: number;
    counters: OpCounters;
    firstChangeAfterMs: number;
    windowMs: number;
  };
  informers: number;
}

/**
 * Pauses the API server for `pauseMs`, then restarts it with `downMs` down; after each, the
 * operator gets `windowMs` to do whatever it does, and its counters over the whole phase are kept.
 */
export async function overload(
  h: OverloadHooks,
  opts: { pauseMs: number; downMs: number; windowMs: number; firstRound: number },
): Promise<OverloadResult> {
  const m0 = opCounters(await h.metrics());
  const pid = h.apiPid();
  process.kill(pid, 'SIGSTOP');
  const t0 = performance.now();
  await sleep(opts.pauseMs);
  process.kill(pid, 'SIGCONT');
  const pausedMs = performance.now() - t0;
  const pauseChange = await h.probeChange(opts.firstRound);
  await sleep(opts.windowMs);
  const m1 = opCounters(await h.metrics());

  const r = await h.restart(opts.downMs);
  const restartChange = await h.probeChange(opts.firstRound + 1);
  await sleep(opts.windowMs);
  const m2 = opCounters(await h.metrics());
  const informers = new Set(
    [...(await h.metrics()).keys()]
      .filter((k) => k.startsWith('informer_operations_total{') && k.includes('operation="list"'))
      .map((k) => /resource="([^"]*)"/.exec(k)?.[1]),
  ).size;
  return {
    pause: {
      pausedMs: Math.round(pausedMs),
      counters: diff(m0, m1),
      firstChangeAfterMs: Math.round(pauseChange),
      windowMs: opts.windowMs,
    },
    restart: {
      ...r,
      counters: diff(m1, m2),
      firstChangeAfterMs: Math.round(restartChange),
      windowMs: opts.windowMs,
    },
    informers,
  };
}

export { LIMITS as PHASE_LIMITS };
