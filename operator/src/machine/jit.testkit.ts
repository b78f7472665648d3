// For tests: a thread turned long-lived (jit.ts LIMITS.longLived), as after a few seconds of a
// machine's life, so that what it translates from then on is compiled for the long-lived tier,
// blocks in groups (jit-group.ts blocksBytes), and back to a fresh thread.
import { Risc5 } from './cpu.ts';
import { type CompileTier, forgetTranslations, LIMITS, setCompileTier } from './jit.ts';

/** A CPU of 64 KiB with no devices (every read 0), as the translator's tests run them. */
export function bareCpu(opts: { jit?: boolean; hotBlock?: number } = {}): Risc5 {
  return new Risc5(0x10000, 0xf000, { ioRead: () => 0, ioWrite: () => {}, voidFetch: () => {} }, opts);
}

/**
 * Run LIMITS.longLived instructions in translated code (a loop of two words, about 30 ms). The
 * thread turns long-lived only where a tier hook is set: `tierHook` is it.
 */
export function enterLongLived(tierHook: CompileTier = (compile) => compile()): void {
  setCompileTier(tierHook);
  const loop = bareCpu({ jit: true, hotBlock: 2 });
  loop.mem.set(Int32Array.of(0x41180001, 0xe7fffffe | 0)); // ADD R1, R1, 1; B 0
  loop.pc = 0;
  while (loop.instructions <= LIMITS.longLived) loop.run(20_000_000);
}

/** The thread as a fresh one: no hook, no translations, the fresh tier. */
export function leaveLongLived(): void {
  setCompileTier(null);
  forgetTranslations();
}
