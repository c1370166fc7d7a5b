/* SMSC LAN91C111 model: see lan91c111.h and README.md. */
#include "lan91c111.h"

#include <string.h>

/* register bits */
#define TCR_TXENA     0x0001
#define TCR_PAD_EN    0x0080
#define RCR_PRMS      0x0002
#define RCR_ALMUL     0x0004
#define RCR_RXEN      0x0100
#define RCR_STRIP_CRC 0x0200
#define RCR_SOFT_RST  0x8000
#define CTL_AUTO_RELEASE 0x0800
#define EPH_TX_SUC    0x0001
#define EPH_LINK_OK   0x4000
#define PTR_RCV       0x8000
#define PTR_AUTO_INCR 0x4000
#define PTR_READ      0x2000
#define PTR_MASK      0x07FF
#define ARR_FAILED    0x80
#define FIFO_EMPTY    0x80
#define RXS_BROADCAST 0x4000
#define RXS_ODDFRM    0x1000
#define RXS_MULTCAST  0x0001
#define CTLB_ODD      0x20
#define CTLB_CRC      0x10

static void fifo_clear(lan_fifo_t *f) { f->head = f->count = 0; }
static int fifo_push(lan_fifo_t *f, uint8_t v)
{
	if (f->count >= LAN_FIFO_LEN)
		return -1;
	f->v[(f->head + f->count) % LAN_FIFO_LEN] = v;
	f->count++;
	return 0;
}
static int fifo_top(const lan_fifo_t *f) { return f->count ? f->v[f->head] : -1; }
static int fifo_pop(lan_fifo_t *f)
{
	if (!f->count)
		return -1;
	int v = f->v[f->head];
	f->head = (f->head + 1) % LAN_FIFO_LEN;
	f->count--;
	return v;
}

static int free_pages(const lan91c111_t *lan)
{
	int n = 0;
	for (int i = 0; i < LAN_PAGES; i++)
		if (!(lan->page_used & (1u << i)))
			n++;
	return n;
}

static int page_alloc(lan91c111_t *lan)
{
	for (int i = 0; i < LAN_PAGES; i++)
		if (!(lan->page_used & (1u << i))) {
			lan->page_used |= 1u << i;
			return i;
		}
	return -1;
}

/* Recompute the status bits that follow FIFO state and drive the interrupt pin. */
static void update_irq(lan91c111_t *lan)
{
	if (lan->rx_fifo.count)
		lan->ist |= LAN_INT_RCV;
	else
		lan->ist &= ~LAN_INT_RCV;
	int level = (lan->ist & lan->msk) != 0;
	if (level != lan->irq_level) {
		lan->irq_level = level;
		if (lan->irq)
			lan->irq(lan, level, lan->ctx);
	}
}

static void try_pending_alloc(lan91c111_t *lan)
{
	if (!lan->alloc_pending)
		return;
	int p = page_alloc(lan);
	if (p < 0)
		return;
	lan->alloc_pending = 0;
	lan->arr = (uint8_t)p;
	lan->ist |= LAN_INT_ALLOC;
}

static void page_release(lan91c111_t *lan, int p)
{
	if (p < 0 || p >= LAN_PAGES)
		return;
	lan->page_used &= ~(1u << p);
	try_pending_alloc(lan);
}

static void mmu_reset(lan91c111_t *lan)
{
	lan->page_used = 0;
	lan->alloc_pending = 0;
	fifo_clear(&lan->tx_fifo);
	fifo_clear(&lan->txdone_fifo);
	fifo_clear(&lan->rx_fifo);
	lan->arr = ARR_FAILED;
	/* a frame already on the wire finishes, but its page is gone */
}

void lan_reset(lan91c111_t *lan)
{
	lan->bank = 0;
	lan->tcr = 0;
	lan->eph_status = EPH_LINK_OK;
	lan->rcr = 0;
	lan->rpcr = 0;
	lan->config = 0xA0B1;
	lan->base = 0x1801;
	lan->gp = 0;
	lan->control = 0x1210;
	lan->pnr = 0;
	lan->pointer = 0;
	lan->ist = LAN_INT_TX_EMPTY;
	lan->msk = 0;
	memset(lan->mt, 0, sizeof lan->mt);
	lan->mgmt = 0x3330;
	lan->ercv = 0x331F;
	mmu_reset(lan);
	update_irq(lan);
}

void lan_init(lan91c111_t *lan, const uint8_t mac[6], lan_tx_fn tx, lan_timer_fn timer,
	      lan_irq_fn irq, void *ctx)
{
	memset(lan, 0, sizeof *lan);
	lan->tx = tx;
	lan->timer = timer;
	lan->irq = irq;
	lan->ctx = ctx;
	lan->tx_pkt = -1;
	memcpy(lan->ia, mac, 6);  /* as if loaded from the board's EEPROM */
	lan_reset(lan);
}

/* ---- transmit ---- */

static void tx_start(lan91c111_t *lan)
{
	if (lan->tx_busy || !lan->tx_fifo.count)
		return;
	if (!(lan->tcr & TCR_TXENA))
		return;          /* frames wait in the TX FIFO until TXENA */
	int p = fifo_pop(&lan->tx_fifo);
	const uint8_t *m = lan->mem[p];
	unsigned count = (m[2] | (m[3] << 8)) & 0x07FE;
	if (count < 6)
		count = 6;
	unsigned n = count - 6;
	uint8_t ctl = m[count - 1];
	if (ctl & CTLB_ODD)
		n += 1;
	unsigned wire = n;
	if (wire < 60)
		wire = 60;       /* padding (PAD_EN) or not, the wire carries a minimum frame */
	lan->tx_busy = 1;
	lan->tx_pkt = p;
	if (!lan->timer) {
		lan_tx_done(lan);
		return;
	}
	/* preamble+SFD 8, FCS 4, inter-frame gap 12 */
	lan->timer(lan, (uint32_t)(wire + 4 + 8 + 12) * 8, lan->ctx);
}

void lan_tx_done(lan91c111_t *lan)
{
	if (!lan->tx_busy)
		return;
	int p = lan->tx_pkt;
	lan->tx_busy = 0;
	lan->tx_pkt = -1;
	if (p >= 0 && (lan->page_used & (1u << p))) {
		uint8_t *m = lan->mem[p];
		unsigned count = (m[2] | (m[3] << 8)) & 0x07FE;
		if (count < 6)
			count = 6;
		unsigned n = count - 6;
		if (m[count - 1] & CTLB_ODD)
			n += 1;
		uint8_t frame[LAN_PAGE_SIZE];
		memcpy(frame, m + 4, n);
		if (n < 60 && (lan->tcr & TCR_PAD_EN)) {
			memset(frame + n, 0, 60 - n);
			n = 60;
		}
		if (lan->tx)
			lan->tx(lan, frame, n, lan->ctx);
		lan->tx_frames++;
		lan->eph_status = EPH_LINK_OK | EPH_TX_SUC;
		/* the chip writes the transmit status into the packet's status word */
		m[0] = (uint8_t)lan->eph_status;
		m[1] = (uint8_t)(lan->eph_status >> 8);
		if (lan->control & CTL_AUTO_RELEASE) {
			page_release(lan, p);
		} else {
			fifo_push(&lan->txdone_fifo, (uint8_t)p);
			lan->ist |= LAN_INT_TX;
		}
	}
	if (lan->tx_fifo.count)
		tx_start(lan);
	else
		lan->ist |= LAN_INT_TX_EMPTY;
	update_irq(lan);
}

/* ---- receive ---- */

static uint32_t crc32_le(const uint8_t *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
	}
	return ~c;
}

int lan_receive(lan91c111_t *lan, const uint8_t *frame, size_t len)
{
	if (!(lan->rcr & RCR_RXEN) || (lan->rcr & RCR_SOFT_RST)) {
		lan->rx_dropped_disabled++;
		return -1;
	}
	if (len < 14 || len > 1514 + 4) {  /* allow a VLAN tag */
		lan->rx_dropped_filter++;
		return -1;
	}
	const uint8_t *da = frame;
	int bcast = memcmp(da, "\xff\xff\xff\xff\xff\xff", 6) == 0;
	int mcast = !bcast && (da[0] & 1);
	int ours = memcmp(da, lan->ia, 6) == 0;
	if (!(lan->rcr & RCR_PRMS) && !bcast && !ours) {
		/* multicast: accepted with ALMUL, or (simplification) when any
		 * multicast table bit is set -- the hash is not evaluated */
		int any_mt = 0;
		for (int i = 0; i < 8; i++)
			any_mt |= lan->mt[i];
		if (!(mcast && ((lan->rcr & RCR_ALMUL) || any_mt))) {
			lan->rx_dropped_filter++;
			return -1;
		}
	}
	uint8_t buf[LAN_PAGE_SIZE];
	size_t n = len;
	memcpy(buf, frame, len);
	if (n < 60) {           /* the wire carries padded minimum frames */
		memset(buf + n, 0, 60 - n);
		n = 60;
	}
	if (!(lan->rcr & RCR_STRIP_CRC)) {
		uint32_t fcs = crc32_le(buf, n);
		buf[n++] = (uint8_t)fcs;
		buf[n++] = (uint8_t)(fcs >> 8);
		buf[n++] = (uint8_t)(fcs >> 16);
		buf[n++] = (uint8_t)(fcs >> 24);
	}
	int p = page_alloc(lan);
	if (p < 0 || lan->rx_fifo.count >= LAN_FIFO_LEN) {
		if (p >= 0)
			page_release(lan, p);
		lan->ist |= LAN_INT_RX_OVRN;
		lan->rx_dropped_overrun++;
		update_irq(lan);
		return -1;
	}
	uint8_t *m = lan->mem[p];
	uint16_t status = 0;
	if (bcast)
		status |= RXS_BROADCAST;
	if (mcast)
		status |= RXS_MULTCAST;
	int odd = n & 1;
	if (odd)
		status |= RXS_ODDFRM;
	unsigned count = (unsigned)(n & ~(size_t)1) + 6;  /* status, count, data, last word */
	m[0] = (uint8_t)status;
	m[1] = (uint8_t)(status >> 8);
	m[2] = (uint8_t)count;
	m[3] = (uint8_t)(count >> 8);
	memcpy(m + 4, buf, n);
	if (!odd)
		m[count - 2] = 0;
	m[count - 1] = odd ? CTLB_ODD : 0;   /* control byte; odd data byte precedes it */
	fifo_push(&lan->rx_fifo, (uint8_t)p);
	lan->rx_frames++;
	update_irq(lan);
	return 0;
}

/* ---- packet memory access through the pointer / data registers ---- */

static uint8_t *data_byte(lan91c111_t *lan)
{
	int p = (lan->pointer & PTR_RCV) ? fifo_top(&lan->rx_fifo) : (lan->pnr & 0x3F);
	if (p < 0 || p >= LAN_PAGES)
		return NULL;
	return &lan->mem[p][lan->pointer & PTR_MASK];
}

static void data_advance(lan91c111_t *lan)
{
	if (lan->pointer & PTR_AUTO_INCR)
		lan->pointer = (lan->pointer & ~PTR_MASK) | ((lan->pointer + 1) & PTR_MASK);
}

static void mmu_command(lan91c111_t *lan, uint8_t v)
{
	switch (v >> 5) {
	case 0: /* no-op */
		break;
	case 1: { /* allocate memory for TX (the 91C111 always gives one 2 KiB page) */
		lan->ist &= ~LAN_INT_ALLOC;
		int p = page_alloc(lan);
		if (p < 0) {
			lan->arr = ARR_FAILED;
			lan->alloc_pending = 1;
		} else {
			lan->alloc_pending = 0;
			lan->arr = (uint8_t)p;
			lan->ist |= LAN_INT_ALLOC;
		}
		break;
	}
	case 2: /* reset MMU */
		mmu_reset(lan);
		break;
	case 3: /* remove frame from top of RX FIFO */
		fifo_pop(&lan->rx_fifo);
		break;
	case 4: /* remove and release top of RX FIFO */
		page_release(lan, fifo_pop(&lan->rx_fifo));
		break;
	case 5: /* release the packet in PNR */
		page_release(lan, lan->pnr & 0x3F);
		break;
	case 6: /* enqueue PNR into the TX FIFO */
		fifo_push(&lan->tx_fifo, lan->pnr & 0x3F);
		lan->ist &= ~LAN_INT_TX_EMPTY;
		tx_start(lan);
		break;
	case 7: /* reset TX FIFOs */
		fifo_clear(&lan->tx_fifo);
		fifo_clear(&lan->txdone_fifo);
		lan->ist &= ~LAN_INT_TX;
		break;
	}
	update_irq(lan);
}

static uint8_t lo(uint16_t v) { return (uint8_t)v; }
static uint8_t hi(uint16_t v) { return (uint8_t)(v >> 8); }
static void set_byte(uint16_t *r, unsigned odd, uint8_t v)
{
	*r = odd ? (uint16_t)((*r & 0x00FF) | (v << 8)) : (uint16_t)((*r & 0xFF00) | v);
}

uint8_t lan_read(lan91c111_t *lan, unsigned off)
{
	lan->accesses++;
	off &= 15;
	if (off == 14)
		return lan->bank;
	if (off == 15)
		return 0x33;
	unsigned odd = off & 1;
	switch (lan->bank) {
	case 0:
		switch (off & ~1u) {
		case 0: return odd ? hi(lan->tcr) : lo(lan->tcr);
		case 2: return odd ? hi(lan->eph_status) : lo(lan->eph_status);
		case 4: return odd ? hi(lan->rcr) : lo(lan->rcr);
		case 6: return 0;          /* counter: no collisions on a full-duplex-like link */
		case 8: return odd ? (uint8_t)free_pages(lan) : LAN_PAGES;   /* MIR */
		case 10: return odd ? hi(lan->rpcr) : lo(lan->rpcr);
		default: return 0;
		}
	case 1:
		switch (off & ~1u) {
		case 0: return odd ? hi(lan->config) : lo(lan->config);
		case 2: return odd ? hi(lan->base) : lo(lan->base);
		case 4: case 6: case 8: return lan->ia[off - 4];
		case 10: return odd ? hi(lan->gp) : lo(lan->gp);
		case 12: return odd ? hi(lan->control) : lo(lan->control);
		default: return 0;
		}
	case 2:
		switch (off) {
		case 0: return 0;          /* MMU command: BUSY (bit 0) never set */
		case 1: return 0;
		case 2: return lan->pnr;
		case 3: return lan->arr;
		case 4: { int t = fifo_top(&lan->txdone_fifo); return t < 0 ? FIFO_EMPTY : (uint8_t)t; }
		case 5: { int r = fifo_top(&lan->rx_fifo); return r < 0 ? FIFO_EMPTY : (uint8_t)r; }
		case 6: return lo(lan->pointer);
		case 7: return hi(lan->pointer) & ~0x08;  /* NOT EMPTY: writes complete at once */
		case 8: case 9: case 10: case 11: {
			uint8_t *b = data_byte(lan);
			uint8_t v = b ? *b : 0;
			data_advance(lan);
			return v;
		}
		case 12: return lan->ist;
		case 13: return lan->msk;
		default: return 0;
		}
	default: /* bank 3 (banks 4-7 alias it here) */
		switch (off) {
		case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: return lan->mt[off];
		case 8: return lo(lan->mgmt);
		case 9: return hi(lan->mgmt);
		case 10: return 0x91;      /* revision: chip 9 (91C111), rev 1 */
		case 11: return 0x33;
		case 12: return lo(lan->ercv);
		case 13: return hi(lan->ercv);
		default: return 0;
		}
	}
}

void lan_write(lan91c111_t *lan, unsigned off, uint8_t v)
{
	lan->accesses++;
	off &= 15;
	if (off == 14) {
		lan->bank = v & 7;
		return;
	}
	if (off == 15)
		return;
	unsigned odd = off & 1;
	switch (lan->bank) {
	case 0:
		switch (off & ~1u) {
		case 0:
			set_byte(&lan->tcr, odd, v);
			tx_start(lan);
			break;
		case 4:
			set_byte(&lan->rcr, odd, v);
			if (lan->rcr & RCR_SOFT_RST) {
				uint16_t keep = lan->rcr;
				uint8_t mac[6];
				memcpy(mac, lan->ia, 6);
				lan_reset(lan);
				memcpy(lan->ia, mac, 6);
				lan->rcr = keep;   /* stays in reset until the bit is cleared */
			}
			break;
		case 10: set_byte(&lan->rpcr, odd, v); break;
		default: break;    /* EPH status, counter, MIR are read-only */
		}
		break;
	case 1:
		switch (off & ~1u) {
		case 0: set_byte(&lan->config, odd, v); break;
		case 2: set_byte(&lan->base, odd, v); break;
		case 4: case 6: case 8: lan->ia[off - 4] = v; break;
		case 10: set_byte(&lan->gp, odd, v); break;
		case 12: set_byte(&lan->control, odd, v); break;
		default: break;
		}
		break;
	case 2:
		switch (off) {
		case 0: mmu_command(lan, v); break;
		case 2: lan->pnr = v & 0x3F; break;
		case 6: lan->pointer = (uint16_t)((lan->pointer & 0xFF00) | v); break;
		case 7: lan->pointer = (uint16_t)((lan->pointer & 0x00FF) | (v << 8)); break;
		case 8: case 9: case 10: case 11: {
			uint8_t *b = data_byte(lan);
			if (b)
				*b = v;
			data_advance(lan);
			break;
		}
		case 12: /* interrupt acknowledge */
			lan->ist &= ~(v & (LAN_INT_TX | LAN_INT_TX_EMPTY | LAN_INT_RX_OVRN |
					   LAN_INT_ERCV | LAN_INT_MD));
			if ((v & LAN_INT_TX) && lan->txdone_fifo.count > 1)
				lan->ist |= LAN_INT_TX;   /* more completions are waiting */
			if ((v & LAN_INT_TX) && lan->txdone_fifo.count)
				fifo_pop(&lan->txdone_fifo);
			update_irq(lan);
			break;
		case 13:
			lan->msk = v;
			update_irq(lan);
			break;
		default: break;
		}
		break;
	default:
		switch (off) {
		case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7: lan->mt[off] = v; break;
		case 8: lan->mgmt = (uint16_t)((lan->mgmt & 0xFFF0) | (v & 0x0F)); break;
		case 12: lan->ercv = (uint16_t)((lan->ercv & 0xFF00) | v); break;
		default: break;
		}
		break;
	}
}
