// Our own boot ROM, written in RISC5 assembly and assembled by asm.ts: what Project Oberon's
// BootLoad does for a disk boot, in our words. SP := stackOrg, MT := 20H; on a cold start
// (LNK = 0) load the inner core from SD block 80004H on — the first block to address 0, then
// as many 512-byte blocks as word 16 of it says — over SPI (CMD17, token 254, 128 words in fast
// mode); then store MemLim at 12 and stackOrg at 24, show LED 84H and jump to address 0.
// (The serial-line boot of switch 0 is left to the native boot; this ROM boots from disk.)

import { assemble } from './asm.ts';

const SOURCE = `
  IO = -64            ; device registers: +4 LEDs, +16 SPI data, +20 SPI control
  start:
    MOV' SP, STACKHI
    IOR SP, SP, STACKLO
    MOV MT, 20H
    MOV R1, IO
    MOV R0, LNK         ; cold start when LNK = 0
    BNE warm
    MOV R2, 80H
    STW R2, R1, 4
    MOV R2, 82H
    STW R2, R1, 4
    MOV' R4, 8          ; R4 := 80004H, the first block of the boot area
    IOR R4, R4, 4
    MOV R5, 0           ; R5 := destination address
    BL readsd
    MOV R7, 0
    LDW R6, R7, 16      ; R6 := length of the inner core
    ADD R4, R4, 1
    MOV R5, 200H
  more:
    SUB R0, R5, R6
    BGE warm
    BL readsd
    ADD R4, R4, 1
    ADD R5, R5, 200H
    B more
  warm:
    MOV R7, 0
    MOV' R2, LIMHI
    IOR R2, R2, LIMLO
    STW R2, R7, 12      ; MemLim
    STW SP, R7, 24      ; stackOrg
    MOV R2, 84H
    STW R2, R1, 4
    MOV R0, 0
    B R0

  ; readsd: SD block R4 → 512 bytes at R5 (uses R2, R3, R8, R9)
  readsd:
    MOV R2, 1           ; select the card, slow mode
    STW R2, R1, 20
    MOV R2, 51H         ; CMD17
    STW R2, R1, 16
    ASR R3, R4, 24
    AND R3, R3, 0FFH
    STW R3, R1, 16
    ASR R3, R4, 16
    AND R3, R3, 0FFH
    STW R3, R1, 16
    ASR R3, R4, 8
    AND R3, R3, 0FFH
    STW R3, R1, 16
    AND R3, R4, 0FFH
    STW R3, R1, 16
    MOV R2, 0FFH        ; CRC (ignored)
    STW R2, R1, 16
  reply:
    STW R2, R1, 16
    LDW R3, R1, 16
    SUB R0, R3, 0FFH
    BEQ reply
  token:
    STW R2, R1, 16
    LDW R3, R1, 16
    SUB R0, R3, 0FEH
    BNE token
    MOV R3, 5           ; fast mode: one word per transfer
    STW R3, R1, 20
    MOV R8, 128
    MOV R9, R5
  data:
    MOV R2, -1
    STW R2, R1, 16
    LDW R3, R1, 16
    STW R3, R9, 0
    ADD R9, R9, 4
    SUB R8, R8, 1
    BNE data
    MOV R3, 1           ; two checksum bytes, slow
    STW R3, R1, 20
    MOV R2, 0FFH
    STW R2, R1, 16
    STW R2, R1, 16
    MOV R3, 0           ; deselect
    STW R3, R1, 20
    B R15
`;

/** The boot ROM for a machine whose MemLim and stackOrg are given (both multiples of 16). */
export function bootRom(memLim: number, stackOrg: number): Int32Array {
  const consts = `STACKHI = ${stackOrg >>> 16}\nSTACKLO = ${stackOrg & 0xffff}\nLIMHI = ${memLim >>> 16}\nLIMLO = ${memLim & 0xffff}\n`;
  return assemble(consts + SOURCE, 0xfffff800).words;
}
