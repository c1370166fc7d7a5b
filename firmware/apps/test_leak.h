/*
 * A deliberate leak, for the leak check's own test (tests/test_leaks.py)
 * only: built with `--set NR_TEST_LEAK_PBUF=N`, the socket benchmark takes N
 * PBUF_POOL pbufs when its connection is established and never frees them,
 * so a run must report memp pool PBUF_POOL N elements short. Without the
 * option (every real build) this is empty.
 */
#ifndef TEST_LEAK_H
#define TEST_LEAK_H

#include "lwip/pbuf.h"

static inline void test_leak_per_connection(void)
{
#if defined(NR_TEST_LEAK_PBUF) && NR_TEST_LEAK_PBUF
  for (int i = 0; i < NR_TEST_LEAK_PBUF; i++) {
    (void)pbuf_alloc(PBUF_RAW, 1, PBUF_POOL);
  }
#endif
}

#endif
