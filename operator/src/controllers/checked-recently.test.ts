import { describe, expect, it } from 'vitest';
import { CheckedRecently } from './checked-recently.ts';

describe('CheckedRecently', () => {
  it('is fresh for the same desired objects until the recheck period has passed', () => {
    let t = 1_000;
    const c = new CheckedRecently(60_000, () => t);
    expect(c.fresh('ns/a', 'x')).toBe(false);
    c.verified('ns/a', 'x');
    expect(c.fresh('ns/a', 'x')).toBe(true);
    t += 59_999;
    expect(c.fresh('ns/a', 'x')).toBe(true);
    t += 1;
    expect(c.fresh('ns/a', 'x')).toBe(false);
  });

  it('is not fresh when the desired objects change, nor for another key, nor once forgotten', () => {
    const c = new CheckedRecently(60_000, () => 0);
    c.verified('ns/a', 'x');
    expect(c.fresh('ns/a', 'y')).toBe(false);
    expect(c.fresh('ns/b', 'x')).toBe(false);
    c.forget('ns/a');
    expect(c.fresh('ns/a', 'x')).toBe(false);
    expect(c.size).toBe(0);
  });
});
