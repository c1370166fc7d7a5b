/*
 * errno for lwIP's sockets (LWIP_ERRNO_STDINCLUDE) and the apps of a NO_SYS 0
 * build. In a firmware with the kernel each thread has its own errno
 * (nr_thread_errno(), firmware/kernel); elsewhere one variable, in ../libc.c.
 * The numbers are Linux's (i386), which lwIP's own errno list also uses.
 */
#ifndef XBOX_ERRNO_H
#define XBOX_ERRNO_H

int *nr_libc_errno(void);
#define errno (*nr_libc_errno())

#define EPERM            1
#define ENOENT           2
#define ESRCH            3
#define EINTR            4
#define EIO              5
#define ENXIO            6
#define E2BIG            7
#define ENOEXEC          8
#define EBADF            9
#define ECHILD          10
#define EAGAIN          11
#define ENOMEM          12
#define EACCES          13
#define EFAULT          14
#define EBUSY           16
#define EEXIST          17
#define ENODEV          19
#define ENOTDIR         20
#define EISDIR          21
#define EINVAL          22
#define ENFILE          23
#define EMFILE          24
#define ENOSPC          28
#define ESPIPE          29
#define EPIPE           32
#define EDOM            33
#define ERANGE          34
#define ENOSYS          38
#define EWOULDBLOCK     EAGAIN
#define ENOTSOCK        88
#define EDESTADDRREQ    89
#define EMSGSIZE        90
#define EPROTOTYPE      91
#define ENOPROTOOPT     92
#define EPROTONOSUPPORT 93
#define EOPNOTSUPP      95
#define EAFNOSUPPORT    97
#define EADDRINUSE      98
#define EADDRNOTAVAIL   99
#define ENETDOWN       100
#define ENETUNREACH    101
#define ECONNABORTED   103
#define ECONNRESET     104
#define ENOBUFS        105
#define EISCONN        106
#define ENOTCONN       107
#define ETIMEDOUT      110
#define ECONNREFUSED   111
#define EHOSTUNREACH   113
#define EALREADY       114
#define EINPROGRESS    115

#endif
