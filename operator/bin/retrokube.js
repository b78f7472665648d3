#!/usr/bin/env node
// Installed entry point: Node 24 runs the TypeScript sources directly (type stripping), no build step.
await import('../src/cli/main.ts');
