/* Board self-test firmware for netrepro-ethernut (ATmega128 @ 14.7456 MHz).
 * Enables XMEM, checks external RAM, probes the LAN91C111, sends a frame,
 * waits for one received frame (via INT5) and dumps its header, then runs a
 * timed loop so the host's pacing can be checked. Output on USART0, 115200 8N1. */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>
#include <stdio.h>

#define NIC ((volatile uint8_t *)0xC000)
#define R(off) NIC[(off)]

static int uart_putc(char c, FILE *f)
{
	(void)f;
	if (c == '\n')
		uart_putc('\r', f);
	while (!(UCSR0A & _BV(UDRE0)))
		;
	UDR0 = c;
	return 0;
}
static FILE out = FDEV_SETUP_STREAM(uart_putc, NULL, _FDEV_SETUP_WRITE);

static void bank(uint8_t b) { R(14) = b; }
static uint16_t rd16(uint8_t off) { uint8_t l = R(off); return l | (R(off + 1) << 8); }
static void wr16(uint8_t off, uint16_t v) { R(off) = v; R(off + 1) = v >> 8; }

static volatile uint8_t int5_count;
ISR(INT5_vect)
{
	int5_count++;
	bank(2);
	R(13) = 0;          /* mask all: the main loop polls IST */
}

static volatile uint32_t ticks;   /* timer0 overflows */

int main(void)
{
	MCUCR |= _BV(SRE);              /* enable XMEM */
	XMCRA = _BV(SRW11);            /* upper sector: 2 wait states */
	UBRR0H = 0;
	UBRR0L = 7;                     /* 115200 @ 14.7456 MHz */
	UCSR0B = _BV(TXEN0) | _BV(RXEN0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	stdout = &out;
	printf("nictest: hello from the ATmega128\n");

	/* external RAM */
	volatile uint8_t *xr = (volatile uint8_t *)0x1100;
	uint16_t bad = 0;
	for (uint16_t i = 0; i < 0xAF00; i += 97)
		xr[i] = (uint8_t)(i ^ (i >> 8));
	for (uint16_t i = 0; i < 0xAF00; i += 97)
		if (xr[i] != (uint8_t)(i ^ (i >> 8)))
			bad++;
	printf("xram: %u bad\n", bad);

	/* XMEM wait states: 8 loads from external RAM minus 8 from internal RAM,
	 * timed with Timer1 at clk/1 (the ATmega128 adds 1 cycle per external
	 * access plus the sector's wait states) */
	TCCR1B = _BV(CS10);
	printf("xwait");
	for (uint8_t m = 0; m < 3; m++) {
		if (m == 1)
			MCUCR |= _BV(SRW10);                      /* upper sector: SRW11:10 = 3 */
		if (m == 2)
			XMCRA = _BV(SRL2) | _BV(SRW00);            /* 0x1100-0x7FFF lower sector, 1 wait */
		uint16_t a, b, c;
		cli();
		a = TCNT1;
		__asm__ volatile ("lds r0, 0x0200\n\tlds r0, 0x0200\n\tlds r0, 0x0200\n\tlds r0, 0x0200\n\t"
				  "lds r0, 0x0200\n\tlds r0, 0x0200\n\tlds r0, 0x0200\n\tlds r0, 0x0200" ::: "r0");
		b = TCNT1;
		__asm__ volatile ("lds r0, 0x2000\n\tlds r0, 0x2000\n\tlds r0, 0x2000\n\tlds r0, 0x2000\n\t"
				  "lds r0, 0x2000\n\tlds r0, 0x2000\n\tlds r0, 0x2000\n\tlds r0, 0x2000" ::: "r0");
		c = TCNT1;
		printf(" %u", (uint16_t)((c - b) - (b - a)));
	}
	printf("\n");
	MCUCR &= ~_BV(SRW10);
	XMCRA = _BV(SRW11);

	/* NIC probe */
	bank(3);
	printf("bsr=%04x rev=%04x\n", rd16(14), rd16(10));
	bank(1);
	printf("mac=%02x:%02x:%02x:%02x:%02x:%02x control=%04x\n", R(4), R(5), R(6), R(7), R(8), R(9), rd16(12));
	bank(0);
	printf("mir=%04x\n", rd16(8));
	wr16(0, 0x0081);     /* TCR: TXENA | PAD_EN */
	wr16(4, 0x0300);     /* RCR: RXEN | STRIP_CRC */

	/* TX: allocate, write, enqueue */
	bank(2);
	R(0) = 0x20;
	uint8_t arr = R(3);
	printf("alloc arr=%02x ist=%02x\n", arr, R(12));
	R(2) = arr;
	wr16(6, 0x4000);      /* AUTO INCR, write, offset 0 */
	static const uint8_t frame[] = {
		0xff,0xff,0xff,0xff,0xff,0xff, 0x02,0,0,0,0,1, 0x88,0xb5,
		'n','e','t','r','e','p','r','o','!'};
	uint8_t n = sizeof frame;    /* 23 bytes: odd */
	R(8) = 0; R(8) = 0;                          /* status */
	uint16_t bc = (n & ~1) + 6;
	R(8) = bc; R(8) = bc >> 8;                   /* byte count */
	for (uint8_t i = 0; i < (n & ~1); i++)
		R(8) = frame[i];
	R(8) = frame[n - 1]; R(8) = 0x20;             /* odd byte + control ODD */
	R(0) = 0xC0;                                  /* enqueue */
	uint16_t spins = 0;
	while (!(R(12) & 0x02))
		spins++;
	printf("tx done after %u polls: fifo=%02x ist=%02x\n", spins, R(4), R(12));
	R(2) = R(4) & 0x3f;
	R(0) = 0xA0;          /* release */
	R(12) = 0x02;         /* ack TX_INT */

	/* RX via INT5 */
	EICRB = _BV(ISC51) | _BV(ISC50);  /* rising edge */
	EIMSK |= _BV(INT5);
	sei();
	R(13) = 0x01;          /* RCV_INT */
	printf("waiting for a frame\n");
	while (!int5_count)
		;
	printf("int5=%u ist=%02x rxfifo=%02x\n", int5_count, R(12), R(5));
	wr16(6, 0x8000 | 0x4000 | 0x2000);   /* RCV | AUTO INCR | READ, offset 0 */
	uint16_t st = R(8) | (R(8) << 8);
	uint16_t cnt = R(8) | (R(8) << 8);
	printf("rx status=%04x count=%u data=", st, cnt);
	for (uint8_t i = 0; i < 16; i++)
		printf("%02x", R(8));
	wr16(6, 0x8000 | 0x4000 | 0x2000 | (cnt - 2));
	uint8_t last = R(8), ctl = R(8);
	printf(" last=%02x ctl=%02x\n", last, ctl);
	R(0) = 0x80;           /* remove and release */
	printf("after release rxfifo=%02x mir=", R(5));
	bank(0);
	printf("%04x\n", rd16(8));

	/* timing: 10 s measured by timer1 (CTC, 1 ms ticks) and 1,000,000 loops */
	printf("loop start\n");
	for (uint8_t s = 0; s < 10; s++) {
		/* busy wait exactly 14745600 cycles: 4-cycle loop (sbiw+brne) */
		uint16_t outer = 225;
		while (outer--) {
			uint16_t k = 16384;
			__asm__ volatile ("1: sbiw %0,1\n\tbrne 1b" : "+w"(k));
		}
		printf("tick %u\n", s + 1);
	}
	printf("done\n");
	/* console input: echo each line upper-cased; "halt" ends the simulation */
	char line[32];
	uint8_t len = 0;
	for (;;) {
		while (!(UCSR0A & _BV(RXC0)))
			;
		char ch = UDR0;
		if (ch == '\r' || ch == '\n') {
			line[len] = 0;
			if (len == 4 && line[0] == 'h' && line[1] == 'a' && line[2] == 'l' && line[3] == 't') {
				printf("halting\n");
				while (!(UCSR0A & _BV(TXC0)))
					;
				cli();
				sleep_cpu();
			}
			for (uint8_t i = 0; i < len; i++)
				if (line[i] >= 'a' && line[i] <= 'z')
					line[i] -= 32;
			printf("echo: %s\n", line);
			len = 0;
		} else if (len < sizeof line - 1) {
			line[len++] = ch;
		}
	}
}
