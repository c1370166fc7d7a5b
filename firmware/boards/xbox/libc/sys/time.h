/* struct timeval for lwIP's sockets (SO_RCVTIMEO, select) in a NO_SYS 0 build. */
#ifndef XBOX_SYS_TIME_H
#define XBOX_SYS_TIME_H

struct timeval {
  long tv_sec;
  long tv_usec;
};

#endif
