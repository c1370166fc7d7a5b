# mps3-an547: QEMU's Arm MPS3 with the AN547 FPGA image (Cortex-M55, SSE-300).
# Hard-float ABI; FP and MVE are enabled in the reset handler.
include $(FW_DIR)/boards/cortex-m/cortex-m.mk
CPU_FLAGS := -mcpu=cortex-m55 -mthumb -mfloat-abi=hard
BOARD_SRCS := $(CORTEXM_SRCS)
BOARD_LDSCRIPT := $(BOARD_DIR)/board.ld
