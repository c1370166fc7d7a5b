/*
 * Frames: the names the link gives directions, drop reasons and the drop list's kinds of frame, and the
 * parsing of a frame's headers (Ethernet, ARP, IPv4, TCP, UDP, ICMP) into a one-line summary for the
 * drops log and the drop list's classification.
 */
#ifndef NR_FRAME_H
#define NR_FRAME_H

#include <stddef.h>
#include <stdint.h>

enum { TO_DEVICE = 0, TO_PEER = 1, NDIR = 2 };
extern const char *const dir_name[NDIR];

enum { R_LOSS, R_GEMODEL, R_DROPLIST, R_QUEUE, R_UNREACHABLE, R_DEVICE_FULL, R_AIR, NREASON };
extern const char *const reason_name[NREASON];

/* K_SEQ names bytes, not frames: seq:N drops the frame that first carries byte N of the TCP connection opened
   last that way (N relative to its SYN, as Wireshark shows it: the first byte of data is 1) */
enum { K_FRAME, K_DATA, K_SYN, K_FIN, K_RST, K_ACK, K_UDP, K_SEQ, NKIND };
extern const char *const kind_name[NKIND];

struct pinfo {
    int ethertype;
    int is_ipv4, proto, frag;
    uint8_t src[4], dst[4];
    int sport, dport;
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t win;
    uint32_t payload;
    int icmp_type;
    int arp_op;
};

void parse_frame(const uint8_t *b, uint32_t len, struct pinfo *p);
void summarize(const struct pinfo *p, uint32_t len, char *out, size_t cap);

#endif
