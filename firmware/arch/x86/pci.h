/*
 * PCI configuration mechanism #1 (ports 0xCF8/0xCFC): enough to find a
 * device on bus 0 and read its BARs and interrupt line.
 */
#ifndef ARCH_X86_PCI_H
#define ARCH_X86_PCI_H

#include <stdint.h>

#define PCI_COMMAND        0x04u
#define PCI_CMD_MEMORY     (1u << 1)
#define PCI_CMD_MASTER     (1u << 2)
#define PCI_BAR0           0x10u
#define PCI_INTERRUPT_LINE 0x3Cu

struct pci_dev {
  uint8_t bus, dev, fn;
};

uint32_t pci_read32(const struct pci_dev *d, uint8_t off);
void pci_write32(const struct pci_dev *d, uint8_t off, uint32_t v);

/* First function on bus 0 with this vendor:device; 0 when there is none. */
int pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out);

#endif
