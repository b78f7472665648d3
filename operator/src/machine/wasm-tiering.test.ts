import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// compileForTier's promise, checked in V8 itself (a child process with V8's natives syntax): a
// fresh thread's module stays in the baseline code however hot it runs, a long-lived thread's
// tiers up. It rests on how V8 reads its flags (wasm-tiering.ts), so a Node upgrade that changes
// that fails here rather than quietly slowing a fresh process down.
describe('compileForTier', () => {
  it("keeps a fresh thread's module in V8's baseline code and lets a long-lived thread's tier up", () => {
    const module = fileURLToPath(new URL('./wasm-tiering.ts', import.meta.url));
    const out = execFileSync(
      process.execPath,
      [
        '--allow-natives-syntax',
        '--input-type=module',
        '-e',
        `const { compileForTier } = await import(${JSON.stringify(module)});
         // (func (param $n i32) (result i32) (local $a i32) loop: $a := $a*31 + $n ^ $a>>>3; $n--; until 0)
         // with a custom section naming its tier, so the two modules' bytes differ
         const code = [1, 1, 0x7f, 0x03, 0x40, 0x20, 1, 0x41, 31, 0x6c, 0x20, 0, 0x6a, 0x20, 1, 0x41, 3, 0x76,
           0x73, 0x21, 1, 0x20, 0, 0x41, 1, 0x6b, 0x22, 0, 0x0d, 0, 0x0b, 0x20, 1, 0x0b];
         const bytes = (tag) => Uint8Array.of(0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 6, 1, 0x60, 1, 0x7f, 1, 0x7f,
           3, 2, 1, 0, 7, 5, 1, 1, 0x66, 0, 0, 10, code.length + 2, 1, code.length, ...code, 0, 2, 1, tag);
         const f = (longLived) => new WebAssembly.Instance(
           compileForTier(() => new WebAssembly.Module(bytes(longLived ? 1 : 0)), longLived)).exports.f;
         const fresh = f(false);
         const longLived = f(true);
         for (let k = 0; k < 300; k++) fresh(100000), longLived(100000);
         await new Promise((r) => setTimeout(r, 200)); // the optimising compile runs in the background
         longLived(1);
         console.log(%IsLiftoffFunction(fresh), %IsTurboFanFunction(longLived));
         // other wasm compiled after it tiers up as V8 would
         const after = new WebAssembly.Instance(new WebAssembly.Module(bytes(2))).exports.f;
         for (let k = 0; k < 3000; k++) after(100000);
         await new Promise((r) => setTimeout(r, 200));
         console.log(%IsTurboFanFunction(after));`,
      ],
      { encoding: 'utf8' },
    ).trim();
    expect(out).toBe('true true\ntrue');
  }, 60_000);
});
