/*
 * ETHERNUT2_APPS=small: the shell keeps its command table, but iperf
 * (lwiperf assumes 32-bit int: 1024 * 128 overflows to 0 there) and the
 * socket benchmark (8 KiB of buffers) are not linked; their commands say so.
 */
#include "nr_printf.h"
#include "../../apps/apps.h"

void cmd_iperf(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  nr_printf("ERROR: iperf is not built for this board\n");
}

void cmd_sock(int argc, char **argv)
{
  (void)argc;
  (void)argv;
  nr_printf("ERROR: sock is not built for this board\n");
}

void iperf_poll(void)
{
}

void sockbench_poll(void)
{
}
