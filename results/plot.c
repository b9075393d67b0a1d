/* Drawing one figure (see plot.h): the legend labels every figure shares, the figure's
 * function from the table (figures.c), then gnuplot once per format (gnuplot.c).
 * Skipped figures are not errors: a bandwidth figure of runs at one bandwidth says so. */
#define _POSIX_C_SOURCE 200809L
#include "plot.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"

const char *results_figure_name(results_figure_t f)
{
    DT_ASSERT(f < RESULTS_FIGURE_COUNT);
    return results_figures[f].name;
}

const char *results_figure_help(results_figure_t f)
{
    DT_ASSERT(f < RESULTS_FIGURE_COUNT);
    return results_figures[f].help;
}

void results_plot_out_free(results_plot_out_t *out)
{
    if (!out)
        return;
    for (int i = 0; i < out->n_files; i++)
        free(out->files[i]);
    memset(out, 0, sizeof *out);
}

/* --- what the figures share ------------------------------------------------------------- */

void fig_note(fig_t *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->note, f->note_size, fmt, ap);
    va_end(ap);
}

void fig_runs_of(fig_t *f)
{
    if (!f->prefix)
        return;
    char *runs_of = dt_malloc(strlen(f->prefix) + 16);
    sprintf(runs_of, ": %s/...", f->prefix);
    gp_printf(&f->body, " . ");
    gp_text(&f->body, runs_of);
    free(runs_of);
}

void fig_title(fig_t *f, const char *fixed)
{
    gp_printf(&f->body, "set title \"%s\"", fixed);
    fig_runs_of(f);
    gp_printf(&f->body, "\n");
}

/* --- legend labels ---------------------------------------------------------------------- */

/* The "NAME/" that every run name starts with (a sweep names its runs NAME/key=value,...),
 * malloc'ed without the '/', or NULL. */
static char *common_prefix(const results_runs_t *runs)
{
    if (runs->n < 2)
        return NULL;
    const char *slash = strchr(runs->v[0].name, '/');
    if (!slash || slash == runs->v[0].name)
        return NULL;
    size_t len = (size_t)(slash - runs->v[0].name);
    for (size_t i = 1; i < runs->n; i++)
        if (strncmp(runs->v[i].name, runs->v[0].name, len + 1) != 0)
            return NULL;
    char *p = dt_malloc(len + 1);
    memcpy(p, runs->v[0].name, len);
    p[len] = '\0';
    return p;
}

/* Splits "k=v,k=v,..." (a sweep run's name without its prefix) into at most max parts at
 * the commas that start a "key=" (a value may hold commas: hidden=256,128). Returns the
 * count, 0 when the text is not of that form. parts[i] point into buf. */
static int split_kv(char *buf, char **parts, int max)
{
    int n = 0;
    char *p = buf;
    while (*p && n < max) {
        char *eq = p;
        while ((*eq >= 'a' && *eq <= 'z') || *eq == '_' || *eq == '.')
            eq++;
        if (eq == p || *eq != '=')
            return 0;
        parts[n++] = p;
        char *next = NULL;
        for (char *c = strchr(eq, ','); c && !next; c = strchr(c + 1, ',')) {
            char *k = c + 1;
            while ((*k >= 'a' && *k <= 'z') || *k == '_' || *k == '.')
                k++;
            if (k > c + 1 && *k == '=')
                next = c;
        }
        if (!next)
            return *p ? n : 0;
        *next = '\0';
        p = next + 1;
    }
    return *p ? 0 : n;
}

#define LABEL_KEYS 16

/* Sweep run names list every swept key (NAME/kind=sync-ps,platform=star,...,bandwidth=1Gbps).
 * For a legend, keep the values of as few keys as still tell the runs apart: each key in
 * turn is dropped when the runs stay distinct without it (keys that only follow others,
 * like a platform tied to a strategy, go), and the values are joined by blanks:
 * "sync-ps iid 1Gbps". Returns 0 (labels untouched) when the names are not of that form. */
static int shorten_labels(char **labels, size_t n)
{
    if (n < 2)
        return 0;
    char **bufs = dt_calloc(n, sizeof *bufs);
    char *(*parts)[LABEL_KEYS] = dt_calloc(n, sizeof *parts);
    int k = -1, ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        bufs[i] = dt_malloc(strlen(labels[i]) + 1);
        strcpy(bufs[i], labels[i]);
        int c = split_kv(bufs[i], parts[i], LABEL_KEYS);
        ok = c > 0 && (k < 0 || c == k);
        k = c;
        for (int j = 0; ok && j < c; j++) /* the same keys in the same order */
            ok = strncmp(parts[i][j], parts[0][j], strcspn(parts[0][j], "=") + 1) == 0;
    }
    int keep[LABEL_KEYS];
    if (ok) {
        for (int j = 0; j < k; j++)
            keep[j] = 1;
        for (int j = 0; j < k; j++) {
            keep[j] = 0;
            int distinct = 1;
            for (size_t a = 0; a < n && distinct; a++)
                for (size_t b = a + 1; b < n && distinct; b++) {
                    int same = 1;
                    for (int m = 0; m < k && same; m++)
                        same = !keep[m] || !strcmp(parts[a][m], parts[b][m]);
                    distinct = !same;
                }
            keep[j] = !distinct;
        }
        for (size_t i = 0; i < n; i++) {
            size_t len = 0, cap = strlen(labels[i]) + 1;
            char *out = dt_malloc(cap);
            out[0] = '\0';
            for (int j = 0; j < k; j++)
                if (keep[j])
                    len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? " " : "",
                                            strchr(parts[i][j], '=') + 1);
            free(labels[i]);
            labels[i] = out;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(bufs[i]);
    free(bufs);
    free(parts);
    return ok;
}

/* A legend label per run: its name less the common prefix (shortened as above for sweep
 * runs), with its id where names repeat (or "run ID" for a run without a name). */
static char **run_labels(const results_runs_t *runs, const char *prefix)
{
    size_t skip = prefix ? strlen(prefix) + 1 : 0;
    char **labels = dt_calloc(runs->n ? runs->n : 1, sizeof *labels);
    int repeats = 0;
    for (size_t i = 0; i < runs->n; i++)
        for (size_t j = i + 1; j < runs->n; j++)
            repeats |= strcmp(runs->v[j].name, runs->v[i].name) == 0;
    for (size_t i = 0; i < runs->n; i++) {
        const char *name = runs->v[i].name + skip;
        labels[i] = dt_malloc(strlen(name) + 1);
        strcpy(labels[i], name);
    }
    if (prefix && !repeats)
        shorten_labels(labels, runs->n);
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        int repeated = 0;
        for (size_t j = 0; j < runs->n && !repeated; j++)
            repeated = j != i && strcmp(runs->v[j].name, r->name) == 0;
        size_t n = strlen(labels[i]) + 32;
        char *l = dt_malloc(n);
        if (labels[i][0] == '\0')
            snprintf(l, n, "run %lld", (long long)r->id);
        else if (repeated)
            snprintf(l, n, "%s (run %lld)", labels[i], (long long)r->id);
        else
            snprintf(l, n, "%s", labels[i]);
        free(labels[i]);
        labels[i] = l;
    }
    return labels;
}

/* --- drawing ---------------------------------------------------------------------------- */

static char *path_join(const char *dir, const char *name, const char *ext)
{
    size_t n = strlen(dir) + strlen(name) + strlen(ext) + 3;
    char *p = dt_malloc(n);
    size_t dl = strlen(dir);
    snprintf(p, n, "%s%s%s.%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name, ext);
    return p;
}

dt_status results_plot_draw(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                            const results_plot_opts_t *o, results_plot_out_t *out,
                            dt_err_t *err)
{
    DT_ASSERT(q && runs && o && o->out_dir && out && fig < RESULTS_FIGURE_COUNT);
    const figure_t *row = &results_figures[fig];
    DT_ASSERT(row->name && row->draw);
    memset(out, 0, sizeof *out);
    char *prefix = common_prefix(runs);
    fig_t f = {.q = q, .runs = runs, .o = o, .prefix = prefix,
               .labels = run_labels(runs, prefix), .height = 600, .note = out->note,
               .note_size = sizeof out->note};
    gp_init(&f.body);
    dt_status st = row->draw(&f, err);
    for (int svg = 0; st == DT_OK && f.drawn && svg <= (o->svg != 0); svg++) {
        char *path = path_join(o->out_dir, row->name, svg ? "svg" : "png");
        st = gp_render(&f.body, svg, f.height, path, err);
        if (st == DT_OK)
            out->files[out->n_files++] = path;
        else
            free(path);
    }
    gp_free(&f.body);
    for (size_t i = 0; i < runs->n; i++)
        free(f.labels[i]);
    free(f.labels);
    free(prefix);
    return st;
}
