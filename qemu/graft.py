#!/usr/bin/env python3
# Graft retrokube's RISC5 target and "oberon" board onto a QEMU 7.2 source tree.
#
#   graft.py QEMU_TREE
#
# Copies target/risc5, hw/risc5 and the configs, then makes anchored edits: each edit names
# the exact upstream text it goes next to, is applied once (running twice changes nothing),
# and a missing anchor stops the graft with the file and anchor named — a different QEMU
# is reported, never patched blindly.
#
# SPDX-License-Identifier: GPL-2.0-or-later
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (file, anchor, text to insert, where: 'after' the anchor or 'before' it, marker that shows it is applied)
EDITS = [
    ("target/meson.build", "subdir('riscv')\n", "subdir('risc5')\n", "before", "subdir('risc5')"),
    ("hw/meson.build", "subdir('riscv')\n", "subdir('risc5')\n", "before", "subdir('risc5')"),
    ("target/Kconfig", "source riscv/Kconfig\n", "source risc5/Kconfig\n", "before", "source risc5/Kconfig"),
    ("hw/Kconfig", "source riscv/Kconfig\n", "source risc5/Kconfig\n", "before", "source risc5/Kconfig"),
    # Without the name in the QAPI target enum, QMP's query-target cannot describe the emulator
    # (libvirt asks for it first).
    ("qapi/machine.json", "'ppc64', 'riscv32',", "'risc5', ", "before-token", "'risc5'"),
    ("include/sysemu/arch_init.h", "    QEMU_ARCH_LOONGARCH = (1 << 23),\n",
     "    QEMU_ARCH_RISC5 = (1 << 24),\n", "after", "QEMU_ARCH_RISC5"),
]

# The UDP chardev fixes for the radio ("the air"), both found the hard way by the reference:
#  1. keep reading after a failed read: an ICMP port-unreachable (relay gone) turns the next
#     read into ECONNREFUSED, and upstream then removes the read watch for good — the machine
#     never hears the air again even after the relay is back;
#  2. after a failed write or read, at most once a second, resolve the relay's host name again
#     and connect() the socket anew (a replaced relay pod has a new address; Cilium's socket LB
#     pins the old one), then retry the write once. The read path matters most: the pending
#     ICMP error of a connected UDP socket is reported once, and the read watch (fix 1) takes it
#     before any write could (test/qemu/air-move-qemu.test.ts found that).
# Fix 1 as grafted now (the read path also re-resolves: see fix 2).
READ_KEEPS_WATCH = (
    "    if (ret <= 0) {\n"
    "        /* retrokube: keep the watch; the error (e.g. ECONNREFUSED) was consumed here, so\n"
    "         * no write will see it: resolve and connect again from here too (fix 2). */\n"
    "        udp_chr_reconnect(s);\n"
    "        return TRUE;\n"
    "    }\n"
)

UDP_EDITS = [
    (
        "    if (ret <= 0) {\n        remove_fd_in_watch(chr);\n        return FALSE;\n    }\n",
        READ_KEEPS_WATCH,
        "retrokube: keep the watch",
    ),
    (
        # A tree grafted before the read path reconnected (build.sh reuses its tree): upgrade it.
        "    if (ret <= 0) {\n"
        "        /* retrokube: keep the watch; the error (e.g. ECONNREFUSED) was consumed. */\n"
        "        return TRUE;\n"
        "    }\n",
        READ_KEEPS_WATCH,
        "resolve and connect again from here too",
    ),
    (
        "    int max_size;\n};\ntypedef struct UdpChardev UdpChardev;\n",
        "    int max_size;\n"
        "    SocketAddress *remote;      /* retrokube: to resolve and connect again */\n"
        "    int64_t last_reconnect_ms;\n"
        "};\ntypedef struct UdpChardev UdpChardev;\n",
        "SocketAddress *remote;      /* retrokube",
    ),
    (
        "/* Called with chr_write_lock held.  */\nstatic int udp_chr_write(Chardev *chr, const uint8_t *buf, int len)\n{\n"
        "    UdpChardev *s = UDP_CHARDEV(chr);\n\n    return qio_channel_write(\n        s->ioc, (const char *)buf, len, NULL);\n}\n",
        "/* retrokube: resolve the remote host again and connect the socket to it (IPv4). */\n"
        "static bool udp_chr_reconnect(UdpChardev *s)\n"
        "{\n"
        "    struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM };\n"
        "    struct addrinfo *res = NULL;\n"
        "    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);\n"
        "    bool ok;\n\n"
        "    if (!s->remote || s->remote->type != SOCKET_ADDRESS_TYPE_INET ||\n"
        "        now - s->last_reconnect_ms < 1000) {\n"
        "        return false;\n"
        "    }\n"
        "    s->last_reconnect_ms = now;\n"
        "    if (getaddrinfo(s->remote->u.inet.host, s->remote->u.inet.port, &hints, &res) != 0 || !res) {\n"
        "        return false;\n"
        "    }\n"
        "    ok = connect(QIO_CHANNEL_SOCKET(s->ioc)->fd, res->ai_addr, res->ai_addrlen) == 0;\n"
        "    freeaddrinfo(res);\n"
        "    return ok;\n"
        "}\n\n"
        "/* Called with chr_write_lock held.  */\nstatic int udp_chr_write(Chardev *chr, const uint8_t *buf, int len)\n{\n"
        "    UdpChardev *s = UDP_CHARDEV(chr);\n"
        "    int ret = qio_channel_write(s->ioc, (const char *)buf, len, NULL);\n\n"
        "    if (ret < 0 && udp_chr_reconnect(s)) {\n"
        "        ret = qio_channel_write(s->ioc, (const char *)buf, len, NULL);\n"
        "    }\n"
        "    return ret;\n"
        "}\n",
        "udp_chr_reconnect(UdpChardev *s)",
    ),
    (
        "    ret = qio_channel_socket_dgram_sync(sioc, local_addr, remote_addr, errp);\n"
        "    qapi_free_SocketAddress(local_addr);\n"
        "    qapi_free_SocketAddress(remote_addr);\n",
        "    ret = qio_channel_socket_dgram_sync(sioc, local_addr, remote_addr, errp);\n"
        "    qapi_free_SocketAddress(local_addr);\n"
        "    s->remote = remote_addr;   /* retrokube: kept for udp_chr_reconnect */\n",
        "s->remote = remote_addr;   /* retrokube",
    ),
    (
        '#include "chardev/char-io.h"\n',
        '#include "chardev/char-io.h"\n#include "qemu/timer.h"\n#include "qapi/qapi-visit-sockets.h"\n',
        '#include "qemu/timer.h"\n#include "qapi/qapi-visit-sockets.h"',
    ),
    (
        "    if (s->ioc) {\n        object_unref(OBJECT(s->ioc));\n    }\n    qemu_chr_be_event(chr, CHR_EVENT_CLOSED);\n",
        "    if (s->ioc) {\n        object_unref(OBJECT(s->ioc));\n    }\n"
        "    qapi_free_SocketAddress(s->remote);   /* retrokube */\n"
        "    qemu_chr_be_event(chr, CHR_EVENT_CLOSED);\n",
        "qapi_free_SocketAddress(s->remote);   /* retrokube */",
    ),
]


def fail(msg):
    sys.stderr.write("graft: " + msg + "\n")
    sys.exit(1)


def edit(tree, rel, anchor, text, where, marker):
    path = os.path.join(tree, rel)
    src = open(path, encoding="utf-8").read()
    if marker in src:
        return False
    if src.count(anchor) != 1:
        fail(f"{rel}: anchor {anchor!r} found {src.count(anchor)} times (expected once); is this QEMU 7.2?")
    if where == "after":
        new = src.replace(anchor, anchor + text)
    elif where == "before":
        new = src.replace(anchor, text + anchor)
    elif where == "before-token":
        new = src.replace(anchor, anchor.replace("'riscv32'", text + "'riscv32'"))
    else:
        fail("bad edit kind " + where)
    if marker not in new:
        fail(f"{rel}: edit did not take")
    open(path, "w", encoding="utf-8").write(new)
    return True


def replace(tree, rel, old, new, marker):
    path = os.path.join(tree, rel)
    src = open(path, encoding="utf-8").read()
    if marker in src:
        return False
    if src.count(old) != 1:
        fail(f"{rel}: expected upstream text not found once: {old.splitlines()[0]!r}...")
    open(path, "w", encoding="utf-8").write(src.replace(old, new))
    return True


def main():
    if len(sys.argv) != 2 or not os.path.isfile(os.path.join(sys.argv[1], "VERSION")):
        fail("usage: graft.py QEMU_TREE (a QEMU source tree with a VERSION file)")
    tree = sys.argv[1]
    version = open(os.path.join(tree, "VERSION")).read().strip()
    if not version.startswith("7.2."):
        fail(f"QEMU {version} found; this graft is written against QEMU 7.2 (Debian bookworm)")
    for rel in ("target/risc5", "hw/risc5", "configs/devices/risc5-softmmu"):
        dst = os.path.join(tree, rel)
        if os.path.isdir(dst):
            shutil.rmtree(dst)
        # A fresh copy (new timestamps) so an incremental build never keeps stale objects.
        shutil.copytree(os.path.join(HERE, rel), dst)
    shutil.copyfile(os.path.join(HERE, "configs/targets/risc5-softmmu.mak"),
                    os.path.join(tree, "configs/targets/risc5-softmmu.mak"))
    changed = 0
    for rel, anchor, text, where, marker in EDITS:
        changed += edit(tree, rel, anchor, text, where, marker)
    for old, new, marker in UDP_EDITS:
        changed += replace(tree, "chardev/char-udp.c", old, new, marker)
    print(f"graft: QEMU {version}: risc5 target and oberon board copied, {changed} edits applied")


if __name__ == "__main__":
    main()
