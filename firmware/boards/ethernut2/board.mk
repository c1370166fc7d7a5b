# ethernut2: Ethernut 2 (ATmega128 @ 14.7456 MHz, external SRAM on the XMEM
# bus, LAN91C111 at 0xC000 on INT5, as egnite documents the board in its
# Ethernut 2 hardware manual), run in the simavr board host (platforms/ethernut2).
#
# Memory: avr-libc's own crt and avr51 linker script, with .data (and .bss
# and .noinit, which follow it) moved to external RAM at 0x1100
# (--section-start), so lwIP's heap and pools live there. The script's data
# region (origin 0x100) is lengthened to end at 0xC000, so ld fails if
# .data+.bss would run into the NIC. The stack stays at RAMEND (0x10FF,
# internal SRAM, set by the avr-libc crt) and grows down through the 4 KiB of
# internal RAM. XMEM is enabled in .init3 (board.c), before .data is copied
# and .bss cleared (.init4). __heap_end bounds malloc (unused) below 0xC000.
# The generated memory.ld is not used: the data-space layout is fixed by the
# hardware and given here.
ARCH := avr
CROSS_COMPILE := avr-
CPU_FLAGS := -mmcu=atmega128 -DF_CPU=14745600UL -DNR_BULK_ATTR=
OPT_FLAGS := -Os
BOARD_SRCS := $(BOARD_DIR)/board.c
BOARD_LDSCRIPT :=
LD_BASE_FLAGS :=
LD_SCRIPT_FLAGS := -Wl,-Map=$(OUT)/firmware.map \
	-Wl,--section-start=.data=0x801100 \
	-Wl,--defsym=__DATA_REGION_LENGTH__=0xbf00 \
	-Wl,--defsym=__heap_end=0x80bfff
# Apps: the shell, discard and echo. iperf and sockbench are left out: their
# 8 KiB of buffers fit only with the nutos-default profile, and lwIP's lwiperf
# assumes a 32-bit int (1024 * 128 overflows to 0 with avr-gcc's 16-bit int).
# `make APPS="..."` on the command line still overrides this.
APPS := discard echo
