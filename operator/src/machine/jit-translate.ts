// The translator proper (jit.ts): one superblock of RISC5 instructions → its wasm code,
// instruction for instruction the interpreter's semantics (cpu.ts), and what the module around
// it needs to know (jit-group.ts encodeBlock). Registers and flags live in locals; C/V are
// computed only where an exit or a later instruction can observe them.

import { liveness } from './jit-decode.ts';
import { encodeBlock } from './jit-group.ts';
import { CELL, type FixedReads, type MemoryLayout, type Translation } from './jit-layout.ts';
import { emit, FN, L, OP, uleb } from './jit-wasm.ts';

export function translateWords(
  irs: number[],
  pc0: number,
  layout: MemoryLayout,
  displayStart: number,
  fixedReads: FixedReads,
): Translation {
  const memBytes = layout.memBytes;
  const n = irs.length;
  const { needCV, used, dirty, cvWritten } = liveness(irs);

  const stateBase = memBytes;
  const codeMarkBase = layout.codeMarkBase;
  const b: number[] = [];
  const { get, set, tee, i32, load, store } = emit(b);
  const cell = (c: number) => stateBase + c * 4;
  // Structured control: `depth` counts the ifs open inside the exit block, so an exit knows how
  // far to branch out.
  let depth = 0;
  const open = (type: number) => {
    b.push(OP.if, type);
    depth++;
  };
  const close = () => {
    b.push(OP.end);
    depth--;
  };
  /** The PCs the block leaves to that are known here (jit-group.ts jumps to them inside a group). */
  const targets = new Set<number>();
  /**
   * Leave the block after its k-th instruction (pushPc leaves the next PC on the stack): every
   * exit branches out of the exit block, whose value is the next PC; what follows it (the
   * instruction count, the jump to the next block, writing the registers back) is the module's
   * (jit-group.ts).
   */
  const exit = (k: number, pushPc: () => void) => {
    pushPc();
    i32(k + 1);
    set(L.count);
    b.push(OP.br);
    uleb(b, depth);
  };
  const exitTo = (k: number, pc: number) => {
    targets.add(pc);
    exit(k, () => i32(pc));
  };
  const stopExit = (k: number, next: number) => {
    i32(0);
    load(cell(CELL.stop));
    open(OP.void);
    exitTo(k, next);
    close();
  };

  b.push(OP.block, OP.i32); // the exit block: its value is the next PC

  let ended = false;
  for (let k = 0; k < n; k++) {
    const ir = irs[k];
    const next = pc0 + k + 1;
    if (ir >= 0) {
      registerOp(ir, needCV[k]);
    } else if ((ir & 0x40000000) === 0) {
      memoryOp(ir, k, next);
    } else {
      const cond = (ir >>> 24) & 15;
      if (cond === 15) continue; // "never": not even the link is written
      const link = (ir & 0x10000000) !== 0;
      const taken = () => {
        if (link) {
          i32(next << 2);
          tee(15);
          set(L.nz);
        }
        if ((ir & 0x20000000) === 0)
          exit(k, () => {
            get(ir & 15);
            i32(2);
            b.push(OP.i32ShrU);
          });
        else exitTo(k, (next + ((ir << 8) >> 8)) >>> 0);
      };
      if (cond === 7) {
        taken();
        ended = true;
      } else {
        condition(cond);
        open(OP.void);
        taken();
        close();
      }
    }
  }
  if (!ended) exitTo(n - 1, pc0 + n);
  b.push(OP.end);
  return {
    body: encodeBlock({ start: pc0, used, dirty, cv: cvWritten, targets: [...targets] }, b, layout),
    length: n,
  };

  function condition(cond: number): void {
    switch (cond & 7) {
      case 0: // N
        get(L.nz);
        i32(0);
        b.push(OP.i32LtS);
        break;
      case 1: // Z
        get(L.nz);
        b.push(OP.i32Eqz);
        break;
      case 2:
        get(L.C);
        break;
      case 3:
        get(L.V);
        break;
      case 4: // C | Z
        get(L.C);
        get(L.nz);
        b.push(OP.i32Eqz, OP.i32Or);
        break;
      case 5: // N ≠ V
        get(L.nz);
        i32(0);
        b.push(OP.i32LtS);
        get(L.V);
        b.push(OP.i32Xor);
        break;
      case 6: // (N ≠ V) | Z
        get(L.nz);
        i32(0);
        b.push(OP.i32LtS);
        get(L.V);
        b.push(OP.i32Xor);
        get(L.nz);
        b.push(OP.i32Eqz, OP.i32Or);
        break;
      default:
        i32(1);
    }
    if (cond >= 8) b.push(OP.i32Eqz);
  }

  function registerOp(ir: number, cvLive: boolean): void {
    const a = (ir >>> 24) & 15;
    const rb = (ir >>> 20) & 15;
    const q = (ir & 0x40000000) !== 0;
    const u = (ir & 0x20000000) !== 0;
    const v = (ir & 0x10000000) !== 0;
    const imm = v ? ir | 0xffff0000 : ir & 0xffff;
    const pushC = () => (q ? i32(imm) : get(ir & 15));
    const binary = (op: number) => {
      get(rb);
      pushC();
      b.push(op);
    };
    switch ((ir >>> 16) & 15) {
      case 0: // MOV
        if (!u) pushC();
        else if (q) i32(imm << 16);
        else if (v) {
          // The flags word: N Z C V in the top bits, the hardware's version tag 0xD0 below.
          get(L.nz);
          i32(0);
          b.push(OP.i32LtS);
          i32(3);
          b.push(OP.i32Shl);
          get(L.nz);
          b.push(OP.i32Eqz);
          i32(2);
          b.push(OP.i32Shl, OP.i32Or);
          get(L.C);
          i32(1);
          b.push(OP.i32Shl, OP.i32Or);
          get(L.V);
          b.push(OP.i32Or);
          i32(28);
          b.push(OP.i32Shl);
          i32(0xd0);
          b.push(OP.i32Or);
        } else {
          i32(0);
          load(cell(CELL.H));
        }
        break;
      case 1:
        binary(OP.i32Shl);
        break;
      case 2:
        binary(OP.i32ShrS);
        break;
      case 3:
        binary(OP.i32Rotr);
        break;
      case 4:
        binary(OP.i32And);
        break;
      case 5: // ANN
        get(rb);
        pushC();
        i32(-1);
        b.push(OP.i32Xor, OP.i32And);
        break;
      case 6:
        binary(OP.i32Or);
        break;
      case 7:
        binary(OP.i32Xor);
        break;
      case 8:
      case 9:
        addSub(ir, rb, pushC, u, cvLive);
        break;
      case 10: {
        // MUL: low word to a, high word to H (64-bit product).
        const ext = u ? OP.i64ExtendU : OP.i64ExtendS;
        binary(OP.i32Mul);
        set(L.r);
        i32(0);
        get(rb);
        b.push(ext);
        pushC();
        b.push(ext, OP.i64Mul, 0x42, 32, OP.i64ShrU, OP.i32WrapI64); // 0x42 32 = i64.const 32
        store(cell(CELL.H));
        get(L.r);
        break;
      }
      case 11:
        divide(ir, rb, pushC, u);
        break;
      default:
        // The floating-point unit: the interpreter's own functions.
        i32(ir);
        get(rb);
        pushC();
        b.push(OP.call, FN.complexOp);
    }
    tee(a);
    set(L.nz);
  }

  function addSub(ir: number, rb: number, pushC: () => void, u: boolean, cvLive: boolean): void {
    const add = ((ir >>> 16) & 15) === 8;
    const arith = add ? OP.i32Add : OP.i32Sub;
    if (!cvLive && !u) {
      get(rb);
      pushC();
      b.push(arith);
      return;
    }
    get(rb);
    set(L.x);
    pushC();
    set(L.y);
    get(L.x);
    get(L.y);
    b.push(arith);
    if (u) {
      get(L.C);
      b.push(arith);
    }
    set(L.r);
    // Carry/borrow out of bit 31 and overflow, from the operands' and the result's top bits.
    if (add) {
      // C = ((x & y) | ((x | y) & ~r)) >>> 31
      get(L.x);
      get(L.y);
      b.push(OP.i32And);
      get(L.x);
      get(L.y);
      b.push(OP.i32Or);
      get(L.r);
      i32(-1);
      b.push(OP.i32Xor, OP.i32And, OP.i32Or);
      i32(31);
      b.push(OP.i32ShrU);
      set(L.C);
      // V = ((r ^ y) & (r ^ x)) >>> 31
      get(L.r);
      get(L.y);
      b.push(OP.i32Xor);
      get(L.r);
      get(L.x);
      b.push(OP.i32Xor, OP.i32And);
    } else {
      // C = ((~x & y) | ((~x | y) & r)) >>> 31
      get(L.x);
      i32(-1);
      b.push(OP.i32Xor);
      tee(L.w);
      get(L.y);
      b.push(OP.i32And);
      get(L.w);
      get(L.y);
      b.push(OP.i32Or);
      get(L.r);
      b.push(OP.i32And, OP.i32Or);
      i32(31);
      b.push(OP.i32ShrU);
      set(L.C);
      // V = ((x ^ y) & (r ^ x)) >>> 31
      get(L.x);
      get(L.y);
      b.push(OP.i32Xor);
      get(L.r);
      get(L.x);
      b.push(OP.i32Xor, OP.i32And);
    }
    i32(31);
    b.push(OP.i32ShrU);
    set(L.V);
    get(L.r);
  }

  function divide(ir: number, rb: number, pushC: () => void, u: boolean): void {
    // Positive divisors inline (floor division, remainder to H); others through the shared helper.
    pushC();
    tee(L.y);
    i32(0);
    b.push(OP.i32GtS);
    open(OP.i32);
    get(rb);
    tee(L.x);
    get(L.y);
    b.push(u ? OP.i32DivU : OP.i32DivS);
    set(L.r);
    get(L.x);
    get(L.y);
    b.push(u ? OP.i32RemU : OP.i32RemS);
    set(L.w);
    if (!u) {
      // Truncating division → floor: a negative remainder moves the quotient down by one.
      get(L.w);
      i32(0);
      b.push(OP.i32LtS);
      open(OP.void);
      get(L.r);
      i32(1);
      b.push(OP.i32Sub);
      set(L.r);
      get(L.w);
      get(L.y);
      b.push(OP.i32Add);
      set(L.w);
      close();
    }
    i32(0);
    get(L.w);
    store(cell(CELL.H));
    get(L.r);
    b.push(OP.else);
    i32(ir);
    get(rb);
    get(L.y);
    b.push(OP.call, FN.complexOp);
    close();
  }

  function memoryOp(ir: number, k: number, next: number): void {
    const a = (ir >>> 24) & 15;
    const byte = (ir & 0x10000000) !== 0;
    get((ir >>> 20) & 15);
    i32((ir << 12) >> 12);
    b.push(OP.i32Add);
    tee(L.ad);
    i32(memBytes);
    b.push(OP.i32LtU);
    if ((ir & 0x20000000) === 0) {
      // Load: RAM inline; a device read goes through the bus and may stop the CPU.
      open(OP.i32);
      get(L.ad);
      if (byte) load(0, OP.i32Load8u);
      else {
        i32(-4);
        b.push(OP.i32And);
        load(0);
      }
      b.push(OP.else);
      for (const [address, value] of fixedReads) {
        get(L.ad);
        i32(address);
        b.push(OP.i32Eq);
        open(OP.i32);
        i32(value);
        b.push(OP.else);
      }
      get(L.ad);
      i32(k + 1);
      b.push(OP.call, FN.ioRead);
      for (let f = 0; f < fixedReads.length; f++) close();
      if (byte) {
        get(L.ad);
        i32(3);
        b.push(OP.i32And);
        i32(3);
        b.push(OP.i32Shl, OP.i32ShrU);
        i32(0xff);
        b.push(OP.i32And);
      }
      tee(a);
      set(L.nz);
      stopExit(k, next);
      get(a);
      close();
      tee(a);
      set(L.nz);
      return;
    }
    // Store: RAM inline (bumping the frame counter in the display, invalidating translated code).
    open(OP.void);
    get(L.ad);
    if (byte) {
      get(a);
      store(0, OP.i32Store8);
    } else {
      i32(-4);
      b.push(OP.i32And);
      get(a);
      store(0);
    }
    get(L.ad);
    i32(displayStart);
    b.push(OP.i32GeU);
    open(OP.void);
    i32(0);
    i32(0);
    load(cell(CELL.fb));
    i32(1);
    b.push(OP.i32Add);
    store(cell(CELL.fb));
    close();
    get(L.ad);
    i32(2);
    b.push(OP.i32ShrU);
    tee(L.w);
    load(codeMarkBase, OP.i32Load8u);
    open(OP.void);
    get(L.w);
    b.push(OP.call, FN.invalidate);
    exitTo(k, next);
    close();
    b.push(OP.else);
    get(L.ad);
    get(a);
    if (byte) {
      i32(0xff);
      b.push(OP.i32And);
    }
    i32(k + 1);
    b.push(OP.call, FN.ioWrite);
    stopExit(k, next);
    close();
  }
}
