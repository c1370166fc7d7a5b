/*
 * lwIP NO_SYS port: time, optional lightweight protection, random numbers,
 * assertion handler.
 */
#include "lwip/opt.h"
#include "lwip/sys.h"

#include "nr_board.h"
#include "nr_printf.h"

u32_t sys_now(void)
{
  return board_ms();
}

#if SYS_LIGHTWEIGHT_PROT
/* lwIP only runs in the main loop here, but a profile may keep the
   protection on; masking interrupts is then the honest implementation. */
sys_prot_t sys_arch_protect(void)
{
  return board_irq_save();
}

void sys_arch_unprotect(sys_prot_t pval)
{
  board_irq_restore(pval);
}
#endif

/* xorshift32 with a fixed seed: local ports and other random choices repeat
   from run to run, which keeps reproductions reproducible. */
static uint32_t rand_state = 0x6e657472u; /* "netr" */

uint32_t netrepro_rand(void)
{
  uint32_t x = rand_state;

  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  rand_state = x;
  return x;
}

void netrepro_assert_failed(const char *msg, const char *file, int line)
{
  board_irq_save();
  nr_printf("\nFAULT lwip-assert \"%s\" at %s:%d\n", msg, file, line);
  for (;;) {
  }
}
