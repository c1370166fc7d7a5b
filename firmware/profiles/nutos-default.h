/*
 * Profile "nutos-default": Ethernut 2 with Nut/OS's default TCP settings
 * (Oliver Schulz, "New TCP output buffering", En-Nut-Discussion mailing
 * list, 2004: report R3, reports/ethernut2.toml). Nut/OS itself is not
 * available in any reachable package registry, so this is lwIP 2.1.3
 * configured to behave as R3 describes; the discard test writes with
 *   discard <pc-ip> 8388608 536
 * i.e. in chunks of the output buffer (SO_SNDBUF, default TCP_MSS), each
 * chunk one segment with PSH (lwIP sets PSH on the last segment of every
 * tcp_write() without TCP_WRITE_FLAG_MORE).
 */
/* R3: "TCP_MSS 536 by default (sent in the SYN)". */
#define TCP_MSS 536
/* R3: "the sender keeps about 4 segments unacknowledged": the send buffer
   holds 4 segments, so no more than 4 are ever in flight. */
#define TCP_SND_BUF (4 * TCP_MSS)
/* lwIP's sanity rule (init.c): at least 2 * TCP_SND_BUF/TCP_MSS pbufs. */
#define TCP_SND_QUEUELEN 8
#define MEMP_NUM_TCP_SEG 8
/* R3: Nut/OS's receive window 3216 = 6 * 536. */
#define TCP_WND 3216
/* External RAM (0x1100-0xBFFF, ~43 KiB for .data/.bss/heap): not from R3,
   sized so the send buffer (copied into the heap) plus ARP/ICMP fit in
   MEM_SIZE, and the RX pool holds a few full frames (pool buffers are
   TCP_MSS + headers = 592 B, so a full-size frame chains 3 of them). */
#define MEM_SIZE 4096
#define PBUF_POOL_SIZE 12
#define MEMP_NUM_TCP_PCB 4
#define MEMP_NUM_TCP_PCB_LISTEN 4
#define MEMP_NUM_UDP_PCB 2
/* 8-bit CPU: no alignment needed; saves heap and pool padding. */
#define MEM_ALIGNMENT 1
#define ETH_PAD_SIZE 0
