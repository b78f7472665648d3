/*
 * RISC5 helpers: division, floating point, the fetch/data address map, instruction trace.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qapi/error.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "exec/helper-proto.h"
#include "fpu.h"

uint32_t helper_fad(uint32_t x, uint32_t y, uint32_t u, uint32_t v)
{
    return risc5_fp_add(x, y, u, v);
}

uint32_t helper_fml(uint32_t x, uint32_t y)
{
    return risc5_fp_mul(x, y);
}

uint32_t helper_fdv(uint32_t x, uint32_t y)
{
    return risc5_fp_div(x, y);
}

/*
 * DIV: a positive divisor gives floor division (u=0, remainder never negative) or unsigned
 * division (u=1); a divisor <= 0 goes through the model of the hardware's serial divider,
 * signed when u=0 as RISC5.v wires it, so x/0 yields the hardware's values instead of a trap.
 */
uint32_t helper_div(CPURISC5State *env, uint32_t x, uint32_t y, uint32_t u)
{
    int32_t sy = (int32_t)y;

    if (sy > 0) {
        if (!u) {
            int32_t sx = (int32_t)x;
            int32_t q = sx / sy, r = sx % sy;
            if (r < 0) {
                q -= 1;
                r += sy;
            }
            env->h = (uint32_t)r;
            return (uint32_t)q;
        }
        env->h = x % y;
        return x / y;
    }
    return risc5_serial_div(x, y, !u, &env->h);
}

/* A fetch outside RAM and the ROM window: as on the board, the machine resets to the ROM. */
void helper_void_fetch(CPURISC5State *env, uint32_t pc)
{
    CPUState *cs = env_cpu(env);
    env->pc = pc;
    cs->exception_index = EXCP_RISC5_VOID;
    cpu_loop_exit(cs);
}

void risc5_cpu_do_interrupt(CPUState *cs)
{
    CPURISC5State *env = cs->env_ptr;

    if (cs->exception_index == EXCP_RISC5_VOID) {
        qemu_log_mask(LOG_GUEST_ERROR, "risc5: branched into the void at %08x, reset\n",
                      env->pc);
        env->void_fetches++;
        env->pc = RISC5_ROM_START;
    }
    cs->exception_index = -1;
}

/* The board wakes a halted (idle) CPU with CPU_INTERRUPT_HARD; there are no interrupt vectors. */
bool risc5_cpu_exec_interrupt(CPUState *cs, int interrupt_request)
{
    if (interrupt_request & CPU_INTERRUPT_HARD) {
        cpu_reset_interrupt(cs, CPU_INTERRUPT_HARD);
    }
    return false;
}

hwaddr risc5_cpu_get_phys_page_debug(CPUState *cs, vaddr addr)
{
    return addr & TARGET_PAGE_MASK;
}

/*
 * No MMU, but two views of the top page: fetches see the boot ROM window there (mapped to a
 * copy above 4 GiB), data accesses see the device registers.  Fetches elsewhere outside RAM
 * reset the machine ("branched into the void").
 */
bool risc5_cpu_tlb_fill(CPUState *cs, vaddr address, int size,
                        MMUAccessType access_type, int mmu_idx,
                        bool probe, uintptr_t retaddr)
{
    CPURISC5State *env = cs->env_ptr;
    vaddr page = address & TARGET_PAGE_MASK;

    if (access_type == MMU_INST_FETCH) {
        if (page == RISC5_TOP_PAGE) {
            tlb_set_page(cs, page, RISC5_ROM_PHYS, PAGE_READ | PAGE_EXEC, mmu_idx,
                         TARGET_PAGE_SIZE);
            return true;
        }
        if (address < env->ram_bytes) {
            tlb_set_page(cs, page, page, PAGE_READ | PAGE_EXEC, mmu_idx, TARGET_PAGE_SIZE);
            return true;
        }
        if (probe) {
            return false;
        }
        env->pc = (uint32_t)address;
        cs->exception_index = EXCP_RISC5_VOID;
        cpu_loop_exit_restore(cs, retaddr);
    }
    tlb_set_page(cs, page, page, PAGE_READ | PAGE_WRITE, mmu_idx, TARGET_PAGE_SIZE);
    return true;
}

/*
 * Instruction trace: before each instruction, one 8-byte record (little-endian) of its byte
 * address and an FNV-1a hash of the architectural state (PC, R0..R15, H, NZCV).  Our
 * TypeScript emulator computes the same records, so two traces compare record by record.
 */
typedef struct RISC5Trace {
    FILE *f;
    uint64_t written;
    uint64_t limit;
} RISC5Trace;

static uint32_t fnv_word(uint32_t h, uint32_t w)
{
    int i;
    for (i = 0; i < 4; i++) {
        h ^= (w >> (8 * i)) & 0xff;
        h *= 16777619u;
    }
    return h;
}

uint32_t risc5_state_hash(const CPURISC5State *env, uint32_t pc);
uint32_t risc5_state_hash(const CPURISC5State *env, uint32_t pc)
{
    uint32_t h = 2166136261u;
    uint32_t nzcv = ((env->nz >> 31) << 3) | ((env->nz == 0) << 2) | (env->c << 1) | env->v;
    int i;

    h = fnv_word(h, pc);
    for (i = 0; i < 16; i++) {
        h = fnv_word(h, env->r[i]);
    }
    h = fnv_word(h, env->h);
    return fnv_word(h, nzcv);
}

void helper_trace(CPURISC5State *env, uint32_t pc)
{
    RISC5Trace *t = env->trace;
    uint32_t rec[2];

    if (!t || t->written >= t->limit) {
        return;
    }
    rec[0] = cpu_to_le32(pc);
    rec[1] = cpu_to_le32(risc5_state_hash(env, pc));
    if (fwrite(rec, sizeof rec, 1, t->f) != 1) {
        t->limit = t->written;   /* disk full: stop tracing rather than abort the machine */
    }
    t->written++;
    if (t->written == t->limit) {
        fflush(t->f);
    }
}

void risc5_trace_open(CPURISC5State *env, const char *path, uint64_t limit, Error **errp)
{
    RISC5Trace *t = g_new0(RISC5Trace, 1);

    t->f = fopen(path, "wb");
    if (!t->f) {
        error_setg_errno(errp, errno, "risc5: cannot open trace file '%s'", path);
        g_free(t);
        return;
    }
    setvbuf(t->f, NULL, _IOFBF, 1 << 20);
    t->limit = limit ? limit : UINT64_MAX;
    env->trace = t;
}
