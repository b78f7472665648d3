// Test support: an Oberon module with REAL constants and comparisons of zeros, and the answers
// Wirth's 2016 FPU gives (used by real-oberon.test.ts and the e2e test of a real-time machine).

export const REAL_MODULE = `MODULE RkReal; (*REAL constants and zeros, written raw to RkReal.Out*)
  IMPORT Files;
  VAR a, b, one, three, ten: REAL; r: Files.Rider;
  PROCEDURE Bool(ok: BOOLEAN);
  BEGIN IF ok THEN Files.Write(r, "T") ELSE Files.Write(r, "F") END
  END Bool;
  PROCEDURE Run*;
    VAR f: Files.File;
  BEGIN f := Files.New("RkReal.Out"); Files.Set(r, f, 0);
    a := 0.0; b := 0.0; one := 1.0; three := 3.0; ten := 10.0;
    Files.WriteReal(r, 0.1); Files.WriteReal(r, 3.14159);
    Files.WriteReal(r, one / three); Files.WriteReal(r, one / ten);
    Files.WriteReal(r, a - b); Files.WriteReal(r, a + b); Files.WriteReal(r, -a - b);
    Bool(a = b); Bool(a < b); Bool(a > b); Bool(a <= b); Bool(a - b = 0.0); Bool(a - b >= 0.0);
    Files.Register(f)
  END Run;
END RkReal.
`;

const hex = (v: number) => (v >>> 0).toString(16).toUpperCase().padStart(8, '0');

/** RkReal.Out: seven REALs (raw bits) then six booleans as T/F. */
export const REAL_RESULTS = {
  read(out: Buffer): { reals: string[]; bools: string } {
    return {
      reals: [0, 1, 2, 3, 4, 5, 6].map((i) => hex(out.readInt32LE(i * 4))),
      bools: out.subarray(28).toString('latin1'),
    };
  },
  // 0.1, 3.14159, 1/3, 1/10, a - b, a + b, -a - b; a = b, a < b, a > b, a <= b, a - b = 0, a - b >= 0
  expected: {
    reals: ['3DCCCCCD', '40490FD0', '3EAAAAAB', '3DCCCCCD', '00000000', '00000000', '00000000'],
    bools: 'TFFTTT',
  },
} as const;
