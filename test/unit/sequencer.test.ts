// The suite's file order (vitest.config.ts): a project's leading file moved to the front of its group.
import { describe, expect, it } from 'vitest';
import { leadsItsGroup } from '../../vitest.config.ts';

const spec = (name: string, group: number) => ({
  name,
  project: { config: { sequence: { groupOrder: group } } },
});

describe('leadsItsGroup', () => {
  it('moves the chosen file to the front of its own group and keeps every other order', () => {
    const files = [spec('unit-a', 0), spec('env-a', 2), spec('env-b', 2), spec('nodes', 2), spec('e2e', 5)];
    expect(leadsItsGroup(files, (f) => f.name === 'nodes').map((f) => f.name)).toEqual([
      'unit-a',
      'nodes',
      'env-a',
      'env-b',
      'e2e',
    ]);
  });
  it('changes nothing when no file is chosen, and keeps a group of one in place', () => {
    const files = [spec('a', 0), spec('b', 1)];
    expect(leadsItsGroup(files, () => false)).toEqual(files);
    expect(leadsItsGroup(files, (f) => f.name === 'b').map((f) => f.name)).toEqual(['a', 'b']);
  });
});
