/* A stored plan read back from the database: its sweep (plan_find), its plan.* params, and
 * each finished run's layout and figures (plan_rank_read). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "plan_impl.h"

/* A prepared statement on q's connection, or the error naming the database. */
static dt_status plan_prepare(results_query_t *q, const char *sql, sqlite3_stmt **st,
                              dt_err_t *err)
{
    sqlite3 *h = results_query_sqlite(q);
    if (sqlite3_prepare_v2(h, sql, -1, st, NULL) == SQLITE_OK)
        return DT_OK;
    return dt_err_input(err, "%s: cannot read plans: %s", results_query_path(q),
                        sqlite3_errmsg(h));
}

/* The sweep id of the newest plan (options NULL) or of the newest plan of those options,
 * into sweep (size); "" when there is none. */
dt_status plan_find(results_query_t *q, const char *options, char *sweep, size_t size,
                           dt_err_t *err)
{
    sqlite3_stmt *st;
    sweep[0] = '\0';
    if (plan_prepare(q,
                     "SELECT r.sweep FROM runs r JOIN params p ON p.run = r.id AND p.key = "
                     "'plan.options' WHERE r.sweep IS NOT NULL AND (?1 IS NULL OR p.value = ?1) "
                     "ORDER BY r.id DESC LIMIT 1",
                     &st, err))
        return DT_ERR_INPUT;
    sqlite3_bind_text(st, 1, options, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(sweep, size, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return DT_OK;
}

/* The plan.* params of sweep's newest run that has them into in. */
static dt_status plan_info_read(results_query_t *q, const char *sweep, plan_info_t *in,
                                dt_err_t *err)
{
    sqlite3_stmt *st;
    if (plan_prepare(q,
                     "SELECT key, value, number FROM params WHERE key LIKE 'plan.%' AND run = "
                     "(SELECT max(r.id) FROM runs r JOIN params p ON p.run = r.id AND p.key = "
                     "'plan.options' WHERE r.sweep = ?1)",
                     &st, err))
        return DT_ERR_INPUT;
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
    memset(in, 0, sizeof *in);
    in->peak_flops = in->capacity = in->ckpt_bytes = NAN; /* ckpt_bytes: not in older plans */
    int found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0) + 5;
        const char *text = (const char *)sqlite3_column_text(st, 1);
        double v = sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 2);
        found = 1;
        if (!strcmp(key, "options"))
            snprintf(in->options, sizeof in->options, "%s", text ? text : "");
        else if (!strcmp(key, "title"))
            snprintf(in->title, sizeof in->title, "%s", text ? text : "");
        else if (!strcmp(key, "precision"))
            snprintf(in->precision, sizeof in->precision, "%s", text ? text : "");
        else if (!strcmp(key, "flops_per_sample"))
            in->flops_per_sample = v;
        else if (!strcmp(key, "tokens_per_sample"))
            in->tokens_per_sample = v;
        else if (!strcmp(key, "global_batch"))
            in->global_batch = v;
        else if (!strcmp(key, "devices"))
            in->devices = v;
        else if (!strcmp(key, "peak_flops"))
            in->peak_flops = v;
        else if (!strcmp(key, "memory"))
            in->capacity = v;
        else if (!strcmp(key, "ckpt_bytes"))
            in->ckpt_bytes = v;
        else if (!strcmp(key, "runs"))
            in->runs = isnan(v) ? 0 : (long)v;
        else if (!strcmp(key, "pruned"))
            in->pruned = isnan(v) ? 0 : (long)v;
        else if (!strcmp(key, "capped"))
            in->capped = isnan(v) ? 0 : (long)v;
        else if (!strcmp(key, "best_bound"))
            in->best_bound = v;
    }
    sqlite3_finalize(st);
    if (!found || in->runs < 1 || in->runs > PLAN_MAX_LAYOUTS || !(in->global_batch > 0) ||
        !(in->devices > 0))
        return dt_err_input(err, "%s: sweep %s is not a plan's (its runs have no plan.* params)",
                            results_query_path(q), sweep);
    return DT_OK;
}

/* A run's layout back from its scenario keys (the params plan_layout_load set). */
static dt_status plan_layout_read(results_query_t *q, sqlite3_stmt *st, plan_layout_t *x,
                                  dt_err_t *err)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, x->run);
    int shard = 0, stage = 0, interleaved = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        const char *text = (const char *)sqlite3_column_text(st, 1);
        long v = (long)sqlite3_column_double(st, 2);
        if (!strcmp(key, "strategy.tensor"))
            x->t = v;
        else if (!strcmp(key, "strategy.stages"))
            x->p = v;
        else if (!strcmp(key, "strategy.data_parallel"))
            x->d = v;
        else if (!strcmp(key, "strategy.micro_batches"))
            x->m = v;
        else if (!strcmp(key, "model.batch"))
            x->mbs = v; /* the replica's batch: divided by m below */
        else if (!strcmp(key, "strategy.bucket_mb"))
            x->bucket_mb = (int)v;
        else if (!strcmp(key, "strategy.shard_optimizer"))
            shard = text && !strcmp(text, "yes");
        else if (!strcmp(key, "strategy.zero_stage"))
            stage = (int)v;
        else if (!strcmp(key, "strategy.sequence_parallel"))
            x->sp = text && !strcmp(text, "yes");
        else if (!strcmp(key, "strategy.virtual_stages"))
            x->v = v;
        else if (!strcmp(key, "strategy.expert"))
            x->e = v;
        else if (!strcmp(key, "strategy.context"))
            x->cp = v;
        else if (!strcmp(key, "strategy.pipeline_schedule"))
            interleaved = text && !strcmp(text, "interleaved");
        else if (!strcmp(key, "model.recompute"))
            x->rc = text && !strcmp(text, "full")        ? SIM_RECOMPUTE_FULL
                    : text && !strcmp(text, "selective") ? SIM_RECOMPUTE_SELECTIVE
                                                         : SIM_RECOMPUTE_NONE;
    }
    if (x->m < 1 || x->t < 1 || x->p < 1 || x->d < 1)
        return dt_err_input(err, "%s: run %lld has no plan layout", results_query_path(q),
                            (long long)x->run);
    x->mbs /= x->m;
    x->zero = shard ? stage : 0;
    if (!interleaved || x->v < 1)
        x->v = 1;
    if (x->cp < 1)
        x->cp = 1;
    return DT_OK;
}

/* The finished runs of the plan's sweep into *rows (in->runs of them, by sweep index, run 0
 * where none finished; the newest finished run of an index counts), with their step time,
 * throughput, memory, energy and cost; how many finished into *finished. read_info: in from
 * the runs' plan.* params first (--show). Opening the database marks the runs of vanished
 * writers interrupted. */
dt_status plan_rank_read(const char *db, const char *sweep, int read_info,
                                plan_info_t *in, plan_layout_t **rows, long *finished,
                                dt_err_t *err)
{
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    sqlite3_stmt *st = NULL;
    *rows = NULL;
    *finished = 0;
    dt_status s = results_query_open_current(&q, db, err);
    if (s == DT_OK && read_info)
        s = plan_info_read(q, sweep, in, err);
    if (s == DT_OK)
        s = results_query_sweep(q, sweep, &runs, err);
    if (s == DT_OK)
        s = plan_prepare(q,
                         "SELECT key, value, number FROM params WHERE run = ?1 AND key IN "
                         "('strategy.tensor', 'strategy.stages', 'strategy.data_parallel', "
                         "'strategy.micro_batches', 'model.batch', 'strategy.bucket_mb', "
                         "'strategy.shard_optimizer', 'strategy.zero_stage', "
                         "'model.recompute', 'strategy.sequence_parallel', "
                         "'strategy.pipeline_schedule', 'strategy.virtual_stages', "
                         "'strategy.expert', 'strategy.context')",
                         &st, err);
    plan_layout_t *l = s == DT_OK ? dt_calloc((size_t)in->runs, sizeof *l) : NULL;
    for (size_t r = 0; s == DT_OK && r < runs.n; r++) {
        const results_run_view_t *v = &runs.v[r];
        if (v->sweep_index < 0 || v->sweep_index >= in->runs || strcmp(v->status, "finished"))
            continue;
        plan_layout_t *x = &l[v->sweep_index];
        *finished += !x->run;
        memset(x, 0, sizeof *x);
        x->run = v->id;
        x->index = v->sweep_index;
        x->step_s = v->steps > 0 ? v->sim_time / (double)v->steps : NAN;
        x->samples_s = v->throughput;
        results_memory_t mem;
        results_energy_view_t en;
        int found = 0;
        s = plan_layout_read(q, st, x, err);
        if (s == DT_OK)
            s = results_query_memory(q, v->id, &mem, &found, err);
        x->mem_bytes = found ? mem.params + mem.grads + mem.optimizer +
                                   (isnan(mem.activations) ? 0 : mem.activations)
                             : NAN;
        if (s == DT_OK)
            s = results_query_energy(q, v->id, &en, err);
        if (s == DT_OK) {
            double link = isnan(en.link_joules) ? 0 : en.link_joules;
            x->joules = v->steps > 0 ? (en.host_joules + link) / (double)v->steps : NAN;
            x->dollars_per_sample = en.dollars_per_sample;
        }
    }
    sqlite3_finalize(st);
    results_runs_free(&runs);
    results_query_close(q);
    if (s != DT_OK) {
        free(l);
        *finished = 0;
        return s;
    }
    *rows = l;
    return DT_OK;
}
