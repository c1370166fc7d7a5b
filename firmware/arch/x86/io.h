/*
 * x86 port I/O and the compiler barrier DMA rings need: used by the x86
 * boards (console, interrupt controller) and the PCI NIC drivers.
 */
#ifndef ARCH_X86_IO_H
#define ARCH_X86_IO_H

#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
  __asm volatile("outb %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

static inline uint8_t inb(uint16_t port)
{
  uint8_t v;

  __asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory");
  return v;
}

static inline void outl(uint16_t port, uint32_t v)
{
  __asm volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

static inline uint32_t inl(uint16_t port)
{
  uint32_t v;

  __asm volatile("inl %1, %0" : "=a"(v) : "Nd"(port) : "memory");
  return v;
}

/* x86 keeps stores in order and DMA is cache coherent, so a compiler
   barrier is all the ordering descriptor rings need against the device. */
#define x86_barrier() __asm volatile("" ::: "memory")

#endif
