/* netrepro-ethernut: an Ethernut 2 board on simavr.
 *
 * ATmega128 at 14.7456 MHz (libsimavr), 64 KiB linear data space with external
 * RAM at 0x1100-0xBFFF and a LAN91C111 model at 0xC000-0xCFFF on the XMEM bus,
 * the NIC's interrupt on INT5 (PE5, active high), the console on USART0
 * (stdout / stdin), frames as unix datagrams (QEMU `-netdev dgram` semantics),
 * and a run loop paced against CLOCK_MONOTONIC.  See README.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <simavr/sim_avr.h>
#include <simavr/sim_elf.h>
#include <simavr/sim_io.h>
#include <simavr/sim_irq.h>
#include <simavr/sim_cycle_timers.h>
#include <simavr/avr_ioport.h>
#include <simavr/avr_uart.h>

#include "lan91c111.h"

#define XMEM_START 0x1100
#define NIC_START  0xC000
#define NIC_END    0xCFFF
#define R_MCUCR    0x55    /* data address of MCUCR (I/O 0x35) */
#define R_XMCRA    0x6D
#define MCUCR_SRE  0x80
#define MCUCR_SRW10 0x40

static avr_t *avr;
static lan91c111_t lan;
static uint32_t freq = 14745600;
/* device time: wall seconds per simulated second (1: real time); the link stretches by the same D */
static double dilation = 1.0;
static int sock = -1;
static struct sockaddr_un remote_addr;
static socklen_t remote_len;
static avr_irq_t *int5_irq;
static avr_irq_t *uart_in_irq;
static int uart_xon = 1;
static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t where_requested;  /* SIGUSR1: print where the firmware is */
static uint64_t xmem_extra_cycles, tx_send_errors;

/* ---------------- XMEM: interposed data-space accessors ---------------- */

/* Extra cycles for one external access: the ATmega128 takes one more cycle
 * than for internal SRAM, plus the wait states of the sector (XMCRA SRL
 * sector limit, SRW0x lower sector, SRW11 in XMCRA + SRW10 in MCUCR upper).
 * SRWn = 3 is "two wait states plus one before the new address", i.e. 3. */
static inline unsigned xmem_wait(avr_t *a, uint16_t addr)
{
	uint8_t mcucr = a->data[R_MCUCR];
	if (!(mcucr & MCUCR_SRE))
		return 0;
	uint8_t xmcra = a->data[R_XMCRA];
	unsigned srl = (xmcra >> 4) & 7;
	static const uint16_t limit[8] = {0, 0x2000, 0x4000, 0x6000, 0x8000, 0xA000, 0xC000, 0xE000};
	unsigned srw;
	if (srl && addr < limit[srl])
		srw = (xmcra >> 2) & 3;
	else
		srw = ((xmcra & 0x02) ? 2 : 0) | ((mcucr & MCUCR_SRW10) ? 1 : 0);
	return 1 + srw;
}

/* These two replace libsimavr's own (same names, exported, called through
 * the PLT from inside the library): every data access above the I/O space
 * arrives here. */
void avr_core_watch_write(avr_t *a, uint16_t addr, uint8_t v)
{
	if (addr >= XMEM_START) {
		unsigned w = xmem_wait(a, addr);
		a->cycle += w;
		xmem_extra_cycles += w;
		if (addr >= NIC_START && addr <= NIC_END) {
			lan_write(&lan, addr & 15, v);
			return;
		}
	}
	if (addr > a->ramend || addr < 32) {
		fprintf(stderr, "netrepro-ethernut: invalid data write 0x%04x=0x%02x at PC=0x%05x\n",
			addr, v, a->pc);
		a->state = cpu_Crashed;
		return;
	}
	a->data[addr] = v;
}

uint8_t avr_core_watch_read(avr_t *a, uint16_t addr)
{
	if (addr >= XMEM_START) {
		unsigned w = xmem_wait(a, addr);
		a->cycle += w;
		xmem_extra_cycles += w;
		if (addr >= NIC_START && addr <= NIC_END)
			return lan_read(&lan, addr & 15);
	}
	if (addr > a->ramend) {
		fprintf(stderr, "netrepro-ethernut: invalid data read 0x%04x at PC=0x%05x\n", addr, a->pc);
		a->state = cpu_Crashed;
		return 0;
	}
	return a->data[addr];
}

/* ---------------- NIC glue ---------------- */

static void nic_tx(lan91c111_t *l, const uint8_t *frame, size_t len, void *ctx)
{
	(void)l; (void)ctx;
	if (sock < 0)
		return;
	/* never block the simulation: with no link listening, or its queue full,
	 * the frame is lost (counted), as on a cable with nothing at the end */
	if (sendto(sock, frame, len, MSG_DONTWAIT, (struct sockaddr *)&remote_addr, remote_len) < 0)
		tx_send_errors++;
}

static avr_cycle_count_t nic_timer_cb(avr_t *a, avr_cycle_count_t when, void *param)
{
	(void)a; (void)when; (void)param;
	lan_tx_done(&lan);
	return 0;
}

static void nic_timer(lan91c111_t *l, uint32_t bits, void *ctx)
{
	(void)l; (void)ctx;
	/* bits at 10 Mbit/s -> cycles */
	avr_cycle_count_t cycles = ((avr_cycle_count_t)bits * freq + 9999999) / 10000000;
	avr_cycle_timer_register(avr, cycles, nic_timer_cb, NULL);
}

static uint64_t int5_edges;
static void nic_irq(lan91c111_t *l, int level, void *ctx)
{
	(void)l; (void)ctx;
	if (level)
		int5_edges++;
	if (int5_irq)
		avr_raise_irq(int5_irq, level);
}

/* ---------------- console ---------------- */

static uint8_t outbuf[4096];
static size_t outlen;

static void flush_out(void)
{
	size_t off = 0;
	while (off < outlen) {
		ssize_t n = write(1, outbuf + off, outlen - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				usleep(100);
				continue;
			}
			break;
		}
		off += (size_t)n;
	}
	outlen = 0;
}

static void uart_out_cb(avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)param;
	outbuf[outlen++] = (uint8_t)value;
	if (outlen == sizeof outbuf || value == '\n')
		flush_out();
}

static void uart_xon_cb(avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)value; (void)param;
	uart_xon = 1;
}

static void uart_xoff_cb(avr_irq_t *irq, uint32_t value, void *param)
{
	(void)irq; (void)value; (void)param;
	uart_xon = 0;
}

static uint8_t inbuf[4096];
static size_t in_head, in_len;
static int stdin_open = 1;

static void poll_stdin(void)
{
	if (stdin_open && in_len == 0) {
		ssize_t n = read(0, inbuf, sizeof inbuf);
		if (n > 0) {
			in_head = 0;
			in_len = (size_t)n;
		} else if (n == 0) {
			stdin_open = 0;
		}
	}
	/* feed while the UART's input FIFO has room */
	while (in_len && uart_xon) {
		avr_raise_irq(uart_in_irq, inbuf[in_head]);
		in_head++;
		in_len--;
	}
}

/* ---------------- network ---------------- */

static void poll_socket(void)
{
	uint8_t buf[2048];
	for (;;) {
		ssize_t n = recv(sock, buf, sizeof buf, MSG_DONTWAIT);
		if (n < 0)
			return;
		lan_receive(&lan, buf, (size_t)n);
	}
}

static int open_socket(const char *local, const char *remote)
{
	struct sockaddr_un la;
	if (strlen(local) >= sizeof la.sun_path || strlen(remote) >= sizeof la.sun_path) {
		fprintf(stderr, "netrepro-ethernut: socket path too long\n");
		return -1;
	}
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		perror("netrepro-ethernut: socket");
		return -1;
	}
	memset(&la, 0, sizeof la);
	la.sun_family = AF_UNIX;
	strcpy(la.sun_path, local);
	struct stat st;
	if (lstat(local, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(local);
	if (bind(sock, (struct sockaddr *)&la, sizeof la) < 0) {
		fprintf(stderr, "netrepro-ethernut: bind %s: %s\n", local, strerror(errno));
		return -1;
	}
	int sz = 1 << 20;
	setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
	memset(&remote_addr, 0, sizeof remote_addr);
	remote_addr.sun_family = AF_UNIX;
	strcpy(remote_addr.sun_path, remote);
	remote_len = sizeof remote_addr;
	return 0;
}

/* ---------------- start-up self-test ---------------- */

/* Run a few instructions through libsimavr's own decoder that store to and
 * load from the NIC's bank select register; if the library does not route
 * its data accesses through our avr_core_watch_read/write, the loads see
 * plain memory instead of the register. */
static int self_test(void)
{
	static const uint16_t prog[] = {
		0xE082,          /* ldi r24, 0x02        */
		0x9380, 0xC00E,  /* sts 0xC00E, r24      */
		0x9190, 0xC00F,  /* lds r25, 0xC00F      */
		0x91A0, 0xC00E,  /* lds r26, 0xC00E      */
	};
	uint8_t saved[sizeof prog];
	memcpy(saved, avr->flash, sizeof prog);
	for (size_t i = 0; i < sizeof prog / 2; i++) {
		avr->flash[2 * i] = (uint8_t)prog[i];
		avr->flash[2 * i + 1] = (uint8_t)(prog[i] >> 8);
	}
	avr->pc = 0;
	uint64_t before = lan.accesses;
	for (int i = 0; i < 4 && avr->state == cpu_Running; i++)
		avr->run(avr);
	int ok = avr->data[25] == 0x33 && avr->data[26] == 0x02 && lan.accesses - before == 3;
	memcpy(avr->flash, saved, sizeof prog);
	avr_reset(avr);
	lan_reset(&lan);
	return ok;
}

/* ---------------- main ---------------- */

static void on_where(int sig)
{
	(void)sig;
	where_requested = 1;
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

/* libsimavr's messages go to stderr, never into the console stream on stdout. */
static void logger(avr_t *a, const int level, const char *fmt, va_list ap)
{
	(void)a;
	if (level > LOG_WARNING)
		return;
	fputs("netrepro-ethernut: simavr: ", stderr);
	vfprintf(stderr, fmt, ap);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: netrepro-ethernut --elf FILE --local PATH --remote PATH --mac 02:00:00:00:00:01\n"
		"                         [--freq HZ] [--dilation D] [--no-throttle] [--self-test-only]\n");
}

/* An idle AVR (SLEEP) is advanced by simavr to the next timer; the default
 * sleep callback would usleep() on its own. Pacing is the run loop's job. */
static void sleep_cb(avr_t *a, avr_cycle_count_t how_long)
{
	(void)a; (void)how_long;
}

int main(int argc, char **argv)
{
	const char *elf = NULL, *local = NULL, *remote = NULL, *mac_s = "02:00:00:00:00:01";
	int throttle = 1, test_only = 0;
	static const struct option opts[] = {
		{"elf", required_argument, 0, 'e'},
		{"local", required_argument, 0, 'l'},
		{"remote", required_argument, 0, 'r'},
		{"mac", required_argument, 0, 'm'},
		{"freq", required_argument, 0, 'f'},
		{"dilation", required_argument, 0, 'd'},
		{"no-throttle", no_argument, 0, 'n'},
		{"self-test-only", no_argument, 0, 's'},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'e': elf = optarg; break;
		case 'l': local = optarg; break;
		case 'r': remote = optarg; break;
		case 'm': mac_s = optarg; break;
		case 'f': freq = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'd': dilation = strtod(optarg, NULL); break;
		case 'n': throttle = 0; break;
		case 's': test_only = 1; break;
		case 'h': usage(); return 0;
		default: usage(); return 2;
		}
	}
	uint8_t mac[6];
	if (!elf || parse_mac(mac_s, mac) < 0 || !freq || !(dilation > 0) || (!test_only && (!local || !remote))) {
		usage();
		return 2;
	}

	avr_global_logger_set(logger);
	elf_firmware_t fw;
	memset(&fw, 0, sizeof fw);
	if (elf_read_firmware(elf, &fw) != 0) {
		fprintf(stderr, "netrepro-ethernut: cannot read ELF %s\n", elf);
		return 2;
	}
	avr = avr_make_mcu_by_name("atmega128");
	if (!avr) {
		fprintf(stderr, "netrepro-ethernut: libsimavr has no atmega128\n");
		return 2;
	}
	avr->ramend = 0xFFFF;          /* 64 KiB linear data space (XMEM) */
	avr_init(avr);
	avr->log = 0;
	fw.frequency = freq;
	avr_load_firmware(avr, &fw);
	avr->frequency = freq;
	avr->sleep = sleep_cb;

	lan_init(&lan, mac, nic_tx, nic_timer, nic_irq, NULL);

	if (!self_test()) {
		fprintf(stderr, "netrepro-ethernut: libsimavr does not route data accesses through "
			"avr_core_watch_read/write (static or LTO build?); install Debian's shared libsimavr\n");
		return 3;
	}
	fprintf(stderr, "netrepro-ethernut: self-test ok (LAN91C111 at 0x%04x via XMEM interposition)\n",
		NIC_START);
	if (test_only)
		return 0;

	int5_irq = avr_io_getirq(avr, AVR_IOCTL_IOPORT_GETIRQ('E'), 5);
	/* UART0: no stdio line logging, no usleep when the firmware polls */
	uint32_t f = 0;
	avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &f);
	f &= ~(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
	avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &f);
	uart_in_irq = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT),
				uart_out_cb, NULL);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON),
				uart_xon_cb, NULL);
	avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF),
				uart_xoff_cb, NULL);
	if (!int5_irq || !uart_in_irq) {
		fprintf(stderr, "netrepro-ethernut: cannot find INT5 / UART0 IRQs in libsimavr's atmega128\n");
		return 2;
	}

	if (open_socket(local, remote) < 0)
		return 2;
	fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_where;
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* nanosleep's default 50 us timer slack adds up against 100 us slices */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	/* poll every ~100 us of simulated time */
	const avr_cycle_count_t slice = freq / 10000 ? freq / 10000 : 1;
	avr_cycle_count_t next_poll = avr->cycle + slice;
	const avr_cycle_count_t c0 = avr->cycle;
	const double t0 = now_s();
	double max_lag = 0;
	uint64_t behind_slices = 0, slices = 0;
	int state = cpu_Running;
	int crashed = 0;

	while (!stop_requested) {
		state = avr_run(avr);
		if (state == cpu_Done || state == cpu_Crashed) {
			crashed = state == cpu_Crashed;
			break;
		}
		if (avr->cycle < next_poll)
			continue;
		next_poll = avr->cycle + slice;
		slices++;
		poll_socket();
		poll_stdin();
		if (where_requested) {
			where_requested = 0;
			fprintf(stderr, "netrepro-ethernut: at cycle %llu pc 0x%05x sp 0x%04x; "
				"nic ist 0x%02x msk 0x%02x intr %d rx-fifo %d pages 0x%x; EIMSK 0x%02x EIFR 0x%02x\n",
				(unsigned long long)avr->cycle, avr->pc, avr->data[R_SPL] | (avr->data[R_SPH] << 8),
				lan.ist, lan.msk, lan.irq_level, lan.rx_fifo.count, lan.page_used,
				avr->data[0x59], avr->data[0x58]);
		}
		if (outlen)
			flush_out();
		if (throttle) {
			double sim = (double)(avr->cycle - c0) / freq;
			double wall = (now_s() - t0) / dilation;  /* in simulated seconds */
			double d = sim - wall;
			if (d > 0.0002) {
				struct timespec ts = {0, (long)(d * dilation * 1e9)};
				nanosleep(&ts, NULL);
			} else {
				/* the host is behind: no sleep, run free until simulated
				 * time catches up; lateness over 1 ms counts as lag */
				if (-d > max_lag)
					max_lag = -d;
				if (d < -0.001)
					behind_slices++;
			}
		}
	}
	flush_out();
	double sim = (double)(avr->cycle - c0) / freq;
	double wall = (now_s() - t0) / dilation;  /* in simulated seconds, as the pacing sees it */
	fprintf(stderr,
		"netrepro-ethernut: %s; simulated %.3f s, wall %.3f s (%.2f%%), speed %.2f MHz-equivalent, "
		"max lag %.1f ms, %llu of %llu 100-us slices more than 1 ms late; xmem extra cycles %llu; "
		"frames tx %llu (lost at the socket %llu) rx %llu rx-dropped overrun %llu filter %llu disabled %llu; int5 rising %llu; "
		"pc 0x%05x sp 0x%04x I %d\n",
		crashed ? "firmware crashed" : state == cpu_Done ? "firmware stopped" : "stopped",
		sim, wall, wall > 0 ? 100.0 * (sim - wall) / wall : 0.0,
		wall > 0 ? (double)(avr->cycle - c0) / wall / 1e6 : 0.0, max_lag * 1e3,
		(unsigned long long)behind_slices, (unsigned long long)slices,
		(unsigned long long)xmem_extra_cycles, (unsigned long long)lan.tx_frames, (unsigned long long)tx_send_errors,
		(unsigned long long)lan.rx_frames, (unsigned long long)lan.rx_dropped_overrun,
		(unsigned long long)lan.rx_dropped_filter, (unsigned long long)lan.rx_dropped_disabled,
		(unsigned long long)int5_edges, avr->pc,
		avr->data[R_SPL] | (avr->data[R_SPH] << 8), avr->sreg[S_I]);
	if (local)
		unlink(local);
	return crashed ? 1 : 0;
}
