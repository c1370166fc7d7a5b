/*
 * lwIP's OS types for NO_SYS 0, on netrepro's kernel (firmware/kernel). lwIP
 * includes this only when NO_SYS is 0; port/sys_arch_os.c implements the
 * functions of lwIP's sys.h on these types.
 */
#ifndef NETREPRO_ARCH_SYS_ARCH_H
#define NETREPRO_ARCH_SYS_ARCH_H

#include "nr_kernel.h"

/* Semaphores and mutexes live where lwIP keeps them (inside a netconn, the
   core lock), so they are the kernel's objects themselves plus a valid flag:
   lwIP asks sys_sem_valid() of storage it never initialised. */
typedef struct {
  struct nr_sem sem;
  int valid;
} sys_sem_t;

typedef struct {
  struct nr_mutex mutex;
  int valid;
} sys_mutex_t;

/* A mailbox is a pointer to a queue taken from sys_arch_os.c's static pool
   (lwIP creates and frees one per connection: no malloc here). */
struct nr_sys_mbox;
typedef struct nr_sys_mbox *sys_mbox_t;

typedef nr_thread_t *sys_thread_t;

#define sys_sem_valid(s)          ((s) != NULL && (s)->valid)
#define sys_sem_set_invalid(s)    do { if ((s) != NULL) { (s)->valid = 0; } } while (0)
#define sys_mutex_valid(m)        ((m) != NULL && (m)->valid)
#define sys_mutex_set_invalid(m)  do { if ((m) != NULL) { (m)->valid = 0; } } while (0)
#define sys_mbox_valid(mb)        ((mb) != NULL && *(mb) != NULL)
#define sys_mbox_set_invalid(mb)  do { if ((mb) != NULL) { *(mb) = NULL; } } while (0)

/* The kernel sleeps without a semaphore of its own. */
#define sys_msleep(ms) ((void)nr_sleep_ms(ms))

/* Counters of the port, for the "threads" command: sys_mbox_trypost() calls
   that met a full mailbox (lwIP then drops what it posted: an input frame,
   a received segment for a socket), all mailboxes and the tcpip thread's. */
struct nr_sys_stats {
  uint32_t mbox_full;        /* every mailbox */
  uint32_t mbox_full_tcpip;  /* the tcpip thread's mailbox (input frames, callbacks) */
  uint32_t mbox_used;        /* mailboxes in use now */
  uint32_t mbox_fail;        /* sys_mbox_new() refused (pool used up, too big) */
};
void nr_sys_get_stats(struct nr_sys_stats *out);

/* lwIP's thread priority (as the options file gives it) -> the kernel's. */
unsigned nr_sys_prio(int lwip_prio);

#endif
