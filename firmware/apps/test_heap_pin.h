/*
 * A deliberate hole in lwIP's heap, for the test of the socket benchmark's
 * ERR_MEM judgement (tests/test_heap.py) only: built with
 * `--set NR_TEST_HEAP_PIN=N`, the benchmark holds a 16-byte block N bytes
 * into the heap while its connection lasts (it takes N bytes, then the pin,
 * then gives the N back), so the free space is cut in two there. Without the
 * option (every real build) this is empty.
 */
#ifndef TEST_HEAP_PIN_H
#define TEST_HEAP_PIN_H

#include "lwip/mem.h"

#if defined(NR_TEST_HEAP_PIN) && NR_TEST_HEAP_PIN
static void *test_heap_pin;
#endif

static inline void test_heap_pin_take(void)
{
#if defined(NR_TEST_HEAP_PIN) && NR_TEST_HEAP_PIN
  void *below = mem_malloc(NR_TEST_HEAP_PIN);

  test_heap_pin = mem_malloc(16);
  if (below != NULL) {
    mem_free(below);
  }
#endif
}

static inline void test_heap_pin_release(void)
{
#if defined(NR_TEST_HEAP_PIN) && NR_TEST_HEAP_PIN
  if (test_heap_pin != NULL) {
    mem_free(test_heap_pin);
    test_heap_pin = NULL;
  }
#endif
}

#endif
