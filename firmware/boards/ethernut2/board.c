/*
 * Ethernut 2 board support (ATmega128): XMEM, USART0 console, Timer0 1 ms
 * tick, INT5 for the LAN91C111, critical sections and idle sleep.
 */
#include <avr/interrupt.h>
#include <avr/io.h>
#include <avr/sleep.h>

#include "nr_board.h"
#include "nr_nic.h"
#include "board_defs.h"

/* Runs before avr-libc copies .data and clears .bss (.init4), which live in
   external RAM: enable the external memory interface first. */
void board_xmem_init(void) __attribute__((naked, used, section(".init3")));
void board_xmem_init(void)
{
  XMCRB = 0;                          /* full 60 KiB address range, no bus keeper */
  XMCRA = _BV(SRL2) | _BV(SRW11);     /* sector limit 0x8000; upper sector 2 wait states */
  MCUCR = _BV(SRE);                   /* enable XMEM; SRW10 = 0, so upper sector SRW11:10 = 10 */
}

static volatile uint32_t ms_ticks;
static volatile uint8_t rx_buf[CONSOLE_RX_BUF];
static volatile uint8_t rx_head, rx_tail;

ISR(TIMER0_COMP_vect)
{
  ms_ticks++;
}

ISR(USART0_RX_vect)
{
  uint8_t c = UDR0;
  uint8_t next = (uint8_t)((rx_head + 1u) & (CONSOLE_RX_BUF - 1u));

  if (next != rx_tail) {
    rx_buf[rx_head] = c;
    rx_head = next;
  }
}

ISR(INT5_vect)
{
  nic_irq_handler();
}

uint32_t board_ms(void)
{
  uint8_t sreg = SREG;
  uint32_t t;

  cli();
  t = ms_ticks;
  SREG = sreg;
  return t;
}

void board_init(void)
{
  UBRR0H = (uint8_t)(CONSOLE_UBRR >> 8);
  UBRR0L = (uint8_t)CONSOLE_UBRR;
  UCSR0A = 0;
  UCSR0C = _BV(UCSZ01) | _BV(UCSZ00); /* 8N1 */
  UCSR0B = _BV(RXEN0) | _BV(TXEN0) | _BV(RXCIE0);

  TCCR0 = _BV(WGM01) | _BV(CS02);     /* CTC, clk/64 (Timer0 prescaler table) */
  OCR0 = (uint8_t)TICK_OCR;
  TCNT0 = 0;
  TIMSK |= _BV(OCIE0);

  /* INT5: the LAN91C111 drives its INTR line active high. AVR level
     interrupts are low-level only, so use the rising edge; the driver
     masks the chip in the handler and unmasks after draining, so a still
     pending event gives a new edge. */
  EICRB = (uint8_t)((EICRB & ~(_BV(ISC51) | _BV(ISC50))) | _BV(ISC51) | _BV(ISC50));
  EIFR = _BV(INTF5);

  set_sleep_mode(SLEEP_MODE_IDLE);
  sei();
}

void board_console_write(const char *buf, size_t len)
{
  while (len-- > 0) {
    loop_until_bit_is_set(UCSR0A, UDRE0);
    UDR0 = (uint8_t)*buf++;
  }
}

int board_console_getc(void)
{
  uint8_t c;

  if (rx_head == rx_tail) {
    return -1;
  }
  c = rx_buf[rx_tail];
  rx_tail = (uint8_t)((rx_tail + 1u) & (CONSOLE_RX_BUF - 1u));
  return c;
}

int board_console_rx_pending(void)
{
  return rx_head != rx_tail;
}

void board_irq_enable(unsigned irq)
{
  if (irq == 5u) {
    EIFR = _BV(INTF5);
    EIMSK |= _BV(INT5);
  }
}

uint32_t board_irq_save(void)
{
  uint8_t sreg = SREG;

  cli();
  return sreg;
}

void board_irq_restore(uint32_t state)
{
  SREG = (uint8_t)state;
}

/* Called with interrupts off: "sei; sleep" is atomic on AVR (the instruction
   after sei runs before any interrupt), so no wake-up is lost. The interrupt
   handler runs on wake-up; the caller then restores its saved state. */
void board_wait_for_interrupt(void)
{
  sleep_enable();
  __asm__ __volatile__("sei\n\tsleep" ::: "memory");
  sleep_disable();
  cli();
}

/* "spin": a countdown of 6 cycles an iteration (subi and three sbci, 1 cycle
   each, and a taken brne, 2), 5 for the last, timed by Timer1 at clk/1. The
   count is exact with interrupts off and under 65536 cycles; otherwise 0. */
uint32_t board_spin(uint32_t iterations, int irqs_off)
{
  uint8_t sreg = SREG;
  uint16_t t0, t1;
  uint8_t overflowed;

  if (irqs_off) {
    cli();
  }
  TCCR1A = 0;
  TCCR1B = _BV(CS10);
  TIFR = _BV(TOV1);
  t0 = TCNT1;
  if (iterations > 0) {
    __asm__ __volatile__("1: subi %A0, 1\n\t"
                         "sbci %B0, 0\n\t"
                         "sbci %C0, 0\n\t"
                         "sbci %D0, 0\n\t"
                         "brne 1b"
                         : "+d"(iterations));
  }
  t1 = TCNT1;
  overflowed = (uint8_t)(TIFR & _BV(TOV1));
  TCCR1B = 0;
  SREG = sreg;
  return (irqs_off && !overflowed) ? (uint16_t)(t1 - t0) : 0u;
}
