// Our file system against Oberon's own FileDir/Files, running in the emulator: the same inserts
// and deletes give the same directory tree, and Oberon finds every file of a tree we split.
import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { findBaseImage } from '../base-image.ts';
import { OberonVolume } from '../fs/volume.ts';
import { Machine } from '../machine.ts';
import { buildDisk } from './build.ts';

const MANY = `MODULE RkMany;
  IMPORT Files;
  PROCEDURE Name(prefix: CHAR; i: INTEGER; VAR s: ARRAY OF CHAR);
  BEGIN s[0] := prefix; s[1] := CHR(ORD("0") + i DIV 100); s[2] := CHR(ORD("0") + i DIV 10 MOD 10);
    s[3] := CHR(ORD("0") + i MOD 10); s[4] := "."; s[5] := "T"; s[6] := 0X
  END Name;
  PROCEDURE Make*; (*F000.T .. F149.T, one byte each (more would fill the heap in one command)*)
    VAR i: INTEGER; f: Files.File; r: Files.Rider; s: ARRAY 8 OF CHAR;
  BEGIN
    FOR i := 0 TO 149 DO
      Name("F", i, s); f := Files.New(s); Files.Set(r, f, 0); Files.WriteByte(r, i MOD 256); Files.Register(f)
    END
  END Make;
  PROCEDURE Drop*; (*deletes every third F file*)
    VAR i, res: INTEGER; s: ARRAY 8 OF CHAR;
  BEGIN FOR i := 0 TO 149 BY 3 DO Name("F", i, s); Files.Delete(s, res) END
  END Drop;
  PROCEDURE Count*; (*how many of G000.T .. G149.T open with the right byte, into Count.Bin*)
    VAR i, n: INTEGER; f: Files.File; r: Files.Rider; s: ARRAY 8 OF CHAR; b: BYTE;
  BEGIN n := 0;
    FOR i := 0 TO 149 DO
      Name("G", i, s); f := Files.Old(s);
      IF f # NIL THEN Files.Set(r, f, 0); Files.ReadByte(r, b); IF b = i MOD 256 THEN INC(n) END END
    END ;
    f := Files.New("Count.Bin"); Files.Set(r, f, 0); Files.WriteInt(r, n); Files.Register(f)
  END Count;
END RkMany.
`;

const COUNT = 150; // files per run; Oberon's heap holds about this many new files in one command
const name = (p: string, i: number) => `${p}${String(i).padStart(3, '0')}.T`;

/** Types a command into System.Tool, middle-clicks it and waits until Oberon idles again. */
function run(m: Machine, command: string): void {
  m.runCommand(command);
  expect(m.runUntilIdle(5e8)).toBe(true);
}

function boot(disk: Buffer): Machine {
  const m = new Machine({ disk: Buffer.from(disk), clock: 'deterministic' });
  expect(m.runUntil(() => m.booted, { maxInstructions: 60e6 })).toBe(true);
  expect(m.runUntilIdle(5e8)).toBe(true);
  return m;
}

describe('our directory B-tree matches Oberon FileDir', () => {
  let built: Buffer;
  beforeAll(async () => {
    const base = await readFile((await findBaseImage({ download: false })).path);
    built = buildDisk({ base, sources: [{ name: 'RkMany.Mod', text: MANY }], growTo: 4 << 20 }).disk;
  }, 120_000);

  it('150 inserts and 50 deletes give the same pages, split and merged, as Oberon itself makes', () => {
    const m = boot(built);
    run(m, 'RkMany.Make');
    const afterMake = OberonVolume.fromBuffer(m.disk.bytes);
    run(m, 'RkMany.Drop');
    const oberon = OberonVolume.fromBuffer(m.disk.bytes);

    const ours = OberonVolume.fromBuffer(built);
    for (let i = 0; i < COUNT; i++) ours.write(name('F', i), Buffer.from([i & 255]));
    expect(ours.directoryShape()).toEqual(afterMake.directoryShape());
    expect(ours.directoryShape().children.length).toBeGreaterThan(8); // the root really split
    for (let i = 0; i < COUNT; i += 3) expect(ours.remove(name('F', i))).toBe(true);
    expect(ours.directoryShape()).toEqual(oberon.directoryShape());
    // pages were merged, not only shrunk
    expect(oberon.directoryShape().children.length).toBeLessThan(afterMake.directoryShape().children.length);
    expect(oberon.check()).toEqual([]);
    for (let i = 1; i < COUNT; i += 3) expect([...oberon.read(name('F', i))]).toEqual([i & 255]);
  });

  it('Oberon opens every one of 150 files we inserted (with page splits) and reads their bytes', () => {
    const ours = OberonVolume.fromBuffer(built);
    for (let i = 0; i < COUNT; i++) ours.write(name('G', i), Buffer.from([i & 255]));
    const m = boot(ours.toBuffer());
    run(m, 'RkMany.Count');
    expect(OberonVolume.fromBuffer(m.disk.bytes).read('Count.Bin').readInt32LE(0)).toBe(COUNT);
  });
});
