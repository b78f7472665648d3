/*
 * RISC5 (Project Oberon) CPU parameters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RISC5_CPU_PARAM_H
#define RISC5_CPU_PARAM_H

#define TARGET_LONG_BITS 32
#define TARGET_PAGE_BITS 12
/*
 * Data accesses see a 32-bit space (RAM from 0, devices in the top page); instruction
 * fetches from the boot ROM window are mapped to a second copy of the top page above 4 GiB,
 * which is why the physical space has one bit more than the virtual one.
 */
#define TARGET_PHYS_ADDR_SPACE_BITS 33
#define TARGET_VIRT_ADDR_SPACE_BITS 32
#define NB_MMU_MODES 2

#endif
