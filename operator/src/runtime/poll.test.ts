import { describe, expect, it } from 'vitest';
import { pollPeriod } from './poll.ts';

describe('pollPeriod: polls that stay a fixed share of a core', () => {
  it('is the base period for few objects and grows linearly past it', () => {
    expect(pollPeriod(2_000, 1, 8)).toBe(2_000);
    expect(pollPeriod(2_000, 250, 8)).toBe(2_000);
    expect(pollPeriod(2_000, 1_000, 8)).toBe(8_000);
    // So the poll rate (objects / period) stops growing: 125/s at 1,000 and at 10,000.
    expect(1_000 / (pollPeriod(2_000, 1_000, 8) / 1000)).toBe(125);
    expect(10_000 / (pollPeriod(2_000, 10_000, 8) / 1000)).toBe(125);
  });
});
