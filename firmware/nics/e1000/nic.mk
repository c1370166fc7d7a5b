# e1000: Intel 82540EM (QEMU's e1000, PCI) standing in for the Xbox's nvnet.
# Two driver designs after nxdk's, chosen by the profile's
# NETREPRO_E1000_DRIVER (e1000_drv.h); each file compiles to nothing when
# it is not the one chosen. PCI discovery and port I/O come from arch/x86.
ifneq ($(ARCH),x86)
$(error NIC e1000 needs an x86 board (PCI through port I/O, arch/x86); BOARD $(BOARD) is ARCH '$(ARCH)')
endif
NIC_SRCS := $(addprefix $(NIC_DIR)/,e1000_common.c pktdrv.c nvnetdrv.c)
