/*
 * The thread-based socket benchmark of a NO_SYS 0 build (NR_APP_API_SOCKET
 * or NR_APP_API_NETCONN, profiles/base.h): sockbench_thread.c is the "sock"
 * command and the benchmark's thread, and the API's file runs one test in
 * that thread (sockbench_socket.c on BSD sockets, sockbench_netconn.c on
 * netconn). Both print the raw-API benchmark's result lines (sockbench.c),
 * which the harness parses:
 *   SOCK dir=<tx|rx> bytes=<n> ms=<n> kbps=<n> err_mem_waits=0 sndbuf_waits=0
 *   SOCK dir=<tx|rx> error=<call>_<why>
 * (the waits for send room or memory happen inside lwIP here, so the raw
 * benchmark's two wait counters are 0).
 */
#ifndef SOCKBENCH_THREAD_H
#define SOCKBENCH_THREAD_H

#include <stdint.h>

#include "sockbench_args.h"

/* What a blocking send or receive waits at most where the options file
   enables LWIP_SO_SNDTIMEO / LWIP_SO_RCVTIMEO, in board ms: long past any
   pause of a live peer, short enough that a dead one ends the test with an
   error line instead of holding the thread for good. */
#ifndef SOCK_IO_TIMEOUT_MS
#define SOCK_IO_TIMEOUT_MS 10000
#endif

/* The benchmark's buffer: the data written (0xA5) or where reads go. */
extern uint8_t sock_io_buf[SOCK_IO_MAX];

/* Runs one test in the benchmark's thread and ends it with exactly one of
   sock_thread_done() and sock_thread_error(). The API's file defines it. */
void sock_api_run(const struct sock_args *job);

/* The test moved bytes in ms (from the connection until its end). */
void sock_thread_done(const struct sock_args *job, uint32_t bytes, uint32_t ms);

/* The test failed: error=<call>_<why>, printf-style. */
void sock_thread_error(const struct sock_args *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* After each read: the application's own time per read (-d), slept in
   whole board ms once it adds up; *owed carries the rest (start at 0). */
void sock_thread_read_delay(const struct sock_args *job, uint64_t *owed_us);

#endif
