# x86 (i386, 32-bit protected mode): port I/O (io.h) and PCI configuration
# mechanism #1 (pci.h, pci.c), for the boards and the PCI NICs.
ARCH_SRCS := $(ARCH_DIR)/pci.c
