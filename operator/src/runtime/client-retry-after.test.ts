import { describe, expect, it } from 'vitest';
import { retryAfterMs } from './client.ts';

describe('retryAfterMs: the Retry-After the API server sends with a 429 or 503', () => {
  it('reads delay-seconds, an HTTP date, and nothing from a missing or garbled header', () => {
    expect(retryAfterMs('1')).toBe(1_000);
    expect(retryAfterMs(['2.5'])).toBe(2_500);
    const inTen = new Date(Date.now() + 10_000).toUTCString();
    expect(retryAfterMs(inTen)).toBeGreaterThan(8_000);
    expect(retryAfterMs(undefined)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs('-3')).toBeUndefined();
    expect(retryAfterMs('3600')).toBe(60_000); // longer is not believed (LIMITS.retryAfterMaxMs)
  });
});
