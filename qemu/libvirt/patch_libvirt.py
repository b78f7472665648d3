#!/usr/bin/env python3
# Teach libvirt the RISC5 architecture and its "oberon" machine (no PCI), for KubeVirt's
# virt-launcher to define and start qemu-system-risc5 domains.
#
#   patch_libvirt.py [--dry-run] LIBVIRT_TREE
#
# Why: libvirt asks the emulator for its architecture (QMP query-target) and rejects one it does
# not know ("Unknown QEMU arch risc5"); for an unknown architecture it also assumes PCI and adds a
# pci-root controller the machine cannot have.  Every edit is anchored on exact upstream text,
# applied once (a second run changes nothing), verified after writing, and a missing anchor
# stops with the file and the anchor named.  Written against libvirt 9.0 (Debian bookworm) and
# checked there; the anchors are the same lines in 10.x/11.x except qemu_domain.c's
# post-parse switch, which 11.x moved to qemu_postparse.c (add that file to EDITS then).
#
# SPDX-License-Identifier: GPL-2.0-or-later
import os
import sys

EDITS = [
    # (file, anchor, inserted text, marker that shows the edit is there)
    ("src/util/virarch.h",
     "    VIR_ARCH_RISCV32,      /* RISC-V      32 LE https://en.wikipedia.org/wiki/RISC-V */\n",
     "    VIR_ARCH_RISC5,        /* RISC5       32 LE Wirth's Project Oberon processor */\n",
     "VIR_ARCH_RISC5,"),
    ("src/util/virarch.c",
     '    { "riscv32",      32, VIR_ARCH_LITTLE_ENDIAN },\n',
     '    { "risc5",        32, VIR_ARCH_LITTLE_ENDIAN },\n',
     '{ "risc5",'),
    # The default machine per architecture (the table is indexed by virArch).
    ("src/qemu/qemu_capabilities.c",
     '    "spike_v1.10", /* VIR_ARCH_RISCV32 */\n',
     '    "oberon", /* VIR_ARCH_RISC5 */\n',
     '"oberon", /* VIR_ARCH_RISC5 */'),
    # Exhaustive switches over virArch (-Wswitch-enum): RISC5 needs no extra capabilities ...
    ("src/qemu/qemu_capabilities.c",
     "    case VIR_ARCH_SH4EB:\n    case VIR_ARCH_RISCV32:\n",
     "    case VIR_ARCH_RISC5:\n",
     "    case VIR_ARCH_RISC5:\n    case VIR_ARCH_SH4EB:"),
    # ... and, in the default-devices switch, goes with RISC-V: no USB, no PCI root added.
    ("src/qemu/qemu_domain.c",
     "    case VIR_ARCH_RISCV32:\n    case VIR_ARCH_RISCV64:\n        addDefaultUSB = false;\n",
     "    case VIR_ARCH_RISC5:\n",
     "    case VIR_ARCH_RISC5:\n    case VIR_ARCH_RISCV32:"),
    # The machine has no PCI bus at all.
    ("src/qemu/qemu_domain.c",
     "qemuDomainSupportsPCI(virDomainDef *def,\n                      virQEMUCaps *qemuCaps)\n{\n",
     "    if (def->os.arch == VIR_ARCH_RISC5)\n        return false;   /* the oberon board has no PCI */\n\n",
     "if (def->os.arch == VIR_ARCH_RISC5)"),
]
# Edits go before their anchor, except these, which go after it.
AFTER = {"qemuDomainSupportsPCI(virDomainDef *def,\n                      virQEMUCaps *qemuCaps)\n{\n"}


def fail(msg):
    sys.stderr.write("patch_libvirt: " + msg + "\n")
    sys.exit(1)


def main():
    args = sys.argv[1:]
    dry = "--dry-run" in args
    args = [a for a in args if a != "--dry-run"]
    if len(args) != 1 or not os.path.isfile(os.path.join(args[0], "src/util/virarch.h")):
        fail("usage: patch_libvirt.py [--dry-run] LIBVIRT_TREE")
    tree = args[0]
    changed = 0
    contents = {}   # all edits are made in memory first: a refusal leaves the tree untouched
    for rel, anchor, text, marker in EDITS:
        src = contents.get(rel) or open(os.path.join(tree, rel), encoding="utf-8").read()
        if marker in src:
            contents[rel] = src
            continue
        if src.count(anchor) != 1:
            fail(f"{rel}: anchor not found exactly once: {anchor.splitlines()[0].strip()!r}; nothing written")
        new = src.replace(anchor, anchor + text if anchor in AFTER else text + anchor)
        if marker not in new:
            fail(f"{rel}: the edit did not take; nothing written")
        contents[rel] = new
        changed += 1
    if not dry:
        for rel, src in contents.items():
            path = os.path.join(tree, rel)
            if open(path, encoding="utf-8").read() != src:
                open(path, "w", encoding="utf-8").write(src)
    print(f"patch_libvirt: {changed} edit(s) {'would be ' if dry else ''}applied")


if __name__ == "__main__":
    main()
