/*
 * QEMU pc board glue: IDT, the two 8259 PICs, the PIT as the 1 ms tick
 * (stretched by the tick dilation), the board's fine clock and CPU load,
 * interrupt helpers, idle, the known instruction loop and the exception dump.
 *
 * Interrupt gates clear IF, so handlers never nest; the main loop masks
 * interrupts with cli around its checks (board_irq_save) exactly as the
 * Cortex-M boards do with PRIMASK. A firmware built with the kernel
 * (NR_KERNEL) has a few hooks more, each marked: the switch vector, the
 * tick's call of nr_kernel_tick(), and the two places where interrupts come
 * back on (board_irq_restore(), the wait for an interrupt).
 */
#include <stdint.h>

#include "nr_board.h"
#include "nr_board_tick.h"
#include "board_defs.h"
#include "x86/io.h"
#if NR_KERNEL
#include "nr_kernel.h"
#endif

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

/* Vectors 0-31 the CPU's exceptions, 32-47 the two 8259s; with the kernel
   48 as well, the switch its threads raise (arch/x86/kernel_port.c). */
#if NR_KERNEL
#define IDT_VECTORS 49
#define SWITCH_VECTOR 48u
extern volatile uint32_t nr_port_switch_hold;
void nr_port_irq_enabled(void);
#else
#define IDT_VECTORS 48
#endif

extern const uint32_t isr_stub_table[IDT_VECTORS];

struct idt_entry {
  uint16_t offset_lo;
  uint16_t selector;
  uint8_t zero;
  uint8_t type_attr;
  uint16_t offset_hi;
} __attribute__((packed));

static struct idt_entry idt[IDT_VECTORS] __attribute__((aligned(8)));

#define PIC1_CMD  0x20u
#define PIC1_DATA 0x21u
#define PIC2_CMD  0xA0u
#define PIC2_DATA 0xA1u
#define PIC_EOI   0x20u
#define ELCR1     0x4D0u
#define ELCR2     0x4D1u
#define PIT_CH0   0x40u
#define PIT_CMD   0x43u

#define PIC_OCW3_READ_IRR 0x0Au
#define PIT_LATCH_CH0 0x00u
#define PIT_CH0_MODE2 0x34u /* channel 0, lobyte/hibyte, mode 2 (rate generator) */
#define PIT_MAX_PERIOD 0xFFFFu /* 16-bit count (0 would mean 65536; not used) */
#define NS_PER_MS 1000000u

static struct nr_tick tick;

int board_clock_port(int on)
{
  return nr_tick_clock_port(&tick, on);
}

/* The PIT interrupts BOARD_CLOCK_SUBTICKS times a board ms (the clock port
   resolves an eighth of a ms). Its period in PIT counts (the divisor), and
   the nanoseconds one count lasts as 32.32 fixed point (a multiply per clock
   read, no division). Changed only with interrupts off, at a tick boundary.
   The divisor is rounded to whole counts: at 1193182 Hz a board ms lasts
   8 x 149 counts (0.1 % short) free-running, and within 0.05 % of its
   modelled length at the dilations device time uses. */
#define NS_PER_SUBTICK (NS_PER_MS / BOARD_CLOCK_SUBTICKS)
static uint32_t tick_period;
static uint64_t tick_ns_q32;
static uint32_t tick_milli;
static uint64_t last_ns;  /* board_time_ns() never returns less than this */
static uint64_t idle_ns;

static void idt_init(void)
{
  struct {
    uint16_t limit;
    uint32_t base;
  } __attribute__((packed)) desc = { sizeof(idt) - 1u, (uint32_t)idt };

  for (unsigned v = 0; v < IDT_VECTORS; v++) {
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

/* Loading a count restarts channel 0 at once (QEMU's i8254 and, with the
   mode written first, the real 8254 alike). */
static void pit_load(uint32_t period, uint32_t milli)
{
  outb(PIT_CMD, PIT_CH0_MODE2);
  outb(PIT_CH0, (uint8_t)(period & 0xFFu));
  outb(PIT_CH0, (uint8_t)(period >> 8));
  tick_period = period;
  tick_ns_q32 = ((uint64_t)NS_PER_SUBTICK << 32) / period;
  tick_milli = milli;
}

/* The divisor for a dilation: one board ms lasts milli/1000 ms of the PIT's
   clock, in BOARD_CLOCK_SUBTICKS interrupts. */
static uint32_t pit_period_for(uint32_t milli)
{
  return (uint32_t)(((uint64_t)PIT_HZ * milli + 500000u * BOARD_CLOCK_SUBTICKS) /
                    (1000000u * BOARD_CLOCK_SUBTICKS));
}

static void pit_init(void)
{
  pit_load(pit_period_for(1000u), 1000u);
}

/* Channel 0's count, latched so the two bytes belong together. In mode 2 it
   runs period, period-1, ..., 1 and reloads; the interrupt's edge comes as
   it reloads. */
static uint32_t pit_count(void)
{
  uint32_t lo, hi;

  outb(PIT_CMD, PIT_LATCH_CH0);
  lo = inb(PIT_CH0);
  hi = inb(PIT_CH0);
  return lo | (hi << 8);
}

/* The tick interrupt is waiting in the master 8259 (edge-triggered: its IRR
   bit stays set until the CPU takes it). OCW3 is written every time, since
   isr_dispatch() leaves the PIC reading its ISR. */
static int pit_irq_pending(void)
{
  outb(PIC1_CMD, PIC_OCW3_READ_IRR);
  return (inb(PIC1_CMD) & (1u << IRQ_PIT)) != 0;
}

static uint32_t tick_max_milli(void)
{
  return (uint32_t)(((uint64_t)PIT_MAX_PERIOD * 1000000u * BOARD_CLOCK_SUBTICKS) / PIT_HZ);
}

void board_get_tick(struct board_tick *out)
{
  out->dilation_milli = tick_milli;
  out->period = tick_period;
  out->input_hz = PIT_HZ;
  out->min_milli = BOARD_TICK_MIN_MILLI;
  out->max_milli = tick_max_milli();
}

int board_set_tick_dilation(uint32_t milli)
{
  uint32_t period, t, irq;

  if (milli < BOARD_TICK_MIN_MILLI || milli > tick_max_milli()) {
    return BOARD_TICK_RANGE;
  }
  period = pit_period_for(milli);
  /* Reload just after a tick, so the tick in progress is not cut short: the
     board's ms and fine clock stay continuous to within the handler's
     latency. */
  t = tick.subtick;
  while (tick.subtick == t) {
  }
  irq = board_irq_save();
  pit_load(period, milli);
  board_irq_restore(irq);
  return BOARD_TICK_OK;
}

/* With interrupts off the tick handler cannot run, so a reload since the
   last tick shows as the pending IRQ 0 instead of in the tick count. The count is
   latched again when the reload is seen, because it may have come between
   the two reads; the count read last belongs to the tick the IRR says. */
uint64_t board_time_ns(void)
{
  uint32_t irq = board_irq_save();
  uint64_t ticks = nr_tick_count(&tick);
  uint32_t count = pit_count();
  uint64_t ns;

  if (pit_irq_pending()) {
    count = pit_count();
    ticks++;
  }
  if (count == 0u || count > tick_period) {
    count = tick_period; /* not in mode 2's range: read as the start of a tick */
  }
  ns = ticks * NS_PER_SUBTICK + (((uint64_t)(tick_period - count) * tick_ns_q32) >> 32);
  if (ns < last_ns) {
    ns = last_ns; /* without -icount QEMU's tick timer can fire after the count has reloaded */
  }
  last_ns = ns;
  board_irq_restore(irq);
  return ns;
}

uint64_t board_idle_ns(void)
{
  uint32_t irq = board_irq_save();
  uint64_t ns = idle_ns;

  board_irq_restore(irq);
  return ns;
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
  return tick.ms;
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
#if NR_KERNEL
    /* A switch asked for in the critical section that ends here happens
       now (there is no PendSV to wait for the mask to lift). */
    nr_port_irq_enabled();
#endif
  }
}

void board_wait_for_interrupt(void)
{
  uint64_t t0 = board_time_ns();

  /* sti takes effect after the next instruction, so an interrupt pending
     now wakes the hlt instead of running before it; cli then returns to
     the caller's masked state (board_irq_restore re-enables). The handler
     that woke the core runs before the cli, so its few hundred instructions
     count as idle. */
#if NR_KERNEL
  /* The interrupt that wakes the core is taken inside this masked section;
     a switch it asks for waits for the caller's board_irq_restore(), so
     the time counted here is the sleep alone. */
  nr_port_switch_hold = 1u;
#endif
  __asm volatile("sti\n\thlt\n\tcli" ::: "memory");
#if NR_KERNEL
  nr_port_switch_hold = 0u;
#endif
  idle_ns += board_time_ns() - t0;
}

/* Two instructions an iteration (dec, and jnz taken; the last not taken),
   so under QEMU's -icount N iterations take 2N instructions of the modelled
   core's time. */
uint32_t board_spin(uint32_t iterations, int irqs_off)
{
  uint32_t state = irqs_off ? board_irq_save() : 0;

  if (iterations > 0u) {
    __asm volatile("1: decl %0\n\t"
                   "jnz 1b"
                   : "+r"(iterations)
                   :
                   : "cc");
  }
  if (irqs_off) {
    board_irq_restore(state);
  }
  return 0;
}

uint32_t board_spin_instructions(void)
{
  return 2;
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

#if NR_KERNEL
  if (f->vector == SWITCH_VECTOR) {
    return; /* the stub switches on its way out */
  }
#endif
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
    nr_tick_advance(&tick);
#if NR_KERNEL
    /* The kernel's tick (firmware/kernel): once a board ms, so its sleeps
       and timeouts follow the board's time, device time included. */
    if (tick.subtick == 0u) {
      nr_kernel_tick();
    }
#endif
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
