import { describe, expect, it } from 'vitest';
import { Risc5 } from './cpu.ts';
import { LIMITS, warmUpInterpreter } from './interpreter-warmup.ts';

describe('the interpreter warm-up', () => {
  it('reaches device reads and writes, framebuffer stores, the ROM window and the void, and translates nothing', () => {
    for (const jit of [false, true]) {
      let scratch: Risc5 | null = null;
      const counts = warmUpInterpreter((bus) => {
        scratch = new Risc5(LIMITS.memBytes, LIMITS.displayStart, bus, { jit, hotBlock: 0xffff });
        return scratch;
      });
      expect(counts.ioReads, `jit ${jit}`).toBeGreaterThan(0);
      expect(counts.ioWrites).toBeGreaterThan(0);
      expect(counts.framebufferStores).toBeGreaterThan(0);
      expect(counts.voidFetches).toBeGreaterThan(0);
      expect(counts.instructions).toBeGreaterThan(LIMITS.programs * 10);
      expect((scratch as unknown as Risc5).translations).toBe(0);
      expect(counts.romToRam).toBe(true);
    }
  });
});
