// How soon V8 recompiles a hot wasm function with its optimising compiler (TurboFan). The
// translator's blocks (jit.ts) are short straight-line functions whose baseline (Liftoff) code
// is nearly as fast as the optimised one: at V8's default budget a fresh process spent more CPU
// on background TurboFan compiles than they saved — the first compile of the compiler ran at
// 208–211 M instructions per CPU-second with the default and 257–277 with the budget below
// (bench/machine, fresh processes, hints warm), and later compiles in the process were no slower.
// The flag is V8's and process-wide: other wasm of the process (undici's HTTP parser) tiers up
// later too, which costs it nothing measurable. A thread past jit.ts's LIMITS.longLived gets the
// low budget below for the modules it compiles from then on (jit.ts setCompileTier): there the
// optimised blocks repay their compiles. RETROKUBE_WASM_TIERING=default leaves V8's own.

import v8 from 'node:v8';
import { setCompileTier } from './jit.ts';

export const LIMITS = {
  tieringBudget: 200_000_000, // V8's --wasm-tiering-budget (about bytes of code executed; V8's default 13,000,000)
  longLivedBudget: 100_000, // ...for a long-lived thread's modules: a warm compile ran about a third faster with it (bench/machine)
} as const;

let done = false;

/** Set the budget once per process, before the first translated block is compiled. */
export function tuneWasmTiering(env: NodeJS.ProcessEnv = process.env): void {
  if (done) return;
  done = true;
  if (env.RETROKUBE_WASM_TIERING === 'default') return;
  v8.setFlagsFromString(`--wasm-tiering-budget=${LIMITS.tieringBudget}`);
  // The flag is the process's and read when a module is compiled: set before each compile, so a
  // thread's modules get its own tier whatever another thread set last.
  setCompileTier((longLived) =>
    v8.setFlagsFromString(
      `--wasm-tiering-budget=${longLived ? LIMITS.longLivedBudget : LIMITS.tieringBudget}`,
    ),
  );
}
