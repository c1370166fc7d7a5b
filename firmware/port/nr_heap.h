/*
 * lwIP's heap (core/mem.c, MEM_SIZE bytes) as its blocks: how much of it is
 * free in all, and the largest free block. lwIP counts the bytes in use
 * (mem.used) and the allocations that failed (mem.err), but not whether a
 * failed mem_malloc() found the heap full or only cut into pieces too small:
 * first-fit allocation leaves holes, and a heap with room for a segment in
 * all can still refuse it. This walks the block list to tell the two apart.
 */
#ifndef NR_HEAP_H
#define NR_HEAP_H

#include <stdint.h>

struct nr_heap_layout {
  uint32_t size;          /* the heap's bytes (MEM_SIZE, aligned), block headers included */
  uint32_t header;        /* the bytes each block's header takes */
  uint32_t free_bytes;    /* what the free blocks hold, headers not counted */
  uint32_t largest_free;  /* the largest single request mem_malloc() could satisfy now */
  uint32_t used_blocks;
  uint32_t free_blocks;
};

/* Fills *out from the heap as it is now: 0, or -1 where this build has no
   lwIP heap to walk (MEM_LIBC_MALLOC, MEM_USE_POOLS) or its block list does
   not check out (another lwIP's layout). */
int nr_heap_layout(struct nr_heap_layout *out);

/* What a failed allocation of `request` bytes met (nr_heap_layout() at the
   failure): */
enum nr_heap_verdict {
  NR_HEAP_UNKNOWN,    /* the heap could not be walked */
  NR_HEAP_FULL,       /* fewer than `request` bytes free in all */
  NR_HEAP_FRAGMENTED, /* enough free in all, but no single block that large */
  NR_HEAP_ROOM        /* a free block that large exists: the failure was not the heap's */
};
enum nr_heap_verdict nr_heap_judge(const struct nr_heap_layout *layout, int walked, uint32_t request);

/* The bytes pbuf_alloc(PBUF_TRANSPORT, len, PBUF_RAM) asks mem_malloc() for:
   what tcp_write() allocates for a segment of `len` bytes. */
uint32_t nr_heap_transport_pbuf_request(uint32_t len);

#endif
