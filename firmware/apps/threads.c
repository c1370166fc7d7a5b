/*
 * "threads" (NO_SYS 0 builds only, see the Makefile): the kernel's threads
 * and the lwIP port's mailbox counters, for the harness (boot --json and
 * result.json "threads"):
 *   THREAD name=<name> prio=<effective> base_prio=<own> stack=<bytes>
 *          stack_used=<high-water bytes> switches=<n> run_us=<board us>
 *   THREADS count=<n> idle_us=<board us> switches=<n> ticks=<n>
 *           mbox_full=<n> mbox_full_tcpip=<n> mbox_used=<n> mbox_fail=<n>
 * mbox_full counts sys_mbox_trypost() calls that met a full mailbox (a
 * frame or segment lwIP dropped), mbox_full_tcpip those of the tcpip
 * thread's own mailbox (TCPIP_MBOX_SIZE).
 */
#include "lwip/opt.h"
#include "lwip/sys.h"

#include "nr_kernel.h"
#include "nr_printf.h"
#include "apps.h"

static void cmd_threads(int argc, char **argv)
{
  struct nr_sys_stats sys;
  unsigned count = 0;

  LWIP_UNUSED_ARG(argc);
  LWIP_UNUSED_ARG(argv);
  for (unsigned i = 0; i < NR_KERNEL_MAX_THREADS; i++) {
    nr_thread_t *t = nr_thread_at(i);
    struct nr_thread_stats st;

    if (t == NULL || nr_thread_stats(t, &st) != NR_OK) {
      continue;
    }
    count++;
    nr_printf("THREAD name=%s prio=%u base_prio=%u stack=%lu stack_used=%lu switches=%lu run_us=%lu\n",
              st.name != NULL ? st.name : "?", st.prio, st.base_prio, (unsigned long)st.stack_size,
              (unsigned long)st.stack_used, (unsigned long)st.switches, (unsigned long)(st.run_ns / 1000u));
  }
  nr_sys_get_stats(&sys);
  nr_printf("THREADS count=%u idle_us=%lu switches=%lu ticks=%lu mbox_full=%lu mbox_full_tcpip=%lu "
            "mbox_used=%lu mbox_fail=%lu\n", count, (unsigned long)(nr_kernel_idle_ns() / 1000u),
            (unsigned long)nr_kernel_switches(), (unsigned long)nr_kernel_ticks(), (unsigned long)sys.mbox_full,
            (unsigned long)sys.mbox_full_tcpip, (unsigned long)sys.mbox_used, (unsigned long)sys.mbox_fail);
}

const struct nr_app nr_app_threads = {
  "threads", "threads",
  "threads - the kernel's threads (THREAD name= prio= base_prio= stack= stack_used= switches= run_us=), "
  "then THREADS count= idle_us= switches= ticks= mbox_full= mbox_full_tcpip= mbox_used= mbox_fail=",
  cmd_threads, NULL, NULL,
};
