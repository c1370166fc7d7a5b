/*
 * Console on COM1, the 16550 UART QEMU connects to -serial stdio.
 *
 * TX is polled and sends lines ending in a bare '\n' (the host tty turns it
 * into "\r\n"; see arch/cortex-m/cmsdk_uart.c).
 *
 * RX is interrupt driven into a ring buffer. QEMU's 16550 stops taking
 * input from the host while its FIFO is full, so nothing is lost as long as
 * RBR is never read without storing the byte: when the ring is full the RX
 * interrupt is switched off and the bytes wait in the UART until the main
 * loop has made room.
 */
#include "nr_board.h"
#include "board_defs.h"
#include "x86/io.h"
#include "nr_console_ring.h"
#include "nr_board_tick.h"

#define UART_RBR (COM1_PORT + 0u)
#define UART_THR (COM1_PORT + 0u)
#define UART_DLL (COM1_PORT + 0u)
#define UART_IER (COM1_PORT + 1u)
#define UART_DLM (COM1_PORT + 1u)
#define UART_FCR (COM1_PORT + 2u)
#define UART_LCR (COM1_PORT + 3u)
#define UART_MCR (COM1_PORT + 4u)
#define UART_LSR (COM1_PORT + 5u)

#define IER_RDA   0x01u
#define LSR_DR    0x01u
#define LSR_THRE  0x20u
#define LCR_DLAB  0x80u
#define LCR_8N1   0x03u
#define FCR_FIFO  0x07u  /* enable, clear both, RX trigger at 1 byte */
#define MCR_OUT2  0x08u  /* gates the UART's interrupt onto the PC's IRQ line */
#define MCR_DTR_RTS 0x03u

static struct nr_console_ring rx;

void console_init(void)
{
  outb(UART_IER, 0);
  outb(UART_LCR, LCR_DLAB);
  outb(UART_DLL, 1); /* 115200 baud; QEMU does not emulate the rate */
  outb(UART_DLM, 0);
  outb(UART_LCR, LCR_8N1);
  outb(UART_FCR, FCR_FIFO);
  outb(UART_MCR, MCR_DTR_RTS | MCR_OUT2);
  outb(UART_IER, IER_RDA);
  board_irq_enable(IRQ_COM1);
}

#ifdef CLOCK_PORT_BASE
/* The board's clock port (COM2): transmit only, no interrupts. */
void clock_port_init(void)
{
  outb(CLOCK_PORT_BASE + 1u, 0);        /* IER */
  outb(CLOCK_PORT_BASE + 3u, LCR_DLAB);
  outb(CLOCK_PORT_BASE + 0u, 1);        /* DLL */
  outb(CLOCK_PORT_BASE + 1u, 0);        /* DLM */
  outb(CLOCK_PORT_BASE + 3u, LCR_8N1);
  outb(CLOCK_PORT_BASE + 2u, FCR_FIFO);
}

/* From the tick: never waits (a byte left out still counts in the next one). */
void clock_port_send(uint8_t count)
{
  if (inb(CLOCK_PORT_BASE + 5u) & LSR_THRE) {
    outb(CLOCK_PORT_BASE + 0u, count);
  }
}
#endif

void console_putc_polled(char c)
{
  while (!(inb(UART_LSR) & LSR_THRE)) {
  }
  outb(UART_THR, (uint8_t)c);
}

void board_console_write(const char *buf, size_t len)
{
  for (size_t i = 0; i < len; i++) {
    console_putc_polled(buf[i]);
  }
}

void console_irq_handler(void)
{
  while (inb(UART_LSR) & LSR_DR) {
    if (nr_ring_pause(&rx)) {
      outb(UART_IER, 0);
      return;
    }
    nr_ring_put(&rx, inb(UART_RBR));
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
    /* Room again: re-enabling the interrupt with data waiting raises it at
       once (the 16550 re-evaluates its interrupt on an IER write). */
    outb(UART_IER, IER_RDA);
  }
  return c;
}
