// The one Oberon module the builder adds for itself, RkBuild:
//   RkBuild.Run  sends the System.Log text so far, then installs a task that executes command
//                lines arriving on the serial line ("ORP.Compile X.Mod/s ~"), at most one per
//                pass of Oberon.Loop, each followed by the log text it produced; an empty line
//                removes the task. Running from the loop (not in one long command) lets Oberon's
//                garbage collector, which only runs from the loop, free each compile's heap.
//   RkBuild.Log  sends the log text written since the last excerpt.
// Every log excerpt ends with an EOT byte. The builder compiles RkBuild first with the image's
// own compiler, so only two commands are ever typed and middle-clicked, and removes it from the
// finished disk.

export const HELPER_MODULE = 'RkBuild';
export const HELPER_FILE = `${HELPER_MODULE}.Mod`;
export const LOG_END = 0x04; // EOT: the end of one log excerpt on the serial line

export const HELPER_SOURCE = [
  'MODULE RkBuild; (*retrokube disk builder: commands from, System.Log to the serial line*)',
  '  IMPORT SYSTEM, Display, Texts, Oberon;',
  '  CONST data = -56; status = -52; (*RS232*) EOT = 4X;',
  '  VAR sent: INTEGER; (*log characters already sent*)',
  '    n: INTEGER; line: ARRAY 256 OF CHAR; (*the command line being received*)',
  '    W: Texts.Writer; F: Display.Frame; task: Oberon.Task;',
  '',
  '  PROCEDURE Put(ch: CHAR);',
  '  BEGIN REPEAT UNTIL SYSTEM.BIT(status, 1); SYSTEM.PUT(data, ch)',
  '  END Put;',
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
  '  PROCEDURE Execute;',
  '    VAR name: ARRAY 32 OF CHAR; i, res: INTEGER; T: Texts.Text;',
  '  BEGIN i := 0;',
  '    WHILE (line[i] > " ") & (i < LEN(name) - 1) DO name[i] := line[i]; INC(i) END ;',
  '    name[i] := 0X;',
  '    NEW(T); Texts.Open(T, "");',
  '    WHILE line[i] # 0X DO Texts.Write(W, line[i]); INC(i) END ;',
  '    Texts.Append(T, W.buf);',
  '    Oberon.SetPar(F, T, 0); Oberon.Call(name, res);',
  '    IF res # 0 THEN',
  '      Texts.WriteString(W, "RkBuild: "); Texts.WriteString(W, name);',
  '      Texts.WriteString(W, " failed, res "); Texts.WriteInt(W, res, 1);',
  '      Texts.WriteLn(W); Texts.Append(Oberon.Log, W.buf)',
  '    END ;',
  '    SendLog',
  '  END Execute;',
  '',
  '  PROCEDURE Step; (*task: at most one received command line per pass of the loop*)',
  '    VAR ch: CHAR; done: BOOLEAN;',
  '  BEGIN done := FALSE;',
  '    WHILE ~done & SYSTEM.BIT(status, 0) DO',
  '      SYSTEM.GET(data, ch);',
  '      IF (ch = 0DX) OR (ch = 0AX) THEN',
  '        line[n] := 0X; done := TRUE;',
  '        IF n = 0 THEN Oberon.Remove(task); Put(EOT) ELSE n := 0; Execute END',
  '      ELSIF n < LEN(line) - 1 THEN line[n] := ch; INC(n)',
  '      END',
  '    END',
  '  END Step;',
  '',
  '  PROCEDURE Run*;',
  '  BEGIN n := 0; SendLog; Oberon.Install(task)',
  '  END Run;',
  '',
  'BEGIN Texts.OpenWriter(W); NEW(F); sent := 0; n := 0; task := Oberon.NewTask(Step, 0)',
  'END RkBuild.',
  '',
].join('\r');
