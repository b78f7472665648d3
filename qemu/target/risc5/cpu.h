/*
 * RISC5 (Niklaus Wirth's Project Oberon processor) CPU state.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef RISC5_CPU_H
#define RISC5_CPU_H

#include "cpu-qom.h"
#include "exec/cpu-defs.h"

#define RISC5_CPU_TYPE_SUFFIX "-" TYPE_RISC5_CPU
#define RISC5_CPU_TYPE_NAME(model) model RISC5_CPU_TYPE_SUFFIX
#define CPU_RESOLVING_TYPE TYPE_RISC5_CPU

#define TCG_GUEST_DEFAULT_MO 0

/* MMU indexes: fetches and data accesses map the top page differently (ROM vs devices). */
#define RISC5_MMU_FETCH 0
#define RISC5_MMU_DATA 1

#define RISC5_ROM_START 0xfffff800u   /* boot ROM window, instruction fetches only */
#define RISC5_ROM_BYTES 0x800u        /* 512 words */
#define RISC5_TOP_PAGE 0xfffff000u    /* the page holding the ROM window and the devices */
#define RISC5_ROM_PHYS 0x1fffff000ull /* where fetches from the top page land physically */

#define EXCP_RISC5_VOID 0x100         /* fetch outside RAM and ROM: the board resets */

/* TB flags. */
#define RISC5_TBFLAG_TRACE 1   /* call the trace helper before every instruction */
#define RISC5_TBFLAG_COUNT 2   /* count retired instructions exactly (deterministic clock) */

typedef struct CPUArchState {
    uint32_t r[16];
    uint32_t pc;       /* byte address of the next instruction */
    uint32_t h;        /* high word of a product, remainder of a division */
    uint32_t nz;       /* last value written to a register: N = bit 31, Z = (value == 0) */
    uint32_t c;        /* carry (0/1), set by ADD/SUB only */
    uint32_t v;        /* overflow (0/1), set by ADD/SUB only */

    /* Not architectural: set by the board. */
    uint32_t ram_bytes;   /* fetches below this address come from RAM */
    uint32_t void_fetches;
    bool count_insns;     /* keep insns exact (the board's deterministic clock needs it) */
    uint64_t insns;       /* instructions started since power-on, when count_insns */
    void *trace;          /* RISC5Trace *, when instruction tracing is on */
} CPURISC5State;

struct ArchCPU {
    CPUState parent_obj;
    CPUNegativeOffsetState neg;
    CPURISC5State env;
};

static inline int cpu_mmu_index(CPURISC5State *env, bool ifetch)
{
    return ifetch ? RISC5_MMU_FETCH : RISC5_MMU_DATA;
}

static inline void cpu_get_tb_cpu_state(CPURISC5State *env, target_ulong *pc,
                                        target_ulong *cs_base, uint32_t *flags)
{
    *pc = env->pc;
    *cs_base = 0;
    *flags = (env->trace ? RISC5_TBFLAG_TRACE : 0) | (env->count_insns ? RISC5_TBFLAG_COUNT : 0);
}

/* The flags word read by MOV with u=1, v=1: N Z C V in bits 31..28, 0xD0 below (as the board). */
static inline uint32_t risc5_flags_word(const CPURISC5State *env)
{
    uint32_t n = env->nz >> 31, z = env->nz == 0;
    return (n << 31) | (z << 30) | (env->c << 29) | (env->v << 28) | 0xd0;
}

void risc5_tcg_init(void);
bool risc5_cpu_tlb_fill(CPUState *cs, vaddr address, int size,
                        MMUAccessType access_type, int mmu_idx,
                        bool probe, uintptr_t retaddr);
void risc5_cpu_do_interrupt(CPUState *cs);
bool risc5_cpu_exec_interrupt(CPUState *cs, int interrupt_request);
hwaddr risc5_cpu_get_phys_page_debug(CPUState *cs, vaddr addr);

/* Instruction tracing (qemu/docs: -machine oberon,trace=FILE). */
void risc5_trace_open(CPURISC5State *env, const char *path, uint64_t limit, Error **errp);

#include "exec/cpu-all.h"

#endif
