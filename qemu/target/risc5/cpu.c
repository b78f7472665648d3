/*
 * RISC5 CPU (Project Oberon): QOM type, reset, state dump.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/qemu-print.h"
#include "cpu.h"
#include "exec/exec-all.h"
#include "migration/vmstate.h"
#include "hw/core/tcg-cpu-ops.h"
#include "hw/core/sysemu-cpu-ops.h"

static void risc5_cpu_set_pc(CPUState *cs, vaddr value)
{
    RISC5_CPU(cs)->env.pc = value;
}

static vaddr risc5_cpu_get_pc(CPUState *cs)
{
    return RISC5_CPU(cs)->env.pc;
}

static void risc5_cpu_synchronize_from_tb(CPUState *cs, const TranslationBlock *tb)
{
    RISC5_CPU(cs)->env.pc = tb_pc(tb);
}

static void risc5_restore_state_to_opc(CPUState *cs, const TranslationBlock *tb,
                                       const uint64_t *data)
{
    RISC5_CPU(cs)->env.pc = data[0];
}

static bool risc5_cpu_has_work(CPUState *cs)
{
    return cs->interrupt_request & CPU_INTERRUPT_HARD;
}

/*
 * Reset as the hardware's reset does: only the PC changes (to the ROM).  Registers and RAM
 * keep their contents, and the boot ROM tells a warm start from a cold one by LNK (R15).
 */
static void risc5_cpu_reset(DeviceState *dev)
{
    RISC5CPU *cpu = RISC5_CPU(dev);
    RISC5CPUClass *rcc = RISC5_CPU_GET_CLASS(cpu);

    rcc->parent_reset(dev);
    cpu->env.pc = RISC5_ROM_START;
}

static void risc5_cpu_realizefn(DeviceState *dev, Error **errp)
{
    CPUState *cs = CPU(dev);
    RISC5CPUClass *rcc = RISC5_CPU_GET_CLASS(dev);
    Error *local_err = NULL;

    cpu_exec_realizefn(cs, &local_err);
    if (local_err) {
        error_propagate(errp, local_err);
        return;
    }
    qemu_init_vcpu(cs);
    cpu_reset(cs);
    rcc->parent_realize(dev, errp);
}

static void risc5_cpu_initfn(Object *obj)
{
    RISC5CPU *cpu = RISC5_CPU(obj);
    cpu_set_cpustate_pointers(cpu);
    cpu->env.ram_bytes = 0;
    cpu->env.nz = 1;   /* power-on: N and Z clear, like the other registers' zero state */
}

static ObjectClass *risc5_cpu_class_by_name(const char *model)
{
    ObjectClass *oc = object_class_by_name(model);
    if (!oc) {
        g_autofree char *name = g_strdup_printf(RISC5_CPU_TYPE_NAME("%s"), model);
        oc = object_class_by_name(name);
    }
    if (oc && (!object_class_dynamic_cast(oc, TYPE_RISC5_CPU) || object_class_is_abstract(oc))) {
        oc = NULL;
    }
    return oc;
}

static void risc5_cpu_dump_state(CPUState *cs, FILE *f, int flags)
{
    CPURISC5State *env = cs->env_ptr;
    int i;

    qemu_fprintf(f, "PC=%08x H=%08x N=%u Z=%u C=%u V=%u\n", env->pc, env->h, env->nz >> 31,
                 env->nz == 0, env->c, env->v);
    for (i = 0; i < 16; i++) {
        qemu_fprintf(f, "R%02d=%08x%c", i, env->r[i], (i % 4) == 3 ? '\n' : ' ');
    }
}

/* The CPU state cannot migrate with its board (devices hold host state), so say so. */
static const VMStateDescription vmstate_risc5_cpu = {
    .name = "risc5-cpu",
    .unmigratable = 1,
};

static const struct SysemuCPUOps risc5_sysemu_ops = {
    .get_phys_page_debug = risc5_cpu_get_phys_page_debug,
};

static const struct TCGCPUOps risc5_tcg_ops = {
    .initialize = risc5_tcg_init,
    .synchronize_from_tb = risc5_cpu_synchronize_from_tb,
    .restore_state_to_opc = risc5_restore_state_to_opc,
    .cpu_exec_interrupt = risc5_cpu_exec_interrupt,
    .tlb_fill = risc5_cpu_tlb_fill,
    .do_interrupt = risc5_cpu_do_interrupt,
};

static void risc5_cpu_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    CPUClass *cc = CPU_CLASS(oc);
    RISC5CPUClass *rcc = RISC5_CPU_CLASS(oc);

    device_class_set_parent_realize(dc, risc5_cpu_realizefn, &rcc->parent_realize);
    device_class_set_parent_reset(dc, risc5_cpu_reset, &rcc->parent_reset);
    cc->class_by_name = risc5_cpu_class_by_name;
    cc->has_work = risc5_cpu_has_work;
    cc->dump_state = risc5_cpu_dump_state;
    cc->set_pc = risc5_cpu_set_pc;
    cc->get_pc = risc5_cpu_get_pc;
    dc->vmsd = &vmstate_risc5_cpu;
    cc->sysemu_ops = &risc5_sysemu_ops;
    cc->tcg_ops = &risc5_tcg_ops;
}

static const TypeInfo risc5_cpu_types[] = {
    {
        .name = TYPE_RISC5_CPU,
        .parent = TYPE_CPU,
        .instance_size = sizeof(RISC5CPU),
        .instance_init = risc5_cpu_initfn,
        .class_size = sizeof(RISC5CPUClass),
        .class_init = risc5_cpu_class_init,
        .abstract = true,
    },
    {
        /* Wirth's 2016 revision: FAD gives +0 for a zero sum, FDV rounds. */
        .name = RISC5_CPU_TYPE_NAME("risc5-2016"),
        .parent = TYPE_RISC5_CPU,
    },
};

DEFINE_TYPES(risc5_cpu_types)
