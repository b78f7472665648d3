import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { cachedLookup, LOOKUP_LIMITS } from './relay-lookup.ts';

/** Calls the lookup as dgram does and resolves with its answer. */
const ask = (l: ReturnType<typeof cachedLookup>, host: string) =>
  new Promise<{ err: Error | null; address: string }>((ok) =>
    l(host, {}, (err, address) => ok({ err, address })),
  );

describe('cachedLookup: a station resolves its relay at most once at a time, and keeps the answer', () => {
  it('many sends while the name is being resolved make one lookup; the answer is kept until its TTL', async () => {
    let t = 0;
    const calls: string[] = [];
    let answer: (a: LookupAddress) => void = () => {};
    const resolve = (host: string) => {
      calls.push(host);
      return new Promise<LookupAddress>((ok) => {
        answer = ok;
      });
    };
    const l = cachedLookup(4, resolve, () => t, 1_000);
    const sends = Array.from({ length: 50 }, () => ask(l, 'rk-air-a.ns.svc'));
    answer({ address: '10.0.0.7', family: 4 });
    const waited = LOOKUP_LIMITS.waitingSends;
    const got = await Promise.all(sends);
    expect(got.map((s) => s.address)).toEqual([
      ...Array(waited).fill('10.0.0.7'),
      ...Array(50 - waited).fill(''),
    ]);
    // the sends past the first `waited` were dropped, not queued behind the lookup
    expect(
      got.slice(waited).every((s) => (s.err as NodeJS.ErrnoException | null)?.code === 'EAI_AGAIN'),
    ).toBe(true);
    expect(calls).toHaveLength(1);
    t = 999;
    expect((await ask(l, 'rk-air-a.ns.svc')).address).toBe('10.0.0.7');
    expect(calls).toHaveLength(1);
    t = 1_001; // expired: asked again
    const again = ask(l, 'rk-air-a.ns.svc');
    answer({ address: '10.0.0.8', family: 4 });
    expect((await again).address).toBe('10.0.0.8');
    expect(calls).toHaveLength(2);
  });

  it('a failure is handed to every waiting send and not kept; IP literals never resolve', async () => {
    let n = 0;
    const l = cachedLookup(4, async () => {
      n++;
      if (n === 1) throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
      return { address: '10.0.0.9', family: 4 };
    });
    const [a, b] = await Promise.all([ask(l, 'late.ns.svc'), ask(l, 'late.ns.svc')]);
    // once answered (here: failed), sends wait again: the bound is per lookup in flight
    expect(a.err?.message).toBe('ENOTFOUND');
    expect(b.err?.message).toBe('ENOTFOUND');
    expect((await ask(l, 'late.ns.svc')).address).toBe('10.0.0.9');
    expect(n).toBe(2);
    expect((await ask(l, '127.0.0.1')).address).toBe('127.0.0.1');
    expect(n).toBe(2);
  });
});
