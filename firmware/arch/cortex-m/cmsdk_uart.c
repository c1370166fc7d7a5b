/*
 * Console on the CMSDK APB UART (QEMU's first serial port).
 *
 * TX is polled and sends lines ending in a bare '\n': QEMU's -serial stdio
 * keeps the host tty's output processing on, which turns it into "\r\n"
 * (a "\r\n" from here would arrive as "\r\r\n").
 *
 * RX is interrupt driven into the shared ring (nr_console_ring.h). QEMU's UART holds one character
 * and stops taking input from the host while it is unread, so no character
 * is lost as long as we never read DATA without storing it: when the ring is
 * full the RX interrupt is switched off and the character stays in the UART
 * until the main loop has made room.
 */
#include "nr_board.h"
#include "board_defs.h"
#include "cortex-m/regs.h"
#include "nr_console_ring.h"
#include "nr_board_tick.h"

#define UART_DATA      REG32(CONSOLE_UART_BASE + 0x00u)
#define UART_STATE     REG32(CONSOLE_UART_BASE + 0x04u)
#define UART_CTRL      REG32(CONSOLE_UART_BASE + 0x08u)
#define UART_INTSTATUS REG32(CONSOLE_UART_BASE + 0x0Cu)
#define UART_BAUDDIV   REG32(CONSOLE_UART_BASE + 0x10u)

#define STATE_TXFULL   (1u << 0)
#define STATE_RXFULL   (1u << 1)
#define CTRL_TX_EN     (1u << 0)
#define CTRL_RX_EN     (1u << 1)
#define CTRL_RX_INTEN  (1u << 3)
#define INT_RX         (1u << 1)

static struct nr_console_ring rx;

void console_init(void)
{
  UART_BAUDDIV = CONSOLE_UART_PCLK_HZ / CONSOLE_BAUD;
  UART_CTRL = CTRL_TX_EN | CTRL_RX_EN | CTRL_RX_INTEN;
  board_irq_enable(CONSOLE_UART_IRQ);
}

#ifdef CLOCK_PORT_BASE
#define CLOCK_DATA  REG32(CLOCK_PORT_BASE + 0x00u)
#define CLOCK_STATE REG32(CLOCK_PORT_BASE + 0x04u)
#define CLOCK_CTRL  REG32(CLOCK_PORT_BASE + 0x08u)
#define CLOCK_DIV   REG32(CLOCK_PORT_BASE + 0x10u)

void clock_port_init(void)
{
  CLOCK_DIV = CONSOLE_UART_PCLK_HZ / CONSOLE_BAUD;
  CLOCK_CTRL = CTRL_TX_EN;
}

/* From the tick: never waits (a byte the port cannot take now is left out;
   the next byte's count still tells the link how many ticks passed). */
void clock_port_send(uint8_t count)
{
  if (!(CLOCK_STATE & STATE_TXFULL)) {
    CLOCK_DATA = count;
  }
}
#endif

void console_putc_polled(char c)
{
  while (UART_STATE & STATE_TXFULL) {
  }
  UART_DATA = (uint8_t)c;
}

void board_console_write(const char *buf, size_t len)
{
  for (size_t i = 0; i < len; i++) {
    console_putc_polled(buf[i]);
  }
}

void console_uart_handler(void)
{
  /* Acknowledge first: a character arriving after the last RXFULL check
     below raises the interrupt again. */
  UART_INTSTATUS = INT_RX;
  while (UART_STATE & STATE_RXFULL) {
    if (nr_ring_pause(&rx)) {
      UART_CTRL &= ~CTRL_RX_INTEN;
      return;
    }
    nr_ring_put(&rx, (uint8_t)UART_DATA);
  }
}

int board_console_rx_pending(void)
{
  return nr_ring_pending(&rx);
}

int board_console_getc(void)
{
  int resume;
  int c = nr_ring_get(&rx, &resume);

  if (resume) {
    /* Room again: re-arm and let the ISR collect what waited in the UART. */
    UART_CTRL |= CTRL_RX_INTEN;
    nvic_set_pending(CONSOLE_UART_IRQ);
  }
  return c;
}
