import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, KubeClient } from './client.ts';
import { Controller, type ReconcileContext, TerminalError } from './controller.ts';
import { EventRecorder } from './events.ts';
import { Informer } from './informer.ts';
import { createOperatorMetrics } from './metrics.ts';
import { offlineKubeConfig, THING } from './offline.testkit.ts';

const T = THING;

// Nothing listens there: these tests never reach the network (informers are not started).
const client = (): KubeClient => new KubeClient(offlineKubeConfig());

function controller(
  reconcile: (ctx: ReconcileContext, key: { namespace: string; name: string }) => Promise<unknown>,
) {
  const c = client();
  const metrics = createOperatorMetrics();
  const ctl = new Controller(
    { name: 'things', primary: T, owns: [], reconcile: reconcile as never, concurrency: 2 },
    {
      client: c,
      recorder: new EventRecorder(c),
      metrics,
      informer: (t) => new Informer(c, { type: t }),
    },
  );
  return { ctl, metrics };
}

async function results(metrics: ReturnType<typeof createOperatorMetrics>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.reconcileTotal.get()).values) out[String(v.labels.result)] = v.value;
  return out;
}

describe('controller error handling', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('retries a failing reconcile with growing delays and forgets the failures after a success', async () => {
    const calls: number[] = [];
    let fail = 3;
    const { ctl, metrics } = controller(async () => {
      calls.push(Date.now());
      if (fail-- > 0) throw new Error('API server unreachable');
      return undefined;
    });
    ctl.start();
    ctl.queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.length).toBe(4);
    const gaps = calls.slice(1).map((t, i) => t - calls[i]);
    expect(gaps).toEqual([500, 1000, 2000]); // 500 ms doubling
    expect(ctl.queue.numRequeues('ns/a')).toBe(0);
    expect(await results(metrics)).toEqual({ error: 3, success: 1 });
    await ctl.stop();
  });

  it('requeues a 409 conflict quietly and does not count it as an error', async () => {
    let n = 0;
    const { ctl, metrics } = controller(async () => {
      if (n++ === 0) throw new ApiError(409, 'Conflict', 'the object has been modified', undefined);
      return undefined;
    });
    ctl.start();
    ctl.queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(2_000);
    expect(n).toBe(2);
    expect(await results(metrics)).toEqual({ conflict: 1, success: 1 });
    expect((await metrics.reconcileErrors.get()).values.reduce((s, v) => s + v.value, 0)).toBe(0);
    await ctl.stop();
  });

  it('waits out a 429’s Retry-After when it is longer than the backoff', async () => {
    const calls: number[] = [];
    const { ctl } = controller(async () => {
      calls.push(Date.now());
      if (calls.length === 1) throw new ApiError(429, 'TooManyRequests', 'slow down', undefined, 3_000);
      return undefined;
    });
    ctl.start();
    ctl.queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(calls.length).toBe(2);
    expect(calls[1] - calls[0]).toBe(3_000); // not the 500 ms of a first failure
    await ctl.stop();
  });

  it('does not retry a TerminalError until the key is added again', async () => {
    let n = 0;
    const { ctl } = controller(async () => {
      n++;
      throw new TerminalError('spec can never work');
    });
    ctl.start();
    ctl.queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(n).toBe(1);
    ctl.queue.add('ns/a'); // the object changed
    await vi.advanceTimersByTimeAsync(0);
    expect(n).toBe(2);
    await ctl.stop();
  });

  it('honours requeueAfterMs', async () => {
    const calls: number[] = [];
    const { ctl } = controller(async () => {
      calls.push(Date.now());
      return calls.length < 3 ? { requeueAfterMs: 5_000 } : undefined;
    });
    ctl.start();
    ctl.queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls.length).toBe(3);
    expect(calls[1] - calls[0]).toBe(5_000);
    await ctl.stop();
  });

  it('a throwing non-Error value does not crash the worker', async () => {
    let n = 0;
    const { ctl } = controller(async (_ctx, key) => {
      n++;
      if (key.name === 'bad') throw 'a string';
      return undefined;
    });
    ctl.start();
    ctl.queue.add('ns/bad');
    ctl.queue.add('ns/good');
    await vi.advanceTimersByTimeAsync(0);
    expect(n).toBe(2);
    await ctl.stop();
  });
});
