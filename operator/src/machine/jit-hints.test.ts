// The translator's hints and translations across processes (jit-hints.ts): a file is used only
// when it is whole and of this translator version and RAM size, a hint only where RAM holds its
// words, a stored translation only where RAM holds the words it was made for, and a machine
// computes the same thing with no store, with an earlier run's, with junk, and with another
// version's.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { assemble } from './asm.ts';
import { Risc5 } from './cpu.ts';
import { LIMITS as JIT_LIMITS, sharedTranslations, translationsMade } from './jit.ts';
import { useHintSource } from './jit-hint-source.ts';
import {
  decodeHints,
  encodeHints,
  fileOf,
  forgetHints,
  JitHints,
  LIMITS,
  TRANSLATOR_VERSION,
  useJitHints,
} from './jit-hints.ts';
import { Machine } from './machine.ts';
import { setUpNodeMachines } from './node-setup.ts';
import { copyBaseImage, removeCopies } from './test-disk.ts';

// As a machine thread does (worker.ts): the CPUs of this file get the stored hints.
setUpNodeMachines();

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'retrokube-jit-hints-'));
afterAll(() => {
  forgetHints();
  useHintSource(null);
  process.env.RETROKUBE_JIT_HINTS = 'off';
  fs.rmSync(tmp, { recursive: true, force: true });
  removeCopies();
});

const VERSION = TRANSLATOR_VERSION ?? '';
const MEM = 0x40000;
let dirs = 0;
/** A fresh hint folder for the CPUs made after this call (as a new process with that store). */
function useStore(): string {
  const dir = path.join(tmp, `store-${dirs++}`);
  forgetHints();
  process.env.RETROKUBE_JIT_HINTS = dir;
  return dir;
}
beforeEach(() => {
  useStore();
});

function sample(): Map<number, Int32Array> {
  return new Map([
    [0, Int32Array.of(1, 2, 3)],
    [100, Int32Array.of(-1, 0x7fffffff)],
  ]);
}

/** Re-sign a modified payload, so only the check under test can reject it. */
function resign(file: Buffer): Buffer {
  const payload = file.subarray(0, file.length - 32);
  return Buffer.concat([payload, createHash('sha256').update(payload).digest()]);
}

describe('hint files', () => {
  it('come back as they were written', () => {
    expect(TRANSLATOR_VERSION).toMatch(/^[0-9a-f]{16}$/);
    const translations = new Map([
      [`${MEM},0,,7:1,2`, { length: 2, body: [0x20, 1, 0x21, 2] }],
      [`${MEM},0,,9:3`, { length: 1, body: Uint8Array.of(0x41, 0x7f) }],
    ]);
    const back = decodeHints(encodeHints(MEM, VERSION, sample(), translations), MEM, VERSION);
    expect([...back.entries].map(([pc, w]) => [pc, [...w]])).toEqual([
      [0, [1, 2, 3]],
      [100, [-1, 0x7fffffff]],
    ]);
    expect([...back.translations].map(([k, t]) => [k, t.length, [...t.body]])).toEqual([
      [`${MEM},0,,7:1,2`, 2, [0x20, 1, 0x21, 2]],
      [`${MEM},0,,9:3`, 1, [0x41, 0x7f]],
    ]);
  });

  it('refuse translations of another RAM size or out of range', () => {
    const one = (key: string, length: number, body: number[]) =>
      encodeHints(MEM, VERSION, sample(), new Map([[key, { length, body }]]));
    expect(() => decodeHints(one(`${MEM * 2},0,,7:1`, 1, [1]), MEM, VERSION)).toThrow('RAM size');
    expect(() => decodeHints(one(`${MEM},0,,7:1`, 0, [1]), MEM, VERSION)).toThrow('range');
    expect(() => decodeHints(one(`${MEM},0,,7:1`, JIT_LIMITS.maxBlock + 1, [1]), MEM, VERSION)).toThrow(
      'range',
    );
    expect(() => decodeHints(one(`${MEM},0,,7:1`, 1, []), MEM, VERSION)).toThrow('range');
    const good = one(`${MEM},0,,7:1`, 1, [1, 2, 3]);
    const cut = resign(Buffer.concat([good.subarray(0, good.length - 34), good.subarray(-32)]));
    expect(() => decodeHints(cut, MEM, VERSION)).toThrow('range');
  });

  it('are refused when corrupt, truncated, of another translator version or RAM size, or out of range', () => {
    const good = encodeHints(MEM, VERSION, sample());
    const flipped = Buffer.from(good);
    flipped[flipped.length - 40] ^= 1;
    expect(() => decodeHints(flipped, MEM, VERSION)).toThrow('checksum');
    expect(() => decodeHints(good.subarray(0, 20), MEM, VERSION)).toThrow();
    expect(() => decodeHints(Buffer.from('junk'), MEM, VERSION)).toThrow();
    expect(() => decodeHints(encodeHints(MEM, 'another', sample()), MEM, VERSION)).toThrow('version');
    expect(() => decodeHints(good, MEM * 2, VERSION)).toThrow('RAM size');
    const beyond = new Map([[(MEM >>> 2) - 1, Int32Array.of(1, 2)]]);
    expect(() => decodeHints(encodeHints(MEM, VERSION, beyond), MEM, VERSION)).toThrow('range');
    const long = new Map([[0, new Int32Array(JIT_LIMITS.maxBlock + 1)]]);
    expect(() => decodeHints(encodeHints(MEM, VERSION, long), MEM, VERSION)).toThrow('range');
    const extra = resign(
      Buffer.concat([good.subarray(0, good.length - 32), Buffer.alloc(4), good.subarray(-32)]),
    );
    expect(() => decodeHints(extra, MEM, VERSION)).toThrow('trailing');
    expect(() => decodeHints(Buffer.alloc(LIMITS.maxFileBytes + 1), MEM, VERSION)).toThrow('larger');
  });

  it('are written whole (temp file and rename), bounded in entries, and the folder is trimmed', () => {
    const dir = path.join(tmp, 'bounded');
    fs.mkdirSync(dir, { recursive: true });
    for (let k = 0; k < LIMITS.files + 3; k++) {
      const f = path.join(dir, `old-${k}.bin`);
      fs.writeFileSync(f, 'x');
      fs.utimesSync(f, new Date(1000 * k), new Date(1000 * k));
    }
    const h = new JitHints(MEM, dir, VERSION, new Uint8Array(MEM >>> 2));
    const mem = new Int32Array(MEM >>> 2).map((_, i) => i * 7);
    for (let pc = 0; pc < LIMITS.entries + 100; pc++) h.record(mem, pc, 3);
    expect(h.entries.size).toBe(LIMITS.entries);
    expect(h.entries.has(0), 'the oldest entries go first').toBe(false);
    h.save();
    const names = fs.readdirSync(dir);
    expect(names.filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(names.length).toBe(LIMITS.files);
    expect(names).toContain(path.basename(fileOf(dir, MEM, VERSION)));
    const known = new Uint8Array(MEM >>> 2);
    const again = new JitHints(MEM, dir, VERSION, known);
    expect(again.entries.size).toBe(LIMITS.entries);
    expect(known[LIMITS.entries + 99]).toBe(2);
    expect(again.matches(mem, LIMITS.entries + 99)).toBe(true);
  });

  it('a junk file in the store is not used', () => {
    const dir = path.join(tmp, 'junk');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(fileOf(dir, MEM, VERSION), 'not a hint file');
    const known = new Uint8Array(MEM >>> 2);
    expect(new JitHints(MEM, dir, VERSION, known).entries.size).toBe(0);
    expect(known.every((k) => k === 0)).toBe(true);
  });

  it('of another translator version are never read, even under this version’s file name', () => {
    const dir = path.join(tmp, 'foreign');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(fileOf(dir, MEM, VERSION), encodeHints(MEM, '0123456789abcdef', sample()));
    const known = new Uint8Array(MEM >>> 2);
    expect(new JitHints(MEM, dir, VERSION, known).entries.size).toBe(0);
    expect(known.every((k) => k === 0)).toBe(true);
  });
});

/** A loop the translator compiles: its hot block is the loop body at `loop`. */
function loopCpu(): { cpu: Risc5; loop: number } {
  const prog = assemble(`
      MOV R0, 0
      MOV R1, 0
loop: ADD R0, R0, 1
      ADD R1, R1, R0
      SUB R2, R0, 500
      BNE loop
halt: B halt`);
  const cpu = new Risc5(MEM, MEM, { ioRead: () => 0, ioWrite: () => {}, voidFetch: () => {} }, { jit: true });
  cpu.mem.set(prog.words);
  cpu.pc = 0;
  return { cpu, loop: (prog.symbols.get('loop') ?? -1) >>> 2 };
}

describe('a CPU and its hints', () => {
  it('translates a hinted block early only where RAM holds the hinted words', () => {
    // First process: 500 passes stay below hotBlock, so nothing is translated or learned.
    const dir = useStore();
    let { cpu, loop } = loopCpu();
    cpu.run(2100); // the loop, then `halt` fewer than hotBlock times
    expect(cpu.translations).toBe(0);
    // A hint with the loop's words: the block is translated after knownBlock passes.
    const words = cpu.mem.slice(loop, loop + 5); // the superblock: the loop and `B halt`
    const store = (w: Int32Array) => {
      forgetHints(); // the next CPU starts as a new process with this store
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(fileOf(dir, MEM, VERSION), encodeHints(MEM, VERSION, new Map([[loop, w]])));
    };
    store(words);
    ({ cpu, loop } = loopCpu());
    cpu.run(2100); // the loop, then `halt` fewer than hotBlock times
    expect(cpu.hintedTranslations).toBe(1);
    expect(cpu.translations).toBe(1);
    expect(cpu.R[1]).toBe((500 * 501) / 2);
    // A hint at the same start with other words: not acted on.
    store(Int32Array.from(words, (w, i) => (i === 1 ? w ^ 1 : w)));
    ({ cpu } = loopCpu());
    cpu.run(2100); // the loop, then `halt` fewer than hotBlock times
    expect(cpu.hintedTranslations).toBe(0);
    expect(cpu.translations).toBe(0);
    expect(cpu.R[1]).toBe((500 * 501) / 2);
  });

  it('are not used by a CPU of a thread that registered none (the browser lab)', () => {
    const dir = useStore();
    const { cpu: first, loop } = loopCpu();
    const words = first.mem.slice(loop, loop + 5);
    forgetHints();
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(fileOf(dir, MEM, VERSION), encodeHints(MEM, VERSION, new Map([[loop, words]])));
    useHintSource(null);
    try {
      const { cpu } = loopCpu();
      cpu.run(2100); // the loop, then `halt` fewer than hotBlock times
      expect(cpu.hintedTranslations).toBe(0);
      expect(cpu.translations).toBe(0);
      expect(cpu.R[1]).toBe((500 * 501) / 2);
    } finally {
      useJitHints();
    }
    const { cpu } = loopCpu(); // registered again: the same store is used
    cpu.run(2100);
    expect(cpu.hintedTranslations).toBe(1);
  });
});

interface Outcome {
  state: string;
  instructions: number;
  hinted: number;
  /** Translations the thread made itself during the scenario (not taken from the store). */
  made: number;
}

/** Boot, compile a module, idle: the RAM, registers and disk the machine ends with. */
function scenario(disk: Buffer, jit: boolean): Outcome {
  const made = translationsMade();
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', jit });
  if (!m.runUntil(() => m.booted, { maxInstructions: 60e6 })) throw new Error('no boot');
  m.runCommand('ORP.Compile Sierpinski.Mod');
  if (!m.runUntilIdle(400e6)) throw new Error('the compile did not finish');
  m.runFor(1000);
  const h = createHash('sha256');
  h.update(new Uint8Array(m.cpu.mem.buffer, m.cpu.mem.byteOffset, m.memBytes));
  h.update(new Uint8Array(m.cpu.R.buffer, m.cpu.R.byteOffset, 64));
  h.update(`${m.cpu.pc} ${m.cpu.nz} ${m.cpu.C} ${m.cpu.V} ${m.cpu.H} ${m.cycles}`);
  h.update(m.disk.bytes);
  return {
    state: h.digest('hex'),
    instructions: m.cpu.instructions,
    hinted: m.cpu.hintedTranslations,
    made: translationsMade() - made,
  };
}

describe('a machine with hints', () => {
  it('ends in the same state as the interpreter with no store, an earlier run’s, junk, a corrupt file and another version’s', () => {
    const disk = fs.readFileSync(copyBaseImage());
    const reference = scenario(disk, false);
    const same = (o: Outcome, label: string) =>
      expect({ state: o.state, instructions: o.instructions }, label).toEqual({
        state: reference.state,
        instructions: reference.instructions,
      });

    const dir = useStore();
    const cold = scenario(disk, true);
    same(cold, 'no hints');
    expect(cold.hinted).toBe(0);

    expect(cold.made).toBeGreaterThan(50);
    const made = new Map(
      [...sharedTranslations()].map(([k, t]) => [k, Buffer.from(Uint8Array.from(t.body))]),
    );
    forgetHints(); // saves what the cold run learned; the next machine starts as a new process
    const file = fileOf(dir, 1 << 20, VERSION);
    const learned = decodeHints(fs.readFileSync(file), 1 << 20, VERSION);
    expect(learned.entries.size).toBeGreaterThan(50);
    // The stored translations are byte for byte the ones this translator made.
    expect(learned.translations.size).toBe(made.size);
    for (const [k, t] of learned.translations)
      expect(Buffer.from(t.body).equals(made.get(k) as Buffer)).toBe(true);
    const warm = scenario(disk, true);
    same(warm, "an earlier run's hints and translations");
    expect(warm.hinted, 'the hints were used').toBeGreaterThan(30);
    expect(warm.made, 'the stored translations were used').toBeLessThan(warm.hinted / 4);

    // Junk: the same starts with other words (no hint matches RAM), and translations whose keys
    // name other words (none is ever taken); then a corrupt file.
    const junk = new Map([...learned.entries].map(([pc, w]) => [pc, w.map((x) => x ^ 0x5a5a)]));
    const junkT = new Map([...learned.translations].map(([k, t]) => [`${k},1234`, t]));
    forgetHints();
    fs.writeFileSync(file, encodeHints(1 << 20, VERSION, junk, junkT));
    const stale = scenario(disk, true);
    same(stale, 'hints and translations whose words are not in RAM');
    expect(stale.hinted).toBe(0);
    expect(stale.made).toBeGreaterThan(50);

    // Another translator version's file, under its own name and under this version's, with
    // translations that are wrong for this one (every body is another block's): never read.
    const bodies = [...learned.translations.values()];
    const wrong = new Map(
      [...learned.translations].map(([k, t], i) => [
        k,
        { ...bodies[(i + 1) % bodies.length], length: t.length },
      ]),
    );
    forgetHints();
    const foreign = encodeHints(1 << 20, '0123456789abcdef', learned.entries, wrong);
    fs.writeFileSync(fileOf(dir, 1 << 20, '0123456789abcdef'), foreign);
    fs.writeFileSync(file, foreign);
    const other = scenario(disk, true);
    same(other, "another version's file");
    expect(other.hinted).toBe(0);
    expect(other.made).toBeGreaterThan(50);

    forgetHints();
    const corrupt = encodeHints(1 << 20, VERSION, learned.entries, learned.translations);
    corrupt[corrupt.length >> 1] ^= 0xff;
    fs.writeFileSync(file, corrupt);
    const broken = scenario(disk, true);
    same(broken, 'a corrupt hint file');
    expect(broken.hinted).toBe(0);
  }, 300_000);
});
