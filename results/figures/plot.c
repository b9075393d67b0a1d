/* Drawing one figure (see plot.h): the legend labels every figure shares, the runs a figure
 * that cannot tell many apart shows (the fastest, said in its caption and note), the figure's
 * function from the table (figures.c), the frame around its panels (title, caption), then
 * gnuplot once per format (gnuplot.c); and what makes a selection a plan's.
 * Skipped figures are not errors: a bandwidth figure of runs at one bandwidth says so. */
#define _POSIX_C_SOURCE 200809L
#include "plot.h"

#include <errno.h>
#include <math.h>
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
    free(out->files);
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

int fig_projector(const fig_t *f)
{
    return f->o->projector;
}

/* The size asked for: --size, or a projector's screen; 0 x 0: the figure's own. */
static void size_asked(const fig_t *f, int *width, int *height)
{
    int own = f->o->width <= 0 && fig_projector(f);
    *width = own ? RESULTS_PLOT_PROJECTOR_WIDTH : f->o->width;
    *height = own ? RESULTS_PLOT_PROJECTOR_HEIGHT : f->o->height;
}

double fig_scale(const fig_t *f)
{
    int w, h;
    size_asked(f, &w, &h);
    double s = 1.0;
    if (w > 0)
        s = fmax(fmin((double)w / FIG_WIDTH, (double)h / FIG_HEIGHT), FIG_MIN_SCALE);
    return fig_projector(f) ? s * FIG_PROJECTOR_TYPE : s;
}

/* The image's pixels: FIG_WIDTH and f->height, or --size, with the height scaled by
 * f->height / FIG_HEIGHT (--size is the size of a one-panel figure: one of stacked panels
 * grows in proportion); on a projector, its screen, a panel at a time. */
static int pixels_wide(const fig_t *f)
{
    int w, h;
    size_asked(f, &w, &h);
    return w > 0 ? w : FIG_WIDTH;
}

static int pixels_high(const fig_t *f)
{
    int w, h;
    size_asked(f, &w, &h);
    if (fig_projector(f))
        return h;
    if (h > 0)
        return (int)lround(h * (double)f->height / FIG_HEIGHT);
    return f->height;
}

int fig_width(const fig_t *f)
{
    return (int)lround(pixels_wide(f) / fig_scale(f));
}

int fig_height(const fig_t *f)
{
    return (int)lround(pixels_high(f) / fig_scale(f));
}

/* Pixels a caption line takes (10 points), and its characters' mean width. */
#define CAPTION_LINE_PX 17.0
#define CAPTION_CHAR_PX 7.4
/* Pixels above the panels for the title (13 points), or without one. */
#define TITLE_PX 40.0
#define NO_TITLE_PX 8.0

/* The length of the next caption line of text: all of it when it fits in max bytes, else up
 * to its last blank, comma or slash within max (the blank dropped by the caller), else max
 * bytes less a cut UTF-8 sequence. */
static size_t caption_break(const char *text, size_t max)
{
    size_t len = strlen(text);
    if (len <= max)
        return len;
    for (size_t k = max; k > max / 2; k--)
        if (text[k - 1] == ',' || text[k - 1] == '/' || text[k] == ' ')
            return k;
    size_t k = max;
    while (k > 1 && ((unsigned char)text[k] & 0xc0) == 0x80)
        k--;
    return k;
}

void fig_caption(fig_t *f, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    size_t max = (size_t)((fig_width(f) - 24) / CAPTION_CHAR_PX);
    if (max > RESULTS_PLOT_TEXT_MAX)
        max = RESULTS_PLOT_TEXT_MAX;
    const char *p = text;
    while (*p && f->n_caption < FIG_CAPTION_LINES) {
        size_t len = caption_break(p, max);
        int last = f->n_caption + 1 == FIG_CAPTION_LINES && p[len];
        char *line = dt_malloc(len + 4);
        memcpy(line, p, len);
        strcpy(line + len, last ? "..." : "");
        f->caption[f->n_caption++] = line;
        p += len;
        while (*p == ' ')
            p++;
    }
}

void fig_caption_runs(fig_t *f)
{
    if (f->prefix)
        fig_caption(f, "runs of %s, named by the values that tell them apart", f->prefix);
}

void fig_panel(fig_t *f, double x, double y, double w, double h)
{
    gp_t *g = &f->body;
    DT_CHECK(fflush(g->f) == 0, "building a gnuplot script: %s", strerror(errno));
    f->panel_at = realloc(f->panel_at, (f->panels + 1) * sizeof *f->panel_at);
    DT_CHECK(f->panel_at, "out of memory");
    f->panel_at[f->panels] = g->len;
    /* the title and the caption are labels, drawn with the first panel only (with a
     * projector's every screen, each the only panel it draws) */
    if (f->panels++ == 1 && !fig_projector(f))
        for (int k = 0; k <= FIG_CAPTION_LINES; k++)
            gp_printf(g, "unset label %d\n", 9000 + k);
    gp_printf(g,
              "set origin %.6g, fig_bottom + %.6g * fig_area\n"
              "set size %.6g, %.6g * fig_area\n",
              x, y, w, h);
}

void fig_grid_panel(fig_t *f, size_t p, size_t rows, size_t cols)
{
    DT_ASSERT(rows > 0 && cols > 0 && p < rows * cols);
    if (fig_projector(f)) {
        fig_panel(f, 0, 0, 1, 1);
        return;
    }
    size_t r = p / cols, c = p % cols;
    fig_panel(f, (double)c / (double)cols, (double)(rows - 1 - r) / (double)rows,
              1.0 / (double)cols, 1.0 / (double)rows);
}

size_t fig_grid_cols(const fig_t *f, size_t n)
{
    return n > 1 && fig_width(f) >= 800 && !fig_projector(f) ? 2 : 1;
}

/* Before the figure's body: where the panels go (fig_top, fig_bottom, fig_area: fractions of
 * the image) and the title and caption lines as labels (tags 9000 and up). */
static void fig_frame(const fig_t *f, gp_t *g)
{
    double h = fig_height(f);
    double top = f->title ? TITLE_PX : NO_TITLE_PX;
    double bottom = f->n_caption ? 8 + CAPTION_LINE_PX * (double)f->n_caption : NO_TITLE_PX;
    gp_printf(g,
              "fig_top = %.6g\nfig_bottom = %.6g\nfig_area = 1 - fig_top - fig_bottom\n"
              "set multiplot\n",
              top / h, bottom / h);
    if (f->title) {
        DT_ASSERT(strlen(f->title) <= FIG_TITLE_MAX);
        gp_printf(g, "set label 9000 ");
        gp_text(g, f->title);
        gp_printf(g, " at screen 0.5, screen %.6g center font ',13'\n", 1 - 20 / h);
    }
    for (size_t k = 0; k < f->n_caption; k++) {
        gp_printf(g, "set label %zu ", 9001 + k);
        gp_text(g, f->caption[k]);
        gp_printf(g, " at screen %.6g, screen %.6g left font ',10' tc rgb '%s'\n",
                  12 / (double)fig_width(f), (bottom - 4 - CAPTION_LINE_PX * ((double)k + 0.5)) / h,
                  fig_projector(f) ? "#222222" : "#555555");
    }
}

/* --- legend labels ---------------------------------------------------------------------- */

/* Where "-tTpPdD-mb" begins in a plan's run name "plan-PROFILE-tTpPdD-mb..." (the profile's
 * name may hold dashes), or NULL when name is not one. */
static const char *plan_layout(const char *name)
{
    if (strncmp(name, "plan-", 5))
        return NULL;
    for (const char *s = strstr(name + 5, "-t"); s; s = strstr(s + 2, "-t")) {
        long t, p, d;
        int end = 0;
        if (sscanf(s, "-t%ldp%ldd%ld-mb%n", &t, &p, &d, &end) == 3 && end > 0)
            return s;
    }
    return NULL;
}

/* The "NAME/" that every run name starts with (a sweep names its runs NAME/key=value,...),
 * or the "plan-PROFILE-" of a plan's runs (named by their layouts after it), malloc'ed
 * without the '/' or '-', or NULL. */
static char *common_prefix(const results_runs_t *runs)
{
    if (runs->n < 2)
        return NULL;
    /* a plan's "plan-PROFILE": its layouts tell its runs apart */
    const char *layout = plan_layout(runs->v[0].name);
    if (layout) {
        size_t len = (size_t)(layout - runs->v[0].name);
        for (size_t i = 1; i < runs->n; i++)
            if (strncmp(runs->v[i].name, runs->v[0].name, len + 1) != 0 ||
                plan_layout(runs->v[i].name) != runs->v[i].name + len)
                return NULL;
        char *p = dt_malloc(len + 1);
        memcpy(p, runs->v[0].name, len);
        p[len] = '\0';
        return p;
    }
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

/* What a legend shows of a swept "key=value" (the key maybe section.key): the value alone
 * when it reads alone, a strategy (kind) or a quantity with its unit (1Gbps, 5ms); else
 * key=value, a bare number or word needing its key's name (lr=0.1, partition=iid). */
static const char *legend_part(const char *part)
{
    const char *eq = strchr(part, '='), *key = part;
    for (const char *c = part; c < eq; c++)
        if (*c == '.')
            key = c + 1;
    if (eq - key == 4 && !strncmp(key, "kind", 4))
        return eq + 1;
    const char *v = eq + 1;
    if (!(*v >= '0' && *v <= '9'))
        return key;
    while ((*v >= '0' && *v <= '9') || *v == '.')
        v++;
    return (*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ? eq + 1 : key;
}

/* Sweep run names list every swept key (NAME/kind=sync-ps,platform=star,...,bandwidth=1Gbps).
 * For a legend, keep the values of as few keys as still tell the runs apart: each key in
 * turn, from the last, is dropped when the runs stay distinct without it (keys that only
 * follow others, like a platform tied to a strategy, or a learning rate swept with its
 * optimizer, go; the first of keys swept together stays), and the parts are joined by
 * blanks, each a value that reads alone or key=value: "sync-ps partition=iid 1Gbps",
 * "allreduce optimizer=adamw". Returns 0 (labels untouched) when the names are not of that
 * form. */
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
        for (int j = k - 1; j >= 0; j--) {
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
                                            legend_part(parts[i][j]));
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

/* A legend label per run of idx[0..n) (all runs when idx is NULL): its name less the common
 * prefix (shortened as above for sweep runs), with its id where names repeat (or "run ID" for
 * a run without a name). */
static char **labels_of(const results_runs_t *runs, const size_t *idx, size_t n, const char *prefix)
{
    size_t skip = prefix ? strlen(prefix) + 1 : 0;
    char **labels = dt_calloc(n ? n : 1, sizeof *labels);
#define RUN(i) (&runs->v[idx ? idx[i] : (i)])
    int repeats = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            repeats |= strcmp(RUN(j)->name, RUN(i)->name) == 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = RUN(i)->name + skip;
        labels[i] = dt_malloc(strlen(name) + 1);
        strcpy(labels[i], name);
    }
    if (prefix && !repeats)
        shorten_labels(labels, n);
    for (size_t i = 0; i < n; i++) {
        const results_run_view_t *r = RUN(i);
        int repeated = 0;
        for (size_t j = 0; j < n && !repeated; j++)
            repeated = j != i && strcmp(RUN(j)->name, r->name) == 0;
        size_t len = strlen(labels[i]) + 32;
        char *l = dt_malloc(len);
        if (labels[i][0] == '\0')
            snprintf(l, len, "run %lld", (long long)r->id);
        else if (repeated)
            snprintf(l, len, "%s (run %lld)", labels[i], (long long)r->id);
        else
            snprintf(l, len, "%s", labels[i]);
        free(labels[i]);
        labels[i] = l;
    }
#undef RUN
    return labels;
}

char **fig_labels_of(const fig_t *f, const size_t *idx, size_t n)
{
    return labels_of(f->runs, idx, n, f->prefix);
}

void fig_labels_free(char **labels, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(labels[i]);
    free(labels);
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

/* Seconds per step of a run, INFINITY without a summary or steps (last among the fastest). */
static double step_s(const results_run_view_t *r)
{
    return r->has_summary && r->steps > 0 && r->sim_time > 0 ? r->sim_time / (double)r->steps
                                                             : INFINITY;
}

typedef struct ranked {
    double step_s;
    size_t i;
} ranked_t;

static int ranked_cmp(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    if (x->step_s != y->step_s)
        return (x->step_s > y->step_s) - (x->step_s < y->step_s);
    return (x->i > y->i) - (x->i < y->i);
}

static int index_cmp(const void *a, const void *b)
{
    const ranked_t *x = a, *y = b;
    return (x->i > y->i) - (x->i < y->i);
}

/* The fastest max of runs, in their selection order (the views shared, not copied). */
static void fastest_of(const results_runs_t *runs, size_t max, results_runs_t *out)
{
    ranked_t *r = dt_malloc(runs->n * sizeof *r);
    for (size_t i = 0; i < runs->n; i++)
        r[i] = (ranked_t){step_s(&runs->v[i]), i};
    qsort(r, runs->n, sizeof *r, ranked_cmp);
    qsort(r, max, sizeof *r, index_cmp);
    *out = (results_runs_t){.v = dt_malloc(max * sizeof *out->v), .n = max};
    for (size_t k = 0; k < max; k++)
        out->v[k] = runs->v[r[k].i];
    snprintf(out->what, sizeof out->what, "%s", runs->what);
    free(r);
}

int results_runs_plan(const results_runs_t *runs)
{
    if (runs->n < 2 || !runs->v[0].sweep)
        return 0;
    for (size_t i = 0; i < runs->n; i++) {
        const results_run_view_t *r = &runs->v[i];
        if (!r->sweep || strcmp(r->sweep, runs->v[0].sweep) || !plan_layout(r->name))
            return 0;
    }
    return 1;
}

/* Runs the figure's function, which writes f->body when it draws. */
static dt_status fig_build(fig_t *f, results_figure_t fig, dt_err_t *err)
{
    /* first, so that the figure's own lines are the ones cut when there are too many */
    if (f->runs->n < f->selected)
        fig_caption(f, "the %zu fastest of %zu runs by s/step (pareto.png: all)", f->runs->n,
                    f->selected);
    dt_status st = results_figures[fig].draw(f, err);
    if (st == DT_OK && f->drawn && f->runs->n < f->selected) {
        size_t len = strlen(f->note);
        snprintf(f->note + len, f->note_size - len, "%sthe %zu fastest of %zu runs",
                 len ? "; " : "", f->runs->n, f->selected);
    }
    DT_CHECK(fflush(f->body.f) == 0, "building a gnuplot script: %s", strerror(errno));
    return st;
}

/* The images a drawn figure makes per format: on a projector, one per panel. */
static size_t fig_screens(const fig_t *f)
{
    return fig_projector(f) && f->panels > 1 ? f->panels : 1;
}

/* The length of the plot command at line (with its continuation lines, each ending in a
 * backslash), 0 when line is not one. dtsim writes no other line that starts with "plot ":
 * datablocks hold numbers, and names are quoted literals within a line. */
static size_t plot_command(const char *line, const char *end)
{
    if ((size_t)(end - line) < 5 || strncmp(line, "plot ", 5))
        return 0;
    const char *p = line;
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return (size_t)(end - line);
        if (nl == p || nl[-1] != '\\')
            return (size_t)(nl + 1 - line);
        p = nl + 1;
    }
}

/* The body of screen `screen` into g: every panel's settings in order (a panel may keep
 * what the panels before it set: scaling.png's second panel their x axis), but the plot
 * commands of the other panels, so that one panel fills the image; all of it when the
 * figure makes one image. */
static void screen_body(const fig_t *f, size_t screen, gp_t *g)
{
    const char *b = f->body.buf, *end = b + f->body.len;
    if (fig_screens(f) == 1) {
        fwrite(b, 1, f->body.len, g->f);
        return;
    }
    size_t panel = 0;
    for (const char *line = b; line < end;) {
        while (panel + 1 < f->panels && f->panel_at[panel + 1] <= (size_t)(line - b))
            panel++;
        size_t skip = panel != screen ? plot_command(line, end) : 0;
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *next = skip ? line + skip : nl ? nl + 1 : end;
        if (!skip)
            fwrite(line, 1, (size_t)(next - line), g->f);
        line = next;
    }
}

/* The script of a drawn figure's screen: the frame, the body (screen_body) and the end of
 * the multiplot, without the header, which depends on the format. */
static void fig_script(const fig_t *f, size_t screen, gp_t *script)
{
    gp_init(script);
    script->theme = f->body.theme;
    fig_frame(f, script);
    screen_body(f, screen, script);
    gp_printf(script, "unset multiplot\n");
}

static void fig_free(fig_t *f)
{
    gp_free(&f->body);
    free(f->panel_at);
    fig_labels_free(f->labels, f->runs->n);
    free(f->fastest.v);
    for (size_t k = 0; k < f->n_caption; k++)
        free(f->caption[k]);
    free((char *)f->prefix);
}

/* f in place: its body is a memory stream that writes through pointers into f. */
static void fig_init(fig_t *f, results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                     const results_plot_opts_t *o, results_plot_out_t *out)
{
    *f = (fig_t){.q = q,
                 .runs = runs,
                 .o = o,
                 .selected = runs->n,
                 .height = FIG_HEIGHT,
                 .note = out->note,
                 .note_size = sizeof out->note};
    size_t max = results_figures[fig].max_runs;
    if (max && runs->n > max) {
        fastest_of(runs, max, &f->fastest);
        f->runs = &f->fastest;
    }
    f->prefix = common_prefix(f->runs);
    f->labels = labels_of(f->runs, NULL, f->runs->n, f->prefix);
    gp_init(&f->body);
    f->body.theme = o->projector ? GP_THEME_PROJECTOR : GP_THEME_PAPER;
}

static void check_args(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                       const results_plot_opts_t *o, results_plot_out_t *out)
{
    DT_ASSERT(q && runs && o && out && fig < RESULTS_FIGURE_COUNT);
    DT_ASSERT(results_figures[fig].name && results_figures[fig].draw);
    DT_ASSERT((o->width == 0 && o->height == 0) ||
              (o->width >= RESULTS_PLOT_MIN_WIDTH && o->width <= RESULTS_PLOT_MAX_SIZE &&
               o->height >= RESULTS_PLOT_MIN_HEIGHT && o->height <= RESULTS_PLOT_MAX_SIZE));
    memset(out, 0, sizeof *out);
}

/* The file of screen `screen` of n in format: NAME.EXT, or NAME-1.EXT, ... of several. */
static char *screen_path(const char *dir, const char *name, size_t screen, size_t n,
                         gp_format_t format)
{
    char numbered[128];
    if (n > 1)
        snprintf(numbered, sizeof numbered, "%s-%zu", name, screen + 1);
    return path_join(dir, n > 1 ? numbered : name, gp_format_ext[format]);
}

dt_status results_plot_draw(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                            const results_plot_opts_t *o, results_plot_out_t *out, dt_err_t *err)
{
    check_args(q, runs, fig, o, out);
    DT_ASSERT(o->out_dir);
    fig_t f;
    fig_init(&f, q, runs, fig, o, out);
    dt_status st = fig_build(&f, fig, err);
    unsigned formats = o->formats ? o->formats : RESULTS_PLOT_PNG;
    out->screens = st == DT_OK && f.drawn ? fig_screens(&f) : 0;
    out->files = dt_calloc(out->screens * GP_FORMAT_COUNT + 1, sizeof *out->files);
    for (size_t s = 0; s < out->screens && st == DT_OK; s++) {
        gp_t script;
        fig_script(&f, s, &script);
        for (int fmt = 0; st == DT_OK && fmt < GP_FORMAT_COUNT; fmt++) {
            if (!(formats & 1u << fmt))
                continue;
            char *path = screen_path(o->out_dir, results_figures[fig].name, s, out->screens,
                                     (gp_format_t)fmt);
            st = gp_render(&script, (gp_format_t)fmt, pixels_wide(&f), pixels_high(&f),
                           fig_scale(&f), path, err);
            if (st == DT_OK)
                out->files[out->n_files++] = path;
            else
                free(path);
        }
        gp_free(&script);
    }
    fig_free(&f);
    return st;
}

dt_status results_plot_script(results_query_t *q, const results_runs_t *runs, results_figure_t fig,
                              const results_plot_opts_t *o, gp_format_t format, size_t screen,
                              char **out_script, results_plot_out_t *out, dt_err_t *err)
{
    check_args(q, runs, fig, o, out);
    DT_ASSERT(format < GP_FORMAT_COUNT && out_script);
    *out_script = NULL;
    fig_t f;
    fig_init(&f, q, runs, fig, o, out);
    dt_status st = fig_build(&f, fig, err);
    out->screens = st == DT_OK && f.drawn ? fig_screens(&f) : 0;
    if (screen < out->screens) {
        gp_t script;
        fig_script(&f, screen, &script);
        size_t len;
        gp_script(&script, format, pixels_wide(&f), pixels_high(&f), fig_scale(&f), out_script,
                  &len);
        gp_free(&script);
    }
    fig_free(&f);
    return st;
}
