/* Keys and sections found by name, with "did you mean" hints for names that are not. */
#include <ctype.h>
#include <string.h>

#include "keys_impl.h"

static const char *const section_names[] = {"run",    "model", "data",  "cluster", "strategy",
                                            "faults", "jobs",  "sweep", NULL};

int scn_key_find(const char *section, const char *key)
{
    for (int k = 0; k < scn_key_count; k++)
        if (!strcmp(scn_key_table[k].section, section) && !strcmp(scn_key_table[k].key, key))
            return k;
    return -1;
}

int scn_key_index(const char *section, const char *key)
{
    int k = scn_key_find(section, key);
    DT_ASSERT(k >= 0);
    return k;
}

int scn_key_named(const char *section_key)
{
    const char *dot = strchr(section_key, '.');
    DT_ASSERT(dot && (size_t)(dot - section_key) < 32);
    char section[32];
    memcpy(section, section_key, (size_t)(dot - section_key));
    section[dot - section_key] = '\0';
    return scn_key_index(section, dot + 1);
}

int scn_section_known(const char *name)
{
    for (int i = 0; section_names[i]; i++)
        if (!strcmp(section_names[i], name))
            return 1;
    return 0;
}

/* Optimal string alignment distance (Levenshtein plus adjacent transpositions), for
 * "did you mean". */
static int edit_distance(const char *a, const char *b)
{
    enum { MAX = 48 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAX || m >= MAX)
        return MAX;
    int d[MAX][MAX];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < v)
                v = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[n][m];
}

/* Keys renamed: the old name is refused with the new one and why. */
static const struct {
    const char *section, *key, *now, *why;
} renamed[] = {
    {"strategy", "staleness", "max_lead",
     "it bounds how many pushes a worker runs ahead of the slowest (SSP's threshold, Ho et al. "
     "2013), not a gradient's staleness"},
};

/* " (did you mean X?)" or " (X is a [cluster] key)" or " (renamed ...)" or "". */
void scn_key_hint(const char *section, const char *key, char *buf, size_t n)
{
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof renamed / sizeof *renamed; i++)
        if (!strcmp(renamed[i].section, section) && !strcmp(renamed[i].key, key)) {
            snprintf(buf, n, " (renamed %s.%s: %s)", section, renamed[i].now, renamed[i].why);
            return;
        }
    int best = 3;
    const char *best_key = NULL;
    for (int k = 0; k < scn_key_count; k++) {
        if (strcmp(scn_key_table[k].section, section))
            continue;
        int dist = edit_distance(key, scn_key_table[k].key);
        if (dist < best) {
            best = dist;
            best_key = scn_key_table[k].key;
        }
    }
    if (best_key) {
        snprintf(buf, n, " (did you mean %s?)", best_key);
        return;
    }
    for (int k = 0; k < scn_key_count; k++)
        if (!strcmp(scn_key_table[k].key, key)) {
            snprintf(buf, n, " (%s is a [%s] key)", key, scn_key_table[k].section);
            return;
        }
}

/* v with '-', '_' and blanks dropped and letters lowered, into out (size n). */
static void squeeze(const char *v, char *out, size_t n)
{
    size_t len = 0;
    for (; *v && len + 1 < n; v++)
        if (*v != '-' && *v != '_' && *v != ' ')
            out[len++] = (char)tolower((unsigned char)*v);
    out[len] = '\0';
}

void scn_value_hint(const char *v, const char *const *names, char *buf, size_t n)
{
    buf[0] = '\0';
    char want[64], have[64];
    squeeze(v, want, sizeof want);
    int best = strlen(v) > 4 ? 3 : 2; /* a short name is near too many others */
    const char *best_name = NULL;
    for (int i = 0; names[i]; i++) {
        squeeze(names[i], have, sizeof have);
        int dist = want[0] && !strcmp(want, have) ? 0 : edit_distance(v, names[i]);
        if (dist < best) {
            best = dist;
            best_name = names[i];
        }
    }
    if (best_name)
        snprintf(buf, n, "; did you mean %s?", best_name);
}

void scn_section_hint(const char *section, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; section_names[i]; i++)
        if (edit_distance(section, section_names[i]) <= 2) {
            snprintf(buf, n, "; did you mean [%s]?", section_names[i]);
            return;
        }
}

int scn_device_partner(int k)
{
    int kd = scn_key_index("cluster", "device"), kf = scn_key_index("cluster", "device_flops");
    return k == kd ? kf : k == kf ? kd : -1;
}
