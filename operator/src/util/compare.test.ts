import { describe, expect, it } from 'vitest';
import { byCodeUnit } from './compare.ts';

describe('byCodeUnit', () => {
  it('orders by code unit, whatever the locale: digits, then upper case, then lower case', () => {
    expect(['node-b', 'Ticker2', 'node-a', 'Ticker', '10', '9'].sort(byCodeUnit)).toEqual([
      '10',
      '9',
      'Ticker',
      'Ticker2',
      'node-a',
      'node-b',
    ]);
    expect(byCodeUnit('a', 'a')).toBe(0);
    expect(byCodeUnit('b', 'a')).toBe(1);
  });
});
