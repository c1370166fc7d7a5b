/*
 * PCI configuration mechanism #1, bus 0 only (QEMU's pc machine has a single
 * bus). A PC BIOS (SeaBIOS in QEMU) has assigned the BARs and routed the
 * interrupt lines before a multiboot kernel starts, so reading them back is
 * all that is needed.
 */
#include "x86/pci.h"
#include "x86/io.h"

#define PCI_CONFIG_ADDRESS 0xCF8u
#define PCI_CONFIG_DATA    0xCFCu

static uint32_t address(const struct pci_dev *d, uint8_t off)
{
  return 0x80000000u | ((uint32_t)d->bus << 16) | ((uint32_t)d->dev << 11) | ((uint32_t)d->fn << 8) |
         (off & 0xFCu);
}

uint32_t pci_read32(const struct pci_dev *d, uint8_t off)
{
  outl(PCI_CONFIG_ADDRESS, address(d, off));
  return inl(PCI_CONFIG_DATA);
}

void pci_write32(const struct pci_dev *d, uint8_t off, uint32_t v)
{
  outl(PCI_CONFIG_ADDRESS, address(d, off));
  outl(PCI_CONFIG_DATA, v);
}

int pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out)
{
  for (uint8_t dev = 0; dev < 32; dev++) {
    struct pci_dev d = { 0, dev, 0 };
    uint32_t id = pci_read32(&d, 0);

    if ((id & 0xFFFFu) == 0xFFFFu) {
      continue;
    }
    if ((id & 0xFFFFu) == vendor && (id >> 16) == device) {
      *out = d;
      return 1;
    }
  }
  return 0;
}
