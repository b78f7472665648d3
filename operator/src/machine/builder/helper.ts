// The one Oberon module the builder adds for itself, RkBuild:
//   RkBuild.Run  sends the System.Log text so far, then executes command lines arriving on the
//                serial line ("ORP.Compile X.Mod/s ~"), each followed by the log text it produced;
//                an empty line ends it. Every log excerpt ends with an EOT byte.
//   RkBuild.Log  sends the log text written since the last excerpt.
// The builder compiles it first with the image's own compiler, so only two commands are ever
// typed and middle-clicked, and removes it from the finished disk.

export const HELPER_MODULE = 'RkBuild';
export const HELPER_FILE = `${HELPER_MODULE}.Mod`;
export const LOG_END = 0x04; // EOT: the end of one log excerpt on the serial line

export const HELPER_SOURCE = [
  'MODULE RkBuild; (*retrokube disk builder: commands from, System.Log to the serial line*)',
  '  IMPORT SYSTEM, Display, Texts, Oberon;',
  '  CONST data = -56; status = -52; (*RS232*) EOT = 4X;',
  '  VAR sent: INTEGER; (*log characters already sent*)',
  '    W: Texts.Writer; F: Display.Frame;',
  '',
  '  PROCEDURE Put(ch: CHAR);',
  '  BEGIN REPEAT UNTIL SYSTEM.BIT(status, 1); SYSTEM.PUT(data, ch)',
  '  END Put;',
  '',
  '  PROCEDURE Get(VAR ch: CHAR);',
  '  BEGIN REPEAT UNTIL SYSTEM.BIT(status, 0); SYSTEM.GET(data, ch)',
  '  END Get;',
  '',
  '  PROCEDURE SendLog;',
  '    VAR R: Texts.Reader; ch: CHAR; end: INTEGER;',
  '  BEGIN end := Oberon.Log.len;',
  '    IF sent > end THEN sent := 0 END ;',
  '    Texts.OpenReader(R, Oberon.Log, sent);',
  '    WHILE sent < end DO Texts.Read(R, ch); Put(ch); INC(sent) END ;',
  '    Put(EOT)',
  '  END SendLog;',
  '',
  '  PROCEDURE Log*;',
  '  BEGIN SendLog',
  '  END Log;',
  '',
  '  PROCEDURE Run*;',
  '    VAR line: ARRAY 256 OF CHAR; name: ARRAY 32 OF CHAR;',
  '      n, i, res: INTEGER; ch: CHAR; T: Texts.Text;',
  '  BEGIN SendLog;',
  '    REPEAT n := 0; Get(ch);',
  '      WHILE (ch # 0DX) & (ch # 0AX) DO',
  '        IF n < LEN(line) - 1 THEN line[n] := ch; INC(n) END ;',
  '        Get(ch)',
  '      END ;',
  '      line[n] := 0X;',
  '      IF n > 0 THEN i := 0;',
  '        WHILE (line[i] > " ") & (i < LEN(name) - 1) DO name[i] := line[i]; INC(i) END ;',
  '        name[i] := 0X;',
  '        NEW(T); Texts.Open(T, "");',
  '        WHILE line[i] # 0X DO Texts.Write(W, line[i]); INC(i) END ;',
  '        Texts.Append(T, W.buf);',
  '        Oberon.SetPar(F, T, 0); Oberon.Call(name, res);',
  '        IF res # 0 THEN',
  '          Texts.WriteString(W, "RkBuild: "); Texts.WriteString(W, name);',
  '          Texts.WriteString(W, " failed, res "); Texts.WriteInt(W, res, 1);',
  '          Texts.WriteLn(W); Texts.Append(Oberon.Log, W.buf)',
  '        END ;',
  '        SendLog',
  '      END',
  '    UNTIL n = 0',
  '  END Run;',
  '',
  'BEGIN Texts.OpenWriter(W); NEW(F); sent := 0',
  'END RkBuild.',
  '',
].join('\r');
