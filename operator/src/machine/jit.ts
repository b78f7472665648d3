// A RISC5 → JavaScript block translator. A basic block (up to a branch, at most
// LIMITS.maxBlock instructions) becomes one JS function that V8 compiles to machine code, with
// flags in locals, constants folded, and C/V computed only where a later instruction or the
// block's exit can observe them. Semantics are the interpreter's (cpu.ts), instruction for
// instruction: a block leaves early after an I/O access that asks the CPU to stop, and after a
// store into translated code (Oberon loads modules by storing code), which invalidates the
// translations of that code's page.

import type { Risc5 } from './cpu.ts';
import { fpAdd, fpDiv, fpMul, idiv, idivResult } from './fpu.ts';

export const LIMITS = {
  maxBlock: 64, // instructions per translated block (bounds compile time and run(n) overshoot)
  pageShift: 8, // invalidation granularity: 256 words (1 KiB) of code
  hotBlock: 10_000, // translate a block on its 10,000th entry: each translation costs V8 compile work that only very hot code repays (bench/machine: ORP compiling itself 1.4× faster than at 1,000)
} as const;

/** A translated block: runs its instructions against the CPU state and sets cpu.pc. */
export type BlockFn = (s: Risc5, R: Int32Array, mem: Int32Array, cm: Uint8Array) => void;

/** Helpers the generated code calls (passed in, so the code needs no imports). */
export interface JitHelpers {
  mulHighSigned(a: number, b: number): number;
  mulHighUnsigned(a: number, b: number): number;
}

function condExpr(cond: number): string {
  switch (cond & 7) {
    case 0:
      return 'nz < 0';
    case 1:
      return 'nz === 0';
    case 2:
      return 'C !== 0';
    case 3:
      return 'V !== 0';
    case 4:
      return '(C !== 0 || nz === 0)';
    case 5:
      return '((nz < 0) !== (V !== 0))';
    case 6:
      return '((nz < 0) !== (V !== 0) || nz === 0)';
    default:
      return 'true';
  }
}

function readsCV(ir: number): boolean {
  if (ir >= 0) {
    const op = (ir >>> 16) & 15;
    const u = (ir & 0x20000000) !== 0;
    const q = (ir & 0x40000000) !== 0;
    if (op === 0 && u && !q && (ir & 0x10000000) !== 0) return true; // MOV flags
    return (op === 8 || op === 9) && u; // ADC, SBC
  }
  if ((ir & 0x40000000) === 0) return false;
  const c = (ir >>> 24) & 7;
  return c >= 2 && c <= 6;
}

function writesCV(ir: number): boolean {
  if (ir < 0) return false;
  const op = (ir >>> 16) & 15;
  return op === 8 || op === 9;
}

/** Translate the block at word index pc0; returns the function and the words it covers. */
export function translate(cpu: Risc5, pc0: number, helpers: JitHelpers): { fn: BlockFn; length: number } {
  const mem = cpu.mem;
  const irs: number[] = [];
  for (let pc = pc0; pc < cpu.memWords && irs.length < LIMITS.maxBlock; pc++) {
    const ir = mem[pc];
    irs.push(ir);
    if (ir < 0 && (ir & 0x40000000) !== 0) break; // a branch ends the block
  }
  const n = irs.length;
  // C/V liveness: live at the block's end; an ADD/SUB whose C/V are overwritten unread skips them.
  const needCV = new Array<boolean>(n).fill(true);
  let live = true;
  for (let k = n - 1; k >= 0; k--) {
    const ir = irs[k];
    if (writesCV(ir)) {
      needCV[k] = live;
      live = false;
    }
    if (readsCV(ir)) live = true;
  }
  const memBytes = cpu.memBytes;
  const disp = cpu.displayStart;
  const lines: string[] = ['let nz = s.nz, C = s.C, V = s.V;'];
  const exit = (k: number, pcExpr: string) =>
    `{ s.nz = nz; s.C = C; s.V = V; s.instructions += ${k + 1}; s.pc = ${pcExpr}; return; }`;
  let ended = false;
  for (let k = 0; k < n; k++) {
    const ir = irs[k];
    const next = pc0 + k + 1;
    if (ir >= 0) {
      const a = (ir >>> 24) & 15;
      const b = `R[${(ir >>> 20) & 15}]`;
      const q = (ir & 0x40000000) !== 0;
      const u = (ir & 0x20000000) !== 0;
      const v = (ir & 0x10000000) !== 0;
      const c = !q ? `R[${ir & 15}]` : String(v ? ir | 0xffff0000 : ir & 0xffff);
      const cNum = q ? (v ? ir | 0xffff0000 : ir & 0xffff) : 0;
      let e: string;
      switch ((ir >>> 16) & 15) {
        case 0:
          if (!u) e = c;
          else if (q) e = String(cNum << 16);
          else if (v) e = '(((nz < 0 ? 8 : 0) | (nz === 0 ? 4 : 0) | (C << 1) | V) << 28) | 0xd0';
          else e = 's.H';
          break;
        case 1:
          e = q ? `${b} << ${cNum & 31}` : `${b} << ${c}`;
          break;
        case 2:
          e = q ? `${b} >> ${cNum & 31}` : `${b} >> ${c}`;
          break;
        case 3:
          e = q
            ? `(${b} >>> ${cNum & 31}) | (${b} << ${32 - (cNum & 31)})`
            : `((x, y) => (x >>> y) | (x << (32 - (y & 31))))(${b}, ${c})`;
          break;
        case 4:
          e = `${b} & ${c}`;
          break;
        case 5:
          e = `${b} & ~${c}`;
          break;
        case 6:
          e = `${b} | ${c}`;
          break;
        case 7:
          e = `${b} ^ ${c}`;
          break;
        case 8:
        case 9: {
          const add = ((ir >>> 16) & 15) === 8;
          const cin = u ? ' + C' : '';
          if (!needCV[k] && !u) {
            e = add ? `(${b} + ${c}) | 0` : `(${b} - ${c}) | 0`;
            break;
          }
          // Int32 only: carry/borrow out of bit 31 from the operands' and the result's top bits.
          const sum = add ? `(((x + y) | 0)${cin}) | 0` : `(((x - y) | 0)${u ? ' - C' : ''}) | 0`;
          const carry = add
            ? 'C = ((x & y) | ((x | y) & ~r)) >>> 31;'
            : 'C = ((~x & y) | ((~x | y) & r)) >>> 31;';
          const ov = add ? 'V = ((r ^ y) & (r ^ x)) >>> 31;' : 'V = ((x ^ y) & (r ^ x)) >>> 31;';
          lines.push(`{ const x = ${b}, y = ${c}; const r = ${sum}; ${carry} ${ov} R[${a}] = nz = r; }`);
          continue;
        }
        case 10:
          lines.push(
            `{ const x = ${b}, y = ${c}; R[${a}] = nz = Math.imul(x, y); s.H = ${u ? 'h.mulHighUnsigned(x >>> 0, y >>> 0)' : 'h.mulHighSigned(x, y)'}; }`,
          );
          continue;
        default:
          // DIV and the floating-point unit: the shared helper (exact same code as the interpreter).
          lines.push(`R[${a}] = nz = s.complexOp(${ir}, ${b}, ${c});`);
          continue;
      }
      lines.push(`R[${a}] = nz = ${e};`);
    } else if ((ir & 0x40000000) === 0) {
      const a = (ir >>> 24) & 15;
      const off = (ir << 12) >> 12;
      const addr = `(R[${(ir >>> 20) & 15}] + ${off}) >>> 0`;
      const byte = (ir & 0x10000000) !== 0;
      if ((ir & 0x20000000) === 0) {
        const pick = byte ? 'w = (w >>> ((ad & 3) << 3)) & 0xff; ' : '';
        lines.push(
          `{ const ad = ${addr}; let w; if (ad < ${memBytes}) w = mem[ad >>> 2]; else { s.ioInstr = s.instructions + ${k + 1}; w = s.bus.ioRead(ad); } ${pick}R[${a}] = nz = w; if (s.stop) ${exit(k, String(next))} }`,
        );
      } else {
        const store = byte
          ? `{ const sh = (ad & 3) << 3; mem[wi] = (mem[wi] & ~(0xff << sh)) | ((R[${a}] & 0xff) << sh); }`
          : `mem[wi] = R[${a}];`;
        lines.push(
          `{ const ad = ${addr}; if (ad < ${memBytes}) { const wi = ad >>> 2; ${store} if (ad >= ${disp}) s.fbVersion++; if (cm[wi] !== 0) { s.invalidate(wi); ${exit(k, String(next))} } } else { s.ioInstr = s.instructions + ${k + 1}; s.bus.ioWrite(ad, ${byte ? `R[${a}] & 0xff` : `R[${a}]`}); if (s.stop) ${exit(k, String(next))} } }`,
        );
      }
    } else {
      const cond = (ir >>> 24) & 15;
      const link = (ir & 0x10000000) !== 0;
      const target =
        (ir & 0x20000000) === 0 ? `R[${ir & 15}] >>> 2` : String((next + ((ir << 8) >> 8)) >>> 0);
      const taken = `{ ${link ? `R[15] = nz = ${next << 2}; ` : ''}${exit(k, target)} }`;
      if (cond === 7) lines.push(taken);
      else if (cond === 15) lines.push(exit(k, String(next)));
      else
        lines.push(
          `if (${cond >= 8 ? `!(${condExpr(cond)})` : condExpr(cond)}) ${taken}\n${exit(k, String(next))}`,
        );
      ended = true;
    }
  }
  if (!ended) lines.push(exit(n - 1, String(pc0 + n)));
  // Generating code from RISC5 words is the translator's purpose (new Function, no eval of outside input).
  const factory = new Function(
    'h',
    `return function block_${pc0.toString(16)}(s, R, mem, cm) {\n${lines.join('\n')}\n};`,
  );
  return { fn: factory(helpers) as BlockFn, length: n };
}

/** DIV, FAD, FSB, FML, FDV for translated code; returns the result and sets cpu.H for DIV. */
export function complexOp(cpu: Risc5, ir: number, b: number, c: number): number {
  const u = (ir & 0x20000000) !== 0;
  const v = (ir & 0x10000000) !== 0;
  switch ((ir >>> 16) & 15) {
    case 11: {
      if (c > 0) {
        if (!u) {
          let q = (b / c) | 0;
          let rem = b - Math.imul(q, c);
          if (rem < 0) {
            q = (q - 1) | 0;
            rem = (rem + c) | 0;
          }
          cpu.H = rem;
          return q;
        }
        const bu = b >>> 0;
        const q = Math.floor(bu / c);
        cpu.H = (bu - q * c) | 0;
        return q | 0;
      }
      idiv(b, c, !u);
      cpu.H = idivResult[1];
      return idivResult[0];
    }
    case 12:
      return fpAdd(b, c, u, v);
    case 13:
      return fpAdd(b, c ^ 0x80000000, u, v);
    case 14:
      return fpMul(b, c);
    default:
      return fpDiv(b, c);
  }
}
