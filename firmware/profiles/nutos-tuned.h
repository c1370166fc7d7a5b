/*
 * Profile "nutos-tuned": the R3 report's tuned run, TCP_MAXSEG 1460 and
 * SO_SNDBUF 1460 (343.8 KB/s vs 269.4 KB/s in Oliver Schulz's "New TCP
 * output buffering", En-Nut-Discussion mailing list, 2004;
 * reports/ethernut2.toml). Nut/OS itself is not available in any reachable
 * package registry, so this is lwIP 2.1.3 configured to behave as R3
 * describes; the discard test writes with
 *   discard <pc-ip> 8388608 1460
 * (output buffer = SO_SNDBUF = 1460, one PSH segment per chunk).
 */
/* R3: TCP_MAXSEG 1460. */
#define TCP_MSS 1460
/* R3: "the sender keeps about 4 segments unacknowledged". */
#define TCP_SND_BUF (4 * TCP_MSS)
#define TCP_SND_QUEUELEN 8
#define MEMP_NUM_TCP_SEG 8
/* R3 changes only the MSS and SO_SNDBUF: the receive window stays Nut/OS's
   3216 (6 * 536); it is >= TCP_MSS as lwIP requires. */
#define TCP_WND 3216
/* External RAM sizing (not from R3): 4 * 1460 B of copied send data plus
   headers in the heap; pool buffers of TCP_MSS + headers (1516 B) hold one
   full frame each. */
#define MEM_SIZE 8192
#define PBUF_POOL_SIZE 6
#define MEMP_NUM_TCP_PCB 4
#define MEMP_NUM_TCP_PCB_LISTEN 4
#define MEMP_NUM_UDP_PCB 2
/* 8-bit CPU: no alignment needed; saves heap and pool padding. */
#define MEM_ALIGNMENT 1
#define ETH_PAD_SIZE 0
