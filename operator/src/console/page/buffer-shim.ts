// The emulator's disk and serial code use Node's Buffer; in the page esbuild injects this one
// (the "buffer" package, pinned in package.json) wherever the global is used.
export { Buffer } from 'buffer';
