# xbox: the original Xbox's Pentium III stood in by QEMU's i386 `pc` machine
# (-cpu pentium3), booted as a multiboot ELF with -kernel (platforms/xbox.toml).
#
# Toolchain: Debian's i686-linux-gnu cross compiler used freestanding. It has
# no C library for the target here (and none is wanted), so libc/ holds the
# few headers lwIP and the apps include and libc.c the functions they call;
# libgcc supplies the 64-bit division nr_printf and the apps need.
# SSE/MMX are kept out of the generated code: the interrupt stubs save only
# the integer registers, so no C code may touch the FPU/SSE state.
# lwIP's ctype and inttypes fallbacks are used (there are no such headers).
# Port I/O and PCI configuration come from arch/x86 (ARCH_SRCS).
ARCH := x86
CROSS_COMPILE := i686-linux-gnu-
CPU_FLAGS := -m32 -march=pentium3 -mno-sse -mno-mmx -mno-80387 -ffreestanding -fno-pic -fno-pie \
	-fno-stack-protector -fno-asynchronous-unwind-tables -I$(BOARD_DIR)/libc \
	-DLWIP_NO_CTYPE_H=1 -DLWIP_NO_UNISTD_H=1
OPT_FLAGS := -O2
BOARD_SRCS := $(addprefix $(BOARD_DIR)/,startup.c board.c console_16550.c libc.c)
BOARD_LDSCRIPT := $(BOARD_DIR)/board.ld
LD_BASE_FLAGS := -nostdlib -static -no-pie -Wl,--build-id=none
LD_SCRIPT_FLAGS := -Wl,-Map=$(OUT)/firmware.map -L$(GEN_DIR) -T$(BOARD_LDSCRIPT)
LD_LIBS := -lgcc
