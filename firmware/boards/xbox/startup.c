/*
 * Multiboot entry, GDT and the interrupt stubs.
 *
 * QEMU's -kernel loads a multiboot ELF and enters _start in 32-bit protected
 * mode with paging off, interrupts off and segments that the multiboot spec
 * leaves undefined, so a flat GDT of our own is loaded first. Every IDT
 * vector 0..47 has a stub that pushes the vector (and a dummy error code
 * where the CPU pushes none), so one C function, isr_dispatch() in board.c,
 * sees the same frame layout for exceptions and interrupts. A firmware built
 * with the kernel (NR_KERNEL) has vector 48 too, the switch a thread raises,
 * and a common stub that runs handlers on an interrupt stack of their own
 * and switches threads on the way out (arch/x86/kernel_port.c).
 */
#include <stdint.h>
#include <string.h>

extern uint8_t __bss_start[], __bss_end[];

int main(void);
void board_start(void);


__asm__(
  ".section .multiboot, \"a\"\n"
  ".align 4\n"
  ".long 0x1BADB002\n"
  ".long 0x00000000\n"
  ".long -(0x1BADB002 + 0x00000000)\n"

  ".section .rodata\n"
  ".align 16\n"
  "gdt:\n"
  ".quad 0\n"
  ".quad 0x00CF9A000000FFFF\n"   /* 0x08: code, base 0, 4 GiB, ring 0 */
  ".quad 0x00CF92000000FFFF\n"   /* 0x10: data, base 0, 4 GiB, ring 0 */
  "gdt_end:\n"
  ".align 4\n"
  ".word 0\n"
  "gdt_desc:\n"
  ".word gdt_end - gdt - 1\n"
  ".long gdt\n"

  ".section .text.entry, \"ax\"\n"
  ".global _start\n"
  "_start:\n"
  "  cli\n"
  "  movl $__stack_top, %esp\n"
  "  lgdt gdt_desc\n"
  "  ljmp $0x08, $1f\n"
  "1:\n"
  "  movw $0x10, %ax\n"
  "  movw %ax, %ds\n"
  "  movw %ax, %es\n"
  "  movw %ax, %fs\n"
  "  movw %ax, %gs\n"
  "  movw %ax, %ss\n"
  "  cld\n"
  "  call board_start\n"
  "2:\n"
  "  cli\n"
  "  hlt\n"
  "  jmp 2b\n"

  /* Vectors where the CPU pushes an error code: 8, 10-14, 17. */
  ".macro ISR_NOERR n\n"
  "isr\\n:\n"
  "  pushl $0\n"
  "  pushl $\\n\n"
  "  jmp isr_common\n"
  ".endm\n"
  ".macro ISR_ERR n\n"
  "isr\\n:\n"
  "  pushl $\\n\n"
  "  jmp isr_common\n"
  ".endm\n"
  ".text\n"
  ".irp n, 0,1,2,3,4,5,6,7,9,15,16,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n"
  "  ISR_NOERR \\n\n"
  ".endr\n"
  ".irp n, 8,10,11,12,13,14,17\n"
  "  ISR_ERR \\n\n"
  ".endr\n"
  ".irp n, 32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47\n"
  "  ISR_NOERR \\n\n"
  ".endr\n"
#if NR_KERNEL
  /* The kernel's switch, raised by a thread (arch/x86/kernel_port.c). */
  "  ISR_NOERR 48\n"
#endif

  /* Flat ring-0 code only: no segment registers to save. The frame pointer
     passed is the pusha block, followed by vector, error code, eip, cs,
     eflags. */
#if !NR_KERNEL
  "isr_common:\n"
  "  pushal\n"
  "  cld\n"
  "  pushl %esp\n"
  "  call isr_dispatch\n"
  "  addl $4, %esp\n"
  "  popal\n"
  "  addl $8, %esp\n"
  "  iret\n"
#else
  /* With the kernel (arch/x86/kernel_port.c): the outermost interrupt moves
     to the interrupt stack, so a thread's stack only ever holds this frame;
     ebx (callee-saved, so it survives the calls) keeps the frame's address.
     Leaving the outermost one with a switch pending (and not held by a
     masked wait for an interrupt), the kernel picks the thread to resume and
     the stub returns through that thread's frame instead. */
  "isr_common:\n"
  "  pushal\n"
  "  cld\n"
  "  movl %esp, %ebx\n"
  "  movl nr_port_irq_depth, %eax\n"
  "  incl nr_port_irq_depth\n"
  "  testl %eax, %eax\n"
  "  jnz 1f\n"
  "  movl nr_port_irq_stack_top, %esp\n"
  "1:\n"
  "  pushl %ebx\n"
  "  call isr_dispatch\n"
  "  addl $4, %esp\n"
  "  cmpl $1, nr_port_irq_depth\n"
  "  jne 2f\n"
  "  cmpl $0, nr_port_switch_pending\n"
  "  je 2f\n"
  "  cmpl $0, nr_port_switch_hold\n"
  "  jne 2f\n"
  "  pushl %ebx\n"
  "  call nr_port_switch\n"
  "  movl %eax, %ebx\n"
  "2:\n"
  "  decl nr_port_irq_depth\n"
  "  movl %ebx, %esp\n"
  "  popal\n"
  "  addl $8, %esp\n"
  "  iret\n"
#endif

  ".section .rodata\n"
  ".align 4\n"
  ".global isr_stub_table\n"
  "isr_stub_table:\n"
  ".irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,"
  "32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47\n"
  "  .long isr\\n\n"
  ".endr\n"
#if NR_KERNEL
  "  .long isr48\n"
#endif
  ".text\n");

void board_start(void)
{
  /* QEMU's multiboot loader copies the zero-filled tail of the segments
     too, but a warm reboot or another loader need not. */
  memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));
  main();
}
