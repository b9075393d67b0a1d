/* `dtsim plot`: draws the figures of runs stored in a results database (results/figures/plot.h)
 * into a directory and prints the path of every file it wrote. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cli_select.h"
#include "cli_util.h"
#include "plot.h"
#include "query.h"

/* The figures and what each shows, from the figures' own help. */
static void plot_figures(FILE *out)
{
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        char file[64];
        snprintf(file, sizeof file, "%s.png", results_figure_name((results_figure_t)fig));
        const char *help = results_figure_help((results_figure_t)fig);
        for (int first = 1; *help; first = 0) {
            int len = (int)strcspn(help, "\n");
            fprintf(out, "  %-18s  %.*s\n", first ? file : "", len, help);
            help += len + (help[len] == '\n');
        }
    }
}

enum { OPT_OUT = 1, OPT_FORMAT, OPT_SVG, OPT_SIZE, OPT_PROJECTOR };

static const cli_option plot_options[] = {
    CLI_SELECT_OPTIONS,
    {.id = OPT_OUT,
     .name = "out",
     .kind = CLI_VALUE_DIR,
     .metavar = "DIR",
     .help = "where the figures go, created if needed [results/plots]"},
    {.id = OPT_FORMAT,
     .name = "format",
     .kind = CLI_VALUE_CHOICE,
     .metavar = "LIST",
     .help = "png, svg, pdf, or several: png,pdf (repeatable) [png]",
     .choices = "png,svg,pdf",
     .flags = CLI_OPT_LIST},
    {.id = OPT_SVG, .name = "svg", .help = "the same as adding --format svg"},
    {.id = OPT_SIZE,
     .name = "size",
     .kind = CLI_VALUE_TEXT,
     .metavar = "WxH",
     .help = "pixels of a one-panel figure, e.g. 640x420 or 1920x1080; the layout stays, fonts and "
             "lines grow with the size; figures of stacked panels grow taller in proportion; a PDF "
             "page is W/96 x H/96 inches [1000x600; 1920x1080 with --projector]"},
    {.id = OPT_PROJECTOR,
     .name = "projector",
     .help =
         "for a projector, read from the back of a room: type and lines 1.4 times what --size "
         "gives (2.5 times the default at 1920x1080), a darker palette on white, every panel of a "
         "figure an image of its own, each with its key: NAME-1.png, NAME-2.png, ... in the order "
         "they read"},
    CLI_SELECT_TIMELINE_OPTION,
    {0},
};

const cli_spec cli_plot_spec = {
    .usage = "[--db PATH] [--runs SPEC | --sweep ID|NAME] [--out DIR]\n"
             "[--format png,svg,pdf] [--size WxH] [--projector]\n"
             "[--timeline-run ID]",
    .about = "Draws figures of stored runs with gnuplot (package gnuplot-nox) and prints the\n"
             "path of each file written. Figures the runs cannot make are skipped, saying why:\n",
    .more = plot_figures,
    .options = plot_options,
};

/* Adds the formats of a comma list ("png,svg") to *formats; -1 on a name that is none. */
static int parse_formats(const char *list, unsigned *formats)
{
    const char *p = list;
    do {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int f = 0; f < GP_FORMAT_COUNT && found < 0; f++)
            if (strlen(gp_format_ext[f]) == len && !strncmp(p, gp_format_ext[f], len))
                found = f;
        if (found < 0)
            return -1;
        *formats |= 1u << found;
        p += len;
    } while (*p++ == ',');
    return 0;
}

/* "WxH" in pixels, within the sizes plot.h allows; -1 otherwise. */
static int parse_size(const char *text, int *width, int *height)
{
    const char *x = strchr(text, 'x');
    if (!x || x == text || strchr(x + 1, 'x'))
        return -1;
    char w[16];
    long wl, hl;
    if ((size_t)(x - text) >= sizeof w)
        return -1;
    memcpy(w, text, (size_t)(x - text));
    w[x - text] = '\0';
    if (cli_parse_long(w, RESULTS_PLOT_MIN_WIDTH, RESULTS_PLOT_MAX_SIZE, &wl) != 0 ||
        cli_parse_long(x + 1, RESULTS_PLOT_MIN_HEIGHT, RESULTS_PLOT_MAX_SIZE, &hl) != 0)
        return -1;
    *width = (int)wl;
    *height = (int)hl;
    return 0;
}

/* mkdir -p: creates dir and its missing parents. */
static int make_dirs(const char *dir, char *why, size_t n)
{
    size_t len = strlen(dir);
    char *p = malloc(len + 1);
    if (!p) {
        snprintf(why, n, "out of memory");
        return -1;
    }
    memcpy(p, dir, len + 1);
    int rc = 0;
    for (size_t i = 1; i <= len && rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        struct stat sb;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(why, n, "cannot create %s: %s", p, strerror(errno));
            rc = -1;
        } else if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
            snprintf(why, n, "%s is not a directory", p);
            rc = -1;
        }
        p[i] = c;
    }
    free(p);
    return rc;
}

int cli_plot(int argc, char **argv)
{
    const char *db_path = DEFAULT_DB, *runs_spec = NULL, *sweep = NULL;
    results_plot_opts_t opts = {.out_dir = "results/plots"};
    int svg = 0;
    int id;
    cli_parser p;
    cli_parse_init(&p, "plot", &cli_plot_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case CLI_SELECT_DB:
            db_path = p.value;
            break;
        case CLI_SELECT_RUNS:
            runs_spec = p.value;
            break;
        case CLI_SELECT_SWEEP:
            sweep = p.value;
            break;
        case OPT_OUT:
            opts.out_dir = p.value;
            break;
        case OPT_SVG:
            svg = 1;
            break;
        case OPT_FORMAT:
            if (parse_formats(p.value, &opts.formats) != 0)
                return cli_usage_error("plot",
                                       "--format \"%s\": expected png, svg, pdf or a "
                                       "comma list of them",
                                       p.value);
            break;
        case OPT_SIZE:
            if (parse_size(p.value, &opts.width, &opts.height) != 0)
                return cli_usage_error("plot",
                                       "--size \"%s\": expected WIDTHxHEIGHT in "
                                       "pixels, width %d to %d, height %d to %d",
                                       p.value, RESULTS_PLOT_MIN_WIDTH, RESULTS_PLOT_MAX_SIZE,
                                       RESULTS_PLOT_MIN_HEIGHT, RESULTS_PLOT_MAX_SIZE);
            break;
        case OPT_PROJECTOR:
            opts.projector = 1;
            break;
        case CLI_SELECT_TIMELINE_RUN:
            opts.timeline_run = p.integer;
            break;
        }
    }
    if (id < 0)
        return p.status;
    if (p.n_args)
        return cli_usage_error("plot", "unexpected argument \"%s\"", p.args[0]);
    int rc = cli_select_check("plot", runs_spec, sweep);
    if (rc != CLI_EXIT_OK)
        return rc;
    if (opts.out_dir[0] == '\0')
        return cli_usage_error("plot", "--out needs a directory");
    dt_err_t err;
    if (!opts.formats)
        opts.formats = RESULTS_PLOT_PNG;
    if (svg)
        opts.formats |= RESULTS_PLOT_SVG;
    if (results_plot_gnuplot_check(&err) != DT_OK) {
        fprintf(stderr, "dtsim plot: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    for (int f = 0; f < GP_FORMAT_COUNT; f++)
        if (opts.formats & 1u << f && gp_format_check((gp_format_t)f, &err) != DT_OK) {
            fprintf(stderr, "dtsim plot: --format %s: %s\n", gp_format_ext[f], err.msg);
            return CLI_EXIT_USAGE;
        }

    results_query_t *q = NULL;
    results_runs_t runs = {0};
    dt_status st;
    rc = cli_select_runs("plot", db_path, runs_spec, sweep, opts.timeline_run, &q, &runs);
    if (rc != CLI_EXIT_OK)
        goto done;
    char why[512];
    if (make_dirs(opts.out_dir, why, sizeof why) != 0) {
        fprintf(stderr, "dtsim plot: --out %s: %s\n", opts.out_dir, why);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    fprintf(stderr, "dtsim plot: %s\n", runs.what);
    for (int fig = 0; fig < RESULTS_FIGURE_COUNT; fig++) {
        results_plot_out_t out;
        const char *name = results_figure_name((results_figure_t)fig);
        st = results_plot_draw(q, &runs, (results_figure_t)fig, &opts, &out, &err);
        if (st != DT_OK) {
            fprintf(stderr, "dtsim plot: %s\n", err.msg);
            int frc = st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
            rc = frc > rc ? frc : rc;
        }
        for (int i = 0; i < out.n_files; i++)
            printf("%s\n", out.files[i]);
        if (out.note[0])
            fprintf(stderr, "dtsim plot: %s%s: %s\n", out.n_files ? "" : "skipped ", name,
                    out.note);
        results_plot_out_free(&out);
        fflush(stdout);
    }
done:
    results_runs_free(&runs);
    results_query_close(q);
    return rc;
}
