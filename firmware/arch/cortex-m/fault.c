/*
 * Fault dump: every unexpected exception lands here. Prints one line starting
 * with "FAULT" (exception number, fault status registers, the stacked
 * r0-r3, r12, lr, pc, xpsr) on the polled console and stops.
 */
#include <stdint.h>

#include "cortex-m/regs.h"

void console_putc_polled(char c);
void fault_report(const uint32_t *frame, uint32_t ipsr);

/* Picks the stack the exception frame was pushed on (EXC_RETURN bit 2). */
__attribute__((naked)) void fault_entry(void)
{
  __asm volatile(
    "tst lr, #4\n\t"
    "ite eq\n\t"
    "mrseq r0, msp\n\t"
    "mrsne r0, psp\n\t"
    "mrs r1, ipsr\n\t"
    "b fault_report\n\t");
}

static void put_str(const char *s)
{
  while (*s) {
    console_putc_polled(*s++);
  }
}

static void put_field(const char *name, uint32_t value)
{
  static const char hex[] = "0123456789abcdef";

  put_str(name);
  put_str("=0x");
  for (int shift = 28; shift >= 0; shift -= 4) {
    console_putc_polled(hex[(value >> shift) & 0xFu]);
  }
}

void fault_report(const uint32_t *frame, uint32_t ipsr)
{
  static const char *const regs[] = { " r0", " r1", " r2", " r3", " r12", " lr", " pc", " xpsr" };

  put_str("\nFAULT");
  put_field(" exc", ipsr & 0x1FFu);
  put_field(" CFSR", SCB_CFSR);
  put_field(" HFSR", SCB_HFSR);
  put_field(" MMFAR", SCB_MMFAR);
  put_field(" BFAR", SCB_BFAR);
  for (unsigned i = 0; i < 8u; i++) {
    put_field(regs[i], frame[i]);
  }
  put_str("\n");
  for (;;) {
  }
}
