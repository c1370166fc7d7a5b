# lan91c111: SMSC LAN91C111 on the Ethernut 2's 8-bit XMEM bus, byte-wide PIO.
NIC_SRCS := $(NIC_DIR)/lan91c111.c
