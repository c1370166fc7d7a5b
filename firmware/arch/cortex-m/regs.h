/*
 * Cortex-M system registers used by the boards (the same addresses on
 * Armv7-M, e.g. the M7, and Armv8-M Mainline, e.g. the M55).
 */
#ifndef ARCH_CORTEX_M_REGS_H
#define ARCH_CORTEX_M_REGS_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(addr))

#define SYST_CSR   REG32(0xE000E010u)
#define SYST_RVR   REG32(0xE000E014u)
#define SYST_CVR   REG32(0xE000E018u)
#define SYST_CSR_ENABLE    (1u << 0)
#define SYST_CSR_TICKINT   (1u << 1)
#define SYST_CSR_CLKSOURCE (1u << 2) /* processor clock */
#define SYST_RVR_MAX       0x00FFFFFFu /* the reload register's 24 bits */

#define NVIC_ISER(n) REG32(0xE000E100u + 4u * (n))
#define NVIC_ISPR(n) REG32(0xE000E200u + 4u * (n))
#define NVIC_ICPR(n) REG32(0xE000E280u + 4u * (n))

#define SCB_ICSR   REG32(0xE000ED04u)
#define ICSR_PENDSTSET     (1u << 26) /* SysTick exception pending */
#define SCB_VTOR   REG32(0xE000ED08u)
#define SCB_CFSR   REG32(0xE000ED28u)
#define SCB_HFSR   REG32(0xE000ED2Cu)
#define SCB_MMFAR  REG32(0xE000ED34u)
#define SCB_BFAR   REG32(0xE000ED38u)
#define SCB_CPACR  REG32(0xE000ED88u)
#define CPACR_CP10_CP11_FULL (0xFu << 20)

/* Drops a pending state latched before the device was configured (QEMU's
   LAN9118 drives its line high from reset until IRQ_CFG is set). */
static inline void nvic_enable_irq(unsigned irq)
{
  NVIC_ICPR(irq / 32u) = 1u << (irq % 32u);
  NVIC_ISER(irq / 32u) = 1u << (irq % 32u);
}

static inline void nvic_set_pending(unsigned irq)
{
  NVIC_ISPR(irq / 32u) = 1u << (irq % 32u);
}

static inline void barrier_dsb_isb(void)
{
  __asm volatile("dsb\n\tisb" ::: "memory");
}

#endif
