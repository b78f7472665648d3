// What a Node thread that runs machines turns on before its first CPU: the translator's hints
// from earlier processes (jit-hints.ts) and V8's wasm tiering budget (wasm-tiering.ts). Both are
// Node's (files, node:v8), so the CPU (cpu.ts), which the browser lab also bundles, cannot do it
// itself; without this call a CPU runs as in the lab: no hints, V8's own tiering.
import { useJitHints } from './jit-hints.ts';
import { tuneWasmTiering } from './wasm-tiering.ts';

/** Hints and wasm tiering for the CPUs this thread constructs from now on (idempotent). */
export function setUpNodeMachines(): void {
  useJitHints();
  tuneWasmTiering();
}
