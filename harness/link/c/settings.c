/* The settings: see settings.h. */
#define _GNU_SOURCE
#include "settings.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "util.h"

/* a number that must use the whole string */
int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

/* a probability: "0.01" (fraction) or "1%" */
static int parse_prob(const char *s, double *out)
{
    char buf[64];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n + 1);
    double scale = 1.0;
    if (buf[n - 1] == '%') {
        buf[n - 1] = 0;
        scale = 0.01;
    }
    double v;
    if (parse_double(buf, &v))
        return -1;
    v *= scale;
    if (v < 0 || v > 1)
        return -1;
    *out = v;
    return 0;
}

static int parse_drop_entry(const char *s, struct drop_entry *e)
{
    const char *colon = strchr(s, ':');
    if (!colon)
        return -1;
    size_t klen = (size_t)(colon - s);
    e->kind = -1;
    for (int k = 0; k < NKIND; k++)
        if (strlen(kind_name[k]) == klen && !strncmp(s, kind_name[k], klen))
            e->kind = k;
    if (e->kind < 0)
        return -1;
    char num[64];
    snprintf(num, sizeof(num), "%s", colon + 1);
    char *dash = strchr(num, '-');
    if (dash) {
        *dash = 0;
        if (parse_u64(num, &e->lo) || parse_u64(dash + 1, &e->hi))
            return -1;
    } else {
        if (parse_u64(num, &e->lo))
            return -1;
        e->hi = e->lo;
    }
    if (e->lo == 0 || e->hi < e->lo)
        return -1;
    return 0;
}

static void set_real(const char *opt, const char *key, const char *v, double *out, double lo, double hi)
{
    if (parse_double(v, out) || *out < lo || *out > hi)
        usage_error("%s: bad %s '%s' (a number from %g to %g)", opt, key, v, lo, hi);
}

static void set_whole(const char *opt, const char *key, const char *v, uint64_t *out, uint64_t lo, uint64_t hi,
                      uint64_t off)
{
    if (parse_u64(v, out) || (*out != off && (*out < lo || *out > hi)))
        usage_error("%s: bad %s '%s' (a whole number from %" PRIu64 " to %" PRIu64 ", or %" PRIu64 ")", opt, key, v,
                    lo, hi, off);
}

static void set_flag(const char *opt, const char *key, const char *v, int *out)
{
    if (strcmp(v, "0") && strcmp(v, "1"))
        usage_error("%s: bad %s '%s' (0 or 1)", opt, key, v);
    *out = v[0] == '1';
}

static void set_choice(const char *opt, const char *key, const char *v, char *out, const char *choices)
{
    size_t n = strlen(v);
    for (const char *c = choices; c && n && n < NR_CHOICE_MAX; c = strchr(c, '|')) {
        if (*c == '|')
            c++;
        if (!strncmp(c, v, n) && (c[n] == '|' || !c[n])) {
            memcpy(out, v, n + 1);
            return;
        }
    }
    usage_error("%s: bad %s '%s' (one of %s)", opt, key, v, choices);
}

static void set_gemodel(const char *opt, const char *key, const char *v, struct gemodel *g)
{
    g->on = 0;
    double p[4] = {0, 0, 1.0, 0.0};
    char *vv = strdup(v), *save = NULL;
    int m = 0;
    for (char *t = strtok_r(vv, "+/", &save); t; t = strtok_r(NULL, "+/", &save)) {
        if (m == 4 || parse_prob(t, &p[m]))
            usage_error("%s: bad %s '%s' (p,r,1-h,1-k as fractions or percentages)", opt, key, v);
        m++;
    }
    free(vv);
    if (m == 0)
        return;
    if (m == 1)
        p[1] = 1.0 - p[0]; /* iproute2's default for r */
    *g = (struct gemodel){.on = 1, .p = p[0], .r = p[1], .bad_loss = p[2], .good_loss = p[3]};
}

static int drop_order(const void *a, const void *b)
{
    const struct drop_entry *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void set_drops(const char *opt, const char *key, const char *v, struct drop_list *l)
{
    l->n = 0;
    char *vv = strdup(v), *save = NULL;
    size_t cap = 1;
    for (const char *c = v; *c; c++)
        cap += *c == '+' || *c == ';' || *c == ' ';
    free(l->e);
    l->e = calloc(cap, sizeof(*l->e));
    for (char *t = strtok_r(vv, "+; ", &save); t; t = strtok_r(NULL, "+; ", &save)) {
        if (l->n == MAX_DROP_ENTRIES)
            usage_error("%s: more than %d %s entries", opt, MAX_DROP_ENTRIES, key);
        if (parse_drop_entry(t, &l->e[l->n])) {
            char kinds[128] = "";
            for (int k = 0; k < NKIND; k++)
                snprintf(kinds + strlen(kinds), sizeof(kinds) - strlen(kinds), "%s%s", k ? ", " : "", kind_name[k]);
            usage_error("%s: bad %s entry '%s' (KIND:N or KIND:N-M, KIND one of %s; N from 1)", opt, key, t, kinds);
        }
        l->n++;
    }
    free(vv);
    qsort(l->e, (size_t)l->n, sizeof(*l->e), drop_order);
}

/* set the setting called k from the text v; 0 if there is no such setting */
#define NR_SETTING(key, member, dflt, parse)                                                                        \
    if (!strcmp(k, #key)) {                                                                                         \
        parse;                                                                                                      \
        return 1;                                                                                                   \
    }
static int dir_setting(struct dir_conf *c, const char *opt, const char *k, const char *v)
{
    NR_DIR_SETTINGS
    return 0;
}

int link_setting(struct link_conf *c, const char *opt, const char *k, const char *v)
{
    NR_LINK_SETTINGS
    return 0;
}
#undef NR_SETTING

#define NR_SETTING(key, member, dflt, parse) dflt;
static void dir_defaults(struct dir_conf *c)
{
    memset(c, 0, sizeof(*c));
    NR_DIR_SETTINGS
}

void link_defaults(struct link_conf *c)
{
    memset(c, 0, sizeof(*c));
    NR_LINK_SETTINGS
}
#undef NR_SETTING

#define NR_SETTING(key, member, dflt, parse) " " #key
const char dir_keys[] = NR_DIR_SETTINGS;
const char link_keys[] = NR_LINK_SETTINGS;
#undef NR_SETTING

/*
 * "key=value,key=value,..."; a comma-separated piece without '=' continues the
 * previous value, so lists read naturally: "gemodel=0.01,0.3,1,0,drop=data:3,syn:1".
 * Inside a list, '+' also separates items ("drop=data:3+data:5").
 */
void parse_dir_spec(const char *opt, const char *spec, struct dir_conf *c)
{
    dir_defaults(c);
    char *copy = strdup(spec);
    char *keys[64], *vals[64];
    int n = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (eq) {
            if (n == 64)
                usage_error("%s: too many keys", opt);
            *eq = 0;
            keys[n] = tok;
            vals[n] = strdup(eq + 1);
            n++;
        } else if (n > 0) {
            size_t a = strlen(vals[n - 1]), b = strlen(tok);
            vals[n - 1] = xrealloc(vals[n - 1], a + b + 2);
            vals[n - 1][a] = '+';
            memcpy(vals[n - 1] + a + 1, tok, b + 1);
        } else {
            usage_error("%s: expected key=value, got '%s'", opt, tok);
        }
    }
    for (int i = 0; i < n; i++)
        if (!dir_setting(c, opt, keys[i], vals[i]))
            usage_error("%s: unknown key '%s' (the keys:%s)", opt, keys[i], dir_keys);
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(copy);
}

