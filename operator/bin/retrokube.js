#!/usr/bin/env node
// Installed entry point: Node 24 runs the TypeScript sources directly (type stripping), no build step.
// Node's compile cache (compile-cache.js: in the user's cache folder) keeps the stripped and compiled
// modules between runs.
import { enableCliCompileCache } from './compile-cache.js';

enableCliCompileCache();
await import('../src/cli/main.ts');
