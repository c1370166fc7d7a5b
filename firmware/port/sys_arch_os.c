/*
 * lwIP's OS layer (sys.h) for NO_SYS 0, on netrepro's kernel
 * (firmware/kernel/nr_kernel.h). Written from lwIP 2.1's sys.h contract:
 *  - timeouts are in ms, 0 meaning "wait forever"; the kernel counts board
 *    ms, so a lwIP ms is a kernel tick and device time (the board's tick
 *    dilation) stretches both alike;
 *  - sys_arch_sem_wait()/sys_arch_mbox_fetch() return SYS_ARCH_TIMEOUT, or
 *    the ms waited (lwIP's timers only use it as a hint);
 *  - mailboxes hold pointers; sys_mbox_trypost() never blocks and is what
 *    lwIP uses for received frames (tcpip_input) and segments handed to a
 *    socket, so a full mailbox there is a dropped packet: it is counted
 *    (the "threads" command prints the counters).
 * sys_now(), sys_arch_protect() and the random source stay in sys_arch.c
 * (shared with NO_SYS 1): masking interrupts with PRIMASK is also right for
 * threads, since the kernel switches only once the mask is lifted.
 *
 * Thread priorities. lwIP passes the options file's numbers through
 * (TCPIP_THREAD_PRIO, DEFAULT_THREAD_PRIO, ...). Most lwIP products on
 * Cortex-M are STM32Cube-style ports on CMSIS-RTOS2, whose osPriority_t runs
 * 1 (Idle) .. 55 (Realtime7), Normal = 24, High = 40, higher more urgent;
 * those are the numbers such a file holds. The kernel has 1..NR_KERNEL_PRIO_MAX
 * (31), higher more urgent, so a lwIP priority p becomes (p + 1) / 2, kept
 * within 1..NR_KERNEL_PRIO_MAX: Low 8 -> 4, Normal 24 -> 12, AboveNormal 32
 * -> 16, High 40 -> 20, Realtime 48 -> 24. The order of any two priorities
 * is kept, only neighbours (24 and 25) may share a kernel priority. A file
 * written for FreeRTOS's own numbers (0..configMAX_PRIORITIES-1, small)
 * keeps its order too, just lower in the kernel's range.
 *
 * Stack sizes are bytes (as CMSIS-RTOS2 counts them), at least the kernel's
 * NR_KERNEL_MIN_STACK; stacks come from the kernel's static pool.
 */
#include "lwip/opt.h"

#if !NO_SYS

#include <string.h>

#include "lwip/err.h"
#include "lwip/sys.h"

#include "nr_board.h"
#include "nr_kernel.h"

/* Mailboxes: a fixed pool, each with room for NR_SYS_MBOX_CAP pointers
   (a size above that is refused, so sys_mbox_new() fails and lwIP reports
   it: an assertion for the tcpip thread's, ERR_MEM for a connection). */
#ifndef NR_SYS_MBOX_MAX
#define NR_SYS_MBOX_MAX 16
#endif
#ifndef NR_SYS_MBOX_CAP
#define NR_SYS_MBOX_CAP 64
#endif

struct nr_sys_mbox {
  struct nr_queue queue;
  int used;
  int is_tcpip; /* the first mailbox made: tcpip_init()'s, which lives for ever */
  void *slots[NR_SYS_MBOX_CAP];
};

static struct nr_sys_mbox mboxes[NR_SYS_MBOX_MAX];
static struct nr_sys_stats sys_stats;
static int first_mbox_made;

void sys_init(void)
{
}

unsigned nr_sys_prio(int lwip_prio)
{
  int p = (lwip_prio + 1) / 2;

  if (p < 1) {
    p = 1;
  }
  if (p > NR_KERNEL_PRIO_MAX) {
    p = NR_KERNEL_PRIO_MAX;
  }
  return (unsigned)p;
}

void nr_sys_get_stats(struct nr_sys_stats *out)
{
  uint32_t irq = board_irq_save();

  *out = sys_stats;
  board_irq_restore(irq);
}

/* lwIP's timeout (ms, 0 = for ever) as the kernel's (ticks). */
static uint32_t ticks(u32_t timeout_ms)
{
  return timeout_ms == 0 ? NR_FOREVER : timeout_ms;
}

/* ---- semaphores ---- */

err_t sys_sem_new(sys_sem_t *sem, u8_t count)
{
  /* lwIP uses its semaphores as binary ones (count 0 or 1). */
  nr_sem_init(&sem->sem, count, 1);
  sem->valid = 1;
  return ERR_OK;
}

void sys_sem_free(sys_sem_t *sem)
{
  sem->valid = 0;
}

void sys_sem_signal(sys_sem_t *sem)
{
  (void)nr_sem_give(&sem->sem); /* already given: stays given, as a binary semaphore does */
}

u32_t sys_arch_sem_wait(sys_sem_t *sem, u32_t timeout)
{
  u32_t start = sys_now();

  if (nr_sem_take(&sem->sem, ticks(timeout)) != NR_OK) {
    return SYS_ARCH_TIMEOUT;
  }
  return sys_now() - start;
}

/* ---- mutexes (the core lock with LWIP_TCPIP_CORE_LOCKING) ---- */

err_t sys_mutex_new(sys_mutex_t *mutex)
{
  /* Not recursive: lwIP never takes its locks twice, and a second take is a
     bug better seen (NR_EDEADLK, an assertion below) than hidden. */
  nr_mutex_init(&mutex->mutex, 0);
  mutex->valid = 1;
  return ERR_OK;
}

void sys_mutex_free(sys_mutex_t *mutex)
{
  mutex->valid = 0;
}

void sys_mutex_lock(sys_mutex_t *mutex)
{
  int r = nr_mutex_lock(&mutex->mutex, NR_FOREVER);

  LWIP_ASSERT("sys_mutex_lock: kernel refused", r == NR_OK);
  LWIP_UNUSED_ARG(r);
}

void sys_mutex_unlock(sys_mutex_t *mutex)
{
  int r = nr_mutex_unlock(&mutex->mutex);

  LWIP_ASSERT("sys_mutex_unlock: not the holder", r == NR_OK);
  LWIP_UNUSED_ARG(r);
}

/* ---- mailboxes ---- */

err_t sys_mbox_new(sys_mbox_t *mbox, int size)
{
  uint32_t irq;

  *mbox = NULL;
  if (size <= 0 || size > NR_SYS_MBOX_CAP) {
    /* lwIP's defaults for the *_MBOX_SIZE options are 0: base.h sets them
       when the options file does not, so 0 here is a file's own choice. */
    sys_stats.mbox_fail++;
    return ERR_MEM;
  }
  irq = board_irq_save();
  for (unsigned i = 0; i < NR_SYS_MBOX_MAX; i++) {
    struct nr_sys_mbox *mb = &mboxes[i];

    if (!mb->used) {
      mb->used = 1;
      mb->is_tcpip = !first_mbox_made;
      first_mbox_made = 1;
      sys_stats.mbox_used++;
      board_irq_restore(irq);
      nr_queue_init(&mb->queue, mb->slots, sizeof(void *), (uint32_t)size);
      *mbox = mb;
      return ERR_OK;
    }
  }
  sys_stats.mbox_fail++;
  board_irq_restore(irq);
  return ERR_MEM;
}

void sys_mbox_free(sys_mbox_t *mbox)
{
  uint32_t irq = board_irq_save();

  /* lwIP empties a mailbox (freeing what it held) before it frees it. */
  (*mbox)->used = 0;
  sys_stats.mbox_used--;
  board_irq_restore(irq);
}

void sys_mbox_post(sys_mbox_t *mbox, void *msg)
{
  int r = nr_queue_send(&(*mbox)->queue, &msg, NR_FOREVER);

  LWIP_ASSERT("sys_mbox_post: kernel refused", r == NR_OK);
  LWIP_UNUSED_ARG(r);
}

static void count_full(const struct nr_sys_mbox *mb)
{
  uint32_t irq = board_irq_save();

  sys_stats.mbox_full++;
  if (mb->is_tcpip) {
    sys_stats.mbox_full_tcpip++;
  }
  board_irq_restore(irq);
}

err_t sys_mbox_trypost(sys_mbox_t *mbox, void *msg)
{
  if (nr_queue_send(&(*mbox)->queue, &msg, NR_NO_WAIT) != NR_OK) {
    count_full(*mbox);
    return ERR_MEM;
  }
  return ERR_OK;
}

err_t sys_mbox_trypost_fromisr(sys_mbox_t *mbox, void *msg)
{
  if (nr_queue_send_isr(&(*mbox)->queue, &msg) != NR_OK) {
    count_full(*mbox);
    return ERR_MEM;
  }
  return ERR_OK;
}

u32_t sys_arch_mbox_fetch(sys_mbox_t *mbox, void **msg, u32_t timeout)
{
  void *item;
  u32_t start = sys_now();

  if (nr_queue_receive(&(*mbox)->queue, &item, ticks(timeout)) != NR_OK) {
    if (msg != NULL) {
      *msg = NULL;
    }
    return SYS_ARCH_TIMEOUT;
  }
  if (msg != NULL) {
    *msg = item;
  }
  return sys_now() - start;
}

u32_t sys_arch_mbox_tryfetch(sys_mbox_t *mbox, void **msg)
{
  void *item;

  if (nr_queue_receive(&(*mbox)->queue, &item, NR_NO_WAIT) != NR_OK) {
    return SYS_MBOX_EMPTY;
  }
  if (msg != NULL) {
    *msg = item;
  }
  return 0;
}

/* ---- threads ---- */

sys_thread_t sys_thread_new(const char *name, lwip_thread_fn thread, void *arg, int stacksize, int prio)
{
  size_t stack = stacksize < NR_KERNEL_MIN_STACK ? NR_KERNEL_MIN_STACK : (size_t)stacksize;
  nr_thread_t *t = nr_thread_create(name, thread, arg, nr_sys_prio(prio), NULL, stack);

  /* lwIP cannot go on without its thread (tcpip_init() has no error path). */
  LWIP_ASSERT("sys_thread_new: no thread (slots or stack pool used up)", t != NULL);
  return t;
}

#endif /* !NO_SYS */
