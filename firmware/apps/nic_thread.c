/*
 * NO_SYS 0: the NIC's receive path in a thread of its own, as lwIP products
 * on an RTOS have it (an STM32Cube ethernetif's input thread). Two shapes,
 * chosen by the options file's NR_NIC_RX_THREAD (profiles/base.h):
 *   1 (default): the NIC's interrupt flags work and gives a semaphore
 *     (nic_rx_wake_from_isr()); the thread wakes, drains the NIC into
 *     netif->input = tcpip_input() until it is empty, and waits again;
 *   0: the thread polls the NIC once a tick (1 board ms), whatever the
 *     interrupt did, so a frame waits up to a tick.
 * Either way a frame goes to lwIP through the tcpip thread's mailbox
 * (TCPIP_MBOX_SIZE): a full mailbox drops it (sys_arch_os.c counts it).
 * The thread also waits at most a second, so the driver's link poll runs.
 * A driver that receives from an lwIP timeout in the tcpip thread instead
 * (nics/e1000/pktdrv.c, as nxdk's pktdrv did) has its options file set
 * NR_NIC_RX_NO_THREAD 1: then there is no receive thread at all.
 * Built only for NO_SYS 0 (the Makefile).
 */
#include "lwip/opt.h"
#include "lwip/sys.h"

#include "nr_kernel.h"
#include "nr_nic.h"
#include "nr_printf.h"
#include "nic_thread.h"

#define LINK_POLL_WAIT_MS 1000u

static struct nr_sem rx_sem;
static volatile int rx_thread_up;

void nic_rx_wake_from_isr(void)
{
  if (rx_thread_up) {
    (void)nr_sem_give(&rx_sem); /* already given: one wake-up covers both */
  }
}

static void rx_thread(void *arg)
{
  struct netif *netif = arg;

  for (;;) {
#if NR_NIC_RX_THREAD
    (void)nr_sem_take(&rx_sem, LINK_POLL_WAIT_MS);
    /* The driver drains a batch a call and stays pending while frames are
       left: go on until it is empty, as the interrupt is masked till then. */
    do {
      nic_poll(netif);
    } while (nic_work_pending());
#else
    nic_poll(netif);
    (void)nr_sleep_ms(1);
#endif
  }
}

int nic_rx_thread_start(struct netif *netif)
{
#if defined(NR_NIC_RX_NO_THREAD) && NR_NIC_RX_NO_THREAD
  LWIP_UNUSED_ARG(netif);
  (void)rx_thread;
#else
  nr_sem_init(&rx_sem, 0, 1);
  rx_thread_up = 1;
  if (sys_thread_new(NR_NIC_RX_THREAD ? "nic_rx" : "nic_poll", rx_thread, netif,
                     NR_NIC_RX_THREAD_STACKSIZE, NR_NIC_RX_THREAD_PRIO) == NULL) {
    rx_thread_up = 0;
    return 0;
  }
#endif
  return 1;
}
