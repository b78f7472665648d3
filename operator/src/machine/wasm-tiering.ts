// How V8 compiles the translator's modules (jit.ts setCompileTier). V8 runs a new wasm function
// in its baseline compiler (Liftoff) and recompiles it with its optimising one (TurboFan) once
// the function has used up a budget, charged at each return, tail call and loop back-edge by the
// length of code it ran (roughly). The translator's blocks run about as fast in baseline code,
// and in a fresh process the optimising compiles cost more CPU than they save: the first compile
// of the compiler ran at 208–211 M instructions per CPU-second with V8's default budget and
// 257–277 with a budget of 200 M (bench/machine, fresh processes, hints warm). A group of blocks
// (jit-group.ts) is charged its whole length at each jump between its blocks, and used up even
// that budget within a fresh compile; its optimising compiles then cost more than the groups
// saved. So a fresh thread's modules are compiled with no tier-up at all: V8 leaves out the
// checks that count the budget when it compiles a function while --wasm-tier-up-filter names
// another function, and compiling eagerly (--no-wasm-lazy-compilation) compiles every function
// of the module now, while the flags say so, instead of at its first call. A thread past jit.ts's
// LIMITS.longLived compiles its modules with V8's dynamic tiering and a low budget: there the
// optimised blocks repay their compiles (a warm compile about a third faster).
//
// The flags are the process's. Each is set just before a module is compiled and put back after:
// a module another thread compiles in that moment gets this thread's tier, which changes its
// speed, never its results. RETROKUBE_WASM_TIERING=default leaves V8's own tiering (and jit.ts
// then keeps a function per block, as in the browser).

import v8 from 'node:v8';
import { setCompileTier } from './jit.ts';

export const LIMITS = {
  tieringBudget: 200_000_000, // V8's --wasm-tiering-budget for the process's other wasm, and for a module compiled while another thread's flags were set (V8's default 13,000,000)
  longLivedBudget: 100_000, // ...for a long-lived thread's modules: a warm compile ran about a third faster with it (bench/machine)
  noFunction: 2_147_483_647, // a --wasm-tier-up-filter no module has a function for (V8 allows 1,000,000 functions)
} as const;

let done = false;

/** A module of translated blocks for its tier (jit.ts CompileTier). */
export function compileForTier<M>(compile: () => M, longLived: boolean): M {
  if (longLived) {
    // Read when the module is instantiated, which jit.ts does at once.
    v8.setFlagsFromString(`--wasm-tiering-budget=${LIMITS.longLivedBudget}`);
    return compile();
  }
  v8.setFlagsFromString(`--wasm-tiering-budget=${LIMITS.tieringBudget}`);
  v8.setFlagsFromString(`--wasm-tier-up-filter=${LIMITS.noFunction}`);
  v8.setFlagsFromString('--no-wasm-lazy-compilation');
  try {
    return compile();
  } finally {
    // V8's defaults (node does not change them).
    v8.setFlagsFromString('--wasm-lazy-compilation');
    v8.setFlagsFromString('--wasm-tier-up-filter=-1');
  }
}

/** Tiers for this thread's translated code, once per thread, before its first block is compiled. */
export function tuneWasmTiering(env: NodeJS.ProcessEnv = process.env): void {
  if (done) return;
  done = true;
  if (env.RETROKUBE_WASM_TIERING === 'default') return;
  v8.setFlagsFromString(`--wasm-tiering-budget=${LIMITS.tieringBudget}`);
  setCompileTier(compileForTier);
}
