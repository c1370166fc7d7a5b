/*
 * lwIP compiler/platform glue for arm-none-eabi-gcc + newlib, NO_SYS=1.
 */
#ifndef NETREPRO_ARCH_CC_H
#define NETREPRO_ARCH_CC_H

#include <stdint.h>

#include "nr_printf.h"

/* Only used if the profile keeps SYS_LIGHTWEIGHT_PROT on: PRIMASK state. */
typedef uint32_t sys_prot_t;

#define LWIP_PLATFORM_DIAG(x) do { nr_printf x; } while (0)
#define LWIP_PLATFORM_ASSERT(x) netrepro_assert_failed((x), __FILE__, __LINE__)

void netrepro_assert_failed(const char *msg, const char *file, int line)
  __attribute__((noreturn));

/* Default of LWIP_RAND() in profiles/base.h. */
uint32_t netrepro_rand(void);

/* lwIP's heap and pools (ram_heap, memp_memory_*) go to the big BULK region
   so a profile's MEM_SIZE / PBUF_POOL_SIZE cannot overflow DTCM. */
/* A board without a .bulk region (ethernut2: everything is in external RAM)
   defines NR_BULK_ATTR empty, which leaves the arrays in .bss. */
#ifndef NR_BULK_ATTR
#define NR_BULK_ATTR __attribute__((section(".bulk")))
#endif
#define LWIP_DECLARE_MEMORY_ALIGNED(variable_name, size) \
  u8_t variable_name[LWIP_MEM_ALIGN_BUFFER(size)] NR_BULK_ATTR

#endif
