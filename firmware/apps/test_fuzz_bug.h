/*
 * A planted bug, for the fuzzer's own test (tests/test_fuzz.py) only: built
 * with `--set NR_TEST_FUZZ_BUG=1`, a TCP segment that reaches a PCB (listening
 * or connected) carrying a window-scale option whose length byte says 4 (it
 * must be 3) crashes the board through its fault path (an undefined
 * instruction: HardFault on Cortex-M, #UD on x86), which prints the board's
 * FAULT line. lwIP itself skips such an option; the bug is only here so the
 * fuzzer has something real to find. Without the option (every real build)
 * lwipopts.h does not include this header.
 *
 * It is called through lwIP's LWIP_HOOK_TCP_INPACKET_PCB, after lwIP checked
 * the segment's checksum and data offset: options are opt1len bytes after the
 * 20-byte header, then (when the header spans two pbufs) the rest at opt2.
 */
#ifndef TEST_FUZZ_BUG_H
#define TEST_FUZZ_BUG_H

#include <stdint.h>

#define NR_TEST_FUZZ_BUG_KIND 3 /* window scale */
#define NR_TEST_FUZZ_BUG_LEN  4 /* its length byte; a well-formed one says 3 */

static inline uint8_t nr_test_fuzz_opt(const uint8_t *opt1, uint16_t opt1len, const uint8_t *opt2, uint16_t i)
{
  return i < opt1len ? opt1[i] : opt2[i - opt1len];
}

static inline int nr_test_fuzz_bug(const void *hdr, uint16_t optlen, uint16_t opt1len, const uint8_t *opt2)
{
  const uint8_t *opt1 = (const uint8_t *)hdr + 20;
  uint16_t i = 0;

  while (i + 1 < optlen) {
    uint8_t kind = nr_test_fuzz_opt(opt1, opt1len, opt2, i);
    uint8_t len;

    if (kind == 0) {
      break;
    }
    if (kind == 1) {
      i++;
      continue;
    }
    len = nr_test_fuzz_opt(opt1, opt1len, opt2, i + 1);
    if (kind == NR_TEST_FUZZ_BUG_KIND && len == NR_TEST_FUZZ_BUG_LEN) {
      __builtin_trap();
    }
    if (len < 2) {
      break;
    }
    i += len;
  }
  return 0; /* ERR_OK: lwIP goes on with the segment */
}

#endif
