/* SMSC LAN91C111 10/100 Ethernet controller model for the netrepro Ethernut 2 host.
 *
 * Written from the LAN91C111 datasheet's register description: four banks of
 * sixteen byte-wide register addresses, bank select at offset 14, an MMU that
 * hands out 2 KiB packet pages, TX / TX-done / RX FIFOs of packet numbers, the
 * pointer + data register pair for packet memory access, and the interrupt
 * status / mask pair.  The model is byte-addressed (the Ethernut 2 wires the
 * chip to the AVR's 8-bit XMEM bus); a 16-bit register is two byte accesses.
 *
 * Frames leave through a callback (the host sends them as datagrams) after the
 * 10 Mbit/s wire time; received frames are handed in with lan_receive().
 */
#ifndef NETREPRO_LAN91C111_H
#define NETREPRO_LAN91C111_H

#include <stdint.h>
#include <stddef.h>

#define LAN_PAGES      4      /* 8 KiB packet memory = 4 pages of 2 KiB */
#define LAN_PAGE_SIZE  2048
#define LAN_FIFO_LEN   (LAN_PAGES + 1)

/* interrupt status bits (bank 2, offset 12) */
#define LAN_INT_RCV      0x01
#define LAN_INT_TX       0x02
#define LAN_INT_TX_EMPTY 0x04
#define LAN_INT_ALLOC    0x08
#define LAN_INT_RX_OVRN  0x10
#define LAN_INT_EPH      0x20
#define LAN_INT_ERCV     0x40
#define LAN_INT_MD       0x80

typedef struct lan_fifo {
	uint8_t v[LAN_FIFO_LEN];
	int head, count;
} lan_fifo_t;

struct lan91c111;
/* send one frame (no FCS) on the wire */
typedef void (*lan_tx_fn)(struct lan91c111 *lan, const uint8_t *frame, size_t len, void *ctx);
/* start a timer: call lan_tx_done(lan) after `bits` bit times at 10 Mbit/s */
typedef void (*lan_timer_fn)(struct lan91c111 *lan, uint32_t bits, void *ctx);
/* interrupt output level changed (active high) */
typedef void (*lan_irq_fn)(struct lan91c111 *lan, int level, void *ctx);

typedef struct lan91c111 {
	uint8_t bank;
	/* bank 0 */
	uint16_t tcr, eph_status, rcr, rpcr;
	/* bank 1 */
	uint16_t config, base, gp, control;
	uint8_t ia[6];
	/* bank 2 */
	uint8_t pnr, arr;
	uint16_t pointer;
	uint8_t ist, msk;
	/* bank 3 */
	uint8_t mt[8];
	uint16_t mgmt, ercv;

	uint8_t mem[LAN_PAGES][LAN_PAGE_SIZE];
	uint8_t page_used;            /* bit per page */
	int alloc_pending;            /* an allocation failed and waits for a free page */
	lan_fifo_t tx_fifo, txdone_fifo, rx_fifo;
	int tx_busy;                  /* a frame is on the wire */
	int tx_pkt;                   /* its packet number */
	int irq_level;

	/* counters */
	uint64_t tx_frames, rx_frames, rx_dropped_overrun, rx_dropped_filter, rx_dropped_disabled;
	uint64_t accesses;

	lan_tx_fn tx;
	lan_timer_fn timer;
	lan_irq_fn irq;
	void *ctx;
} lan91c111_t;

void lan_init(lan91c111_t *lan, const uint8_t mac[6], lan_tx_fn tx, lan_timer_fn timer,
	      lan_irq_fn irq, void *ctx);
void lan_reset(lan91c111_t *lan);
uint8_t lan_read(lan91c111_t *lan, unsigned offset);   /* offset 0..15 in the current bank */
void lan_write(lan91c111_t *lan, unsigned offset, uint8_t v);
/* a frame (no FCS) arrived from the wire; returns 0 if stored, -1 if dropped */
int lan_receive(lan91c111_t *lan, const uint8_t *frame, size_t len);
/* the frame on the wire has been sent (timer expiry) */
void lan_tx_done(lan91c111_t *lan);

#endif
