/*
 * The kernel's Cortex-M port (firmware/kernel/nr_kernel_port.h), for Armv7-M
 * (the M7) and Armv8-M Mainline (the M55), with or without an FPU.
 *
 * Threads run in thread mode on the process stack (PSP); exception handlers,
 * the switch included, run on the main stack (MSP), which gets an area of its
 * own when the kernel starts, so a thread's stack holds only its own frames.
 * The switch is PendSV at the lowest priority: a thread, the tick or any
 * interrupt handler that makes a more urgent thread ready pends it, and it
 * runs once no other handler is active (tail-chained after them), so it
 * never interrupts a handler and switches only between threads.
 *
 * Exception entry has already pushed r0-r3, r12, lr, pc and xPSR on the
 * thread's PSP; PendSV pushes the rest (r4-r11) plus its EXC_RETURN, and
 * loads the same from the next thread. FP: the boards build with
 * -mfloat-abi=hard, so any thread may hold FP (and on the M55, MVE) state,
 * and compiler-generated code (memcpy, vectorised loops) may use it anywhere.
 * With FPCCR.ASPEN a thread that executed an FP instruction has
 * CONTROL.FPCA set, its exception frame is the extended one (space for
 * s0-s15, FPSCR and on the M55 VPR) and EXC_RETURN bit 4 (FType) is 0; with
 * FPCCR.LSPEN that space is only reserved (lazy stacking) and filled by the
 * core the first time the handler itself executes an FP instruction. PendSV
 * tests bit 4: for such a thread it saves s16-s31 (the callee-saved half)
 * itself, and that store is the FP instruction that makes the core fill in
 * the reserved s0-s15 first. A thread that never used the FPU has a basic
 * frame and pays nothing. The EXC_RETURN saved with each thread tells the
 * restore which frame it has.
 */
#include <stdint.h>

#include "nr_board.h"
#include "cortex-m/regs.h"
#include "nr_kernel_port.h"

#define SCB_SHPR3   REG32(0xE000ED20u)
#define SHPR3_PENDSV_SHIFT 16u
#define ICSR_PENDSVSET (1u << 28)
#define FPCCR       REG32(0xE000EF34u)
#define FPCCR_ASPEN (1u << 31) /* set CONTROL.FPCA on a thread's first FP instruction */
#define FPCCR_LSPEN (1u << 30) /* reserve the FP frame on exception entry, fill it only if needed */

#define XPSR_THUMB (1u << 24)
/* Return to thread mode on the PSP with a basic frame (no FP state). On the
   M55 the firmware runs in Secure state (SAU off), and this is the Secure
   value there as well (bits 6 S, 5 DCRS and 0 ES set). */
#define EXC_RETURN_THREAD_PSP 0xFFFFFFFDu

/* The stack exception handlers run on once the kernel starts: the NIC's, the
   console's, the tick and the switch, at most one of them nested in the
   switch (they share one priority), each frame up to 26 words with FP. */
#ifndef NR_PORT_HANDLER_STACK
#define NR_PORT_HANDLER_STACK 2048
#endif

extern uint32_t __stack_top[], __stack_limit[];

static uint64_t handler_stack[NR_PORT_HANDLER_STACK / 8];

void nr_port_pendsv_handler(void);
void *nr_port_switch(void *sp);

void *nr_port_stack_init(struct nr_thread *t, void (*trampoline)(struct nr_thread *t))
{
  /* The frame ends 8-byte aligned, so the thread starts with its stack
     pointer aligned as the AAPCS wants. */
  uint32_t *sp = (uint32_t *)(((uintptr_t)t->stack_lo + t->stack_size) & ~(uintptr_t)7u);

  /* What exception entry pushes; the first "return" from PendSV pops it. */
  *--sp = XPSR_THUMB;                                /* xPSR: Thumb state */
  *--sp = (uint32_t)(uintptr_t)trampoline & ~1u;     /* pc: a return address has bit 0 clear */
  *--sp = 0u;                                        /* lr: trampoline never returns (0 would fault) */
  *--sp = 0u;                                        /* r12 */
  *--sp = 0u;                                        /* r3 */
  *--sp = 0u;                                        /* r2 */
  *--sp = 0u;                                        /* r1 */
  *--sp = (uint32_t)(uintptr_t)t;                    /* r0: trampoline's argument */
  /* What PendSV pushes: r4-r11, then EXC_RETURN at the lowest address. */
  for (unsigned i = 0; i < 8u; i++) {
    *--sp = 0u;
  }
  *--sp = EXC_RETURN_THREAD_PSP;
  return sp;
}

/* Called by PendSV with interrupts masked: the kernel picks the next thread;
   on Armv8-M its stack's bottom becomes the PSP limit, so an overflowing
   thread faults (STKOF) instead of running into its neighbour. The PSP still
   holds the old thread's pointer here, but nothing pushes on it before it is
   replaced. */
void *nr_port_switch(void *sp)
{
  struct nr_thread *next = nr_kernel_switch(sp);

#if defined(__ARM_ARCH_8M_MAIN__)
  __asm volatile("msr psplim, %0" : : "r"(next->stack_lo));
#endif
  return next->sp;
}

/* Naked: the compiler must not push anything, the stacks are the subject. */
__attribute__((naked)) void nr_port_pendsv_handler(void)
{
  __asm volatile(
    "mrs r0, psp\n\t"
#if defined(__ARM_FP)
    "tst lr, #0x10\n\t"            /* EXC_RETURN.FType 0: the thread has FP state */
    "it eq\n\t"
    "vstmdbeq r0!, {s16-s31}\n\t"  /* and fills the lazily reserved s0-s15 first */
#endif
    "mov r2, lr\n\t"
    "stmdb r0!, {r2, r4-r11}\n\t"
    "cpsid i\n\t"
    "bl nr_port_switch\n\t"        /* r0: the next thread's saved stack pointer */
    "ldmia r0!, {r2, r4-r11}\n\t"
#if defined(__ARM_FP)
    "tst r2, #0x10\n\t"
    "it eq\n\t"
    "vldmiaeq r0!, {s16-s31}\n\t"
#endif
    "msr psp, r0\n\t"
    "cpsie i\n\t"
    "bx r2\n\t");
}

void nr_port_start(struct nr_thread *main_thread)
{
  uint32_t irq;

  main_thread->stack_lo = (uint8_t *)__stack_limit;
  main_thread->stack_size = (size_t)((uint8_t *)__stack_top - (uint8_t *)__stack_limit);

  SCB_SHPR3 |= 0xFFu << SHPR3_PENDSV_SHIFT; /* PendSV: the lowest priority */
#if defined(__ARM_FP)
  FPCCR |= FPCCR_ASPEN | FPCCR_LSPEN;      /* the reset values; the switch relies on them */
#endif
  irq = board_irq_save();
  /* main goes on as a thread: the PSP takes the stack pointer's value and
     thread mode switches to it (CONTROL.SPSEL), the same memory either way,
     so the compiler's view of the stack stays right. */
  __asm volatile(
    "mrs r0, msp\n\t"
    "msr psp, r0\n\t"
    "mrs r0, control\n\t"
    "orr r0, r0, #2\n\t"
    "msr control, r0\n\t"
    "isb\n\t"
    : : : "r0", "memory");
#if defined(__ARM_ARCH_8M_MAIN__)
  __asm volatile("msr psplim, %0" : : "r"(__stack_limit));
#endif
  /* Handlers move to a stack of their own (in thread mode the MSP is free
     to change). On Armv8-M its limit follows: cleared first, since the new
     area may lie below the old limit (.bss below the stack on the M55), and
     set after the pointer, so the pointer is never below the limit. */
#if defined(__ARM_ARCH_8M_MAIN__)
  __asm volatile("msr msplim, %0" : : "r"(0u));
#endif
  __asm volatile("msr msp, %0" : : "r"(handler_stack + sizeof(handler_stack) / sizeof(handler_stack[0])) : "memory");
#if defined(__ARM_ARCH_8M_MAIN__)
  __asm volatile("msr msplim, %0" : : "r"(handler_stack));
#endif
  board_irq_restore(irq);
}

void nr_port_request_switch(void)
{
  SCB_ICSR = ICSR_PENDSVSET;
  __asm volatile("dsb" ::: "memory");
}

void nr_port_block(uint32_t irq)
{
  nr_port_request_switch();
  board_irq_restore(irq);
  /* Lowering PRIMASK takes effect for certain only after a context
     synchronisation, so without this the caller could run on a few
     instructions before PendSV is taken, and read its wait's result early. */
  __asm volatile("isb" ::: "memory");
}

int nr_port_in_isr(void)
{
  uint32_t ipsr;

  __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
  return (ipsr & 0x1FFu) != 0u;
}

int nr_port_can_block(void)
{
  uint32_t primask;

  __asm volatile("mrs %0, primask" : "=r"(primask));
  return !nr_port_in_isr() && (primask & 1u) == 0u;
}
