/*
 * Walking lwIP's heap (see nr_heap.h). lwIP keeps the heap's block list
 * private to core/mem.c; this mirrors its header (next and previous block as
 * offsets into the heap, and a used flag: lwIP 2.0 to 2.1) and checks every
 * link it follows, and where lwIP counts its heap (MEM_STATS) that the used
 * blocks add up to its count, so a layout that differs gives -1, never a
 * wrong answer.
 */
#include "lwip/opt.h"
#include "lwip/mem.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"

#include "nr_heap.h"

#define NR_HEAP_WALKABLE (!MEM_LIBC_MALLOC && !MEM_USE_POOLS)

uint32_t nr_heap_transport_pbuf_request(uint32_t len)
{
  /* pbuf_alloc(PBUF_RAM): the pbuf struct, the headers' room (the layer's
     offset), then the payload, each aligned */
  return LWIP_MEM_ALIGN_SIZE(sizeof(struct pbuf)) + LWIP_MEM_ALIGN_SIZE((uint32_t)PBUF_TRANSPORT) +
         LWIP_MEM_ALIGN_SIZE(len);
}

enum nr_heap_verdict nr_heap_judge(const struct nr_heap_layout *layout, int walked, uint32_t request)
{
  uint32_t need = LWIP_MEM_ALIGN_SIZE(request);

  if (walked != 0) {
    return NR_HEAP_UNKNOWN;
  }
  if (layout->largest_free >= need) {
    return NR_HEAP_ROOM;
  }
  return layout->free_bytes >= need ? NR_HEAP_FRAGMENTED : NR_HEAP_FULL;
}

#if NR_HEAP_WALKABLE

struct nr_mem_header { /* core/mem.c's struct mem */
  mem_size_t next;
  mem_size_t prev;
  u8_t used;
#if MEM_OVERFLOW_CHECK
  mem_size_t user_size;
#endif
};

#define NR_MEM_HEADER  LWIP_MEM_ALIGN_SIZE(sizeof(struct nr_mem_header))
#define NR_HEAP_BYTES  LWIP_MEM_ALIGN_SIZE(MEM_SIZE)

#ifdef LWIP_RAM_HEAP_POINTER
#define NR_HEAP_START ((u8_t *)(LWIP_RAM_HEAP_POINTER))
#else
extern u8_t ram_heap[]; /* LWIP_DECLARE_MEMORY_ALIGNED(ram_heap, ...) in core/mem.c */
#define NR_HEAP_START ram_heap
#endif

int nr_heap_layout(struct nr_heap_layout *out)
{
  u8_t *ram = (u8_t *)LWIP_MEM_ALIGN(NR_HEAP_START);
  mem_size_t at = 0, prev = 0;
  uint32_t used_bytes = 0; /* headers included, as lwIP counts mem.used */

  out->size = NR_HEAP_BYTES;
  out->header = NR_MEM_HEADER;
  out->free_bytes = out->largest_free = out->used_blocks = out->free_blocks = 0;
  while (at < NR_HEAP_BYTES) {
    const struct nr_mem_header *m = (const struct nr_mem_header *)(void *)&ram[at];
    if (m->next <= at || m->next > NR_HEAP_BYTES || m->prev != prev || m->used > 1 ||
        m->next - at < NR_MEM_HEADER) {
      return -1;
    }
    if (m->used) {
      out->used_blocks++;
      used_bytes += (uint32_t)(m->next - at);
    } else {
      uint32_t room = (uint32_t)(m->next - at) - NR_MEM_HEADER;
      out->free_blocks++;
      out->free_bytes += room;
      if (room > out->largest_free) {
        out->largest_free = room;
      }
    }
    prev = at;
    at = m->next;
  }
#if LWIP_STATS && MEM_STATS
  if (used_bytes != lwip_stats.mem.used) {
    return -1;
  }
#endif
  LWIP_UNUSED_ARG(used_bytes);
  return at == NR_HEAP_BYTES ? 0 : -1;
}

#else /* no lwIP heap of its own: mem_malloc() is the C library's or pools */

int nr_heap_layout(struct nr_heap_layout *out)
{
  LWIP_UNUSED_ARG(out);
  return -1;
}

#endif
