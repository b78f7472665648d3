/*
 * The "oberon" machine: Niklaus Wirth's Project Oberon board (RISC5) as the retrokube
 * TypeScript emulator and the pdewacht emulator model it, for QEMU.
 *
 *   RAM        0x00000000  1 MiB (the board's), framebuffer at 0xE7F00 (1024x768, 1 bpp)
 *   boot ROM   0xFFFFF800  2 KiB from -bios, instruction fetches only
 *   devices    0xFFFFFFC0  timer, switches/LEDs, RS-232, SPI (SD card, nRF24 radio),
 *                          PS/2 keyboard + mouse; other data addresses above RAM read 0
 *
 * Machine options (-machine oberon,...):
 *   commands=TEXT   fed to RS-232 receive from power-on (Boot.Run reads it); double commas
 *   radio=ID        a chardev (normally udp) that carries the nRF24 air, 33-byte datagrams
 *   clock=realtime|deterministic   ms timer from QEMU's virtual clock, or from retired
 *                   instructions (25,000 per ms; idle stretches skip to the next ms)
 *   switches=N      the board's switches (bit 0: boot from the serial line)
 *   trace=FILE, trace-limit=N      per-instruction state records (see target/risc5/helper.c)
 *   idle-sleep-ms=N                realtime clock: how long an idle CPU sleeps at most
 *   radio-log=FILE  every frame Oberon reads from its radio, as it reads it (what the machine
 *                   heard and when, for tests): 41-byte records, the host's wall-clock time in
 *                   ms (8 bytes, little-endian), the channel, the frame's 32 bytes
 * The SD card is the drive with id sd0 (-drive if=none,id=sd0,file=X.dsk,format=raw).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/error-report.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "qemu/log.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/boards.h"
#include "hw/loader.h"
#include "exec/address-spaces.h"
#include "exec/ram_addr.h"
#include "sysemu/sysemu.h"
#include "qemu/datadir.h"
#include "sysemu/block-backend.h"
#include "sysemu/reset.h"
#include "sysemu/runstate.h"
#include "chardev/char-fe.h"
#include "chardev/char.h"
#include "ui/console.h"
#include "ui/input.h"
#include "cpu.h"
#include "nrf24.h"

#define TYPE_OBERON_MACHINE MACHINE_TYPE_NAME("oberon")
OBJECT_DECLARE_SIMPLE_TYPE(OberonMachineState, OBERON_MACHINE)

/* LIMITS: the board's constants and our bounds, each with its reason. */
#define BOARD_RAM          (1 * MiB)      /* Wirth's board; the 2020 image's MemLim assumes it */
#define DISPLAY_START      0xE7F00u       /* where Display.Mod expects the framebuffer */
#define DISPLAY_W          1024
#define DISPLAY_H          768
#define DISPLAY_BYTES      (DISPLAY_W * DISPLAY_H / 8)
#define IO_PAGE_OFFSET     0xFC0u         /* device registers within the top page */
#define KEY_QUEUE          4096           /* PS/2 bytes; the board's 16 drop VNC/QMP bursts */
#define SERIAL_IN_MAX      4096           /* RS-232 bytes waiting from the host chardev */
#define INSNS_PER_MS       25000          /* deterministic clock: the board's 25 MHz */
#define IDLE_POLLS         24             /* quiet polls in a row that mean "Oberon idles" */
#define IDLE_GAP_INSNS     4000           /* deterministic: max instructions between them */
#define IDLE_GAP_NS        200000         /* realtime: max ns between them */
#define SD_BLOCK           512
#define DIR_MARK           0x9B1EA38Du    /* first word of the root directory page */
#define FS_ONLY_OFFSET     0x80002u       /* SD block of .dsk byte 0 when it starts with it */
#define MAX_DISK_BYTES     (1 * GiB)      /* refuse to grow an image past this: a runaway */
#define HELLO_MS           5000           /* radio hello to the relay, as the reference */

enum { SD_IDLE, SD_READING, SD_WAIT_TOKEN, SD_WRITING };

struct OberonMachineState {
    MachineState parent;

    RISC5CPU *cpu;
    MemoryRegion ram_window, rom, io;

    /* options */
    char *commands, *radio_id, *clock_mode, *trace_path, *radio_log_path;
    uint64_t trace_limit;
    uint32_t switches, idle_sleep_ms;
    bool deterministic;

    /* timer and idleness */
    int64_t start_ns;
    uint64_t skipped;        /* deterministic: instructions skipped while idle */
    uint64_t last_poll;
    int quiet_polls;
    bool activity;
    bool booted;
    QEMUTimer *wake;

    /* LEDs, RS-232 */
    uint32_t leds;
    uint8_t *serial_cmd;
    size_t serial_cmd_len, serial_cmd_pos;
    uint8_t serial_in[SERIAL_IN_MAX];
    size_t serial_in_len;
    CharBackend serial;

    /* SPI */
    uint32_t spi_ctrl;

    /* SD card */
    BlockBackend *blk;
    int64_t disk_bytes;
    uint32_t block_offset;
    int sd_state;
    uint8_t sd_cmd[6];
    int sd_cmd_len;
    uint32_t sd_tx[130];
    int sd_tx_count, sd_tx_idx;
    uint32_t sd_rx[128];
    int sd_rx_idx;
    uint32_t sd_write_block;

    /* keyboard and mouse */
    uint8_t keys[KEY_QUEUE];
    int key_head, key_count;
    uint32_t mouse_x, mouse_y, buttons;
    bool alt_down, ctrl_down;
    uint32_t left_bit;     /* what the left button means while held (chords) */
    QemuInputHandlerState *input;

    /* display */
    QemuConsole *con;
    uint8_t shadow[DISPLAY_BYTES];
    bool shadow_valid;

    /* radio */
    Nrf24 radio;
    CharBackend air;
    bool air_connected;
    QEMUTimer *hello;
    int radio_log;       /* fd of radio-log=FILE */
};

static CPUState *oberon_cs(OberonMachineState *s)
{
    return CPU(s->cpu);
}

/* ---------------------------------------------------------------- time and idleness */

static uint64_t now_ns(OberonMachineState *s)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) - s->start_ns;
}

/* Instructions retired before the current one, plus idle time skipped. */
static uint64_t det_cycles(OberonMachineState *s)
{
    uint64_t n = s->cpu->env.insns;
    return (n ? n - 1 : 0) + s->skipped;
}

static uint32_t timer_ms(OberonMachineState *s)
{
    if (s->deterministic) {
        return (uint32_t)(det_cycles(s) / INSNS_PER_MS);
    }
    return (uint32_t)(now_ns(s) / SCALE_MS);
}

static uint32_t radio_now_ms(void *opaque)
{
    return timer_ms(opaque);
}

static void oberon_wake(void *opaque)
{
    OberonMachineState *s = opaque;
    cpu_interrupt(oberon_cs(s), CPU_INTERRUPT_HARD);
}

/* Something for Oberon arrived (key, click, radio frame, serial byte): stop sleeping. */
static void oberon_kick(OberonMachineState *s)
{
    if (s->wake) {
        timer_del(s->wake);
    }
    if (oberon_cs(s)->halted) {
        cpu_interrupt(oberon_cs(s), CPU_INTERRUPT_HARD);
    }
}

static bool framebuffer_written(OberonMachineState *s)
{
    MemoryRegion *ram = s->parent.ram;
    ram_addr_t base = memory_region_get_ram_addr(ram) + DISPLAY_START;
    if (!cpu_physical_memory_get_dirty(base, DISPLAY_BYTES, DIRTY_MEMORY_VGA)) {
        return false;
    }
    memory_region_reset_dirty(ram, DISPLAY_START, DISPLAY_BYTES, DIRTY_MEMORY_VGA);
    return true;
}

/*
 * A poll (a timer read, or a keyboard-status read with no key waiting).  Enough quiet polls
 * close together, with no device activity and no drawing in between, mean Oberon's loop is
 * idle: the deterministic clock then skips to the next millisecond; the realtime clock halts
 * the CPU until then (or until input arrives), so an idle machine costs almost no host CPU.
 */
static void oberon_poll(OberonMachineState *s)
{
    uint64_t now = s->deterministic ? s->cpu->env.insns : now_ns(s);
    uint64_t gap = s->deterministic ? IDLE_GAP_INSNS : IDLE_GAP_NS;
    bool drawn = framebuffer_written(s);

    if (now - s->last_poll <= gap && !s->activity && !drawn && s->key_count == 0) {
        if (++s->quiet_polls >= IDLE_POLLS) {
            s->quiet_polls = 0;
            s->booted = true;
            if (s->deterministic) {
                uint64_t c = (s->cpu->env.insns) + s->skipped;
                s->skipped += INSNS_PER_MS - (c % INSNS_PER_MS);
            } else {
                int64_t ms = now_ns(s) / SCALE_MS;
                int64_t until = s->start_ns + (ms + s->idle_sleep_ms) * SCALE_MS;
                timer_mod(s->wake, until);
                cpu_interrupt(oberon_cs(s), CPU_INTERRUPT_HALT);
            }
        }
    } else {
        s->quiet_polls = 0;
    }
    s->last_poll = now;
    s->activity = false;
}

/* ---------------------------------------------------------------- RS-232 */

static int serial_can_receive(void *opaque)
{
    OberonMachineState *s = opaque;
    return SERIAL_IN_MAX - s->serial_in_len;
}

static void serial_receive(void *opaque, const uint8_t *buf, int size)
{
    OberonMachineState *s = opaque;
    size_t n = MIN((size_t)size, SERIAL_IN_MAX - s->serial_in_len);
    memcpy(s->serial_in + s->serial_in_len, buf, n);
    s->serial_in_len += n;
    oberon_kick(s);
}

static bool serial_available(OberonMachineState *s)
{
    return s->serial_cmd_pos < s->serial_cmd_len || s->serial_in_len > 0;
}

static uint32_t serial_read(OberonMachineState *s)
{
    uint8_t b;
    if (s->serial_cmd_pos < s->serial_cmd_len) {
        return s->serial_cmd[s->serial_cmd_pos++];
    }
    if (s->serial_in_len == 0) {
        return 0;
    }
    b = s->serial_in[0];
    memmove(s->serial_in, s->serial_in + 1, --s->serial_in_len);
    qemu_chr_fe_accept_input(&s->serial);
    return b;
}

/* ---------------------------------------------------------------- SD card */

static void sd_read_block(OberonMachineState *s, uint32_t block, uint32_t *dst)
{
    int64_t off = ((int64_t)block - s->block_offset) * SD_BLOCK;
    uint8_t buf[SD_BLOCK];
    int i;

    memset(buf, 0, sizeof buf);
    if (off >= 0 && off < s->disk_bytes) {
        int64_t n = MIN((int64_t)SD_BLOCK, s->disk_bytes - off);
        if (blk_pread(s->blk, off, n, buf, 0) < 0) {
            qemu_log_mask(LOG_GUEST_ERROR, "oberon: SD read of block %u failed\n", block);
        }
    }
    for (i = 0; i < 128; i++) {
        dst[i] = ldl_le_p(buf + 4 * i);
    }
}

static void sd_write_block(OberonMachineState *s, uint32_t block, const uint32_t *src)
{
    int64_t off = ((int64_t)block - s->block_offset) * SD_BLOCK;
    uint8_t buf[SD_BLOCK];
    int i;

    if (off < 0) {
        return;   /* below a file-system-only image (the card's boot area): nowhere to go */
    }
    if (off + SD_BLOCK > s->disk_bytes) {
        /* Grow the image instead of losing the write (a raw file cannot grow by itself). */
        Error *err = NULL;
        if (off + SD_BLOCK > MAX_DISK_BYTES ||
            blk_truncate(s->blk, off + SD_BLOCK, false, PREALLOC_MODE_OFF, 0, &err) < 0) {
            if (err) {
                error_report_err(err);
            }
            qemu_log_mask(LOG_GUEST_ERROR, "oberon: cannot grow the disk to write block %u\n",
                          block);
            return;
        }
        s->disk_bytes = off + SD_BLOCK;
    }
    for (i = 0; i < 128; i++) {
        stl_le_p(buf + 4 * i, src[i]);
    }
    if (blk_pwrite(s->blk, off, SD_BLOCK, buf, 0) < 0) {
        qemu_log_mask(LOG_GUEST_ERROR, "oberon: SD write of block %u failed\n", block);
    }
}

static void sd_command(OberonMachineState *s)
{
    uint8_t op = s->sd_cmd[0] & 0x3f;
    uint32_t arg = ldl_be_p(s->sd_cmd + 1);

    s->sd_tx[0] = 0;
    if (op == 17) {
        s->sd_state = SD_READING;
        s->sd_tx[1] = 254;
        sd_read_block(s, arg, s->sd_tx + 2);
        s->sd_tx_count = 130;
    } else if (op == 24) {
        s->sd_state = SD_WAIT_TOKEN;
        s->sd_write_block = arg;
        s->sd_rx_idx = 0;
        s->sd_tx_count = 1;
    } else {
        s->sd_tx_count = 1;   /* CMD0, 8, 55, ACMD41, 16, 58: "ok" (SDHC addressing) */
    }
    s->sd_tx_idx = -1;
}

static uint32_t sd_read(OberonMachineState *s)
{
    return s->sd_tx_idx >= 0 && s->sd_tx_idx < s->sd_tx_count ? s->sd_tx[s->sd_tx_idx] : 255;
}

static void sd_write(OberonMachineState *s, uint32_t value)
{
    s->sd_tx_idx++;
    switch (s->sd_state) {
    case SD_IDLE:
        if ((value & 0xff) != 0xff || s->sd_cmd_len != 0) {
            s->sd_cmd[s->sd_cmd_len++] = value & 0xff;
            if (s->sd_cmd_len == 6) {
                sd_command(s);
                s->sd_cmd_len = 0;
            }
        }
        break;
    case SD_READING:
        if (s->sd_tx_idx == s->sd_tx_count) {
            s->sd_state = SD_IDLE;
            s->sd_tx_count = 0;
            s->sd_tx_idx = 0;
        }
        break;
    case SD_WAIT_TOKEN:
        if ((value & 0xff) == 254) {
            s->sd_state = SD_WRITING;
        }
        break;
    case SD_WRITING:
        if (s->sd_rx_idx < 128) {
            s->sd_rx[s->sd_rx_idx] = value;
        }
        s->sd_rx_idx++;
        if (s->sd_rx_idx == 128) {
            sd_write_block(s, s->sd_write_block, s->sd_rx);
        }
        if (s->sd_rx_idx == 130) {
            s->sd_tx[0] = 5;   /* data accepted */
            s->sd_tx_count = 1;
            s->sd_tx_idx = -1;
            s->sd_rx_idx = 0;
            s->sd_state = SD_IDLE;
        }
        break;
    }
}

/*
 * The .dsk offset rule, and the refusal of anything that is not an Oberon disk: a file that
 * starts with the directory mark holds the file system from sector 1 (SD block 0x80002 at
 * byte 0); a whole-card image has the mark at SD block 0x80002.
 */
static void sd_attach(OberonMachineState *s, Error **errp)
{
    DriveInfo *dinfo = drive_get_by_index(IF_NONE, 0);
    BlockBackend *blk = blk_by_name("sd0");
    uint8_t word[4];

    if (!blk && dinfo) {
        blk = blk_by_legacy_dinfo(dinfo);
    }
    if (!blk) {
        error_setg(errp, "oberon: no disk; give one with "
                   "-drive if=none,id=sd0,file=oberon.dsk,format=raw");
        return;
    }
    if (blk_set_perm(blk, BLK_PERM_CONSISTENT_READ | BLK_PERM_WRITE | BLK_PERM_RESIZE,
                     BLK_PERM_ALL, errp) < 0) {
        error_prepend(errp, "oberon: the disk must be writable: ");
        return;
    }
    s->blk = blk;
    s->disk_bytes = blk_getlength(blk);
    if (s->disk_bytes >= 4 && blk_pread(blk, 0, 4, word, 0) >= 0 && ldl_le_p(word) == DIR_MARK) {
        s->block_offset = FS_ONLY_OFFSET;
        return;
    }
    if (s->disk_bytes >= (int64_t)FS_ONLY_OFFSET * SD_BLOCK + 4 &&
        blk_pread(blk, (int64_t)FS_ONLY_OFFSET * SD_BLOCK, 4, word, 0) >= 0 &&
        ldl_le_p(word) == DIR_MARK) {
        s->block_offset = 0;
        return;
    }
    error_setg(errp, "oberon: drive sd0 is not an Oberon disk: neither its first word nor "
               "the word at SD block 0x80002 is the directory mark 9B1EA38D. Give a Project "
               "Oberon .dsk (file system from sector 1, e.g. Oberon-2020-08-18.dsk) or a "
               "whole SD-card image");
}

/* ---------------------------------------------------------------- device registers */

static uint32_t io_read_word(OberonMachineState *s, uint32_t reg)
{
    switch (reg) {
    case 0: {  /* millisecond timer */
        uint32_t ms = timer_ms(s);
        oberon_poll(s);
        return ms;
    }
    case 4:    /* switches */
        return s->switches;
    case 8:    /* RS-232 data */
        s->activity = true;
        return serial_read(s);
    case 12:   /* RS-232 status: bit 0 byte available, bit 1 transmitter ready */
        return (serial_available(s) ? 1 : 0) | 2;
    case 16:   /* SPI data from the selected device */
        if ((s->spi_ctrl & 3) == 1) {
            s->activity = true;
            return sd_read(s);
        }
        if ((s->spi_ctrl & 3) == 2) {
            return nrf24_read(&s->radio);
        }
        return 255;
    case 20:   /* SPI status: always ready */
        return 1;
    case 24: { /* mouse and keyboard status */
        uint32_t v = (s->mouse_x & 0xfff) | ((s->mouse_y & 0xfff) << 12) | s->buttons;
        if (s->key_count > 0) {
            v |= 1u << 28;
        } else {
            oberon_poll(s);
        }
        return v;
    }
    case 28: { /* PS/2 data */
        uint8_t b;
        s->activity = true;
        if (s->key_count == 0) {
            return 0;
        }
        b = s->keys[s->key_head];
        s->key_head = (s->key_head + 1) % KEY_QUEUE;
        s->key_count--;
        return b;
    }
    default:   /* clipboard (not wired) and unused registers */
        return 0;
    }
}

static void io_write_word(OberonMachineState *s, uint32_t reg, uint32_t value)
{
    switch (reg) {
    case 4:
        s->leds = value & 0xff;
        break;
    case 8: {
        uint8_t b = value & 0xff;
        s->activity = true;
        qemu_chr_fe_write_all(&s->serial, &b, 1);
        break;
    }
    case 16:
        if ((s->spi_ctrl & 3) == 1) {
            s->activity = true;
            sd_write(s, value);
        } else if ((s->spi_ctrl & 3) == 2) {
            nrf24_write(&s->radio, value, s->spi_ctrl & 4);
        }
        break;
    case 20:
        s->spi_ctrl = value & 15;
        nrf24_control(&s->radio, value);
        break;
    default:
        break;
    }
}

static uint64_t io_read(void *opaque, hwaddr addr, unsigned size)
{
    OberonMachineState *s = opaque;
    uint32_t v;

    if (addr < IO_PAGE_OFFSET) {
        return 0;   /* between RAM's end and the devices: nothing answers */
    }
    v = io_read_word(s, (addr - IO_PAGE_OFFSET) & ~3u);
    if (size == 1) {
        return (v >> (8 * (addr & 3))) & 0xff;   /* a byte load takes its byte of the word */
    }
    return v;
}

static void io_write(void *opaque, hwaddr addr, uint64_t value, unsigned size)
{
    OberonMachineState *s = opaque;
    if (addr >= IO_PAGE_OFFSET) {
        io_write_word(s, (addr - IO_PAGE_OFFSET) & ~3u, (uint32_t)value);
    }
}

static const MemoryRegionOps io_ops = {
    .read = io_read,
    .write = io_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = { .min_access_size = 1, .max_access_size = 4 },
    .impl = { .min_access_size = 1, .max_access_size = 4 },
};

/* ---------------------------------------------------------------- display */

static void display_update(void *opaque)
{
    OberonMachineState *s = opaque;
    DisplaySurface *surface = qemu_console_surface(s->con);
    const uint8_t *fb = (const uint8_t *)memory_region_get_ram_ptr(s->parent.ram) + DISPLAY_START;
    int first = -1, last = -1, line, i, bit;

    if (!surface) {
        return;
    }
    for (line = 0; line < DISPLAY_H; line++) {
        const uint8_t *src = fb + line * (DISPLAY_W / 8);
        uint8_t *sh = s->shadow + line * (DISPLAY_W / 8);
        int row = DISPLAY_H - 1 - line;   /* line 0 is the bottom of the screen */
        uint32_t *dst;

        if (s->shadow_valid && memcmp(src, sh, DISPLAY_W / 8) == 0) {
            continue;
        }
        memcpy(sh, src, DISPLAY_W / 8);
        dst = (uint32_t *)(surface_data(surface) + row * surface_stride(surface));
        for (i = 0; i < DISPLAY_W / 8; i++) {
            for (bit = 0; bit < 8; bit++) {
                /* bit 0 is the leftmost pixel; a 1 is foreground (white), as our own viewers draw it */
                dst[i * 8 + bit] = (src[i] >> bit) & 1 ? 0xffffffffu : 0xff000000u;
            }
        }
        if (first < 0 || row < first) {
            first = row;
        }
        if (row > last) {
            last = row;
        }
    }
    s->shadow_valid = true;
    if (first >= 0) {
        dpy_gfx_update(s->con, 0, first, DISPLAY_W, last - first + 1);
    }
}

static void display_invalidate(void *opaque)
{
    OberonMachineState *s = opaque;
    s->shadow_valid = false;
}

static const GraphicHwOps display_ops = {
    .invalidate = display_invalidate,
    .gfx_update = display_update,
};

/* ---------------------------------------------------------------- keyboard and mouse */

static void key_put(OberonMachineState *s, const uint8_t *bytes, int n)
{
    int i;
    if (s->key_count + n > KEY_QUEUE) {
        return;   /* a key goes in whole or not at all */
    }
    for (i = 0; i < n; i++) {
        s->keys[(s->key_head + s->key_count) % KEY_QUEUE] = bytes[i];
        s->key_count++;
    }
}

static void input_event(DeviceState *dev, QemuConsole *src, InputEvent *evt)
{
    OberonMachineState *s = OBERON_MACHINE(qdev_get_machine());

    switch (evt->type) {
    case INPUT_EVENT_KIND_KEY: {
        InputKeyEvent *key = evt->u.key.data;
        int qcode = qemu_input_key_value_to_qcode(key->key);
        uint8_t seq[3];
        int n = 0;
        uint16_t code = qcode < qemu_input_map_qcode_to_atset2_len ?
                        qemu_input_map_qcode_to_atset2[qcode] : 0;
        if (qcode == Q_KEY_CODE_ALT) {
            s->alt_down = key->down;
        } else if (qcode == Q_KEY_CODE_CTRL) {
            s->ctrl_down = key->down;
        }
        if (!code) {
            return;
        }
        if (code & 0xff00) {
            seq[n++] = code >> 8;   /* 0xE0 for extended keys */
        }
        if (!key->down) {
            seq[n++] = 0xf0;
        }
        seq[n++] = code & 0xff;
        key_put(s, seq, n);
        break;
    }
    case INPUT_EVENT_KIND_BTN: {
        InputBtnEvent *btn = evt->u.btn.data;
        uint32_t bit = 0;
        switch (btn->button) {
        case INPUT_BUTTON_LEFT:
            /* chords for a mouse without a middle button: Alt+left = middle, Ctrl+left = right */
            if (btn->down) {
                s->left_bit = s->alt_down ? 1u << 25 : s->ctrl_down ? 1u << 24 : 1u << 26;
            }
            bit = s->left_bit;
            break;
        case INPUT_BUTTON_MIDDLE:
            bit = 1u << 25;
            break;
        case INPUT_BUTTON_RIGHT:
            bit = 1u << 24;
            break;
        default:
            return;
        }
        if (btn->down) {
            s->buttons |= bit;
        } else {
            s->buttons &= ~bit;
        }
        break;
    }
    case INPUT_EVENT_KIND_ABS: {
        InputMoveEvent *move = evt->u.abs.data;
        int v = qemu_input_scale_axis(move->value, INPUT_EVENT_ABS_MIN, INPUT_EVENT_ABS_MAX,
                                      0, move->axis == INPUT_AXIS_X ? DISPLAY_W - 1 :
                                      DISPLAY_H - 1);
        if (move->axis == INPUT_AXIS_X) {
            s->mouse_x = v;
        } else if (move->axis == INPUT_AXIS_Y) {
            s->mouse_y = DISPLAY_H - 1 - v;   /* Oberon's y grows upwards */
        }
        break;
    }
    default:
        break;
    }
    oberon_kick(s);
}

static QemuInputHandler input_handler = {
    .name = "Oberon PS/2 keyboard and mouse",
    .mask = INPUT_EVENT_MASK_KEY | INPUT_EVENT_MASK_BTN | INPUT_EVENT_MASK_ABS,
    .event = input_event,
};

/* ---------------------------------------------------------------- radio */

static void air_send(void *opaque, uint8_t channel, const uint8_t *payload)
{
    OberonMachineState *s = opaque;
    uint8_t dgram[1 + NRF24_FRAME];
    dgram[0] = channel;
    memcpy(dgram + 1, payload, NRF24_FRAME);
    qemu_chr_fe_write(&s->air, dgram, sizeof dgram);
}

static int air_can_receive(void *opaque)
{
    return 4096;   /* whole datagrams: the udp chardev hands one over per call */
}

static void air_receive(void *opaque, const uint8_t *buf, int size)
{
    OberonMachineState *s = opaque;
    if (size != 1 + NRF24_FRAME) {
        return;   /* hellos and foreign traffic: not a frame */
    }
    nrf24_receive(&s->radio, buf[0], buf + 1);
    oberon_kick(s);
}

#define RADIO_LOG_RECORD (8 + 1 + NRF24_FRAME)

static void radio_read_logged(void *opaque, uint8_t channel, const uint8_t *payload)
{
    OberonMachineState *s = opaque;
    uint8_t rec[RADIO_LOG_RECORD];
    uint64_t ms = g_get_real_time() / 1000;
    ssize_t n;
    int i;

    for (i = 0; i < 8; i++) {
        rec[i] = ms >> (8 * i);
    }
    rec[8] = channel;
    memcpy(rec + 9, payload, NRF24_FRAME);
    /* One write per record on an O_APPEND file: a reader never sees half of one.  The log is
     * for tests; a failed write loses a record, never the machine's run. */
    n = write(s->radio_log, rec, sizeof rec);
    (void)n;
}

static void air_hello(void *opaque)
{
    OberonMachineState *s = opaque;
    uint8_t hello = 0xff;
    qemu_chr_fe_write(&s->air, &hello, 1);
    timer_mod(s->hello, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + HELLO_MS);
}

/* ---------------------------------------------------------------- the machine */

static void load_rom(OberonMachineState *s, MachineState *ms)
{
    g_autofree char *path = NULL;
    int64_t size;

    if (!ms->firmware) {
        error_report("oberon: no boot ROM; give the 2 KiB image with -bios prom.bin");
        exit(1);
    }
    path = qemu_find_file(QEMU_FILE_TYPE_BIOS, ms->firmware);
    if (!path) {
        error_report("oberon: boot ROM '%s' not found", ms->firmware);
        exit(1);
    }
    size = get_image_size(path);
    if (size <= 0 || size > RISC5_ROM_BYTES || size % 4) {
        error_report("oberon: boot ROM '%s' has %" PRId64 " bytes; it must be 4..2048 bytes "
                     "of little-endian words", path, size);
        exit(1);
    }
    if (load_image_size(path, (uint8_t *)memory_region_get_ram_ptr(&s->rom) +
                        (RISC5_ROM_START - RISC5_TOP_PAGE), size) != size) {
        error_report("oberon: cannot read boot ROM '%s'", path);
        exit(1);
    }
}

static void oberon_init(MachineState *ms)
{
    OberonMachineState *s = OBERON_MACHINE(ms);
    MemoryRegion *sys = get_system_memory();
    CPURISC5State *env;
    Error *err = NULL;

    if (ms->ram_size < BOARD_RAM) {
        error_report("oberon: the board needs 1 MiB of RAM (-m 1M or more; more is unused)");
        exit(1);
    }
    if (!strcmp(s->clock_mode, "deterministic")) {
        s->deterministic = true;
    } else if (strcmp(s->clock_mode, "realtime")) {
        error_report("oberon: clock must be 'realtime' or 'deterministic', not '%s'",
                     s->clock_mode);
        exit(1);
    }

    s->cpu = RISC5_CPU(cpu_create(ms->cpu_type));
    env = &s->cpu->env;
    env->ram_bytes = BOARD_RAM;
    env->count_insns = s->deterministic;

    /* RAM: the board's 1 MiB window of -m (libvirt passes its own -m; the rest stays unused). */
    memory_region_init_alias(&s->ram_window, OBJECT(s), "oberon.ram-window", ms->ram, 0,
                             BOARD_RAM);
    memory_region_add_subregion(sys, 0, &s->ram_window);
    memory_region_set_log(ms->ram, true, DIRTY_MEMORY_VGA);

    /* The top page twice: devices for data accesses, the boot ROM for fetches (above 4 GiB). */
    memory_region_init_io(&s->io, OBJECT(s), &io_ops, s, "oberon.io", TARGET_PAGE_SIZE);
    memory_region_add_subregion(sys, RISC5_TOP_PAGE, &s->io);
    memory_region_init_rom(&s->rom, NULL, "oberon.rom", TARGET_PAGE_SIZE, &error_fatal);
    memory_region_add_subregion(sys, RISC5_ROM_PHYS, &s->rom);
    load_rom(s, ms);

    sd_attach(s, &err);
    if (err) {
        error_report_err(err);
        exit(1);
    }

    if (s->commands) {
        s->serial_cmd_len = strlen(s->commands);
        s->serial_cmd = (uint8_t *)g_strdup(s->commands);
    }
    if (serial_hd(0)) {
        qemu_chr_fe_init(&s->serial, serial_hd(0), &error_fatal);
        qemu_chr_fe_set_handlers(&s->serial, serial_can_receive, serial_receive, NULL, NULL,
                                 s, NULL, true);
    }

    s->con = graphic_console_init(NULL, 0, &display_ops, s);
    qemu_console_resize(s->con, DISPLAY_W, DISPLAY_H);
    s->input = qemu_input_handler_register(NULL, &input_handler);
    qemu_input_handler_activate(s->input);

    nrf24_init(&s->radio, radio_now_ms, s);
    if (s->radio_id) {
        Chardev *chr = qemu_chr_find(s->radio_id);
        if (!chr) {
            error_report("radio: no chardev '%s'; add -chardev udp,id=%s,host=RELAY,port=7524,"
                         "localaddr=0.0.0.0,localport=7524", s->radio_id, s->radio_id);
            exit(1);
        }
        qemu_chr_fe_init(&s->air, chr, &error_fatal);
        qemu_chr_fe_set_handlers(&s->air, air_can_receive, air_receive, NULL, NULL, s, NULL,
                                 true);
        nrf24_set_air(&s->radio, air_send, s);
        s->hello = timer_new_ms(QEMU_CLOCK_REALTIME, air_hello, s);
        air_hello(s);
    }

    if (s->radio_log_path) {
        s->radio_log = qemu_open_old(s->radio_log_path,
                                     O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
        if (s->radio_log < 0) {
            error_report("radio-log: cannot open '%s': %s", s->radio_log_path, strerror(errno));
            exit(1);
        }
        nrf24_set_read_log(&s->radio, radio_read_logged, s);
    }

    if (s->trace_path) {
        risc5_trace_open(env, s->trace_path, s->trace_limit, &err);
        if (err) {
            error_report_err(err);
            exit(1);
        }
    }
    s->wake = timer_new_ns(QEMU_CLOCK_VIRTUAL, oberon_wake, s);
    s->start_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* ---------------------------------------------------------------- properties */

#define STR_PROP(field, name)                                                   \
    static char *get_##field(Object *obj, Error **errp)                        \
    {                                                                          \
        return g_strdup(OBERON_MACHINE(obj)->field ?: "");                     \
    }                                                                          \
    static void set_##field(Object *obj, const char *value, Error **errp)      \
    {                                                                          \
        OberonMachineState *s = OBERON_MACHINE(obj);                           \
        g_free(s->field);                                                      \
        s->field = g_strdup(value);                                            \
    }

STR_PROP(commands, "commands")
STR_PROP(radio_id, "radio")
STR_PROP(clock_mode, "clock")
STR_PROP(trace_path, "trace")
STR_PROP(radio_log_path, "radio-log")

static void get_u32(Object *obj, Visitor *v, const char *name, void *opaque, Error **errp)
{
    uint32_t value = *(uint32_t *)((char *)obj + (uintptr_t)opaque);
    visit_type_uint32(v, name, &value, errp);
}

static void set_u32(Object *obj, Visitor *v, const char *name, void *opaque, Error **errp)
{
    visit_type_uint32(v, name, (uint32_t *)((char *)obj + (uintptr_t)opaque), errp);
}

static void get_trace_limit(Object *obj, Visitor *v, const char *name, void *opaque,
                            Error **errp)
{
    visit_type_uint64(v, name, &OBERON_MACHINE(obj)->trace_limit, errp);
}

static void set_trace_limit(Object *obj, Visitor *v, const char *name, void *opaque,
                            Error **errp)
{
    visit_type_uint64(v, name, &OBERON_MACHINE(obj)->trace_limit, errp);
}

static bool get_booted(Object *obj, Error **errp)
{
    return OBERON_MACHINE(obj)->booted;
}

static void get_insns(Object *obj, Visitor *v, const char *name, void *opaque, Error **errp)
{
    OberonMachineState *s = OBERON_MACHINE(obj);
    uint64_t n = s->cpu ? s->cpu->env.insns : 0;
    visit_type_uint64(v, name, &n, errp);
}

static void get_ms(Object *obj, Visitor *v, const char *name, void *opaque, Error **errp)
{
    OberonMachineState *s = OBERON_MACHINE(obj);
    uint32_t ms = s->cpu ? timer_ms(s) : 0;
    visit_type_uint32(v, name, &ms, errp);
}

static void oberon_instance_init(Object *obj)
{
    OberonMachineState *s = OBERON_MACHINE(obj);
    s->clock_mode = g_strdup("realtime");
    s->idle_sleep_ms = 16;   /* a 60 Hz frame, as the pdewacht emulator sleeps; input and radio wake it at once */
}

static void oberon_class_init(ObjectClass *oc, void *data)
{
    MachineClass *mc = MACHINE_CLASS(oc);

    mc->desc = "Project Oberon board (RISC5, 1 MiB, 1024x768 mono, SD card, nRF24 radio)";
    mc->init = oberon_init;
    mc->default_cpu_type = RISC5_CPU_TYPE_NAME("risc5-2016");
    mc->default_ram_size = BOARD_RAM;
    mc->default_ram_id = "oberon.ram";
    mc->max_cpus = 1;
    mc->no_parallel = 1;
    mc->no_floppy = 1;
    mc->no_cdrom = 1;
    mc->no_sdcard = 1;
    mc->is_default = true;

    object_class_property_add_str(oc, "commands", get_commands, set_commands);
    object_class_property_set_description(oc, "commands",
        "Text fed to RS-232 receive from power-on (Boot.Run runs it); double any comma");
    object_class_property_add_str(oc, "radio", get_radio_id, set_radio_id);
    object_class_property_set_description(oc, "radio",
        "Id of the chardev (udp) that carries the nRF24 air");
    object_class_property_add_str(oc, "clock", get_clock_mode, set_clock_mode);
    object_class_property_set_description(oc, "clock",
        "realtime (default) or deterministic (25,000 instructions per ms)");
    object_class_property_add_str(oc, "trace", get_trace_path, set_trace_path);
    object_class_property_set_description(oc, "trace",
        "File for per-instruction state records (pc, state hash)");
    object_class_property_add_str(oc, "radio-log", get_radio_log_path, set_radio_log_path);
    object_class_property_set_description(oc, "radio-log",
        "File for every frame Oberon reads from its radio (ms, channel, 32 bytes; for tests)");
    object_class_property_add(oc, "trace-limit", "uint64", get_trace_limit, set_trace_limit,
                              NULL, NULL);
    object_class_property_add(oc, "switches", "uint32", get_u32, set_u32, NULL,
                              (void *)offsetof(OberonMachineState, switches));
    object_class_property_add(oc, "idle-sleep-ms", "uint32", get_u32, set_u32, NULL,
                              (void *)offsetof(OberonMachineState, idle_sleep_ms));
    object_class_property_add(oc, "leds", "uint32", get_u32, NULL, NULL,
                              (void *)offsetof(OberonMachineState, leds));
    object_class_property_add_bool(oc, "booted", get_booted, NULL);
    object_class_property_add(oc, "instructions", "uint64", get_insns, NULL, NULL, NULL);
    object_class_property_add(oc, "ms", "uint32", get_ms, NULL, NULL, NULL);
}

static const TypeInfo oberon_machine_type = {
    .name = TYPE_OBERON_MACHINE,
    .parent = TYPE_MACHINE,
    .instance_size = sizeof(OberonMachineState),
    .instance_init = oberon_instance_init,
    .class_init = oberon_class_init,
};

static void oberon_machine_register(void)
{
    type_register_static(&oberon_machine_type);
}

type_init(oberon_machine_register)
