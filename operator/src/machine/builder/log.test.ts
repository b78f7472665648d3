import { describe, expect, it } from 'vitest';
import { lineAndColumn, parseCompileLog } from './log.ts';
import { parseObjectFile } from './rsc.ts';

describe('reading the compiler log', () => {
  it('reads a successful compile with its code size and key', () => {
    const o = parseCompileLog('  compiling Blink    45     8 C5386873\r', 'Blink.Mod');
    expect(o).toMatchObject({
      ok: true,
      module: 'Blink',
      codeBytes: 45,
      key: 0xc5386873,
      newSymbolFile: false,
    });
  });

  it('notices a new symbol file', () => {
    const o = parseCompileLog('  compiling Hello new symbol file    33    40 6ED2E609\r', 'Hello.Mod');
    expect(o).toMatchObject({ ok: true, newSymbolFile: true, key: 0x6ed2e609 });
  });

  it('collects every error position and message of a failed compile', () => {
    const o = parseCompileLog(
      '  compiling Broken\r  pos 52 undef\r  pos 80 no ;\rcompilation FAILED\r',
      'Broken.Mod',
    );
    expect(o.ok).toBe(false);
    expect(o.messages).toEqual([
      { pos: 52, message: 'undef' },
      { pos: 80, message: 'no ;' },
    ]);
  });

  it('reads a trap of the compiler, whose position is in the compiler and not in our source', () => {
    const o = parseCompileLog(
      '  compiling UsesJunk\r  pos 31 wrong version\r  pos 6144  TRAP   1 in ORB at 0001EF3C\r',
      'U.Mod',
    );
    expect(o.ok).toBe(false);
    expect(o.messages).toEqual([
      { pos: 31, message: 'wrong version' },
      { pos: 0, message: 'the compiler trapped: TRAP 1 in ORB at 0001EF3C (pos 6144 of ORB.Mod)' },
    ]);
  });

  it('reports a missing source and silence as failures', () => {
    expect(parseCompileLog('Nope.Mod not found\r', 'Nope.Mod')).toMatchObject({ ok: false });
    expect(parseCompileLog('', 'X.Mod').messages[0].message).toMatch(/wrote nothing/);
  });

  it('turns a character position into line and column for CR, LF and CRLF texts', () => {
    expect(lineAndColumn('ab\rcd\ref', 7)).toEqual({ line: 3, column: 2 });
    expect(lineAndColumn('ab\ncd', 3)).toEqual({ line: 2, column: 1 });
    expect(lineAndColumn('ab\r\ncd', 5)).toEqual({ line: 2, column: 2 });
  });
});

describe('checking object files', () => {
  it('rejects truncated and trailing-garbage files', () => {
    const head = Buffer.concat([Buffer.from('M\0'), Buffer.alloc(4), Buffer.from([1]), Buffer.alloc(4)]);
    expect(() => parseObjectFile(head)).toThrow(/ends inside the imports/);
    expect(() => parseObjectFile(Buffer.from('M\0\0\0\0\0\x02'))).toThrow(/version 2/);
  });
});
