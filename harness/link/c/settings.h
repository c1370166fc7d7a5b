/*
 * The settings: each direction's (the pipeline's, --to-device/--to-peer key=value,...) and the
 * link-wide ones (--key value), as structs built from the table that harness/link/settings.py
 * passes as -DNR_DIR_SETTINGS and -DNR_LINK_SETTINGS, with their defaults and parsers.
 */
#ifndef NR_SETTINGS_H
#define NR_SETTINGS_H

#include <stdint.h>

/* a capture's losses replayed (report from-capture) can list thousands */
#define MAX_DROP_ENTRIES 65536

struct drop_entry {
    int kind;
    uint64_t lo, hi;
};

/*
 * The settings: one entry each in NR_DIR_SETTINGS (per direction, --to-device/--to-peer
 * key=value) and NR_LINK_SETTINGS (for the whole link, --key value), from the table in
 * harness/link/settings.py, which gives every setting's key, default and range once.
 * An entry is one of
 *   NR_REAL(key, default, lo, hi)        a number from lo to hi (seconds, a fraction)
 *   NR_WHOLE(key, default, lo, hi, off)  a whole number from lo to hi, or off
 *   NR_FLAG(key, default)                0 or 1
 *   NR_CHOICE(key, default, "a|b")       one of the names
 *   NR_GEMODEL(key)                      p,r,1-h,1-k as fractions (empty: no model)
 *   NR_DROPS(key)                        KIND:N or KIND:N-M entries (empty: none)
 * and each becomes a member `key` of struct dir_conf (struct link_conf), with its default and
 * its parser: each use (here and in settings.c) defines NR_SETTING(key, member, set default,
 * parse) to take what it needs.
 */
struct gemodel {
    int on;
    double p, r, bad_loss, good_loss;
};

struct drop_list {
    struct drop_entry *e; /* sorted by kind, then first N: the link walks each kind's entries once */
    int n;
};

#define NR_CHOICE_MAX 16

#define NR_REAL(key, dflt, lo, hi) NR_SETTING(key, double key, c->key = (dflt), set_real(opt, #key, v, &c->key, lo, hi))
#define NR_WHOLE(key, dflt, lo, hi, off)                                                                            \
    NR_SETTING(key, uint64_t key, c->key = (dflt), set_whole(opt, #key, v, &c->key, lo, hi, off))
#define NR_FLAG(key, dflt) NR_SETTING(key, int key, c->key = (dflt), set_flag(opt, #key, v, &c->key))
#define NR_CHOICE(key, dflt, choices)                                                                               \
    NR_SETTING(key, char key[NR_CHOICE_MAX], snprintf(c->key, NR_CHOICE_MAX, "%s", dflt),                           \
               set_choice(opt, #key, v, c->key, choices))
#define NR_GEMODEL(key) NR_SETTING(key, struct gemodel key, (void)0, set_gemodel(opt, #key, v, &c->key))
#define NR_DROPS(key) NR_SETTING(key, struct drop_list key, (void)0, set_drops(opt, #key, v, &c->key))

#define NR_SETTING(key, member, dflt, parse) member;
struct dir_conf {
    NR_DIR_SETTINGS
};

struct link_conf {
    NR_LINK_SETTINGS
};
#undef NR_SETTING

int parse_double(const char *s, double *out);
int parse_u64(const char *s, uint64_t *out);
int link_setting(struct link_conf *c, const char *opt, const char *k, const char *v);
void link_defaults(struct link_conf *c);
void parse_dir_spec(const char *opt, const char *spec, struct dir_conf *c);

/* the keys, for --help and the errors that name them */
extern const char dir_keys[];
extern const char link_keys[];

#endif
