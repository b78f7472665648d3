// Reads what Oberon's compiler (ORP, "OR Compiler 8.3.2020") writes into System.Log.
//   "  compiling Name 1234 56 ABCDEF01"          success: code size, data size, key
//   "  compiling Name new symbol file 1234 ..."  success with a new symbol file
//   "  compiling Name\n  pos 120 undef\n...compilation FAILED"
//   "Name.Mod not found"

export interface CompileMessage {
  pos: number; // character position in the source (ORS.Pos)
  line?: number; // 1-based, filled in from the source when known
  column?: number; // 1-based
  message: string;
}

export interface CompileOutcome {
  module?: string;
  ok: boolean;
  key?: number;
  codeBytes?: number;
  newSymbolFile: boolean;
  messages: CompileMessage[];
  text: string; // the log text the outcome was read from
}

/** The outcome of one `ORP.Compile X.Mod ~` from the log text it produced. */
export function parseCompileLog(text: string, file: string): CompileOutcome {
  const lines = text.split(/\r\n?|\n/);
  const out: CompileOutcome = { ok: false, newSymbolFile: false, messages: [], text };
  let compiling = false;
  for (const raw of lines) {
    const line = raw.trim();
    const c = /^compiling (\*?)([A-Za-z][A-Za-z0-9]*)(.*)$/.exec(line);
    if (c) {
      compiling = true;
      out.module = c[2];
      const rest = c[3];
      out.newSymbolFile = /new symbol file/.test(rest);
      const nums = /(-?\d+)\s+(-?\d+)\s+([0-9A-F]{1,8})\s*$/.exec(rest);
      if (nums) {
        out.ok = true;
        out.codeBytes = Number(nums[1]);
        out.key = Number.parseInt(nums[3], 16) >>> 0;
      }
      continue;
    }
    const trap = /^(?:pos (\d+)\s+)?TRAP\s+(\d+) in (\S+) at ([0-9A-F]+)/.exec(line);
    if (trap) {
      // System.Trap's line: the position is in the trapping module's source, not in ours
      out.ok = false;
      const where = trap[1] ? ` (pos ${trap[1]} of ${trap[3]}.Mod)` : '';
      out.messages.push({
        pos: 0,
        message: `the compiler trapped: TRAP ${trap[2]} in ${trap[3]} at ${trap[4]}${where}`,
      });
      continue;
    }
    const pos = /^pos (\d+) (.*)$/.exec(line);
    if (pos && compiling) {
      out.messages.push({ pos: Number(pos[1]), message: pos[2] });
      out.ok = false;
      continue;
    }
    if (/compilation FAILED/.test(line)) out.ok = false;
    if (/ not found$/.test(line)) out.messages.push({ pos: 0, message: `${file} not found by the compiler` });
  }
  if (!compiling && out.messages.length === 0)
    out.messages.push({ pos: 0, message: 'the compiler wrote nothing' });
  if (out.messages.length > 0) out.ok = false;
  return out;
}

/** 1-based line and column of a character position in an Oberon source (CR, LF or CRLF line ends). */
export function lineAndColumn(source: string, pos: number): { line: number; column: number } {
  let line = 1;
  let start = 0;
  for (let i = 0; i < Math.min(pos, source.length); i++) {
    const ch = source[i];
    if (ch === '\r' || ch === '\n') {
      if (ch === '\r' && source[i + 1] === '\n') i++;
      line++;
      start = i + 1;
    }
  }
  return { line, column: pos - start + 1 };
}
