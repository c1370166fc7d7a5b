/* TX throughput probe for netrepro-ethernut: sends 300 frames of 1514 bytes,
 * byte-wide through the LAN91C111 data register with AUTO_RELEASE, waiting on
 * the MMU when all pages are in flight; then stops the simulation.  The frame
 * rate shows the CPU's copy cost against the 10 Mbit/s wire time. */
#include <avr/io.h>
#include <avr/interrupt.h>
#include <avr/sleep.h>
#include <stdint.h>

#define R(off) (((volatile uint8_t *)0xC000)[(off)])

static void puts0(const char *s)
{
	for (; *s; s++) {
		while (!(UCSR0A & _BV(UDRE0)))
			;
		UDR0 = *s;
	}
}

int main(void)
{
	MCUCR |= _BV(SRE);
	XMCRA = _BV(SRW11);
	UBRR0L = 7;
	UCSR0B = _BV(TXEN0);
	UCSR0C = _BV(UCSZ01) | _BV(UCSZ00);
	puts0("blast start\r\n");
	R(14) = 1;
	R(13) |= 0x08;            /* CONTROL high byte: AUTO_RELEASE */
	R(14) = 0;
	R(0) = 0x81;              /* TCR: TXENA | PAD_EN */
	R(14) = 2;
	for (uint16_t k = 0; k < 300; k++) {
		R(0) = 0x20;                      /* allocate */
		while (R(3) & 0x80)               /* wait for a page */
			;
		R(2) = R(3);
		R(6) = 0;
		R(7) = 0x40;                      /* AUTO INCR, write */
		R(8) = 0; R(8) = 0;
		uint16_t bc = 1514 + 6;
		R(8) = bc; R(8) = bc >> 8;
		for (uint8_t i = 0; i < 6; i++)
			R(8) = 0xff;
		R(8) = 2; R(8) = 0; R(8) = 0; R(8) = 0; R(8) = 0; R(8) = 1;
		R(8) = 0x88; R(8) = 0xb5;
		R(8) = k; R(8) = k >> 8;
		for (uint16_t i = 16; i < 1514; i++)
			R(8) = (uint8_t)i;
		R(8) = 0; R(8) = 0;                 /* even: control 0 */
		R(0) = 0xC0;                        /* enqueue */
	}
	while (!(R(12) & 0x04))             /* TX_EMPTY */
		;
	puts0("blast done\r\n");
	while (!(UCSR0A & _BV(TXC0)))
		;
	cli();
	sleep_cpu();
}
