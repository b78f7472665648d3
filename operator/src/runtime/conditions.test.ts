import { describe, expect, it } from 'vitest';
import { findCondition, isTrue, setConditions, timestamp } from './conditions.ts';

const t0 = new Date('2026-11-29T10:00:00.123Z');
const t1 = new Date('2026-11-29T10:05:00Z');

describe('status conditions', () => {
  it('a new condition gets the current time, the generation and an empty message by default', () => {
    const out = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'Waiting' }], 3, t0);
    expect(out).toEqual([
      {
        type: 'Ready',
        status: 'False',
        observedGeneration: 3,
        lastTransitionTime: '2026-11-29T10:00:00Z',
        reason: 'Waiting',
        message: '',
      },
    ]);
  });

  it('lastTransitionTime stays when the status is unchanged, even if reason and message change', () => {
    const a = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'Waiting' }], 1, t0);
    const b = setConditions(
      a,
      [{ type: 'Ready', status: 'False', reason: 'StillWaiting', message: 'x' }],
      2,
      t1,
    );
    expect(b[0].lastTransitionTime).toBe('2026-11-29T10:00:00Z');
    expect(b[0].reason).toBe('StillWaiting');
    expect(b[0].observedGeneration).toBe(2);
  });

  it('lastTransitionTime moves when the status flips', () => {
    const a = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'Waiting' }], 1, t0);
    const b = setConditions(a, [{ type: 'Ready', status: 'True', reason: 'RelayReady' }], 1, t1);
    expect(b[0].lastTransitionTime).toBe(timestamp(t1));
    expect(isTrue(b, 'Ready')).toBe(true);
  });

  it('keeps other condition types and their order, appends new types', () => {
    const a = setConditions(
      undefined,
      [
        { type: 'Ready', status: 'False', reason: 'A' },
        { type: 'Degraded', status: 'False', reason: 'B' },
      ],
      1,
      t0,
    );
    const b = setConditions(a, [{ type: 'Progressing', status: 'True', reason: 'C' }], 1, t1);
    expect(b.map((c) => c.type)).toEqual(['Ready', 'Degraded', 'Progressing']);
    expect(findCondition(b, 'Degraded')?.lastTransitionTime).toBe('2026-11-29T10:00:00Z');
  });

  it('does not mutate its input', () => {
    const a = setConditions(undefined, [{ type: 'Ready', status: 'False', reason: 'A' }], 1, t0);
    const frozen = JSON.stringify(a);
    setConditions(a, [{ type: 'Ready', status: 'True', reason: 'B' }], 2, t1);
    expect(JSON.stringify(a)).toBe(frozen);
  });

  it('refuses a reason the API server would reject', () => {
    expect(() => setConditions(undefined, [{ type: 'Ready', status: 'True', reason: 'not ok' }], 1)).toThrow(
      /CamelCase/,
    );
  });
});
