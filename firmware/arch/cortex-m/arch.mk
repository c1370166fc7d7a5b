# Cortex-M (Armv7-M and Armv8-M Mainline): vector table and reset handler,
# 1 ms SysTick and NVIC board glue, fault dump. A board that sets
# ARCH := cortex-m gets these in ARCH_SRCS; its board_defs.h supplies
# BOARD_NUM_IRQS and the console UART's interrupt line, and one console driver
# providing console_init() goes in BOARD_SRCS (cmsdk_uart.c here is the one
# for Arm's CMSDK APB UART, as on QEMU's mps2/mps3 machines).
ARCH_SRCS := $(addprefix $(ARCH_DIR)/,startup.c board.c fault.c)
