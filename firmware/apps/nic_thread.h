/* NO_SYS 0: the NIC's receive thread (nic_thread.c). */
#ifndef NIC_THREAD_H
#define NIC_THREAD_H

#include "lwip/netif.h"

/* Starts the receive thread for netif (added with tcpip_input); 1 on success. */
int nic_rx_thread_start(struct netif *netif);

#endif
