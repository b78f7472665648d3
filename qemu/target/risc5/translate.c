/*
 * RISC5 to TCG translation.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "cpu.h"
#include "tcg/tcg-op.h"
#include "exec/exec-all.h"
#include "exec/helper-proto.h"
#include "exec/helper-gen.h"
#include "exec/translator.h"
#include "exec/log.h"
#include "exec/gen-icount.h"

#define DISAS_JUMP DISAS_TARGET_0   /* the PC global holds the next address */

typedef struct DisasContext {
    DisasContextBase base;
    uint32_t pc;          /* address of the instruction being translated */
    uint32_t flags;
} DisasContext;

static TCGv_i32 cpu_r[16];
static TCGv_i32 cpu_pc, cpu_h, cpu_nz, cpu_c, cpu_v;
static TCGv_i64 cpu_insns;

void risc5_tcg_init(void)
{
    static const char names[16][4] = {
        "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7",
        "r8", "r9", "r10", "r11", "mt", "sb", "sp", "lnk",
    };
    int i;

    for (i = 0; i < 16; i++) {
        cpu_r[i] = tcg_global_mem_new_i32(cpu_env, offsetof(CPURISC5State, r[i]), names[i]);
    }
    cpu_pc = tcg_global_mem_new_i32(cpu_env, offsetof(CPURISC5State, pc), "pc");
    cpu_h = tcg_global_mem_new_i32(cpu_env, offsetof(CPURISC5State, h), "h");
    cpu_nz = tcg_global_mem_new_i32(cpu_env, offsetof(CPURISC5State, nz), "nz");
    cpu_c = tcg_global_mem_new_i32(cpu_env, offsetof(CPURISC5State, c), "c");
    cpu_v = tcg_global_mem_new_i32(cpu_env, offsetof(CPURISC5State, v), "v");
    cpu_insns = tcg_global_mem_new_i64(cpu_env, offsetof(CPURISC5State, insns), "insns");
}

#include "decode-insn.c.inc"

/* Every register write sets N and Z from the value, loads and links included. */
static void set_reg(int a, TCGv_i32 value)
{
    tcg_gen_mov_i32(cpu_r[a], value);
    tcg_gen_mov_i32(cpu_nz, value);
}

static void gen_alu(DisasContext *ctx, int a, int b, int op, bool u, bool v, bool q,
                    TCGv_i32 y)
{
    TCGv_i32 x = cpu_r[b];
    TCGv_i32 r = tcg_temp_new_i32();

    switch (op) {
    case 0: /* MOV, MOV' (imm << 16), read H, read flags */
        if (!u) {
            tcg_gen_mov_i32(r, y);
        } else if (q) {
            tcg_gen_shli_i32(r, y, 16);
        } else if (!v) {
            tcg_gen_mov_i32(r, cpu_h);
        } else {
            TCGv_i32 t = tcg_temp_new_i32();
            /* N Z C V in bits 31..28, and the board's constant 0xD0 below. */
            tcg_gen_andi_i32(r, cpu_nz, 0x80000000u);
            tcg_gen_setcondi_i32(TCG_COND_EQ, t, cpu_nz, 0);
            tcg_gen_shli_i32(t, t, 30);
            tcg_gen_or_i32(r, r, t);
            tcg_gen_shli_i32(t, cpu_c, 29);
            tcg_gen_or_i32(r, r, t);
            tcg_gen_shli_i32(t, cpu_v, 28);
            tcg_gen_or_i32(r, r, t);
            tcg_gen_ori_i32(r, r, 0xd0);
            tcg_temp_free_i32(t);
        }
        break;
    case 1: { /* LSL */
        TCGv_i32 s = tcg_temp_new_i32();
        tcg_gen_andi_i32(s, y, 31);
        tcg_gen_shl_i32(r, x, s);
        tcg_temp_free_i32(s);
        break;
    }
    case 2: { /* ASR */
        TCGv_i32 s = tcg_temp_new_i32();
        tcg_gen_andi_i32(s, y, 31);
        tcg_gen_sar_i32(r, x, s);
        tcg_temp_free_i32(s);
        break;
    }
    case 3: { /* ROR */
        TCGv_i32 s = tcg_temp_new_i32();
        tcg_gen_andi_i32(s, y, 31);
        tcg_gen_rotr_i32(r, x, s);
        tcg_temp_free_i32(s);
        break;
    }
    case 4:
        tcg_gen_and_i32(r, x, y);
        break;
    case 5: /* ANN */
        tcg_gen_andc_i32(r, x, y);
        break;
    case 6:
        tcg_gen_or_i32(r, x, y);
        break;
    case 7:
        tcg_gen_xor_i32(r, x, y);
        break;
    case 8:   /* ADD, ADC (u) */
    case 9: { /* SUB, SBC (u) */
        TCGv_i64 wx = tcg_temp_new_i64(), wy = tcg_temp_new_i64(), wr = tcg_temp_new_i64();
        TCGv_i32 t = tcg_temp_new_i32();
        tcg_gen_extu_i32_i64(wx, x);
        tcg_gen_extu_i32_i64(wy, y);
        if (op == 8) {
            tcg_gen_add_i64(wr, wx, wy);
        } else {
            tcg_gen_sub_i64(wr, wx, wy);
        }
        if (u) {
            TCGv_i64 wc = tcg_temp_new_i64();
            tcg_gen_extu_i32_i64(wc, cpu_c);
            if (op == 8) {
                tcg_gen_add_i64(wr, wr, wc);
            } else {
                tcg_gen_sub_i64(wr, wr, wc);
            }
            tcg_temp_free_i64(wc);
        }
        tcg_gen_extrl_i64_i32(r, wr);
        /* Carry (ADD) or borrow (SUB): bit 32 of the 64-bit result. */
        tcg_gen_extrh_i64_i32(t, wr);
        tcg_gen_andi_i32(cpu_c, t, 1);
        /* Overflow: ADD (r^x)&(r^y), SUB (x^y)&(r^x), sign bit. */
        if (op == 8) {
            TCGv_i32 t2 = tcg_temp_new_i32();
            tcg_gen_xor_i32(t, r, x);
            tcg_gen_xor_i32(t2, r, y);
            tcg_gen_and_i32(t, t, t2);
            tcg_temp_free_i32(t2);
        } else {
            TCGv_i32 t2 = tcg_temp_new_i32();
            tcg_gen_xor_i32(t, x, y);
            tcg_gen_xor_i32(t2, r, x);
            tcg_gen_and_i32(t, t, t2);
            tcg_temp_free_i32(t2);
        }
        tcg_gen_shri_i32(cpu_v, t, 31);
        tcg_temp_free_i32(t);
        tcg_temp_free_i64(wx);
        tcg_temp_free_i64(wy);
        tcg_temp_free_i64(wr);
        break;
    }
    case 10: /* MUL (signed), MUL' (u: unsigned); high word to H */
        if (u) {
            tcg_gen_mulu2_i32(r, cpu_h, x, y);
        } else {
            tcg_gen_muls2_i32(r, cpu_h, x, y);
        }
        break;
    case 11: /* DIV: quotient, remainder to H (in the helper) */
        gen_helper_div(r, cpu_env, x, y, tcg_constant_i32(u));
        break;
    case 12: /* FAD (u: FLT, v: FLOOR) */
        gen_helper_fad(r, x, y, tcg_constant_i32(u), tcg_constant_i32(v));
        break;
    case 13: { /* FSB: FAD with y's sign flipped */
        TCGv_i32 ny = tcg_temp_new_i32();
        tcg_gen_xori_i32(ny, y, 0x80000000u);
        gen_helper_fad(r, x, ny, tcg_constant_i32(u), tcg_constant_i32(v));
        tcg_temp_free_i32(ny);
        break;
    }
    case 14:
        gen_helper_fml(r, x, y);
        break;
    default:
        gen_helper_fdv(r, x, y);
        break;
    }
    set_reg(a, r);
    tcg_temp_free_i32(r);
}

static bool trans_REG(DisasContext *ctx, arg_REG *a)
{
    gen_alu(ctx, a->a, a->b, a->op, a->u, a->v, false, cpu_r[a->c]);
    return true;
}

static bool trans_REGI(DisasContext *ctx, arg_REGI *a)
{
    uint32_t imm = a->v ? (0xffff0000u | a->imm) : (uint32_t)a->imm;
    gen_alu(ctx, a->a, a->b, a->op, a->u, a->v, true, tcg_constant_i32(imm));
    return true;
}

/* Word accesses ignore the low two address bits; bytes are little-endian within a word. */
static TCGv_i32 gen_address(arg_mem *a)
{
    TCGv_i32 addr = tcg_temp_new_i32();
    tcg_gen_addi_i32(addr, cpu_r[a->b], a->off);
    if (!a->v) {
        tcg_gen_andi_i32(addr, addr, ~3u);
    }
    return addr;
}

static bool trans_LD(DisasContext *ctx, arg_LD *a)
{
    TCGv_i32 addr = gen_address(a);
    TCGv_i32 val = tcg_temp_new_i32();
    tcg_gen_qemu_ld_i32(val, addr, RISC5_MMU_DATA, a->v ? MO_UB : MO_LEUL);
    set_reg(a->a, val);
    tcg_temp_free_i32(val);
    tcg_temp_free_i32(addr);
    return true;
}

static bool trans_ST(DisasContext *ctx, arg_ST *a)
{
    TCGv_i32 addr = gen_address(a);
    tcg_gen_qemu_st_i32(cpu_r[a->a], addr, RISC5_MMU_DATA, a->v ? MO_UB : MO_LEUL);
    tcg_temp_free_i32(addr);
    return true;
}

/* The branch condition (bits 26..24) as a TCG condition on a 0/1 value. */
static void gen_cond(TCGv_i32 t, int cond)
{
    TCGv_i32 n = tcg_temp_new_i32(), z = tcg_temp_new_i32();
    tcg_gen_shri_i32(n, cpu_nz, 31);
    tcg_gen_setcondi_i32(TCG_COND_EQ, z, cpu_nz, 0);
    switch (cond & 7) {
    case 0: /* MI */
        tcg_gen_mov_i32(t, n);
        break;
    case 1: /* EQ */
        tcg_gen_mov_i32(t, z);
        break;
    case 2: /* CS */
        tcg_gen_mov_i32(t, cpu_c);
        break;
    case 3: /* VS */
        tcg_gen_mov_i32(t, cpu_v);
        break;
    case 4: /* LS: C or Z */
        tcg_gen_or_i32(t, cpu_c, z);
        break;
    case 5: /* LT: N != V */
        tcg_gen_xor_i32(t, n, cpu_v);
        break;
    case 6: /* LE: (N != V) or Z */
        tcg_gen_xor_i32(t, n, cpu_v);
        tcg_gen_or_i32(t, t, z);
        break;
    default:
        tcg_gen_movi_i32(t, 1);
        break;
    }
    if (cond & 8) {
        tcg_gen_xori_i32(t, t, 1);
    }
    tcg_temp_free_i32(n);
    tcg_temp_free_i32(z);
}

static void gen_goto(DisasContext *ctx, int n, uint32_t dest)
{
    if (translator_use_goto_tb(&ctx->base, dest)) {
        tcg_gen_goto_tb(n);
        tcg_gen_movi_i32(cpu_pc, dest);
        tcg_gen_exit_tb(ctx->base.tb, n);
    } else {
        tcg_gen_movi_i32(cpu_pc, dest);
        tcg_gen_lookup_and_goto_ptr();
    }
}

/*
 * Both branch forms: the target is R[c] (u=0, low two bits dropped) or PC+1+disp words (u=1);
 * v=1 links (R15 := the next instruction's address, which also sets N and Z) when taken.
 */
static bool gen_branch(DisasContext *ctx, int cond, bool link, int c, bool relative,
                       int32_t disp)
{
    uint32_t next = ctx->pc + 4;
    uint32_t dest = next + (uint32_t)disp * 4;
    bool always = (cond & 7) == 7 && !(cond & 8);
    bool never = (cond & 7) == 7 && (cond & 8);
    TCGLabel *skip = NULL;
    TCGv_i32 target = NULL;

    if (never) {
        return true;   /* a no-op; translation simply continues */
    }
    if (!always) {
        TCGv_i32 t = tcg_temp_new_i32();
        gen_cond(t, cond);
        skip = gen_new_label();
        tcg_gen_brcondi_i32(TCG_COND_EQ, t, 0, skip);
        tcg_temp_free_i32(t);
    }
    if (!relative) {
        target = tcg_temp_new_i32();
        tcg_gen_andi_i32(target, cpu_r[c], ~3u);   /* read before the link overwrites R15 */
    }
    if (link) {
        set_reg(15, tcg_constant_i32(next));
    }
    if (relative) {
        gen_goto(ctx, 0, dest);
    } else {
        tcg_gen_mov_i32(cpu_pc, target);
        tcg_temp_free_i32(target);
        tcg_gen_lookup_and_goto_ptr();
    }
    if (skip) {
        gen_set_label(skip);
        gen_goto(ctx, 1, next);
    }
    ctx->base.is_jmp = DISAS_NORETURN;
    return true;
}

static bool trans_BR(DisasContext *ctx, arg_BR *a)
{
    return gen_branch(ctx, a->cond, a->v, a->c, false, 0);
}

static bool trans_BRI(DisasContext *ctx, arg_BRI *a)
{
    return gen_branch(ctx, a->cond, a->v, 0, true, a->disp);
}

static void risc5_tr_init_disas_context(DisasContextBase *db, CPUState *cs)
{
    DisasContext *ctx = container_of(db, DisasContext, base);
    ctx->flags = ctx->base.tb->flags;
}

static void risc5_tr_tb_start(DisasContextBase *db, CPUState *cs)
{
}

static void risc5_tr_insn_start(DisasContextBase *db, CPUState *cs)
{
    DisasContext *ctx = container_of(db, DisasContext, base);
    tcg_gen_insn_start(ctx->base.pc_next);
}

static void risc5_tr_translate_insn(DisasContextBase *db, CPUState *cs)
{
    DisasContext *ctx = container_of(db, DisasContext, base);
    CPURISC5State *env = cs->env_ptr;
    uint32_t pc = ctx->base.pc_next;
    uint32_t insn;

    ctx->pc = pc;
    ctx->base.pc_next = pc + 4;
    if (pc >= env->ram_bytes && pc < RISC5_ROM_START) {
        /* Between RAM and the ROM window, in the top page: the board resets. */
        gen_helper_void_fetch(cpu_env, tcg_constant_i32(pc));
        ctx->base.is_jmp = DISAS_NORETURN;
        return;
    }
    insn = translator_ldl(env, &ctx->base, pc);
    if (ctx->flags & RISC5_TBFLAG_TRACE) {
        gen_helper_trace(cpu_env, tcg_constant_i32(pc));
    }
    if (ctx->flags & RISC5_TBFLAG_COUNT) {
        tcg_gen_addi_i64(cpu_insns, cpu_insns, 1);
    }
    if (!decode_insn(ctx, insn)) {
        /* Every 32-bit pattern is some RISC5 instruction; the decoder covers all four formats. */
        g_assert_not_reached();
    }
    /* End the TB at a page end: the next page may be outside RAM (a fetch there resets). */
    if (ctx->base.is_jmp == DISAS_NEXT && (ctx->base.pc_next & ~TARGET_PAGE_MASK) == 0) {
        ctx->base.is_jmp = DISAS_TOO_MANY;
    }
}

static void risc5_tr_tb_stop(DisasContextBase *db, CPUState *cs)
{
    DisasContext *ctx = container_of(db, DisasContext, base);

    switch (ctx->base.is_jmp) {
    case DISAS_NORETURN:
        break;
    case DISAS_NEXT:
    case DISAS_TOO_MANY:
        gen_goto(ctx, 0, ctx->base.pc_next);
        break;
    case DISAS_JUMP:
        tcg_gen_lookup_and_goto_ptr();
        break;
    default:
        g_assert_not_reached();
    }
}

static void risc5_tr_disas_log(const DisasContextBase *db, CPUState *cs, FILE *logfile)
{
    fprintf(logfile, "IN: %s\n", lookup_symbol(db->pc_first));
    target_disas(logfile, cs, db->pc_first, db->tb->size);
}

static const TranslatorOps risc5_tr_ops = {
    .init_disas_context = risc5_tr_init_disas_context,
    .tb_start = risc5_tr_tb_start,
    .insn_start = risc5_tr_insn_start,
    .translate_insn = risc5_tr_translate_insn,
    .tb_stop = risc5_tr_tb_stop,
    .disas_log = risc5_tr_disas_log,
};

void gen_intermediate_code(CPUState *cs, TranslationBlock *tb, int max_insns,
                           target_ulong pc, void *host_pc)
{
    DisasContext ctx = { };
    translator_loop(cs, tb, max_insns, pc, host_pc, &risc5_tr_ops, &ctx.base);
}
