/*
 * RISC5 floating-point unit and serial divider, modelled on the behaviour of Wirth's 2016
 * hardware revision (FPAdder gives +0 for a zero sum, FPDivider rounds the quotient).
 * IEEE single layout without NaN or denormals: a zero exponent is zero, overflow saturates to
 * exponent 255, underflow gives 0.  Pure C with no QEMU dependency so that the host test
 * (qemu/test/fpu-vectors.c) can check it against the vector file directly.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "fpu.h"

/* Arithmetic shift right of a 32-bit pattern, saturating for shifts >= 32. */
static int32_t sar(int32_t v, unsigned n)
{
    return n > 31 ? (v < 0 ? -1 : 0) : (v >> n);
}

uint32_t risc5_fp_add(uint32_t x, uint32_t y, bool u, bool v)
{
    uint32_t xs = x >> 31, ys = y >> 31;
    uint32_t xe, ye = (y >> 23) & 0xff;
    int32_t xa, ya;            /* 25-bit two's complement significands, hidden bit at 24 */
    uint32_t e0, sum, mag, t, e1;

    if (!u) {
        uint32_t m = ((x & 0x7fffff) << 1) | 0x1000000;
        xe = (x >> 23) & 0xff;
        xa = xs ? -(int32_t)m : (int32_t)m;
    } else {
        /* FLT: the integer's low 24 bits as the significand, exponent 150 (2^23 scale). */
        xe = 150;
        xa = (int32_t)((x & 0x00ffffff) << 8) >> 7;
    }
    {
        uint32_t m = (y & 0x7fffff) << 1;
        if (!u && !v) {
            m |= 0x1000000;
        }
        ya = ys ? -(int32_t)m : (int32_t)m;
    }

    /* Align the smaller operand to the larger exponent. */
    if (ye > xe) {
        e0 = ye;
        xa = sar(xa, ye - xe);
    } else {
        e0 = xe;
        ya = sar(ya, xe - ye);
    }

    /* 27-bit sum: the sign bit replicated into bits 26 and 25 above the 25 significand bits. */
    sum = (((xs << 26) | (xs << 25) | ((uint32_t)xa & 0x1ffffff)) +
           ((ys << 26) | (ys << 25) | ((uint32_t)ya & 0x1ffffff))) & 0x7ffffff;
    if (v) {
        /* FLOOR: the aligned sum as an integer. */
        return (uint32_t)((int32_t)(sum << 5) >> 6);
    }

    /* Magnitude, rounded by adding one at the guard bit. */
    mag = ((sum & 0x4000000 ? (0u - sum) : sum) + 1) & 0x7ffffff;
    e1 = e0 + 1;
    t = mag >> 1;
    if (mag & 0x3fffffc) {
        while (!(t & 0x1000000)) {
            t <<= 1;
            e1--;
        }
    } else {
        t <<= 24;
        e1 -= 24;
    }

    if ((x & 0x7fffffff) == 0) {
        return u ? 0 : ((y & 0x7fffffff) == 0 ? 0 : y);
    }
    if ((y & 0x7fffffff) == 0) {
        return x;
    }
    if ((t & 0x1ffffff) == 0 || (e1 & 0x100)) {
        return 0;               /* a zero sum or an underflow is +0 in this revision */
    }
    return ((sum & 0x4000000) << 5) | ((e1 & 0xff) << 23) | ((t >> 1) & 0x7fffff);
}

uint32_t risc5_fp_mul(uint32_t x, uint32_t y)
{
    uint32_t sign = (x ^ y) & 0x80000000u;
    uint32_t xe = (x >> 23) & 0xff, ye = (y >> 23) & 0xff;
    uint64_t p = (uint64_t)((x & 0x7fffff) | 0x800000) * ((y & 0x7fffff) | 0x800000);
    uint32_t e1 = (xe + ye - 127) & 0x3ff;
    uint32_t z;

    if (p & (1ull << 47)) {
        e1 = (e1 + 1) & 0x3ff;
        z = (uint32_t)(((p >> 23) + 1) & 0xffffff);
    } else {
        z = (uint32_t)(((p >> 22) + 1) & 0xffffff);
    }
    if (xe == 0 || ye == 0) {
        return 0;
    }
    if (!(e1 & 0x100)) {
        return sign | ((e1 & 0xff) << 23) | (z >> 1);
    }
    if (!(e1 & 0x80)) {
        return sign | (0xffu << 23) | (z >> 1);   /* overflow */
    }
    return 0;                                     /* underflow */
}

uint32_t risc5_fp_div(uint32_t x, uint32_t y)
{
    uint32_t sign = (x ^ y) & 0x80000000u;
    uint32_t xe = (x >> 23) & 0xff, ye = (y >> 23) & 0xff;
    uint64_t xm = (x & 0x7fffff) | 0x800000, ym = (y & 0x7fffff) | 0x800000;
    /* 26-bit quotient: one bit more than the result needs, for rounding. */
    uint32_t q = (uint32_t)((xm << 25) / ym);
    uint32_t e1 = (xe - ye + 126) & 0x3ff;
    uint32_t z, zr;

    if (q & (1u << 25)) {
        e1 = (e1 + 1) & 0x3ff;
        z = q >> 1;
    } else {
        z = q;
    }
    /* Round: add one at the bit below the 24-bit significand (not on overflow, see below). */
    zr = ((z + 1) >> 1) & 0xffffff;
    if (xe == 0) {
        return 0;
    }
    if (ye == 0) {
        return sign | (0xffu << 23);              /* x / 0 */
    }
    if (!(e1 & 0x100)) {
        return sign | ((e1 & 0xff) << 23) | (zr & 0x7fffff);
    }
    if (!(e1 & 0x80)) {
        /* Overflow: the saturated result carries the truncated significand. */
        return sign | (0xffu << 23) | ((z >> 1) & 0x7fffff);
    }
    return 0;
}

uint32_t risc5_serial_div(uint32_t x, uint32_t y, bool is_signed, uint32_t *rem)
{
    bool neg = is_signed && (int32_t)x < 0;
    uint64_t rq = neg ? (uint32_t)(0u - x) : x;   /* remainder:quotient register */
    int i;

    for (i = 0; i < 32; i++) {
        uint32_t w0 = (uint32_t)(rq >> 31);
        uint32_t w1 = w0 - y;
        if ((int32_t)w1 < 0) {
            rq = ((uint64_t)w0 << 32) | ((uint32_t)rq << 1);
        } else {
            rq = ((uint64_t)w1 << 32) | ((uint32_t)rq << 1) | 1;
        }
    }
    {
        uint32_t q = (uint32_t)rq, r = (uint32_t)(rq >> 32);
        if (neg) {
            q = 0u - q;
            if (r != 0) {
                q -= 1;
                r = y - r;
            }
        }
        *rem = r;
        return q;
    }
}
