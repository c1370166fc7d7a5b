/* Host-side unit test of the LAN91C111 model (no simavr): MMU allocation and
 * release, RX overrun, TX wire timing request, TX-done FIFO, auto-release,
 * interrupt line.  Prints "lan_unit: ok" and exits 0 on success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lan91c111.h"

static int fails;
#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #c); fails++; } } while (0)

static int irq_level, tx_count, timer_bits;
static size_t tx_len;
static void tx(lan91c111_t *l, const uint8_t *f, size_t n, void *c) { (void)l; (void)f; (void)c; tx_count++; tx_len = n; }
static void timer(lan91c111_t *l, uint32_t bits, void *c) { (void)l; (void)c; timer_bits = (int)bits; }
static void irq(lan91c111_t *l, int level, void *c) { (void)l; (void)c; irq_level = level; }

static void wr16(lan91c111_t *l, unsigned off, uint16_t v) { lan_write(l, off, v & 0xFF); lan_write(l, off + 1, v >> 8); }
static uint16_t rd16(lan91c111_t *l, unsigned off) { uint8_t lo = lan_read(l, off); return lo | (lan_read(l, off + 1) << 8); }

int main(void)
{
	static lan91c111_t lan;
	const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
	lan_init(&lan, mac, tx, timer, irq, NULL);
	CHECK(rd16(&lan, 14) == 0x3300);
	wr16(&lan, 4, 0x0300);               /* RCR: RXEN | STRIP_CRC */
	wr16(&lan, 0, 0x0001);               /* TCR: TXENA */
	lan_write(&lan, 14, 2);
	lan_write(&lan, 13, 0x1F);           /* mask RCV TX TX_EMPTY ALLOC RX_OVRN */
	CHECK(irq_level == 1);               /* TX_EMPTY is set after reset */
	lan_write(&lan, 12, 0x04);           /* ack TX_EMPTY */
	CHECK(irq_level == 0);

	/* fill all four pages with received frames, the fifth overruns */
	uint8_t f[64];
	memset(f, 0xAB, sizeof f);
	memcpy(f, mac, 6);
	for (int i = 0; i < 4; i++)
		CHECK(lan_receive(&lan, f, sizeof f) == 0);
	CHECK(irq_level == 1 && (lan_read(&lan, 12) & 0x01));
	CHECK(lan_receive(&lan, f, sizeof f) == -1);
	CHECK(lan_read(&lan, 12) & 0x10);    /* RX_OVRN */
	lan_write(&lan, 12, 0x10);
	CHECK(!(lan_read(&lan, 12) & 0x10));
	lan_write(&lan, 14, 0);
	CHECK(rd16(&lan, 8) == 0x0004);      /* MIR: 4 pages, 0 free */
	lan_write(&lan, 14, 2);

	/* a frame for another MAC is filtered out */
	f[5] = 9;
	lan_write(&lan, 0, 0x80);            /* remove+release one RX frame */
	CHECK(lan_receive(&lan, f, sizeof f) == -1);
	f[5] = 1;

	/* allocation fails while memory is full, completes when a page frees */
	lan_receive(&lan, f, sizeof f);
	lan_write(&lan, 0, 0x20);
	CHECK(lan_read(&lan, 3) & 0x80);     /* ARR FAILED */
	CHECK(!(lan_read(&lan, 12) & 0x08));
	lan_write(&lan, 0, 0x80);
	CHECK(!(lan_read(&lan, 3) & 0x80));
	CHECK(lan_read(&lan, 12) & 0x08);    /* ALLOC_INT */
	uint8_t p = lan_read(&lan, 3);

	/* write a 100-byte frame, enqueue: the model asks for the wire time */
	lan_write(&lan, 2, p);
	wr16(&lan, 6, 0x4000);
	lan_write(&lan, 8, 0); lan_write(&lan, 8, 0);
	lan_write(&lan, 8, 106); lan_write(&lan, 8, 0);
	for (int i = 0; i < 100; i++)
		lan_write(&lan, 8, (uint8_t)i);
	lan_write(&lan, 8, 0); lan_write(&lan, 8, 0);  /* even: control 0 */
	lan_write(&lan, 0, 0xC0);
	CHECK(timer_bits == (100 + 4 + 8 + 12) * 8);
	CHECK(tx_count == 0);
	lan_tx_done(&lan);
	CHECK(tx_count == 1 && tx_len == 100);
	CHECK(lan_read(&lan, 4) == p);        /* TX done FIFO */
	CHECK(lan_read(&lan, 12) & 0x06);     /* TX_INT | TX_EMPTY */
	lan_write(&lan, 12, 0x02);
	CHECK(lan_read(&lan, 4) & 0x80);      /* TEMPTY after the ack */
	/* status word written back: TX_SUC */
	wr16(&lan, 6, 0x6000);
	CHECK((lan_read(&lan, 8) & 1) == 1);

	/* auto-release: page freed, nothing in the TX done FIFO */
	lan_write(&lan, 14, 1);
	wr16(&lan, 12, rd16(&lan, 12) | 0x0800);
	lan_write(&lan, 14, 2);
	lan_write(&lan, 0, 0xC0);             /* re-send the same packet */
	lan_tx_done(&lan);
	CHECK(tx_count == 2);
	CHECK(lan_read(&lan, 4) & 0x80);
	lan_write(&lan, 14, 0);
	CHECK((rd16(&lan, 8) >> 8) == 1);     /* 3 RX pages still in use, 1 free */

	if (fails)
		return 1;
	printf("lan_unit: ok\n");
	return 0;
}
