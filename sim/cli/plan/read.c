/* A stored plan read back from the database: its sweep (plan_find), its plan.* params, and
 * each finished run's layout and figures (plan_rank_read). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "plan_impl.h"

/* A prepared statement on query's connection, or the error naming the database. */
static dt_status plan_prepare(results_query_t *query, const char *sql, sqlite3_stmt **st,
                              dt_err_t *err)
{
    sqlite3 *handle = results_query_sqlite(query);
    if (sqlite3_prepare_v2(handle, sql, -1, st, NULL) == SQLITE_OK)
        return DT_OK;
    return dt_err_input(err, "%s: cannot read plans: %s", results_query_path(query),
                        sqlite3_errmsg(handle));
}

/* The sweep id of the newest plan (options NULL) or of the newest plan of those options,
 * into sweep (size); "" when there is none. */
dt_status plan_find(results_query_t *query, const char *options, char *sweep, size_t size,
                    dt_err_t *err)
{
    sqlite3_stmt *st;
    sweep[0] = '\0';
    if (plan_prepare(query,
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
static dt_status plan_info_read(results_query_t *query, const char *sweep, plan_info_t *in,
                                dt_err_t *err)
{
    sqlite3_stmt *st;
    if (plan_prepare(query,
                     "SELECT key, value, number FROM params WHERE key LIKE 'plan.%' AND run = "
                     "(SELECT max(r.id) FROM runs r JOIN params p ON p.run = r.id AND p.key = "
                     "'plan.options' WHERE r.sweep = ?1)",
                     &st, err))
        return DT_ERR_INPUT;
    sqlite3_bind_text(st, 1, sweep, -1, SQLITE_STATIC);
    memset(in, 0, sizeof *in);
    /* ckpt_bytes and margin: not in older plans */
    in->peak_flops = in->capacity = in->ckpt_bytes = in->margin = NAN;
    int found = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0) + 5;
        const char *text = (const char *)sqlite3_column_text(st, 1);
        double number =
            sqlite3_column_type(st, 2) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 2);
        found = 1;
        if (!strcmp(key, "options"))
            snprintf(in->options, sizeof in->options, "%s", text ? text : "");
        else if (!strcmp(key, "title"))
            snprintf(in->title, sizeof in->title, "%s", text ? text : "");
        else if (!strcmp(key, "precision"))
            snprintf(in->precision, sizeof in->precision, "%s", text ? text : "");
        else if (!strcmp(key, "flops_per_sample"))
            in->flops_per_sample = number;
        else if (!strcmp(key, "tokens_per_sample"))
            in->tokens_per_sample = number;
        else if (!strcmp(key, "global_batch"))
            in->global_batch = number;
        else if (!strcmp(key, "devices"))
            in->devices = number;
        else if (!strcmp(key, "peak_flops"))
            in->peak_flops = number;
        else if (!strcmp(key, "memory"))
            in->capacity = number;
        else if (!strcmp(key, "ckpt_bytes"))
            in->ckpt_bytes = number;
        else if (!strcmp(key, "margin"))
            in->margin = number;
        else if (!strcmp(key, "runs"))
            in->runs = isnan(number) ? 0 : (long)number;
        else if (!strcmp(key, "pruned"))
            in->pruned = isnan(number) ? 0 : (long)number;
        else if (!strcmp(key, "capped"))
            in->capped = isnan(number) ? 0 : (long)number;
        else if (!strcmp(key, "best_bound"))
            in->best_bound = number;
    }
    sqlite3_finalize(st);
    if (!found || in->runs < 1 || in->runs > PLAN_MAX_LAYOUTS || !(in->global_batch > 0) ||
        !(in->devices > 0))
        return dt_err_input(err, "%s: sweep %s is not a plan's (its runs have no plan.* params)",
                            results_query_path(query), sweep);
    return DT_OK;
}

/* A run's layout back from its scenario keys (the params plan_layout_load set). */
static dt_status plan_layout_read(results_query_t *query, sqlite3_stmt *st, plan_layout_t *layout,
                                  dt_err_t *err)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, layout->run);
    int shard = 0, stage = 0, interleaved = 0, rs = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        const char *text = (const char *)sqlite3_column_text(st, 1);
        long value = (long)sqlite3_column_double(st, 2);
        if (!strcmp(key, "strategy.tensor"))
            layout->t = value;
        else if (!strcmp(key, "strategy.stages"))
            layout->p = value;
        else if (!strcmp(key, "strategy.data_parallel"))
            layout->d = value;
        else if (!strcmp(key, "strategy.micro_batches"))
            layout->m = value;
        else if (!strcmp(key, "model.batch"))
            layout->mbs = value; /* the replica's batch: divided by m below */
        else if (!strcmp(key, "strategy.bucket_mb"))
            layout->bucket_mb = (int)value;
        else if (!strcmp(key, "strategy.shard_optimizer"))
            shard = text && !strcmp(text, "yes");
        else if (!strcmp(key, "strategy.zero_stage"))
            stage = (int)value;
        else if (!strcmp(key, "strategy.zero_grad_overlap"))
            rs = text && !strcmp(text, "no");
        else if (!strcmp(key, "strategy.sequence_parallel"))
            layout->sp = text && !strcmp(text, "yes");
        else if (!strcmp(key, "strategy.virtual_stages"))
            layout->v = value;
        else if (!strcmp(key, "strategy.expert"))
            layout->e = value;
        else if (!strcmp(key, "strategy.context"))
            layout->cp = value;
        else if (!strcmp(key, "strategy.pipeline_schedule"))
            interleaved = text && !strcmp(text, "interleaved");
        else if (!strcmp(key, "model.recompute"))
            layout->rc = text && !strcmp(text, "full")        ? SIM_RECOMPUTE_FULL
                         : text && !strcmp(text, "selective") ? SIM_RECOMPUTE_SELECTIVE
                                                              : SIM_RECOMPUTE_NONE;
    }
    if (layout->m < 1 || layout->t < 1 || layout->p < 1 || layout->d < 1)
        return dt_err_input(err, "%s: run %lld has no plan layout", results_query_path(query),
                            (long long)layout->run);
    layout->mbs /= layout->m;
    layout->zero = shard ? stage : 0;
    layout->rs = layout->zero >= 2 && rs;
    if (!interleaved || layout->v < 1)
        layout->v = 1;
    if (layout->cp < 1)
        layout->cp = 1;
    return DT_OK;
}

/* A finished run's row (view: the run; st: plan_layout_read's statement): its layout, step
 * time, throughput, memory, energy and cost. */
static dt_status rank_row_read(results_query_t *query, sqlite3_stmt *st,
                               const results_run_view_t *view, plan_layout_t *row, dt_err_t *err)
{
    memset(row, 0, sizeof *row);
    row->run = view->id;
    row->index = view->sweep_index;
    row->step_s = view->steps > 0 ? view->sim_time / (double)view->steps : NAN;
    row->samples_s = view->throughput;
    results_memory_t mem;
    results_energy_view_t en;
    int found = 0;
    dt_status status = plan_layout_read(query, st, row, err);
    if (status == DT_OK)
        status = results_query_memory(query, view->id, &mem, &found, err);
    row->mem_bytes = found ? mem.params + mem.grads + mem.optimizer +
                                 (isnan(mem.activations) ? 0 : mem.activations)
                           : NAN;
    if (status == DT_OK)
        status = results_query_breakdown(query, view->id, row->parts, &row->has_parts, err);
    if (status == DT_OK)
        status = results_query_energy(query, view->id, &en, err);
    if (status == DT_OK) {
        double link = isnan(en.link_joules) ? 0 : en.link_joules;
        row->joules = view->steps > 0 ? (en.host_joules + link) / (double)view->steps : NAN;
        row->dollars_per_sample = en.dollars_per_sample;
    }
    return status;
}

/* The finished runs of the plan's sweep into *rows (in->runs of them, by sweep index, run 0
 * where none finished; the newest finished run of an index counts), with their step time,
 * throughput, memory, energy and cost; how many finished into *finished, how many layouts
 * have only runs that ended unfinished (interrupted, failed) into in->unfinished. read_info:
 * in from the runs' plan.* params first (--show). Opening the database marks the runs of
 * vanished writers interrupted. */
dt_status plan_rank_read(const char *db, const char *sweep, int read_info, plan_info_t *in,
                         plan_layout_t **rows, long *finished, dt_err_t *err)
{
    results_query_t *query = NULL;
    results_runs_t runs = {0};
    sqlite3_stmt *st = NULL;
    *rows = NULL;
    *finished = 0;
    dt_status status = results_query_open_current(&query, db, err);
    if (status == DT_OK && read_info)
        status = plan_info_read(query, sweep, in, err);
    if (status == DT_OK)
        status = results_query_sweep(query, sweep, &runs, err);
    if (status == DT_OK)
        status = plan_prepare(query,
                              "SELECT key, value, number FROM params WHERE run = ?1 AND key IN "
                              "('strategy.tensor', 'strategy.stages', 'strategy.data_parallel', "
                              "'strategy.micro_batches', 'model.batch', 'strategy.bucket_mb', "
                              "'strategy.shard_optimizer', 'strategy.zero_stage', "
                              "'model.recompute', 'strategy.sequence_parallel', "
                              "'strategy.pipeline_schedule', 'strategy.virtual_stages', "
                              "'strategy.expert', 'strategy.context', "
                              "'strategy.zero_grad_overlap')",
                              &st, err);
    plan_layout_t *ranked = status == DT_OK ? dt_calloc((size_t)in->runs, sizeof *ranked) : NULL;
    char *ended = status == DT_OK ? dt_calloc((size_t)in->runs + 1, 1) : NULL; /* unfinished */
    for (size_t i = 0; status == DT_OK && i < runs.n; i++) {
        const results_run_view_t *view = &runs.v[i];
        if (view->sweep_index < 0 || view->sweep_index >= in->runs)
            continue;
        if (strcmp(view->status, "finished")) {
            ended[view->sweep_index] |= strcmp(view->status, "running") != 0;
            continue;
        }
        plan_layout_t *row = &ranked[view->sweep_index];
        *finished += !row->run;
        status = rank_row_read(query, st, view, row, err);
    }
    in->unfinished = 0; /* what the PARTIAL line says besides what finished */
    for (long i = 0; status == DT_OK && i < in->runs; i++)
        in->unfinished += ended[i] && !ranked[i].run;
    free(ended);
    sqlite3_finalize(st);
    results_runs_free(&runs);
    results_query_close(query);
    if (status != DT_OK) {
        free(ranked);
        *finished = 0;
        return status;
    }
    *rows = ranked;
    return DT_OK;
}
