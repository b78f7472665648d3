/*
 * RISC5 floating-point unit and serial divider (Wirth's 2016 hardware revision).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RISC5_FPU_H
#define RISC5_FPU_H

#include <stdint.h>
#include <stdbool.h>

/* FAD; u = FLT (x is an integer), v = FLOOR (result is an integer). FSB flips y's sign first. */
uint32_t risc5_fp_add(uint32_t x, uint32_t y, bool u, bool v);
uint32_t risc5_fp_mul(uint32_t x, uint32_t y);
uint32_t risc5_fp_div(uint32_t x, uint32_t y);
/* The bit-serial divider used for divisors <= 0: quotient returned, remainder in *rem. */
uint32_t risc5_serial_div(uint32_t x, uint32_t y, bool is_signed, uint32_t *rem);

#endif
