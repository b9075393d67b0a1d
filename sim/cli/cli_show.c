/* `dtsim show RUN`: one run of a results database on one page: its runs row, summary,
 * energy and cost, evaluations, hosts, memory, faults, links, clients, privacy and staleness, then
 * every resolved parameter, those the run set before those at this dtsim's defaults. `--config`
 * prints the stored configuration instead, a scenario file that `dtsim run` replays. The
 * rows come from results/query.c; this file only lays them out. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_util.h"
#include "query.h"
#include "scenario.h"

/* The label column of the page. */
#define LABEL "%-16s"

/* "9.03 GB": decimal units, as the summary's bytes are counted. */
static const char *bytes_text(double b, char *buf, size_t size)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    size_t u = 0;
    while (fabs(b) >= 1000 && u + 1 < sizeof units / sizeof units[0]) {
        b /= 1000;
        u++;
    }
    if (isnan(b))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, u ? "%.3g %s" : "%.0f %s", b, units[u]);
    return buf;
}

static void show_head(const results_run_view_t *v, const results_run_detail_t *d)
{
    char wall[32];
    printf("run %lld: ", (long long)v->id);
    results_put_text(v->name, stdout);
    printf("\n  " LABEL, "strategy");
    results_put_text(v->strategy, stdout);
    printf("\n  " LABEL, "status");
    results_put_text(v->status, stdout);
    printf("\n");
    if (v->sweep) {
        printf("  " LABEL, "sweep");
        results_put_text(v->sweep, stdout);
        printf(" (index %ld)\n", v->sweep_index);
    }
    printf("  " LABEL "%lld\n", "seed", (long long)d->seed);
    printf("  " LABEL "%s\n", "started", d->started ? d->started : "-");
    results_duration_text(d->wall_s, wall, sizeof wall);
    if (d->ended)
        printf("  " LABEL "%s (wall time %s)\n", "ended", d->ended, wall);
    else
        printf("  " LABEL "-\n", "ended");
    printf("  " LABEL "dtsim %s, SimGrid %s, pid %ld on %s\n", "written by",
           d->dtsim_version ? d->dtsim_version : "?", d->simgrid_version ? d->simgrid_version : "?",
           d->pid, d->host ? d->host : "?");
}

/* The energy row's figures; nothing for a run without one (a file before schema version 6). */
static void show_energy(const results_energy_view_t *en)
{
    if (isnan(en->link_joules))
        return;
    char hosts[32] = "-";
    if (!isnan(en->host_joules))
        snprintf(hosts, sizeof hosts, "%.4g kJ", en->host_joules / 1e3);
    printf("  " LABEL "hosts %s, links %.4g kJ", "energy", hosts, en->link_joules / 1e3);
    if (!isnan(en->joules_per_sample))
        printf(", %.4g J per sample", en->joules_per_sample);
    printf("\n");
    if (isnan(en->dollars))
        return;
    printf("  " LABEL "$%.4g, $%.4g per sample", "cost", en->dollars, en->dollars_per_sample);
    if (!isnan(en->dollars_to_target))
        printf(", $%.4g to target", en->dollars_to_target);
    printf("\n");
}

static void show_summary(const results_run_view_t *v, const results_run_detail_t *d,
                         const results_energy_view_t *en, const double *parts, int has_parts,
                         int rounds)
{
    if (!v->has_summary) {
        printf("\n" LABEL "none (the run did not end)\n", "summary");
        return;
    }
    char b[32];
    printf("\nsummary\n");
    printf("  " LABEL "%.4f, loss %.4f\n", "final accuracy", v->final_accuracy, d->final_loss);
    printf("  " LABEL "%.6g s\n", "simulated time", v->sim_time);
    if (!isnan(v->time_to_target))
        printf("  " LABEL "%.6g s to accuracy %g\n", "time to target", v->time_to_target,
               v->target_accuracy);
    else if (!isnan(v->target_accuracy))
        printf("  " LABEL "never reached accuracy %g\n", "time to target", v->target_accuracy);
    printf("  " LABEL "%.6g (%s)\n", "bytes sent", v->total_bytes,
           bytes_text(v->total_bytes, b, sizeof b));
    printf("  " LABEL "%ld\n", "steps", v->steps);
    printf("  " LABEL "compute %.1f%%, communication %.1f%%, idle %.1f%%\n", "time shares",
           100 * v->compute_share, 100 * v->comm_share, 100 * v->idle_share);
    if (has_parts) {
        char line[512];
        results_breakdown_line(parts, rounds ? "round" : "step", line, sizeof line);
        printf("  " LABEL "%s\n", "breakdown", line);
    } else {
        printf("  " LABEL "no breakdown stored (a run stored before schema version 8)\n",
               "breakdown");
    }
    if (!isnan(v->throughput))
        printf("  " LABEL "%.4g samples per simulated second\n", "throughput", v->throughput);
    if (!isnan(v->scaling_efficiency))
        printf("  " LABEL "%.4f (against the sweep's single run)\n", "scaling eff.",
               v->scaling_efficiency);
    show_energy(en);
}

static void show_rows(const results_evals_t *e, const results_run_detail_t *d,
                      const results_memory_t *mem, int has_mem, const results_clients_t *c)
{
    char b[4][32];
    printf("\n");
    if (e->n) {
        size_t l = e->n - 1;
        printf(LABEL "%zu, the last at %.6g s, step %ld: accuracy %.4f, loss %.4f\n", "evaluations",
               e->n, e->sim_time[l], e->step[l], e->test_acc[l], e->test_loss[l]);
    } else {
        printf(LABEL "none\n", "evaluations");
    }
    for (size_t i = 0; i < d->n_roles; i++) {
        const results_role_total_t *r = &d->roles[i];
        printf(LABEL "%ld %s host%s: %ld steps; compute %.4g s, communication %.4g s, idle %.4g s "
                     "(summed); %s sent\n",
               i ? "" : "hosts", r->hosts, r->role, r->hosts == 1 ? "" : "s", r->steps,
               r->compute_s, r->comm_s, r->idle_s, bytes_text(r->bytes_sent, b[0], sizeof b[0]));
    }
    if (has_mem)
        printf(LABEL "most loaded host: parameters %s, gradients %s, optimizer %s, "
                     "activations %s\n",
               "memory", bytes_text(mem->params, b[0], sizeof b[0]),
               bytes_text(mem->grads, b[1], sizeof b[1]),
               bytes_text(mem->optimizer, b[2], sizeof b[2]),
               bytes_text(mem->activations, b[3], sizeof b[3]));
    else
        printf(LABEL "not recorded\n", "memory");
    long faults = 0;
    for (size_t i = 0; i < d->n_fault_kinds; i++)
        faults += d->fault_kinds[i].n;
    printf(LABEL "%ld", "faults", faults);
    for (size_t i = 0; i < d->n_fault_kinds; i++)
        printf("%s%s %ld", i ? ", " : ": ", d->fault_kinds[i].kind, d->fault_kinds[i].n);
    printf("%s\n", faults ? "" : " (none)");
    if (d->links)
        printf(LABEL "%ld carried bytes; the busiest, %s, %s\n", "links", d->links,
               d->busiest_link ? d->busiest_link : "?",
               bytes_text(d->busiest_bytes, b[0], sizeof b[0]));
    if (c->clients) {
        printf(LABEL "%zu (%zu Byzantine, %zu never aggregated), %.3g rounds each on average, "
                     "at most %ld\n",
               "clients", c->clients, c->byzantine, c->never_aggregated, c->mean_rounds,
               c->max_rounds);
        if (c->n)
            printf(LABEL "%zu honest clients: mean %.4f, 10th percentile %.4f, 90th %.4f, "
                         "spread %.4f\n",
                   "held-out acc.", c->n, c->mean_acc, c->p10_acc, c->p90_acc, c->spread);
    }
    if (d->privacy_round) {
        if (isnan(d->epsilon))
            printf(LABEL "epsilon infinite (no noise) after %ld rounds\n", "privacy",
                   d->privacy_round);
        else
            printf(LABEL "epsilon %.4g at delta %g after %ld rounds\n", "privacy", d->epsilon,
                   d->delta, d->privacy_round);
    }
    if (d->stale_gradients)
        printf(LABEL "mean %.3g, at most %ld, over %ld gradients\n", "staleness", d->mean_staleness,
               d->max_staleness, d->stale_gradients);
}

/* This dtsim's defaults, "section.key" and text as a run stores them. */
typedef struct key_defaults {
    size_t n;
    char *key[SCENARIO_MAX_KEYS], *text[SCENARIO_MAX_KEYS];
} key_defaults_t;

static void default_add(void *ctx, const char *key, const char *text, double number)
{
    (void)number;
    key_defaults_t *k = ctx;
    DT_ASSERT(k->n < SCENARIO_MAX_KEYS);
    k->key[k->n] = strdup(key);
    k->text[k->n++] = strdup(text);
    DT_CHECK(k->key[k->n - 1] && k->text[k->n - 1], "out of memory");
}

/* 1 when key has text as this dtsim's default (a key this dtsim lacks has none). */
static int is_default(const key_defaults_t *k, const char *key, const char *text)
{
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->key[i], key))
            return !strcmp(k->text[i], text);
    return 0;
}

/* Every parameter, those the run set apart from those at this dtsim's defaults: what makes a
 * run what it is reads first, and each still greps as "key  value". */
static void show_params(const results_run_detail_t *d)
{
    static scenario_t sc; /* large: not on the stack */
    key_defaults_t k = {0};
    scenario_defaults(&sc);
    scenario_foreach_key(&sc, default_add, &k);
    int w = 0;
    size_t set = 0;
    for (size_t i = 0; i < d->n_params; i++) {
        int n = (int)strlen(d->param_key[i]);
        w = n > w ? n : w;
        set += !is_default(&k, d->param_key[i], d->param_value[i]);
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t count = pass ? d->n_params - set : set;
        if (!count)
            continue;
        printf(pass ? "\nparameters at their defaults (%zu)\n"
                    : "\nparameters set (%zu of %zu; dtsim show ID --config prints the scenario)\n",
               count, d->n_params);
        for (size_t i = 0; i < d->n_params; i++)
            if (is_default(&k, d->param_key[i], d->param_value[i]) == pass)
                printf("  %-*s  %s\n", w, d->param_key[i], d->param_value[i]);
    }
    for (size_t i = 0; i < k.n; i++) {
        free(k.key[i]);
        free(k.text[i]);
    }
}

/* Prints run id of db (its configuration alone when config is set); the exit code. */
static int show(const char *db, int64_t id, int config)
{
    dt_err_t err;
    results_query_t *q = NULL;
    results_run_view_t v = {0};
    results_run_detail_t d = {0};
    results_evals_t e = {0};
    results_clients_t c = {0};
    results_memory_t mem;
    results_energy_view_t en;
    double parts[RESULTS_PART_COUNT];
    int has_mem = 0, has_parts = 0;
    dt_status st = results_query_open_current(&q, db, &err);
    if (!st)
        st = results_query_run(q, id, &v, &err);
    if (!st)
        st = results_query_detail(q, id, &d, &err);
    if (!st && !config) {
        if (!(st = results_query_evals(q, id, &e, &err)) &&
            !(st = results_query_memory(q, id, &mem, &has_mem, &err)) &&
            !(st = results_query_energy(q, id, &en, &err)) &&
            !(st = results_query_breakdown(q, id, parts, &has_parts, &err)))
            st = results_query_clients(q, id, &c, &err);
    }
    if (!st && config) {
        fputs(d.config ? d.config : "", stdout);
    } else if (!st) {
        show_head(&v, &d);
        show_summary(&v, &d, &en, parts, has_parts, c.clients > 0);
        show_rows(&e, &d, &mem, has_mem, &c);
        show_params(&d);
    }
    results_clients_free(&c);
    results_evals_free(&e);
    results_run_detail_free(&d);
    results_run_view_free(&v);
    results_query_close(q);
    if (st) {
        fprintf(stderr, "dtsim show: %s\n", err.msg);
        return st == DT_ERR_INPUT ? CLI_EXIT_USAGE : CLI_EXIT_RUN;
    }
    return CLI_EXIT_OK;
}

enum { OPT_DB = 1, OPT_CONFIG };

static const cli_option show_options[] = {
    {.id = OPT_DB,
     .name = "db",
     .kind = CLI_VALUE_PATH,
     .metavar = "PATH",
     .help = "results database [" DEFAULT_DB "]"},
    {.id = OPT_CONFIG,
     .name = "config",
     .help = "print only the stored configuration, a scenario file that dtsim run replays"},
    {0},
};

const cli_spec cli_show_spec = {
    .usage = "RUN [--db PATH] [--config]",
    .about = "Prints run RUN (an id from dtsim runs) of a results database [" DEFAULT_DB "]\n"
             "whole: its status, sweep, seed, times and versions, its summary with the\n"
             "breakdown of a step, its evaluations, hosts, memory, faults, links,\n"
             "clients, privacy and staleness rows, and every resolved parameter.\n",
    .options = show_options,
};

int cli_show(int argc, char **argv)
{
    const char *db = DEFAULT_DB;
    int config = 0, opt;
    cli_parser p;
    cli_parse_init(&p, "show", &cli_show_spec, argc, argv);
    while ((opt = cli_parse_next(&p)) > 0) {
        if (opt == OPT_DB)
            db = p.value;
        else
            config = 1;
    }
    if (opt < 0)
        return p.status;
    if (!p.n_args)
        return cli_usage_error("show", "missing RUN, a run id from dtsim runs");
    if (p.n_args > 1)
        return cli_usage_error("show", "unexpected argument \"%s\"", p.args[1]);
    long id;
    if (cli_parse_long(p.args[0], 1, LONG_MAX, &id))
        return cli_usage_error("show", "RUN \"%s\" is not a run id (a number such as 3)",
                               p.args[0]);
    return show(db, id, config);
}
