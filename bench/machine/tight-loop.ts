// The tight loop of run.ts (and of ab.ts's warm processes, which run it first so that the thread
// is long-lived, jit.ts LIMITS.longLived, as in run.ts's warm rounds): a load, a store and
// arithmetic, forever. Assembler source (asm.ts).
export const TIGHT_LOOP = `
      MOV R0, 0
      MOV R3, 100H
    loop:
      ADD R0, R0, 1
      LDW R2, R3, 0
      ADD R2, R2, R0
      STW R2, R3, 0
      XOR R4, R0, R2
      LSL R5, R4, 3
      SUB R6, R0, R5
      BNE loop
      B loop`;
