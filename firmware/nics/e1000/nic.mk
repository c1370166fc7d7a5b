# e1000: Intel 82540EM (QEMU's e1000, PCI) standing in for the Xbox's nvnet.
# Two driver designs after nxdk's, chosen by the profile's
# NETREPRO_E1000_DRIVER (e1000_drv.h); each file compiles to nothing when
# it is not the one chosen.
NIC_SRCS := $(addprefix $(NIC_DIR)/,e1000_common.c pktdrv.c nvnetdrv.c)
