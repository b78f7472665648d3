import type { Command } from 'commander';

// Each area of the project adds its verbs here, one line each, so main.ts stays small.
export function registerVerbs(_program: Command): void {}
