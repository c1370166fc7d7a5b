/*
 * QEMU pc board glue: IDT, the two 8259 PICs, the PIT as the 1 ms tick,
 * interrupt helpers, idle, and the exception dump.
 *
 * Interrupt gates clear IF, so handlers never nest; the main loop masks
 * interrupts with cli around its checks (board_irq_save) exactly as the
 * Cortex-M boards do with PRIMASK.
 */
#include <stdint.h>

#include "nr_board.h"
#include "board_defs.h"
#include "x86/io.h"

void console_init(void);
void console_irq_handler(void);
void console_putc_polled(char c);
void nic_irq_handler(void); /* the NIC driver's (nr_nic.h, kept free of lwIP here) */

struct isr_frame {
  uint32_t edi, esi, ebp, esp, ebx, edx, ecx, eax; /* pushal */
  uint32_t vector, error;
  uint32_t eip, cs, eflags;
};

void isr_dispatch(struct isr_frame *f);

extern const uint32_t isr_stub_table[48];

struct idt_entry {
  uint16_t offset_lo;
  uint16_t selector;
  uint8_t zero;
  uint8_t type_attr;
  uint16_t offset_hi;
} __attribute__((packed));

static struct idt_entry idt[48] __attribute__((aligned(8)));

#define PIC1_CMD  0x20u
#define PIC1_DATA 0x21u
#define PIC2_CMD  0xA0u
#define PIC2_DATA 0xA1u
#define PIC_EOI   0x20u
#define ELCR1     0x4D0u
#define ELCR2     0x4D1u
#define PIT_CH0   0x40u
#define PIT_CMD   0x43u

static volatile uint32_t ticks_ms;

static void idt_init(void)
{
  struct {
    uint16_t limit;
    uint32_t base;
  } __attribute__((packed)) desc = { sizeof(idt) - 1u, (uint32_t)idt };

  for (unsigned v = 0; v < 48; v++) {
    idt[v].offset_lo = (uint16_t)isr_stub_table[v];
    idt[v].selector = 0x08;
    idt[v].zero = 0;
    idt[v].type_attr = 0x8E; /* present, ring 0, 32-bit interrupt gate */
    idt[v].offset_hi = (uint16_t)(isr_stub_table[v] >> 16);
  }
  __asm volatile("lidt %0" : : "m"(desc));
}

static void pic_init(void)
{
  outb(PIC1_CMD, 0x11);          /* ICW1: edge (ELCR overrides per line), cascade, ICW4 */
  outb(PIC2_CMD, 0x11);
  outb(PIC1_DATA, PIC1_VECTOR);  /* ICW2: vector bases */
  outb(PIC2_DATA, PIC2_VECTOR);
  outb(PIC1_DATA, 0x04);         /* ICW3: slave on IRQ2 */
  outb(PIC2_DATA, 0x02);
  outb(PIC1_DATA, 0x01);         /* ICW4: 8086 mode, normal EOI */
  outb(PIC2_DATA, 0x01);
  outb(PIC1_DATA, 0xFB);         /* all masked but the cascade */
  outb(PIC2_DATA, 0xFF);
}

/* PCI interrupts are level triggered and shared; the 8259 must sample the
   line as a level or a second cause raised before the first is cleared
   would be lost. SeaBIOS sets this already; set it anyway. */
static void pic_set_level(unsigned irq)
{
  uint16_t port = irq < 8 ? ELCR1 : ELCR2;

  outb(port, (uint8_t)(inb(port) | (1u << (irq & 7u))));
}

static void pit_init(void)
{
  outb(PIT_CMD, 0x34); /* channel 0, lobyte/hibyte, mode 2 (rate generator) */
  outb(PIT_CH0, (uint8_t)(PIT_DIVISOR & 0xFFu));
  outb(PIT_CH0, (uint8_t)(PIT_DIVISOR >> 8));
}

void board_irq_enable(unsigned irq)
{
  if (irq < 8) {
    outb(PIC1_DATA, (uint8_t)(inb(PIC1_DATA) & ~(1u << irq)));
  } else {
    outb(PIC2_DATA, (uint8_t)(inb(PIC2_DATA) & ~(1u << (irq - 8u))));
  }
}

uint32_t board_ms(void)
{
  return ticks_ms;
}

uint32_t board_irq_save(void)
{
  uint32_t flags;

  __asm volatile("pushfl\n\tpopl %0\n\tcli" : "=r"(flags) : : "memory");
  return flags & 0x200u;
}

void board_irq_restore(uint32_t state)
{
  if (state & 0x200u) {
    __asm volatile("sti" ::: "memory");
  }
}

void board_wait_for_interrupt(void)
{
  /* sti takes effect after the next instruction, so an interrupt pending
     now wakes the hlt instead of running before it; cli then returns to
     the caller's masked state (board_irq_restore re-enables). */
  __asm volatile("sti\n\thlt\n\tcli" ::: "memory");
}

static void put_str(const char *s)
{
  while (*s) {
    console_putc_polled(*s++);
  }
}

static void put_hex(const char *name, uint32_t v)
{
  static const char hex[] = "0123456789abcdef";

  put_str(name);
  put_str("=0x");
  for (int shift = 28; shift >= 0; shift -= 4) {
    console_putc_polled(hex[(v >> shift) & 0xFu]);
  }
  console_putc_polled(' ');
}

static void fault(const struct isr_frame *f)
{
  uint32_t cr2;

  __asm volatile("mov %%cr2, %0" : "=r"(cr2));
  put_str("\nFAULT x86 ");
  put_hex("vector", f->vector);
  put_hex("error", f->error);
  put_hex("eip", f->eip);
  put_hex("eflags", f->eflags);
  put_hex("cr2", cr2);
  put_hex("eax", f->eax);
  put_hex("ecx", f->ecx);
  put_hex("edx", f->edx);
  put_hex("esp", f->esp);
  put_str("\n");
  for (;;) {
    __asm volatile("cli\n\thlt");
  }
}

void isr_dispatch(struct isr_frame *f)
{
  unsigned irq;

  if (f->vector < PIC1_VECTOR) {
    fault(f);
  }
  irq = f->vector - PIC1_VECTOR;
  if (irq == 7u || irq == 15u) {
    /* A spurious interrupt sets no in-service bit and must not get an EOI
       on its own PIC (the master still needs one for a spurious IRQ15). */
    uint16_t cmd = irq == 7u ? PIC1_CMD : PIC2_CMD;

    outb(cmd, 0x0B); /* read ISR */
    if (!(inb(cmd) & 0x80u)) {
      if (irq == 15u) {
        outb(PIC1_CMD, PIC_EOI);
      }
      return;
    }
  }
  if (irq == IRQ_PIT) {
    ticks_ms++;
  } else if (irq == IRQ_COM1) {
    console_irq_handler();
  } else if (irq == NIC_IRQ) {
    nic_irq_handler();
  }
  if (irq >= 8u) {
    outb(PIC2_CMD, PIC_EOI);
  }
  outb(PIC1_CMD, PIC_EOI);
}

void board_init(void)
{
  idt_init();
  pic_init();
  pic_set_level(NIC_IRQ);
  console_init();
  pit_init();
  board_irq_enable(IRQ_PIT);
  __asm volatile("sti" ::: "memory");
}
