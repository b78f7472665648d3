// What the CPU (cpu.ts) sees of the translator's hints: block starts translated in earlier
// processes (jit-hints.ts keeps them in files). This module has no Node imports, because cpu.ts
// also runs in the browser lab's Web Worker (console/page/machine-worker.ts): a Node thread that
// runs machines registers the file-backed hints here (node-setup.ts); the browser lab and unit
// tests that register nothing get no hints, and the CPU translates as it always did.

/** known[] (jit.ts knownBlockStarts) value of a start known only from a hint, not yet translated here. */
export const HINTED = 2;

/** What the CPU calls on the hints of its RAM size. */
export interface HintSource {
  /** Whether RAM holds, from pc on, exactly the words of the hint at pc. */
  matches(mem: Int32Array, pc: number): boolean;
  /** Hinted starts whose words are in RAM now and that have no translation (slotOf 0). */
  matching(mem: Int32Array, slotOf: Int32Array): number[];
  /** A block of `length` words was translated at pc. */
  record(mem: Int32Array, pc: number, length: number): void;
}

/** Gives the hints of a RAM size (null: none for it). */
export type HintProvider = (memBytes: number) => HintSource | null;

let provider: HintProvider | null = null;

/** Register this thread's provider (null: none); CPUs constructed afterwards use it. */
export function useHintSource(p: HintProvider | null): void {
  provider = p;
}

/** The hints for a CPU of memBytes of RAM: null when no provider is registered. */
export function hintSource(memBytes: number): HintSource | null {
  return provider === null ? null : provider(memBytes);
}
