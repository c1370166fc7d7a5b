/*
 * printf formats for the stdint types as the i386 System V ABI defines them
 * (int32_t is int, intptr_t/size_t are int/unsigned int); lwIP builds its
 * U32_F etc. from these.
 */
#ifndef XBOX_INTTYPES_H
#define XBOX_INTTYPES_H

#include <stdint.h>

#define PRId8   "d"
#define PRIu8   "u"
#define PRIx8   "x"
#define PRId16  "d"
#define PRIu16  "u"
#define PRIx16  "x"
#define PRId32  "d"
#define PRIu32  "u"
#define PRIx32  "x"
#define PRId64  "lld"
#define PRIu64  "llu"
#define PRIx64  "llx"
#define PRIdPTR "d"
#define PRIuPTR "u"
#define PRIxPTR "x"

#endif
