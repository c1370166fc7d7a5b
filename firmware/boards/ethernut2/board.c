/*
 * Ethernut 2 board support (ATmega128): XMEM, USART0 console, Timer0 1 ms
 * tick, the board's fine clock and CPU load, INT5 for the LAN91C111,
 * critical sections and idle sleep.
 *
 * The tick is never stretched here: the simavr board host paces simulated
 * cycles against the wall clock divided by the dilation itself (its
 * --dilation), so the firmware's own millisecond is already the board's.
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
static uint64_t idle_counts; /* Timer0 counts asleep in board_wait_for_interrupt() */
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

/* Timer0 counts TICK_OCR + 1 steps of clk/64 a tick (230 of 4.34 us). */
#define TICK_PERIOD (TICK_OCR + 1u)
#define NS_PER_MS 1000000ul
#define NS_PER_COUNT_Q8 ((uint32_t)((NS_PER_MS * 256u + TICK_PERIOD / 2u) / TICK_PERIOD))

void board_get_tick(struct board_tick *out)
{
  out->dilation_milli = 1000u;
  out->period = TICK_PERIOD;
  out->input_hz = (uint32_t)(CPU_HZ / TICK_PRESCALE);
  out->min_milli = 1000u;
  out->max_milli = 1000u;
}

int board_clock_port(int on)
{
  (void)on;
  return BOARD_TICK_PACED; /* the board host paces the simulated clock itself */
}

int board_set_tick_dilation(uint32_t milli)
{
  return milli == 1000u ? BOARD_TICK_OK : BOARD_TICK_PACED;
}

/* The tick as (ms, Timer0 counts into it). With interrupts off a compare
   match since the last tick shows as OCF0 instead of in ms_ticks; TCNT0 is
   read again when it is seen, because the match may have come between the
   two reads. */
static uint32_t tick_now(uint8_t *count)
{
  uint8_t sreg = SREG;
  uint32_t ms;

  cli();
  ms = ms_ticks;
  *count = TCNT0;
  if (TIFR & _BV(OCF0)) {
    *count = TCNT0;
    ms++;
  }
  SREG = sreg;
  return ms;
}

uint64_t board_time_ns(void)
{
  uint8_t count;
  uint32_t ms = tick_now(&count);

  return (uint64_t)ms * NS_PER_MS + (((uint32_t)count * NS_PER_COUNT_Q8) >> 8);
}

/* Idle time is kept in Timer0 counts and converted only when asked for:
   the accounting runs twice per idle wait, and multiplies cost tens of
   cycles each on this core (a 64-bit one hundreds). */
uint64_t board_idle_ns(void)
{
  uint8_t sreg = SREG;
  uint64_t counts;

  cli();
  counts = idle_counts;
  SREG = sreg;
  return (counts * NS_PER_COUNT_Q8) >> 8;
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
  uint8_t c0, c1;
  uint32_t ms0 = tick_now(&c0), ms1;

  sleep_enable();
  __asm__ __volatile__("sei\n\tsleep" ::: "memory");
  sleep_disable();
  cli();
  /* The interrupt that woke the core has run by now (the AVR runs it before
     the instruction after sleep), so its few dozen cycles count as idle. */
  ms1 = tick_now(&c1);
  idle_counts += (ms1 - ms0) * TICK_PERIOD + c1 - c0;
}

/* Five instructions an iteration (subi, three sbci, brne). */
uint32_t board_spin_instructions(void)
{
  return 5;
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
