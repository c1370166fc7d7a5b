# mps3-an547: QEMU's Arm MPS3 with the AN547 FPGA image (Cortex-M55, SSE-300).
# Hard-float ABI; FP and MVE are enabled in the reset handler.
ARCH := cortex-m
CPU_FLAGS := -mcpu=cortex-m55 -mthumb -mfloat-abi=hard
BOARD_SRCS := $(FW_DIR)/arch/cortex-m/cmsdk_uart.c
BOARD_LDSCRIPT := $(BOARD_DIR)/board.ld
