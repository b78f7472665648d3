import type { Command } from 'commander';
import { registerDiskVerbs } from './disk.ts';
import { registerOperatorVerbs } from './operator.ts';

// Each area of the project adds its verbs here, one line each, so main.ts stays small.
export function registerVerbs(program: Command): void {
  registerDiskVerbs(program);
  registerOperatorVerbs(program);
}
