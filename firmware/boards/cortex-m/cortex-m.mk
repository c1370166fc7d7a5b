# Code shared by the Cortex-M boards (startup, SysTick, CMSDK UART console,
# fault dump). A board's board.mk includes this file and adds CORTEXM_SRCS to
# BOARD_SRCS; the board's own board_defs.h (found through -I$(BOARD_DIR))
# supplies BOARD_NUM_IRQS and the console UART's interrupt and clock.
CORTEXM_DIR := $(FW_DIR)/boards/cortex-m
CORTEXM_SRCS := $(addprefix $(CORTEXM_DIR)/,startup.c board.c console_uart.c fault.c)
