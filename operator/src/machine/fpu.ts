// The RISC5 floating-point unit, the bit-serial integer divider and the multiplier's high word,
// modelled bit for bit on Wirth's hardware (FPAdder, FPMultiplier, FPDivider, Divider, Multiplier): IEEE single layout, no NaN,
// no denormals (a zero exponent is zero), overflow to exponent 0xFF, underflow to 0.
// All values are 32-bit patterns carried in JS numbers; results are returned as int32.

/**
 * FAD (and FSB with y's sign flipped by the caller). u=1 is FLT (x is an integer, exponent
 * fixed at 150), v=1 is FLOOR (the aligned sum is returned as an integer).
 */
export function fpAdd(x: number, y: number, u: boolean, v: boolean): number {
  const xs = x >>> 31;
  let xe: number;
  let x0: number;
  if (!u) {
    xe = (x >>> 23) & 0xff;
    const xm = ((x & 0x7fffff) << 1) | 0x1000000;
    x0 = xs ? -xm | 0 : xm;
  } else {
    xe = 150;
    x0 = ((x & 0x00ffffff) << 8) >> 7;
  }
  const ys = y >>> 31;
  const ye = (y >>> 23) & 0xff;
  let ym = (y & 0x7fffff) << 1;
  if (!u && !v) ym |= 0x1000000;
  const y0 = ys ? -ym | 0 : ym;

  let e0: number;
  let x3: number;
  let y3: number;
  if (ye > xe) {
    const shift = ye - xe;
    e0 = ye;
    x3 = shift > 31 ? x0 >> 31 : x0 >> shift;
    y3 = y0;
  } else {
    const shift = xe - ye;
    e0 = xe;
    x3 = x0;
    y3 = shift > 31 ? y0 >> 31 : y0 >> shift;
  }
  // 27-bit two's complement sum with the sign replicated into bits 26 and 25.
  const sum =
    (((xs << 26) | (xs << 25) | (x3 & 0x01ffffff)) + ((ys << 26) | (ys << 25) | (y3 & 0x01ffffff))) >>> 0;
  const s = ((((sum & 0x4000000) !== 0 ? -sum : sum) + 1) & 0x07ffffff) >>> 0;

  let e1 = e0 + 1;
  let t3 = s >>> 1;
  if ((s & 0x3fffffc) !== 0) {
    while ((t3 & 0x1000000) === 0) {
      t3 <<= 1;
      e1--;
    }
  } else {
    t3 = (t3 << 24) >>> 0;
    e1 -= 24;
  }
  e1 >>>= 0;

  if (v) return (sum << 5) >> 6;
  const yZero = (y & 0x7fffffff) === 0;
  // Two zeros give +0 (Wirth's 2016 FPAdder; the 2015 one passed y through, so 0.0 - 0.0 was -0).
  if ((x & 0x7fffffff) === 0) return u || yZero ? 0 : y | 0;
  if (yZero) return x | 0;
  if ((t3 & 0x01ffffff) === 0 || (e1 & 0x100) !== 0) return 0;
  return ((sum & 0x04000000) << 5) | ((e1 & 0xff) << 23) | ((t3 >>> 1) & 0x7fffff);
}

/** FML: 24×24-bit mantissa product, rounded by adding one at the bit below the result. */
export function fpMul(x: number, y: number): number {
  const sign = (x ^ y) & 0x80000000;
  const xe = (x >>> 23) & 0xff;
  const ye = (y >>> 23) & 0xff;
  const xm = (x & 0x7fffff) | 0x800000;
  const ym = (y & 0x7fffff) | 0x800000;
  // 48-bit product split as hi (bits 47..24) and lo (bits 23..0) to stay exact in doubles.
  const xh = xm >>> 12;
  const xl = xm & 0xfff;
  const mid = xh * ym; // < 2^36
  const low = xl * ym; // < 2^36
  const m = mid * 4096 + low; // exact: < 2^48 fits in 53 bits
  let e1 = (xe + ye - 127) >>> 0;
  let z0: number;
  if (m >= 0x800000000000) {
    e1 = (e1 + 1) >>> 0;
    z0 = (Math.floor(m / 0x800000) + 1) & 0xffffff;
  } else {
    z0 = (Math.floor(m / 0x400000) + 1) & 0xffffff;
  }
  if (xe === 0 || ye === 0) return 0;
  if ((e1 & 0x100) === 0) return sign | ((e1 & 0xff) << 23) | (z0 >>> 1);
  if ((e1 & 0x80) === 0) return sign | (0xff << 23) | (z0 >>> 1);
  return 0;
}

/**
 * FDV as Wirth's 2016 FPDivider: a 26-bit quotient rounded to 24 bits (half up); x/0 gives the
 * signed maximum exponent. (The 2015 divider truncated: 1.0/3.0 was 3EAAAAAA, not 3EAAAAAB.)
 */
export function fpDiv(x: number, y: number): number {
  const sign = (x ^ y) & 0x80000000;
  const xe = (x >>> 23) & 0xff;
  const ye = (y >>> 23) & 0xff;
  const xm = (x & 0x7fffff) | 0x800000;
  const ym = (y & 0x7fffff) | 0x800000;
  const q1 = Math.floor((xm * 0x2000000) / ym); // xm·2^25 < 2^49, exact in doubles
  let e1 = (xe - ye + 126) >>> 0;
  let q2: number;
  if (q1 >= 0x2000000) {
    e1 = (e1 + 1) >>> 0;
    q2 = (q1 >>> 1) & 0xffffff;
  } else {
    q2 = q1 & 0xffffff;
  }
  // The rounding carry may run into the exponent field: the hardware ORs it in, so do we.
  const q3 = (q2 + 1) >>> 1;
  if (xe === 0) return 0;
  if (ye === 0) return sign | (0xff << 23);
  if ((e1 & 0x100) === 0) return sign | ((e1 & 0xff) << 23) | q3;
  if ((e1 & 0x80) === 0) return sign | (0xff << 23) | (q2 >>> 1);
  return 0;
}

/** Scratch for idiv results: [quotient, remainder] as int32 (no allocation per division). */
export const idivResult = new Int32Array(2);

/**
 * Wirth's bit-serial restoring divider (32 steps), used for divisors ≤ 0 (read as signed).
 * A signed division of a negative dividend negates, divides, then floors the quotient and
 * makes the remainder y − r. Writes quotient and remainder to idivResult.
 */
export function idiv(x: number, y: number, signed: boolean): void {
  const yu = y >>> 0;
  const sign = signed && (x | 0) < 0;
  const x0 = (sign ? -x : x) >>> 0;
  // RQ is a 64-bit register: rem (high word) and quo (low word).
  let rem = 0;
  let quo = x0;
  for (let s = 0; s < 32; s++) {
    // w0 = RQ >> 31 (low 32 bits of it)
    const w0 = ((rem << 1) | (quo >>> 31)) >>> 0;
    const w1 = (w0 - yu) >>> 0;
    if ((w1 | 0) < 0) {
      rem = w0;
      quo = ((quo & 0x7fffffff) << 1) >>> 0;
    } else {
      rem = w1;
      quo = (((quo & 0x7fffffff) << 1) | 1) >>> 0;
    }
  }
  if (sign) {
    quo = -quo >>> 0;
    if (rem !== 0) {
      quo = (quo - 1) >>> 0;
      rem = (yu - rem) >>> 0;
    }
  }
  idivResult[0] = quo;
  idivResult[1] = rem;
}

/** High word of the signed 64-bit product of two int32 values. */
export function mulHighSigned(a: number, b: number): number {
  const hi = mulHighUnsigned(a >>> 0, b >>> 0);
  // Signed correction: high(a·b) = highU − (a<0 ? b : 0) − (b<0 ? a : 0).
  return (hi - (a < 0 ? b : 0) - (b < 0 ? a : 0)) | 0;
}

/** High word of the unsigned 64-bit product of two uint32 values, exact via 16-bit limbs. */
export function mulHighUnsigned(a: number, b: number): number {
  const a0 = a & 0xffff;
  const a1 = a >>> 16;
  const b0 = b & 0xffff;
  const b1 = b >>> 16;
  const lo = a0 * b0;
  const m1 = a1 * b0;
  const m2 = a0 * b1;
  const hi = a1 * b1;
  const mid = (lo >>> 16) + (m1 & 0xffff) + (m2 & 0xffff);
  return (hi + Math.floor(m1 / 65536) + Math.floor(m2 / 65536) + Math.floor(mid / 65536)) | 0;
}
