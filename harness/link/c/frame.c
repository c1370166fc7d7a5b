/* Frames: see frame.h. */
#include "frame.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *const dir_name[NDIR] = {"to_device", "to_peer"};
const char *const reason_name[NREASON] = {"loss", "gemodel", "droplist", "queue", "unreachable",
                                          "device-full", "air"}; /* air: the shared medium only */
const char *const kind_name[NKIND] = {"frame", "data", "syn", "fin", "rst", "ack", "udp", "seq"};

void parse_frame(const uint8_t *b, uint32_t len, struct pinfo *p)
{
    memset(p, 0, sizeof(*p));
    p->ethertype = -1;
    p->proto = -1;
    if (len < 14)
        return;
    uint32_t off = 14;
    int et = (b[12] << 8) | b[13];
    if (et == 0x8100 && len >= 18) {
        et = (b[16] << 8) | b[17];
        off = 18;
    }
    p->ethertype = et;
    if (et == 0x0806 && len >= off + 8) {
        p->arp_op = (b[off + 6] << 8) | b[off + 7];
        return;
    }
    if (et != 0x0800 || len < off + 20)
        return;
    const uint8_t *ip = b + off;
    if ((ip[0] >> 4) != 4)
        return;
    uint32_t ihl = (uint32_t)(ip[0] & 0x0f) * 4;
    uint32_t tot = ((uint32_t)ip[2] << 8) | ip[3];
    if (ihl < 20 || tot < ihl || len < off + ihl)
        return;
    if (tot > len - off)
        tot = len - off; /* truncated: trust what is there */
    p->is_ipv4 = 1;
    p->proto = ip[9];
    p->frag = (((ip[6] & 0x1f) << 8) | ip[7]) != 0;
    memcpy(p->src, ip + 12, 4);
    memcpy(p->dst, ip + 16, 4);
    if (p->frag)
        return;
    const uint8_t *l4 = ip + ihl;
    uint32_t l4len = tot - ihl;
    if (p->proto == 6 && l4len >= 20) {
        uint32_t doff = (uint32_t)(l4[12] >> 4) * 4;
        p->sport = (l4[0] << 8) | l4[1];
        p->dport = (l4[2] << 8) | l4[3];
        p->seq = ((uint32_t)l4[4] << 24) | ((uint32_t)l4[5] << 16) | ((uint32_t)l4[6] << 8) | l4[7];
        p->ack = ((uint32_t)l4[8] << 24) | ((uint32_t)l4[9] << 16) | ((uint32_t)l4[10] << 8) | l4[11];
        p->flags = l4[13];
        p->win = (uint16_t)((l4[14] << 8) | l4[15]);
        p->payload = (doff >= 20 && doff <= l4len) ? l4len - doff : 0;
    } else if (p->proto == 17 && l4len >= 8) {
        p->sport = (l4[0] << 8) | l4[1];
        p->dport = (l4[2] << 8) | l4[3];
        p->payload = l4len - 8;
    } else if (p->proto == 1 && l4len >= 1) {
        p->icmp_type = l4[0];
    }
}

void summarize(const struct pinfo *p, uint32_t len, char *out, size_t cap)
{
    if (p->is_ipv4 && p->proto == 6 && !p->frag) {
        char fl[40] = "";
        static const char *const names[] = {"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"};
        for (int i = 0; i < 8; i++)
            if (p->flags & (1 << i)) {
                if (fl[0])
                    strcat(fl, ",");
                strcat(fl, names[i]);
            }
        snprintf(out, cap, "TCP %u.%u.%u.%u:%d > %u.%u.%u.%u:%d [%s] seq=%" PRIu32 " ack=%" PRIu32 " win=%u len=%" PRIu32,
                 p->src[0], p->src[1], p->src[2], p->src[3], p->sport, p->dst[0], p->dst[1], p->dst[2], p->dst[3],
                 p->dport, fl, p->seq, p->ack, p->win, p->payload);
    } else if (p->is_ipv4 && p->proto == 17 && !p->frag) {
        snprintf(out, cap, "UDP %u.%u.%u.%u:%d > %u.%u.%u.%u:%d len=%" PRIu32, p->src[0], p->src[1], p->src[2],
                 p->src[3], p->sport, p->dst[0], p->dst[1], p->dst[2], p->dst[3], p->dport, p->payload);
    } else if (p->is_ipv4 && p->proto == 1) {
        snprintf(out, cap, "ICMP %u.%u.%u.%u > %u.%u.%u.%u type=%d", p->src[0], p->src[1], p->src[2], p->src[3],
                 p->dst[0], p->dst[1], p->dst[2], p->dst[3], p->icmp_type);
    } else if (p->is_ipv4) {
        snprintf(out, cap, "IPv4 %u.%u.%u.%u > %u.%u.%u.%u proto=%d", p->src[0], p->src[1], p->src[2], p->src[3],
                 p->dst[0], p->dst[1], p->dst[2], p->dst[3], p->proto);
    } else if (p->ethertype == 0x0806) {
        snprintf(out, cap, "ARP %s", p->arp_op == 1 ? "request" : p->arp_op == 2 ? "reply" : "other");
    } else if (p->ethertype == 0x86dd) {
        snprintf(out, cap, "IPv6 len=%" PRIu32, len);
    } else if (p->ethertype >= 0) {
        snprintf(out, cap, "ethertype 0x%04x len=%" PRIu32, (unsigned)p->ethertype, len);
    } else {
        snprintf(out, cap, "runt len=%" PRIu32, len);
    }
}

