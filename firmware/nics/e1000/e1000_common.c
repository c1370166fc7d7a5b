/*
 * e1000 bring-up shared by the pktdrv and nvnetdrv designs: PCI discovery,
 * reset, MAC address, ring registers, link polling.
 */
#include "lwip/etharp.h"
#include "lwip/netif.h"
#if !NO_SYS
#include "lwip/tcpip.h"
#endif

#include "board_config.h"
#include "nr_board.h"
#include "nr_printf.h"
#include "x86/pci.h"
#include "e1000_drv.h"

#define LINK_POLL_MS 1000u

volatile uint8_t *e1000_mmio;
struct nic_stats e1000_stats;
static uint32_t next_link_poll;

int e1000_probe(struct netif *netif, const char *design)
{
  struct pci_dev dev;
  uint32_t bar0;
  uint32_t line;
  uint32_t ral;
  uint32_t rah;

  if (!pci_find(E1000_VENDOR, E1000_DEVICE, &dev)) {
    nr_printf("e1000: no 8086:100e on PCI bus 0 (is the NIC model e1000?)\n");
    return 0;
  }
  bar0 = pci_read32(&dev, PCI_BAR0) & ~0xFu;
  line = pci_read32(&dev, PCI_INTERRUPT_LINE) & 0xFFu;
  /* The interrupt vector is wired at build time (NIC_IRQ), so a different
     routing would leave the driver deaf: refuse rather than run silently. */
  if (line != NIC_IRQ) {
    nr_printf("e1000: PCI %02x.%x routes INTA to IRQ %lu, the platform says %u: fix [nic] irq\n",
              dev.dev, dev.fn, (unsigned long)line, (unsigned)NIC_IRQ);
    return 0;
  }
  pci_write32(&dev, PCI_COMMAND, pci_read32(&dev, PCI_COMMAND) | PCI_CMD_MEMORY | PCI_CMD_MASTER);
  e1000_mmio = (volatile uint8_t *)(uintptr_t)bar0;

  e1000_wr(E1000_IMC, 0xFFFFFFFFu);
  e1000_wr(E1000_CTRL, e1000_rd(E1000_CTRL) | CTRL_RST);
  for (unsigned i = 0; i < 100000u && (e1000_rd(E1000_CTRL) & CTRL_RST); i++) {
  }
  e1000_wr(E1000_IMC, 0xFFFFFFFFu);
  (void)e1000_rd(E1000_ICR);
  e1000_wr(E1000_CTRL, e1000_rd(E1000_CTRL) | CTRL_SLU);

  /* The reset loads RAL0/RAH0 from the EEPROM, which QEMU fills with the
     -net nic,macaddr= address. */
  ral = e1000_rd(E1000_RAL0);
  rah = e1000_rd(E1000_RAH0);
  for (unsigned i = 0; i < 4; i++) {
    netif->hwaddr[i] = (uint8_t)(ral >> (8u * i));
  }
  netif->hwaddr[4] = (uint8_t)rah;
  netif->hwaddr[5] = (uint8_t)(rah >> 8);
  e1000_wr(E1000_RAH0, rah | RAH_AV);
  for (unsigned i = 0; i < 128; i++) {
    e1000_wr(E1000_MTA + 4u * i, 0);
  }

  nic_netif_ethernet(netif, 'x', 'b');
  if (e1000_rd(E1000_STATUS) & STATUS_LU) {
    netif->flags |= NETIF_FLAG_LINK_UP;
  }
  next_link_poll = board_ms() + LINK_POLL_MS;
  nr_printf("e1000: PCI 00:%02x.%x bar0=0x%08lx irq=%lu driver=%s\n", dev.dev, dev.fn,
            (unsigned long)bar0, (unsigned long)line, design);
  return 1;
}

void e1000_start(uint32_t rx_ring, unsigned rx_count, unsigned rx_tail,
                 uint32_t tx_ring, unsigned tx_count, uint32_t ims)
{
  e1000_wr(E1000_TDBAL, tx_ring);
  e1000_wr(E1000_TDBAH, 0);
  e1000_wr(E1000_TDLEN, tx_count * (unsigned)sizeof(struct e1000_tx_desc));
  e1000_wr(E1000_TDH, 0);
  e1000_wr(E1000_TDT, 0);
  e1000_wr(E1000_TIPG, 10u | (8u << 10) | (6u << 20));
  e1000_wr(E1000_TCTL, TCTL_EN | TCTL_PSP | TCTL_CT(0x10) | TCTL_COLD(0x40));
  e1000_wr(E1000_TIDV, 0);
  e1000_wr(E1000_TADV, 0);

  e1000_wr(E1000_RDBAL, rx_ring);
  e1000_wr(E1000_RDBAH, 0);
  e1000_wr(E1000_RDLEN, rx_count * (unsigned)sizeof(struct e1000_rx_desc));
  e1000_wr(E1000_RDH, 0);
  e1000_wr(E1000_RDT, rx_tail);
  /* No interrupt moderation: nvnet has none either, and the designs differ
     in whether they use the interrupt at all. */
  e1000_wr(E1000_ITR, 0);
  e1000_wr(E1000_RDTR, 0);
  e1000_wr(E1000_RADV, 0);
  e1000_wr(E1000_RCTL, RCTL_EN | RCTL_BAM | RCTL_BSIZE_2048 | RCTL_SECRC);

  (void)e1000_rd(E1000_ICR);
  if (ims != 0) {
    e1000_wr(E1000_IMS, ims);
    board_irq_enable(NIC_IRQ);
  }
}

#if !NO_SYS
/* NO_SYS 0: the link poll runs in the receive thread, but the netif's link
   state is lwIP core state, changed in the tcpip thread. A full mailbox
   leaves it for the next poll, a second later. */
static void link_up_in_core(void *arg)
{
  netif_set_link_up((struct netif *)arg);
}

static void link_down_in_core(void *arg)
{
  netif_set_link_down((struct netif *)arg);
}
#define LINK_SET_UP(n)   ((void)tcpip_try_callback(link_up_in_core, (n)))
#define LINK_SET_DOWN(n) ((void)tcpip_try_callback(link_down_in_core, (n)))
#else
#define LINK_SET_UP(n)   netif_set_link_up(n)
#define LINK_SET_DOWN(n) netif_set_link_down(n)
#endif

void e1000_link_poll(struct netif *netif)
{
  uint32_t now = board_ms();
  int up;

  if ((int32_t)(now - next_link_poll) < 0) {
    return;
  }
  next_link_poll = now + LINK_POLL_MS;
  e1000_stats.rx_dropped_fifo += e1000_rd(E1000_MPC);
  up = (e1000_rd(E1000_STATUS) & STATUS_LU) != 0;
  if (up && !netif_is_link_up(netif)) {
    LINK_SET_UP(netif);
  } else if (!up && netif_is_link_up(netif)) {
    LINK_SET_DOWN(netif);
  }
}

const struct nic_stats *nic_get_stats(void)
{
  return &e1000_stats;
}
