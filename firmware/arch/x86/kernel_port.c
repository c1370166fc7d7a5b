/*
 * The kernel's i386 port (firmware/kernel/nr_kernel_port.h), for 32-bit
 * protected mode in ring 0 with a flat GDT, as the xbox board runs it.
 *
 * One frame for every switch. A thread that is switched out is always
 * stopped inside an interrupt: its stack holds what the CPU pushed (eflags,
 * cs, eip), the stub's vector and error code, and the general registers
 * (pushal); its saved stack pointer points at that block. The board's common
 * interrupt stub (boards/<board>/startup.c, NR_KERNEL) does the rest:
 *  - entering the outermost interrupt it moves to an interrupt stack of its
 *    own (an interrupt at the same privilege level does not change stacks by
 *    itself), so a thread's stack holds only the 52-byte frame, never a
 *    handler's calls;
 *  - it counts the nesting depth (nr_port_irq_depth), which is what
 *    nr_port_in_isr() reports;
 *  - leaving the outermost interrupt, if a switch was requested, it calls
 *    nr_port_switch() with the frame's address and returns through the frame
 *    of the thread the kernel picked.
 * A switch a thread asks for must happen at once, but there is no PendSV:
 * the thread raises the software interrupt NR_PORT_SWITCH_VECTOR (int), which
 * goes through the same stub and so leaves the same frame. A switch asked for
 * with interrupts masked waits until they are enabled again: the board's
 * board_irq_restore() calls nr_port_irq_enabled() after its sti. One from an
 * interrupt handler waits for the return from the outermost one.
 *
 * No FP state: the board builds with -mno-80387 -mno-mmx -mno-sse (and the
 * stub saves only the integer registers), so no thread holds any.
 */
#include <stdint.h>

#include "nr_board.h"
#include "nr_kernel_port.h"

#define EFLAGS_IF       0x200u
#define EFLAGS_RESERVED 0x002u /* bit 1 always reads 1 */
#define CODE_SELECTOR   0x08u  /* the flat ring-0 code segment of the board's GDT */

/* The first vector above the two 8259s' (0x20-0x2F); the board's IDT and
   stubs have it as vector 48 (boards/xbox: SWITCH_VECTOR, isr48). */
#define NR_PORT_SWITCH_VECTOR 0x30

/* The interrupt stack: the NIC's, the console's and the tick's handlers (the
   tick with its hook and the kernel's tick walk), the switch, and the fault
   dump, all in C. Handlers are interrupt gates (IF cleared), so they do not
   nest into each other; the room is for one of them plus a fault in it. */
#ifndef NR_PORT_HANDLER_STACK
#define NR_PORT_HANDLER_STACK 4096
#endif

extern uint8_t __stack_top[], __stack_limit[];

static uint32_t irq_stack[NR_PORT_HANDLER_STACK / 4] __attribute__((aligned(16)));
/* Read and written by the stub in startup.c (and the board), hence not static. */
uint32_t *const nr_port_irq_stack_top = irq_stack + NR_PORT_HANDLER_STACK / 4;
volatile uint32_t nr_port_irq_depth;     /* interrupts being handled, nested */
volatile uint32_t nr_port_switch_pending;
/* Set by the board while a thread with interrupts masked sleeps the core
   (board_wait_for_interrupt(): sti; hlt; cli): the interrupt that wakes it
   is taken there, but the thread's critical section is still on, so the
   switch waits for its board_irq_restore(), as PendSV waits for PRIMASK on
   Cortex-M. Without it the board's idle time would count the time other
   threads ran until the sleeper was switched in again. */
volatile uint32_t nr_port_switch_hold;

void *nr_port_switch(void *sp);
void nr_port_irq_enabled(void);

/* The stub's frame, from the saved stack pointer up (the order pushal and the
   CPU leave it in). */
struct frame {
  uint32_t edi, esi, ebp, esp, ebx, edx, ecx, eax;
  uint32_t vector, error;
  uint32_t eip, cs, eflags;
};

void *nr_port_stack_init(struct nr_thread *t, void (*trampoline)(struct nr_thread *t))
{
  uintptr_t top = ((uintptr_t)t->stack_lo + t->stack_size) & ~(uintptr_t)15u;
  uint32_t *args;
  struct frame *f;

  /* What the trampoline finds, as if it had been called: its argument and,
     below it, a return address of 0 (it never returns). The argument is
     16-byte aligned, as the i386 System V ABI has it at a call. */
  args = (uint32_t *)(top - 16u);
  args[0] = (uint32_t)(uintptr_t)t;
  args[-1] = 0u;
  f = (struct frame *)(void *)&args[-1] - 1;
  f->edi = f->esi = f->ebx = f->edx = f->ecx = f->eax = 0u;
  f->ebp = 0u;             /* ends a frame-pointer walk (a debugger's backtrace) */
  f->esp = 0u;             /* popal skips it */
  f->vector = f->error = 0u;
  f->eip = (uint32_t)(uintptr_t)trampoline;
  f->cs = CODE_SELECTOR;
  f->eflags = EFLAGS_IF | EFLAGS_RESERVED;
  return f;
}

/* From the stub, leaving the outermost interrupt with interrupts masked and
   on the interrupt stack: sp is the interrupted thread's frame. */
void *nr_port_switch(void *sp)
{
  nr_port_switch_pending = 0u;
  return nr_kernel_switch(sp)->sp;
}

void nr_port_start(struct nr_thread *main_thread)
{
  /* main already runs on the board's boot stack, and the stub has moved
     interrupts off it since boot (the board's NR_KERNEL build): there is
     nothing to move, only the bounds to note. */
  main_thread->stack_lo = __stack_limit;
  main_thread->stack_size = (size_t)(__stack_top - __stack_limit);
}

static inline uint32_t eflags(void)
{
  uint32_t f;

  __asm volatile("pushfl\n\tpopl %0" : "=r"(f));
  return f;
}

static inline void raise_switch(void)
{
  __asm volatile("int %0" : : "i"(NR_PORT_SWITCH_VECTOR) : "memory");
}

void nr_port_request_switch(void)
{
  nr_port_switch_pending = 1u;
  if (nr_port_irq_depth == 0u && (eflags() & EFLAGS_IF)) {
    raise_switch();
  }
}

/* board_irq_restore() calls this after it has enabled interrupts: a switch
   requested inside the critical section that just ended happens now. An
   interrupt taken between the sti and here may already have made it (and
   cleared the flag); a raise after that only returns. */
void nr_port_irq_enabled(void)
{
  if (nr_port_switch_pending && nr_port_irq_depth == 0u) {
    raise_switch();
  }
}

void nr_port_block(uint32_t irq)
{
  /* The caller is a thread that may block (kernel.c checked), so irq has IF
     set: the raise cannot wait for anything. The flag is set before the
     interrupts are enabled, so a tick or the NIC taken in between switches
     instead, and the raise then finds nothing to do; either way this returns
     only once the thread is switched in again. */
  nr_port_switch_pending = 1u;
  board_irq_restore(irq);
  if (nr_port_switch_pending) {
    raise_switch();
  }
}

int nr_port_in_isr(void)
{
  return nr_port_irq_depth != 0u;
}

int nr_port_can_block(void)
{
  return nr_port_irq_depth == 0u && (eflags() & EFLAGS_IF) != 0u;
}
