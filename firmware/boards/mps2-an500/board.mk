# mps2-an500: QEMU's Arm MPS2 with the AN500 FPGA image (Cortex-M7), the
# stand-in for the OpenMV RT1060 (i.MX RT1062, also a Cortex-M7).
# QEMU's cortex-m7 has the double-precision FPv5 FPU, so the hard-float ABI
# with fpv5-d16 (the v7e-m+dp multilib); the FPU is enabled in the reset handler.
ARCH := cortex-m
CPU_FLAGS := -mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard
BOARD_SRCS := $(FW_DIR)/arch/cortex-m/cmsdk_uart.c
BOARD_LDSCRIPT := $(BOARD_DIR)/board.ld
