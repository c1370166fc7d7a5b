# lan9118: SMSC LAN9118 (QEMU's mps2/mps3 Ethernet), 32-bit bus, PIO FIFOs.
NIC_SRCS := $(NIC_DIR)/lan9118.c
