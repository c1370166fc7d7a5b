/*
 * Console shell. Characters come from the board's console ring buffer; a
 * line ends at CR or LF (CRLF counts once). Each command's output is
 * followed by a fresh prompt; errors are one line starting "ERROR: ".
 *
 * Lines from background tests (IPERF, DISCARD, SOCK) never split an echoed command
 * and never add a prompt, so a program driving the console can keep one
 * prompt per command: at an idle prompt they are printed at once on a line
 * of their own; while a command line is being typed they wait and are
 * printed after that command's output, before its prompt.
 */
#include <stdarg.h>
#include <string.h>

#include "lwip/ip_addr.h"

#include "nr_board.h"
#include "nr_printf.h"
#include "apps.h"
#include "shell.h"

#define PROMPT    "netrepro> "
#define LINE_SIZE 128
#define MAX_ARGS  12 /* sock rx <ip> <port> -t s -r size -d us */
#define DEFERRED_SIZE 512

struct command {
  const char *name;
  const char *usage;
  void (*fn)(int argc, char **argv);
};

static void cmd_help(int argc, char **argv);

/* Device-time commands (cmd_net.c). */
void cmd_tick(int argc, char **argv);
void cmd_cpu(int argc, char **argv);
void cmd_clock(int argc, char **argv);

/* The built-in commands; the apps' commands (apps.h) follow them. */
static const struct command commands[] = {
  { "help",    "help - list commands", cmd_help },
  { "opts",    "opts - effective lwIP options (NAME=VALUE), then FORCED=", cmd_opts },
  { "ip",      "ip [<a.b.c.d>/<prefixlen> [<gw>]] - show or set the address", cmd_ip },
  { "stats",   "stats [used|reap] - lwIP and driver counters (key=value); used: only what is in use now; "
               "reap: free the TIME_WAIT PCBs first, then as used", cmd_stats },
  { "uptime",  "uptime - milliseconds since boot", cmd_uptime },
  { "spin",    "spin <iterations> [irqoff] - a known instruction loop: SPIN iterations= cycles= ms= "
               "instructions_per_iteration=", cmd_spin },
  { "tick",    "tick [<dilation_milli>] - a board ms lasts dilation_milli/1000 ms of the tick timer's clock: "
               "TICK dilation_milli= period=", cmd_tick },
  { "clock",   "clock on|off - the tick sends the board's clock on its clock port, a byte per board ms: "
               "CLOCK on|off", cmd_clock },
  { "cpu",     "cpu [reset] - the core's busy share of the board's time since reset: "
               "CPU busy_ppm= idle_us= total_us=", cmd_cpu },
};

#define NUM_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static char line[LINE_SIZE];
static size_t line_len;
static int line_overflow;
static int prompt_shown;   /* waiting for input (no command running) */
static int on_prompt_line; /* the cursor is on the prompt's line */
static int last_was_cr;
static char deferred[DEFERRED_SIZE];
static size_t deferred_len;

static void cmd_help(int argc, char **argv)
{
  LWIP_UNUSED_ARG(argc);
  LWIP_UNUSED_ARG(argv);
  for (size_t i = 0; i < NUM_COMMANDS; i++) {
    nr_printf("%s\n", commands[i].usage);
  }
  for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
    if ((*app)->command != NULL) {
      nr_printf("%s\n", (*app)->usage);
    }
  }
}

/* "ERROR: unknown command" names the apps this firmware was built with, so a
   command of an app the board leaves out (APPS) explains itself. */
static void unknown_command(const char *name)
{
  nr_printf("ERROR: unknown command '%s' (try help; apps built:", name);
  for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
    nr_printf(" %s", (*app)->name);
  }
  nr_printf(")\n");
}

static void show_prompt(void)
{
  nr_printf("%s", PROMPT);
  prompt_shown = 1;
  on_prompt_line = 1;
}

static int split_args(char *s, char **argv)
{
  int argc = 0;

  for (;;) {
    while (*s == ' ' || *s == '\t') {
      *s++ = '\0';
    }
    if (*s == '\0' || argc == MAX_ARGS) {
      return argc;
    }
    argv[argc++] = s;
    while (*s != '\0' && *s != ' ' && *s != '\t') {
      s++;
    }
  }
}

static void execute(char *cmdline)
{
  char *argv[MAX_ARGS];
  int argc = split_args(cmdline, argv);

  if (argc == 0) {
    return;
  }
  for (size_t i = 0; i < NUM_COMMANDS; i++) {
    if (strcmp(argv[0], commands[i].name) == 0) {
      commands[i].fn(argc, argv);
      return;
    }
  }
  for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
    if ((*app)->command != NULL && strcmp(argv[0], (*app)->command) == 0) {
      (*app)->run(argc, argv);
      return;
    }
  }
  unknown_command(argv[0]);
}

static void end_of_line(void)
{
  nr_printf("\n");
  prompt_shown = 0;
  if (line_overflow) {
    nr_printf("ERROR: line longer than %d characters\n", LINE_SIZE - 1);
  } else {
    line[line_len] = '\0';
    execute(line);
  }
  line_len = 0;
  line_overflow = 0;
  if (deferred_len > 0) {
    board_console_write(deferred, deferred_len);
    deferred_len = 0;
  }
  show_prompt();
}

static void input_char(char c)
{
  int crlf = (c == '\n' && last_was_cr);

  last_was_cr = (c == '\r');
  if (crlf) {
    return;
  }
  if (c == '\r' || c == '\n') {
    end_of_line();
  } else if (c == '\b' || c == 0x7f) {
    if (line_len > 0) {
      line_len--;
      nr_printf("\b \b");
    }
  } else if (c >= 0x20 && c < 0x7f) {
    if (line_len < LINE_SIZE - 1) {
      line[line_len++] = c;
      board_console_write(&c, 1);
    } else {
      line_overflow = 1;
    }
  }
}

void shell_start(void)
{
  show_prompt();
}

void shell_poll(void)
{
  int c;

  while ((c = board_console_getc()) >= 0) {
    input_char((char)c);
  }
}

void shell_async(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  if (prompt_shown && line_len > 0) {
    size_t room = sizeof(deferred) - deferred_len;
    size_t n = (size_t)nr_vsnprintf(&deferred[deferred_len], room, fmt, ap);
    deferred_len += LWIP_MIN(n, room - 1);
  } else {
    if (prompt_shown && on_prompt_line) {
      nr_printf("\n");
      on_prompt_line = 0;
    }
    nr_vprintf(fmt, ap);
  }
  va_end(ap);
}

int shell_parse_u32(const char *s, uint32_t *out)
{
  uint32_t v = 0;

  if (*s == '\0') {
    return 0;
  }
  for (; *s != '\0'; s++) {
    uint32_t digit = (uint32_t)(*s - '0');
    if (digit > 9u || v > (0xFFFFFFFFu - digit) / 10u) {
      return 0;
    }
    v = v * 10u + digit;
  }
  *out = v;
  return 1;
}

/* Strict dotted quad: exactly four decimal parts of 0..255. */
int shell_parse_ip4(const char *s, ip4_addr_t *out)
{
  uint32_t addr = 0;

  for (int part = 0; part < 4; part++) {
    uint32_t v = 0;
    int digits = 0;

    for (; *s >= '0' && *s <= '9' && digits < 3; s++, digits++) {
      v = v * 10u + (uint32_t)(*s - '0');
    }
    if (digits == 0 || v > 255u || *s != (part < 3 ? '.' : '\0')) {
      return 0;
    }
    s++;
    addr = (addr << 8) | v;
  }
  ip4_addr_set_u32(out, lwip_htonl(addr));
  return 1;
}
