/*
 * nRF24L01+ radio model: the registers and commands SCC.Mod uses (R/W_REGISTER, R_RX_PAYLOAD,
 * W_TX_PAYLOAD, FLUSH_TX/RX, NOP), 3-deep FIFOs, transmit on a rising CE edge.  Frames go to
 * and come from "the air" through callbacks (the board wires a udp chardev).  Frames that
 * arrive while the radio is not listening wait a little (NRF24_PENDING_MS) instead of being
 * dropped at once, which a busy TCG guest needs to hear a burst.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "nrf24.h"

enum {
    R_CONFIG = 0x00, R_RF_CH = 0x05, R_RF_SETUP = 0x06, R_STATUS = 0x07,
    R_FIFO_STATUS = 0x17,
    RX_DR = 0x40, TX_DS = 0x20, MAX_RT = 0x10,
};

static void nrf24_reset(Nrf24 *r)
{
    memset(r->regs, 0, sizeof r->regs);
    r->regs[R_CONFIG] = 0x08;
    r->regs[R_RF_CH] = 2;
    r->regs[R_RF_SETUP] = 0x0f;
    r->regs[R_STATUS] = 0x0e;
    r->rx_count = r->tx_count = r->pending_count = 0;
    r->selected = r->ce = false;
    r->cmd = -1;
    r->pos = 0;
}

void nrf24_init(Nrf24 *r, Nrf24NowFn *now, void *opaque)
{
    memset(r, 0, sizeof *r);
    r->now = now;
    r->now_opaque = opaque;
    nrf24_reset(r);
}

void nrf24_set_air(Nrf24 *r, Nrf24SendFn *send, void *opaque)
{
    r->send = send;
    r->send_opaque = opaque;
}

void nrf24_set_read_log(Nrf24 *r, Nrf24ReadFn *on_read, void *opaque)
{
    r->on_read = on_read;
    r->read_opaque = opaque;
}

static bool listening(Nrf24 *r)
{
    uint8_t c = r->regs[R_CONFIG];
    return r->ce && (c & 2) && (c & 1);
}

static uint8_t status(Nrf24 *r)
{
    uint8_t s = r->regs[R_STATUS] & (RX_DR | TX_DS | MAX_RT);
    s |= r->rx_count > 0 ? 0 : 0x0e;   /* RX_P_NO: 0 with a payload waiting, 7 when empty */
    if (r->tx_count >= NRF24_FIFO) {
        s |= 1;
    }
    return s;
}

static uint8_t fifo_status(Nrf24 *r)
{
    return (r->rx_count == 0 ? 0x01 : 0) | (r->rx_count >= NRF24_FIFO ? 0x02 : 0) |
           (r->tx_count == 0 ? 0x10 : 0) | (r->tx_count >= NRF24_FIFO ? 0x20 : 0);
}

/* Take a frame into the RX FIFO: true when it is dealt with (taken, or for another channel). */
static bool frame_accept(Nrf24 *r, uint8_t channel, const uint8_t *payload)
{
    if (channel != r->regs[R_RF_CH]) {
        return true;
    }
    if (r->rx_count >= NRF24_FIFO) {
        return false;
    }
    memcpy(r->rxq[r->rx_count++], payload, NRF24_FRAME);
    r->regs[R_STATUS] |= RX_DR;
    return true;
}

static void drop_pending_head(Nrf24 *r)
{
    memmove(&r->pending[0], &r->pending[1], (r->pending_count - 1) * sizeof r->pending[0]);
    r->pending_count--;
}

static void offer_pending(Nrf24 *r)
{
    uint32_t now = r->now(r->now_opaque);
    while (r->pending_count > 0) {
        if (now - r->pending[0].at > NRF24_PENDING_MS) {
            drop_pending_head(r);
            continue;
        }
        if (!listening(r) || !frame_accept(r, r->pending[0].channel, r->pending[0].payload)) {
            return;
        }
        drop_pending_head(r);
    }
}

void nrf24_receive(Nrf24 *r, uint8_t channel, const uint8_t *payload)
{
    if (listening(r)) {
        offer_pending(r);
        if (r->pending_count == 0 && frame_accept(r, channel, payload)) {
            return;
        }
    }
    if (r->pending_count >= NRF24_PENDING) {
        drop_pending_head(r);
    }
    r->pending[r->pending_count].channel = channel;
    memcpy(r->pending[r->pending_count].payload, payload, NRF24_FRAME);
    r->pending[r->pending_count].at = r->now(r->now_opaque);
    r->pending_count++;
}

static void transmit(Nrf24 *r)
{
    int i;
    if (r->tx_count == 0) {
        return;
    }
    if (!r->send) {
        r->regs[R_STATUS] |= MAX_RT;   /* nobody on the air: no acknowledgement */
        return;
    }
    for (i = 0; i < r->tx_count; i++) {
        r->send(r->send_opaque, r->regs[R_RF_CH], r->txq[i]);
        r->regs[R_STATUS] |= TX_DS;
    }
    r->tx_count = 0;
}

static void end_command(Nrf24 *r)
{
    if (r->cmd == 0x61 && r->rx_reading && r->pos > 0) {
        if (r->on_read) {
            r->on_read(r->read_opaque, r->regs[R_RF_CH], r->rxq[0]);
        }
        memmove(r->rxq[0], r->rxq[1], (NRF24_FIFO - 1) * NRF24_FRAME);
        r->rx_count--;
    } else if (r->cmd == 0xa0 && r->pos > 0 && r->tx_count < NRF24_FIFO) {
        memcpy(r->txq[r->tx_count++], r->tx_buf, NRF24_FRAME);
    }
    r->rx_reading = false;
    r->cmd = -1;
    r->pos = 0;
}

void nrf24_control(Nrf24 *r, uint32_t spi_ctrl)
{
    bool sel = (spi_ctrl & 3) == 2;
    bool ce = spi_ctrl & 8;
    bool rising = ce && !r->ce;

    if (sel && !r->selected) {
        r->cmd = -1;
        r->pos = 0;
    } else if (!sel && r->selected) {
        end_command(r);
    }
    r->selected = sel;
    r->ce = ce;
    if (rising && (r->regs[R_CONFIG] & 2) && !(r->regs[R_CONFIG] & 1)) {
        transmit(r);
    }
    if (r->pending_count > 0 && listening(r)) {
        offer_pending(r);
    }
}

static void write_reg(Nrf24 *r, int reg, uint8_t b)
{
    if (reg == R_STATUS) {
        r->regs[R_STATUS] &= ~(b & (RX_DR | TX_DS | MAX_RT));   /* write 1 to clear */
    } else if (reg != R_FIFO_STATUS) {
        r->regs[reg] = b;
    }
}

static uint8_t spi_byte(Nrf24 *r, uint8_t b)
{
    int p;
    if (r->cmd < 0) {
        uint8_t st = status(r);
        r->cmd = b;
        r->pos = 0;
        if (b == 0xe1) {
            r->tx_count = 0;
        } else if (b == 0xe2) {
            r->rx_count = 0;
        } else if (b == 0x61) {
            r->rx_reading = r->rx_count > 0;
        } else if (b == 0xa0) {
            memset(r->tx_buf, 0, NRF24_FRAME);
        }
        return st;   /* the first byte of every command clocks out STATUS */
    }
    p = r->pos++;
    if (r->cmd < 0x20) {
        int reg = r->cmd & 0x1f;
        return reg == R_STATUS ? status(r) : reg == R_FIFO_STATUS ? fifo_status(r) : r->regs[reg];
    }
    if (r->cmd < 0x40) {
        if (p == 0) {
            write_reg(r, r->cmd & 0x1f, b);
        }
        return 0;
    }
    if (r->cmd == 0x61) {
        return r->rx_reading && p < NRF24_FRAME ? r->rxq[0][p] : 0;
    }
    if (r->cmd == 0xa0 && p < NRF24_FRAME) {
        r->tx_buf[p] = b;
    }
    return 0;
}

void nrf24_write(Nrf24 *r, uint32_t value, bool fast)
{
    int i;
    if (!r->selected) {
        return;
    }
    if (!fast) {
        r->reply = spi_byte(r, value & 0xff);
        return;
    }
    r->reply = 0;
    for (i = 0; i < 4; i++) {   /* fast mode: a 32-bit word, least significant byte first */
        r->reply |= (uint32_t)spi_byte(r, (value >> (8 * i)) & 0xff) << (8 * i);
    }
}

uint32_t nrf24_read(Nrf24 *r)
{
    return r->reply;
}
