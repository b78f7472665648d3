/*
 * nRF24L01+ radio on the Oberon board's SPI (device 2), as SCC.Mod drives it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_RISC5_NRF24_H
#define HW_RISC5_NRF24_H

#include <stdint.h>
#include <stdbool.h>

#define NRF24_FRAME 32        /* payload bytes: one air frame */
#define NRF24_FIFO 3          /* RX and TX FIFOs of the chip */
#define NRF24_PENDING 16      /* frames from the air waiting for the radio to listen */
#define NRF24_PENDING_MS 250  /* a waiting frame older than this is lost, as on the real air */

typedef void Nrf24SendFn(void *opaque, uint8_t channel, const uint8_t *payload);
typedef uint32_t Nrf24NowFn(void *opaque);
/* A frame the guest read out of the RX FIFO (R_RX_PAYLOAD), on the channel it listens to. */
typedef void Nrf24ReadFn(void *opaque, uint8_t channel, const uint8_t *payload);

typedef struct Nrf24 {
    uint8_t regs[32];
    uint8_t rxq[NRF24_FIFO][NRF24_FRAME];
    int rx_count;
    uint8_t txq[NRF24_FIFO][NRF24_FRAME];
    int tx_count;
    struct {
        uint8_t channel;
        uint8_t payload[NRF24_FRAME];
        uint32_t at;
    } pending[NRF24_PENDING];
    int pending_count;
    bool selected, ce;
    int cmd, pos;
    uint32_t reply;
    uint8_t tx_buf[NRF24_FRAME];
    bool rx_reading;
    Nrf24SendFn *send;
    void *send_opaque;
    Nrf24NowFn *now;
    void *now_opaque;
    Nrf24ReadFn *on_read;
    void *read_opaque;
} Nrf24;

void nrf24_init(Nrf24 *r, Nrf24NowFn *now, void *opaque);
void nrf24_set_air(Nrf24 *r, Nrf24SendFn *send, void *opaque);
void nrf24_set_read_log(Nrf24 *r, Nrf24ReadFn *on_read, void *opaque);
void nrf24_control(Nrf24 *r, uint32_t spi_ctrl);
void nrf24_write(Nrf24 *r, uint32_t value, bool fast);
uint32_t nrf24_read(Nrf24 *r);
void nrf24_receive(Nrf24 *r, uint8_t channel, const uint8_t *payload);

#endif
