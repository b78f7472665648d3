import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { findBaseImage } from '../base-image.ts';
import { OberonVolume } from '../fs/volume.ts';
import { Machine } from '../machine.ts';
import { buildDisk, CompileError, type Source } from './build.ts';
import { parseObjectFile } from './rsc.ts';

const HELLO = `MODULE Hello; (*writes a file and a log line when run*)
  IMPORT Files, Texts, Oberon;
  VAR W: Texts.Writer;
  PROCEDURE Run*;
    VAR f: Files.File; r: Files.Rider;
  BEGIN f := Files.New("Hello.Text"); Files.Set(r, f, 0);
    Files.WriteString(r, "hello from Oberon"); Files.Register(f);
    Texts.WriteString(W, "Hello.Run done"); Texts.WriteLn(W); Texts.Append(Oberon.Log, W.buf)
  END Run;
BEGIN Texts.OpenWriter(W)
END Hello.
`;

// Reads a file our file system wrote (long enough to need an index sector) and writes one back.
const SUM = `MODULE RkSum;
  IMPORT Files;
  PROCEDURE Run*;
    VAR f, g: Files.File; r, w: Files.Rider; b: BYTE; n, sum, i: INTEGER;
  BEGIN f := Files.Old("Big.Bin"); n := 0; sum := 0;
    Files.Set(r, f, 0); Files.ReadByte(r, b);
    WHILE ~r.eof DO INC(n); sum := (sum * 31 + b) MOD 65521; Files.ReadByte(r, b) END ;
    g := Files.New("Sum.Bin"); Files.Set(w, g, 0);
    Files.WriteInt(w, Files.Length(f)); Files.WriteInt(w, n); Files.WriteInt(w, sum);
    FOR i := 0 TO 99999 DO Files.WriteByte(w, i MOD 251) END ;
    Files.Register(g)
  END Run;
END RkSum.
`;

// Reads the command string the machine feeds into RS232 from power-on.
const PROBE = `MODULE RkProbe;
  IMPORT SYSTEM, Files;
  PROCEDURE Run*;
    VAR f: Files.File; r: Files.Rider; ch: CHAR;
  BEGIN f := Files.New("Probe.Text"); Files.Set(r, f, 0);
    WHILE SYSTEM.BIT(-52, 0) DO SYSTEM.GET(-56, ch); Files.Write(r, ch) END ;
    Files.Register(f)
  END Run;
END RkProbe.
`;

const BROKEN = `MODULE Broken;
  PROCEDURE Run*;
  BEGIN
    x := 1
  END Run;
END Broken.
`;

function bigData(): Buffer {
  const b = Buffer.alloc(150_000);
  for (let i = 0; i < b.length; i++) b[i] = (i * 7 + (i >> 9)) & 255;
  return b;
}

function checksum(b: Buffer): number {
  let sum = 0;
  for (const x of b) sum = (sum * 31 + x) % 65521;
  return sum;
}

/** System.Mod of the image with one more line at the end of its body: Oberon.Call("RkProbe.Run"). */
function patchedSystem(original: Buffer): Source {
  let text = original.toString('latin1');
  const decl = 'VAR W: Texts.Writer;';
  const hook = 'Kernel.Install(SYSTEM.ADR(Abort), 0);';
  expect(text).toContain(decl);
  expect(text).toContain(hook);
  text = text
    .replace(decl, `${decl} bootRes: INTEGER;`)
    .replace(hook, `${hook} Oberon.Call("RkProbe.Run", bootRes);`);
  return { name: 'System.Mod', text };
}

/** Types a command into System.Tool, middle-clicks it and waits until Oberon idles again. */
function run(m: Machine, command: string): void {
  m.runCommand(command);
  expect(m.runUntilIdle(5e8)).toBe(true);
}

function boot(disk: Buffer, commands?: string): Machine {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic', commands });
  expect(m.runUntil(() => m.booted, { maxInstructions: 60e6 })).toBe(true);
  expect(m.runUntilIdle(5e8)).toBe(true);
  return m;
}

describe('disk builder (the image compiles our modules with its own ORP)', () => {
  let base: Buffer;
  let built: Awaited<ReturnType<typeof buildDisk>>;
  let inputs: Parameters<typeof buildDisk>[0];

  beforeAll(async () => {
    base = await readFile((await findBaseImage({ download: false })).path);
    const system = OberonVolume.fromBuffer(base).read('System.Mod');
    inputs = {
      base,
      sources: [
        { name: 'Hello.Mod', text: HELLO },
        { name: 'RkSum.Mod', text: SUM },
        { name: 'RkProbe.Mod', text: PROBE },
        patchedSystem(system),
      ],
      files: [{ name: 'Big.Bin', data: bigData() }],
      growTo: 8 * 1024 * 1024,
    };
    built = buildDisk(inputs);
  }, 120_000);

  it('compiles each module and leaves a well-formed .rsc with the key the compiler logged', () => {
    expect(built.modules.map((r) => r.module)).toEqual(['Hello', 'RkSum', 'RkProbe', 'System']);
    const vol = OberonVolume.fromBuffer(built.disk);
    for (const r of built.modules) {
      expect(r.log).toMatch(new RegExp(`compiling ${r.module}`));
      const obj = parseObjectFile(vol.read(`${r.module}.rsc`));
      expect(obj).toMatchObject({ module: r.module, key: r.key, version: 1 });
    }
    expect(parseObjectFile(vol.read('Hello.rsc')).commands).toEqual(['Run']);
    // the builder's helper is gone, the base files are all still there, the disk is grown
    expect(vol.exists('RkBuild.rsc') || vol.exists('RkBuild.Mod')).toBe(false);
    expect(vol.list().length).toBe(136 + 3 + 1 + 3 * 2); // + new sources, Big.Bin, new .rsc/.smb
    expect(built.disk.length).toBe(8 * 1024 * 1024);
    expect(vol.check()).toEqual([]);
  });

  it('a compiled command has its effect: Hello.Run, middle-clicked, writes a file our file system reads', () => {
    const m = boot(built.disk);
    run(m, 'Hello.Run');
    const vol = OberonVolume.fromBuffer(m.disk.bytes);
    expect(vol.read('Hello.Text').toString('latin1')).toBe('hello from Oberon\0');
  });

  it('Oberon reads a long file our file system wrote, and we read the long file Oberon wrote', () => {
    const m = boot(built.disk);
    run(m, 'RkSum.Run');
    const sum = OberonVolume.fromBuffer(m.disk.bytes).read('Sum.Bin');
    const big = bigData();
    expect([sum.readInt32LE(0), sum.readInt32LE(4), sum.readInt32LE(8)]).toEqual([
      big.length,
      big.length,
      checksum(big),
    ]);
    expect(sum.length).toBe(12 + 100_000);
    for (let i = 0; i < 100_000; i++) if (sum[12 + i] !== i % 251) throw new Error(`byte ${i} differs`);
    expect(OberonVolume.fromBuffer(m.disk.bytes).check()).toEqual([]);
  });

  it('a module compiled by the builder reads the boot command string from the serial port at start', () => {
    const m = boot(built.disk, 'Kube.Start;KubeNet.Join a kube 00c0ffee');
    const probe = OberonVolume.fromBuffer(m.disk.bytes).read('Probe.Text').toString('latin1');
    // The emulator ends the boot commands with ';' (endCommands): a command typed later stays its own.
    expect(probe).toBe('Kube.Start;KubeNet.Join a kube 00c0ffee;');
  });

  it('the same inputs give the same disk bytes', () => {
    const again = buildDisk(inputs);
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(sha(again.disk)).toBe(sha(built.disk));
  }, 120_000);

  it('reports a compile error with the module, its position, line and column', () => {
    let error: unknown;
    try {
      buildDisk({ base, sources: [{ name: 'Broken.Mod', text: BROKEN }] });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CompileError);
    const e = error as CompileError;
    expect(e.module).toBe('Broken');
    expect(e.messages[0]).toMatchObject({ line: 4, message: 'undef' });
    const pos = BROKEN.indexOf('x := 1'); // ORS marks the position just after the symbol it read
    expect(e.messages[0].pos).toBeGreaterThanOrEqual(pos);
    expect(e.messages[0].pos).toBeLessThanOrEqual(pos + 'x := 1'.length);
    expect(e.message).toMatch(/Broken does not compile:\n {2}Broken.Mod:4:\d+ \(pos \d+\): undef/);
  }, 120_000);

  it('compiles the compiler itself and system modules in one session, with the keys Oberon publishes', () => {
    // eight large compiles: only possible because the helper lets Oberon collect garbage in between
    const vol = OberonVolume.fromBuffer(base);
    const names = ['ORS', 'ORB', 'ORG', 'ORP', 'Net', 'Edit', 'TextFrames', 'System'];
    const r = buildDisk({
      base,
      sources: names.map((n) => ({ name: `${n}.Mod`, text: vol.read(`${n}.Mod`).toString('latin1') })),
    });
    expect(r.modules.map((m) => m.module)).toEqual(names);
    // the compiler compiling itself gives the keys the reference emulator showed (spec §3.3)
    expect(r.modules.slice(0, 4).map((m) => m.key.toString(16).toUpperCase().padStart(8, '0'))).toEqual([
      '64B9FE89',
      '0154CFAD',
      '4F1BDCF9',
      'E6FCC519',
    ]);
    // and, the interfaces being unchanged, the same object files as on the image
    const out = OberonVolume.fromBuffer(r.disk);
    for (const n of ['ORS', 'ORB', 'ORG', 'ORP', 'Edit', 'TextFrames', 'System']) {
      expect(out.read(`${n}.rsc`)).toEqual(vol.read(`${n}.rsc`));
    }
  }, 300_000);

  it("reports a compiler trap in the compiler's words (the helper recovers the log)", () => {
    const junk = Buffer.alloc(4000);
    for (let i = 5; i < junk.length; i++) junk[i] = (i * 97 + 13) & 255; // a symbol file of garbage
    let error: unknown;
    try {
      buildDisk({
        base,
        sources: [{ name: 'UsesJunk.Mod', text: 'MODULE UsesJunk;\n  IMPORT Junk;\nEND UsesJunk.\n' }],
        files: [{ name: 'Junk.smb', data: junk }],
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CompileError);
    expect((error as Error).message).toMatch(
      /UsesJunk.Mod:2:\d+ \(pos \d+\): .*\n {2}UsesJunk.Mod: the compiler trapped: TRAP \d+ in ORB/,
    );
  }, 120_000);

  it('refuses a source whose file name does not match its module', () => {
    expect(() => buildDisk({ base, sources: [{ name: 'Other.Mod', text: HELLO }] })).toThrow(
      /name the file Hello.Mod/,
    );
  });
});
