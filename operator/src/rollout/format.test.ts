// The rollout report a person reads: a bar for the walk, one row per target.
import { describe, expect, it } from 'vitest';
import { age, formatRollout } from './format.ts';

describe('rollout status for people', () => {
  it('shows the walk as a bar, the phase and message, and a row per target with its attempts and age', () => {
    const now = Date.parse('2026-12-01T10:00:00Z');
    const text = formatRollout(
      {
        metadata: { name: 'ticker2', namespace: 'fleet' },
        spec: { strategy: { type: 'rolling' }, change: { deployment: 'web', image: 'Ticker2' } },
        status: {
          phase: 'Progressing',
          targets: [
            {
              name: 'c1',
              phase: 'Succeeded',
              attempts: 1,
              finishedAt: '2026-12-01T09:59:30Z',
              message: 'runs Ticker2 ×2',
            },
            {
              name: 'c2',
              phase: 'Updating',
              attempts: 2,
              startedAt: '2026-12-01T09:57:00Z',
              message: 'attempt 2',
            },
            { name: 'c3', phase: 'Pending', attempts: 0 },
            { name: 'c4', phase: 'Pending', attempts: 0 },
          ],
        },
      },
      now,
    );
    expect(text.split('\n')).toEqual([
      'rollout fleet/ticker2: rolling change of web to Ticker2',
      '[#####---------------] 1/4 changed  Progressing',
      '',
      'TARGET  PHASE      ATTEMPTS  SINCE    MESSAGE',
      'c1      Succeeded  1         30s ago  runs Ticker2 ×2',
      'c2      Updating   2         3m ago   attempt 2',
      'c3      Pending    0         -',
      'c4      Pending    0         -',
    ]);
  });

  it('says ages in seconds, minutes, then hours', () => {
    expect([age(5_000), age(600_000), age(3 * 3600_000)]).toEqual(['5s ago', '10m ago', '3h ago']);
  });
});
