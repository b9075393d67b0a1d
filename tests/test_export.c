/* `dtsim export` against the database it reads: numbers in their shortest round-trip form
 * (each read back with strtod, each one digit shorter failing to), every table and view of
 * the schema written to its CSV file and read back field by field equal to SQLite's values,
 * the tidy table's columns (the swept keys, not the constant ones; every key with
 * --all-params) and values against params and run_summary, the Chrome trace parsed back with
 * cJSON (every timeline row a slice on its host's track at its exact time, every message a
 * flow whose ends lie inside slices of its sender and receiver, the messages' bytes equal to
 * the workers' totals), the errors (one line, exit code 2, no file touched), and the pandas
 * snippet of results/README.md run against an exported table and checked against SQLite.
 *
 * The runs come from the dtsim binary: a 2 x 2 sweep (allreduce and sync-ps at 1 and 10
 * Gb/s) whose timeline covers every step, and one run without a timeline. */
#define _POSIX_C_SOURCE 200809L
#include <cJSON.h>
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "csv.h"
#include "db.h"
#include "export.h"
#include "schema_units.h"

#include "cli_checks.h"

static char dir[64];
static char db[128], out_path[128], err_path[128];
static char sweep[128];

/* --- helpers --------------------------------------------------------------------------- */

static char *slurp(const char *path)
{
    return cli_slurp(path);
}

static void write_file(const char *path, const char *text)
{
    cli_write_file(path, text);
}

/* Runs argv[0] (found on PATH) in directory cwd (NULL: this one) with stdout and stderr to
 * out_path and err_path; returns its exit code. */
static int run_in(const char *cwd, const char *const *argv)
{
    return cli_wait(cli_start_in(cwd, out_path, err_path, argv));
}

/* dtsim with args (NULL-terminated); its exit code. */
static int dtsim(const char *const *args)
{
    return cli_run(DTSIM_BINARY, out_path, err_path, args);
}

/* stderr is one line holding needle. */
static void one_error_line(const char *needle)
{
    cli_one_error_line(err_path, needle, NULL);
}

static sqlite3 *db_open(void)
{
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    return h;
}

static sqlite3_stmt *prepare(sqlite3 *h, const char *sql)
{
    sqlite3_stmt *s;
    ck_assert_msg(sqlite3_prepare_v2(h, sql, -1, &s, NULL) == SQLITE_OK, "%s: %s", sql,
                  sqlite3_errmsg(h));
    return s;
}

static int64_t one_int(sqlite3 *h, const char *sql, int64_t a)
{
    sqlite3_stmt *s = prepare(h, sql);
    sqlite3_bind_int64(s, 1, a);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* A CSV file's records, each an array of fields (RFC 4180: quoted fields may hold commas,
 * quotes doubled, newlines). */
typedef struct csv {
    char ***rec;
    int *n_fields;
    int n;
} csv_t;

static csv_t csv_read(const char *path)
{
    char *text = slurp(path), *p = text;
    csv_t c = {0};
    while (*p) {
        c.rec = realloc(c.rec, sizeof *c.rec * (size_t)(c.n + 1));
        c.n_fields = realloc(c.n_fields, sizeof *c.n_fields * (size_t)(c.n + 1));
        char **fields = NULL;
        int nf = 0;
        for (;;) {
            size_t cap = 64, k = 0;
            char *f = malloc(cap);
            if (*p == '"') {
                for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                    if (*p == '"')
                        p++;
                    if (k + 2 > cap)
                        f = realloc(f, cap *= 2);
                    f[k++] = *p;
                }
                ck_assert_msg(*p == '"', "%s: unterminated quoted field", path);
                p++;
            } else {
                for (; *p && *p != ',' && *p != '\n'; p++) {
                    if (k + 2 > cap)
                        f = realloc(f, cap *= 2);
                    f[k++] = *p;
                }
            }
            f[k] = 0;
            fields = realloc(fields, sizeof *fields * (size_t)(nf + 1));
            fields[nf++] = f;
            if (*p == ',') {
                p++;
                continue;
            }
            ck_assert_msg(*p == '\n', "%s: record %d does not end in a newline", path, c.n);
            p++;
            break;
        }
        c.rec[c.n] = fields;
        c.n_fields[c.n++] = nf;
    }
    free(text);
    return c;
}

static void csv_free(csv_t *c)
{
    for (int r = 0; r < c->n; r++) {
        for (int f = 0; f < c->n_fields[r]; f++)
            free(c->rec[r][f]);
        free(c->rec[r]);
    }
    free(c->rec);
    free(c->n_fields);
}

/* The column of name in the header (record 0); -1 when absent. */
static int csv_col(const csv_t *c, const char *name)
{
    for (int f = 0; f < c->n_fields[0]; f++)
        if (!strcmp(c->rec[0][f], name))
            return f;
    return -1;
}

/* The field equals column col of s's row: NULL empty, numbers read back exactly, text as
 * is. */
static void assert_field(const char *field, sqlite3_stmt *s, int col, const char *where)
{
    switch (sqlite3_column_type(s, col)) {
    case SQLITE_NULL:
        ck_assert_msg(!*field, "%s: \"%s\" for NULL", where, field);
        break;
    case SQLITE_INTEGER:
        ck_assert_msg(*field && strtoll(field, NULL, 10) == sqlite3_column_int64(s, col),
                      "%s: \"%s\" for %lld", where, field, (long long)sqlite3_column_int64(s, col));
        break;
    case SQLITE_FLOAT:
        ck_assert_msg(*field && strtod(field, NULL) == sqlite3_column_double(s, col),
                      "%s: \"%s\" for %.17g", where, field, sqlite3_column_double(s, col));
        break;
    default:
        ck_assert_msg(!strcmp(field, (const char *)sqlite3_column_text(s, col)),
                      "%s: \"%s\" for \"%s\"", where, field, sqlite3_column_text(s, col));
    }
}

/* --- the database, made once for the suite --------------------------------------------- */

static const char *sweep_ini =
    "[run]\nsteps = 6\neval_every = 3\n[model]\narch = logreg\n"
    "batch = 16\nlr = 0.05\n[data]\nsource = synthetic\ntrain_samples = 512\n"
    "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n[cluster]\nworkers = 2\n"
    "[sweep]\nstrategy.kind = allreduce, sync-ps\ncluster.bandwidth = 1Gbps, 10Gbps\n";

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        rm_tree(p);
    }
    closedir(d);
    rmdir(path);
}

static void make_db(void)
{
    strcpy(dir, "/tmp/dtsim-export-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(db, sizeof db, "%s/t.db", dir);
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    char ini[128];
    snprintf(ini, sizeof ini, "%s/sweep.ini", dir);
    write_file(ini, sweep_ini);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, "-j", "2", NULL}), 0);
    snprintf(ini, sizeof ini, "%s/single.ini", dir);
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)(strstr(sweep_ini, "[sweep]") - sweep_ini), sweep_ini);
    strcat(text, "[strategy]\nkind = sync-ps\n");
    write_file(ini, text);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", ini, "--db", db, "--set", "run.timeline_steps=0", NULL}), 0);
    sqlite3 *h = db_open();
    sqlite3_stmt *s = prepare(h, "SELECT sweep FROM runs WHERE sweep IS NOT NULL LIMIT 1");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    snprintf(sweep, sizeof sweep, "%s", sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    ck_assert_int_eq(one_int(h, "SELECT count(*) FROM runs WHERE status = 'finished'", 0), 5);
    sqlite3_close(h);
}

static void remove_db(void)
{
    rm_tree(dir);
}

/* The id of the sweep's run of strategy kind at bandwidth (bytes/s). */
static int64_t sweep_run(sqlite3 *h, const char *kind, double bandwidth)
{
    sqlite3_stmt *s = prepare(h, "SELECT r.id FROM runs r JOIN params p ON p.run = r.id AND"
                                 " p.key = 'cluster.bandwidth' WHERE r.sweep IS NOT NULL AND"
                                 " r.strategy = ?1 AND p.number = ?2");
    sqlite3_bind_text(s, 1, kind, -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 2, bandwidth);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return id;
}

/* --- numbers --------------------------------------------------------------------------- */

/* Every printed double reads back as itself, and one digit fewer would not: the form is the
 * shortest %.Ng that round-trips. */
static void assert_shortest(double v)
{
    char buf[RESULTS_DOUBLE_LEN], shorter[400];
    results_csv_double(buf, v);
    ck_assert_msg(strtod(buf, NULL) == v, "%s does not read back as %.17g", buf, v);
    int digits = 0;
    for (const char *p = buf; *p && *p != 'e'; p++)
        digits += *p >= '0' && *p <= '9';
    /* leading zeros of 0.00123 are not significant: count from the first nonzero digit */
    for (const char *p = buf; *p == '-' || *p == '0' || *p == '.'; p++)
        digits -= *p == '0';
    if (digits > 1) {
        snprintf(shorter, sizeof shorter, "%.*g", digits - 1, v);
        ck_assert_msg(strtod(shorter, NULL) != v, "%s is shorter than %s and reads back", shorter,
                      buf);
    }
}

START_TEST(shortest_doubles_round_trip)
{
    char buf[RESULTS_DOUBLE_LEN];
    ck_assert_str_eq(results_csv_double(buf, 0.1), "0.1");
    ck_assert_str_eq(results_csv_double(buf, 1.25e9), "1.25e+09");
    ck_assert_str_eq(results_csv_double(buf, 3264), "3264");
    ck_assert_str_eq(results_csv_double(buf, 0.05f), "0.05000000074505806");
    snprintf(buf, sizeof buf, "%.17g", 0.1); /* what the export wrote before */
    ck_assert_str_eq(buf, "0.10000000000000001");
    const double fixed[] = {0.1,
                            0.2,
                            0.3,
                            1.0 / 3,
                            2.0 / 3,
                            3.141592653589793,
                            -2.718281828459045,
                            1e-300,
                            5e-324,
                            DBL_MIN,
                            DBL_MAX,
                            -0.0,
                            1e21,
                            1e22,
                            123456789012345678.0,
                            9007199254740993.0,
                            0.000123,
                            100,
                            1e100};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        assert_shortest(fixed[i]);
    /* random finite bit patterns */
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (isfinite(v))
            assert_shortest(v);
    }
}
END_TEST

/* --- CSV files ------------------------------------------------------------------------- */

/* Every column with a unit, as its CSV header must name it: written out here, not read from
 * schema.sql, so that a unit lost from the schema, or one given to the wrong column, fails. */
static const struct column_unit {
    const char *table, *column, *unit;
} column_units[] = {
    {"evals", "sim_time", "s"},
    {"evals", "bytes", "B"},
    {"workers", "compute_s", "s"},
    {"workers", "comm_s", "s"},
    {"workers", "idle_s", "s"},
    {"workers", "bytes_sent", "B"},
    {"workers", "bytes_recv", "B"},
    {"workers", "weight", "hosts"},
    {"memory", "weight", "hosts"},
    {"memory", "params", "B"},
    {"memory", "grads", "B"},
    {"memory", "optimizer", "B"},
    {"memory", "activations", "B"},
    {"timeline", "start", "s"},
    {"timeline", "end", "s"},
    {"messages", "sent", "s"},
    {"messages", "start", "s"},
    {"messages", "done", "s"},
    {"messages", "bytes", "B"},
    {"links", "bytes", "B"},
    {"links", "weight", "links"},
    {"faults", "sim_time", "s"},
    {"summary", "sim_time", "s"},
    {"summary", "time_to_target", "s"},
    {"summary", "total_bytes", "B"},
    {"energy", "host_joules", "J"},
    {"energy", "link_joules", "J"},
    {"energy", "joules_per_step", "J"},
    {"energy", "joules_per_sample", "J"},
    {"energy", "dollars", "USD"},
    {"energy", "dollars_per_sample", "USD"},
    {"energy", "dollars_to_target", "USD"},
    {"breakdown", "seconds", "s"},
    {"run_summary", "bandwidth", "B/s"},
    {"run_summary", "sim_time", "s"},
    {"run_summary", "time_to_target", "s"},
    {"run_summary", "total_bytes", "B"},
    {"run_summary", "throughput", "samples/s"},
};
#define N_COLUMN_UNITS (sizeof column_units / sizeof column_units[0])

/* The header of column of table: "name (unit)" for a column of column_units, else its name.
 * Static: valid until the next call. */
static const char *header_of(const char *table, const char *column)
{
    static char h[128];
    snprintf(h, sizeof h, "%s", column);
    for (size_t k = 0; k < N_COLUMN_UNITS; k++)
        if (!strcmp(column_units[k].table, table) && !strcmp(column_units[k].column, column))
            snprintf(h, sizeof h, "%s (%s)", column, column_units[k].unit);
    return h;
}

/* The first line of the file at path, without its newline. */
static char *first_line(const char *path)
{
    char *text = slurp(path);
    text[strcspn(text, "\n")] = '\0';
    return text;
}

/* A column with a unit says it in its header, as the tidy table's "KEY (UNIT)" does: the
 * headers had been the bare names (sim_time, bytes, host_joules), the units only in
 * schema.sql's comments. schema.sql gives exactly the units above (each to a column that
 * exists: the headers of every table are checked in csv_every_table_read_back), --help says
 * so, and the evals, energy and tidy headers read so. */
START_TEST(csv_headers_name_their_units)
{
    ck_assert_uint_eq(results_schema_units_count(), N_COLUMN_UNITS);
    for (size_t k = 0; k < N_COLUMN_UNITS; k++) {
        char unit[32];
        ck_assert_msg(
            results_schema_unit(column_units[k].table, column_units[k].column, unit, sizeof unit) &&
                !strcmp(unit, column_units[k].unit),
            "%s.%s: \"%s\"", column_units[k].table, column_units[k].column, unit);
    }
    char unit[32] = "x";
    ck_assert(!results_schema_unit("evals", "test_acc", unit, sizeof unit) && !unit[0]);
    ck_assert(!results_schema_unit("runs", "sim_time", unit, sizeof unit));

    char out[160], file[200];
    snprintf(out, sizeof out, "%s/units", dir);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--csv", "--db", db, "--out", out, NULL}), 0);
    snprintf(file, sizeof file, "%s/evals.csv", out);
    char *h = first_line(file);
    ck_assert_str_eq(h, "run,sim_time (s),step,samples,bytes (B),test_loss,test_acc,perplexity");
    free(h);
    snprintf(file, sizeof file, "%s/energy.csv", out);
    h = first_line(file);
    ck_assert_str_eq(h, "run,hosts,host_joules (J),link_ports,link_joules (J),"
                        "joules_per_step (J),joules_per_sample (J),dollars (USD),"
                        "dollars_per_sample (USD),dollars_to_target (USD)");
    free(h);
    snprintf(file, sizeof file, "%s/tidy.csv", out);
    h = first_line(file);
    ck_assert_msg(strstr(h, ",sim_time (s),time_to_target (s),") &&
                      strstr(h, ",total_bytes (B),") && strstr(h, ",throughput (samples/s),") &&
                      strstr(h, ",cluster.bandwidth (B/s),"),
                  "%s", h);
    free(h);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--help", NULL}), 0);
    h = slurp(out_path);
    ck_assert_msg(strstr(h, "\"sim_time (s)\"") && strstr(h, "unit"), "%s", h);
    free(h);
}
END_TEST

/* Every table and view of the file gets NAME.csv, named in --help, whose records are the
 * table's rows field for field. */
START_TEST(csv_every_table_read_back)
{
    char out[160];
    snprintf(out, sizeof out, "%s/csv", dir);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--csv", "--db", db, "--out", out, NULL}), 0);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--help", NULL}), 0);
    char *help = slurp(out_path);
    ck_assert_ptr_nonnull(strstr(help, "tidy.csv"));
    sqlite3 *h = db_open();
    sqlite3_stmt *t = prepare(h, "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view')"
                                 " AND name NOT LIKE 'sqlite_%'");
    int tables = 0;
    while (sqlite3_step(t) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(t, 0);
        char file[256], sql[128];
        snprintf(file, sizeof file, "%s.csv", name);
        ck_assert_msg(strstr(help, file), "--help does not list %s", file);
        snprintf(file, sizeof file, "%s/%s.csv", out, name);
        csv_t c = csv_read(file);
        snprintf(sql, sizeof sql, "SELECT * FROM %s", name);
        sqlite3_stmt *s = prepare(h, sql);
        int cols = sqlite3_column_count(s);
        ck_assert_int_eq(c.n_fields[0], cols);
        for (int k = 0; k < cols; k++)
            ck_assert_str_eq(c.rec[0][k], header_of(name, sqlite3_column_name(s, k)));
        int r = 1;
        for (; sqlite3_step(s) == SQLITE_ROW; r++) {
            ck_assert_msg(r < c.n, "%s: fewer records than rows", file);
            ck_assert_int_eq(c.n_fields[r], cols);
            for (int k = 0; k < cols; k++) {
                char where[300];
                snprintf(where, sizeof where, "%s record %d column %s", file, r,
                         sqlite3_column_name(s, k));
                assert_field(c.rec[r][k], s, k, where);
            }
        }
        ck_assert_msg(r == c.n, "%s: %d records for %d rows", file, c.n - 1, r - 1);
        sqlite3_finalize(s);
        csv_free(&c);
        tables++;
    }
    sqlite3_finalize(t);
    ck_assert_int_eq(tables, (int)results_export_n_tables); /* and none left out */
    sqlite3_close(h);
    free(help);
}
END_TEST

/* The tidy table of the sweep: a row per run in sweep order, the swept bandwidth as the
 * scenario wrote it (1Gbps) with its value in bytes/s beside it, the swept kind as the
 * strategy column only, cluster.workers always, no constant key, no column twice (neither
 * strategy.kind nor run_summary's bandwidth and workers), run_summary's other columns equal
 * to the view's; --all-params adds every key, a plain number as written. */
START_TEST(tidy_table_of_a_sweep)
{
    char out[160];
    snprintf(out, sizeof out, "%s/tidy.csv", dir);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--tidy", "--sweep", sweep, "--db", db,
                                            "--out", out, NULL}),
                     0);
    csv_t c = csv_read(out);
    ck_assert_int_eq(c.n, 1 + 4);
    const char *first[] = {"run",
                           "name",
                           "strategy",
                           "status",
                           "sweep",
                           "sweep_index",
                           "cluster.bandwidth",
                           "cluster.bandwidth (B/s)",
                           "cluster.workers"};
    for (int k = 0; k < 9; k++)
        ck_assert_str_eq(c.rec[0][k], first[k]);
    for (int k = 0; k < c.n_fields[0]; k++)
        for (int j = 0; j < k; j++)
            ck_assert_str_ne(c.rec[0][j], c.rec[0][k]);
    const char *absent[] = {"model.arch", "run.name", "strategy.kind", "bandwidth", "workers"};
    for (size_t k = 0; k < sizeof absent / sizeof *absent; k++)
        ck_assert_msg(csv_col(&c, absent[k]) == -1, "a column %s", absent[k]);
    sqlite3 *h = db_open();
    sqlite3_stmt *view = prepare(h, "SELECT * FROM run_summary WHERE run = ?1");
    int metrics = 0;
    for (int r = 1; r < c.n; r++) {
        int64_t id = strtoll(c.rec[r][0], NULL, 10);
        ck_assert_int_eq(one_int(h, "SELECT sweep_index FROM runs WHERE id = ?1", id), r - 1);
        ck_assert_str_eq(c.rec[r][4], sweep);
        sqlite3_stmt *p = prepare(h, "SELECT value, number FROM params WHERE run = ?1 AND key ="
                                     " 'cluster.bandwidth'");
        sqlite3_bind_int64(p, 1, id);
        ck_assert_int_eq(sqlite3_step(p), SQLITE_ROW);
        /* as written in the [sweep] (1Gbps, 10Gbps), then bytes/s */
        ck_assert_str_eq(c.rec[r][6], (const char *)sqlite3_column_text(p, 0));
        ck_assert(!strcmp(c.rec[r][6], "1Gbps") || !strcmp(c.rec[r][6], "10Gbps"));
        ck_assert(strtod(c.rec[r][7], NULL) == (c.rec[r][6][1] == 'G' ? 1.25e8 : 1.25e9));
        assert_field(c.rec[r][7], p, 1, "cluster.bandwidth (B/s)");
        sqlite3_finalize(p);
        ck_assert_int_eq(strtol(c.rec[r][8], NULL, 10),
                         one_int(h,
                                 "SELECT number FROM params WHERE run = ?1 AND key ="
                                 " 'cluster.workers'",
                                 id));
        sqlite3_reset(view);
        sqlite3_bind_int64(view, 1, id);
        ck_assert_int_eq(sqlite3_step(view), SQLITE_ROW);
        metrics = 0;
        for (int k = 0; k < sqlite3_column_count(view); k++) {
            const char *name = sqlite3_column_name(view, k);
            int col = csv_col(&c, header_of("run_summary", name));
            if (!strcmp(name, "bandwidth") || !strcmp(name, "workers"))
                continue; /* cluster.bandwidth (B/s) and cluster.workers, checked above */
            ck_assert_msg(col >= 0, "no column %s", name);
            if (col < 6)
                continue; /* the identity, from runs */
            assert_field(c.rec[r][col], view, k, name);
            metrics++;
        }
    }
    ck_assert_int_ge(metrics, 12);
    sqlite3_finalize(view);
    csv_free(&c);

    ck_assert_int_eq(dtsim((const char *[]){"export", "--tidy", "--all-params", "--runs", "1",
                                            "--db", db, "--out", out, NULL}),
                     0);
    c = csv_read(out);
    ck_assert_int_eq(c.n, 2);
    int keys = 0;
    for (int k = 0; k < c.n_fields[0]; k++)
        keys += strchr(c.rec[0][k], '.') != NULL && !strstr(c.rec[0][k], " (");
    /* every key but run.name (the name column) and strategy.kind (the strategy column) */
    ck_assert_int_eq(keys, one_int(h,
                                   "SELECT count(*) FROM params WHERE run = 1 AND key NOT IN"
                                   " ('run.name', 'strategy.kind')",
                                   0));
    ck_assert_str_eq(c.rec[1][csv_col(&c, "cluster.latency")], "5us");
    ck_assert(strtod(c.rec[1][csv_col(&c, "cluster.latency (s)")], NULL) == 5e-6);
    ck_assert_str_eq(c.rec[1][csv_col(&c, "model.arch")], "logreg");
    ck_assert_str_eq(c.rec[1][csv_col(&c, "model.lr")], "0.05"); /* not 0.0500000007450581 */
    csv_free(&c);
    sqlite3_close(h);
}
END_TEST

/* --- the trace ------------------------------------------------------------------------- */

static double one_real(sqlite3 *h, const char *sql, int64_t a);

typedef struct slice {
    int pid, tid;
    double ts, dur;
    const char *name;
    int used;
    const char *thread; /* its track's name (message slices) */
} slice_t;

static const cJSON *member(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(v != NULL, "no \"%s\" in an event", key);
    return v;
}

/* The track (pid, tid) named host (its process) and "role rank" (its thread), from the
 * metadata events; 0 when there is none. */
static int track_of(const cJSON *events, const char *host, const char *role, int rank, int *pid,
                    int *tid)
{
    char thread[96];
    snprintf(thread, sizeof thread, "%s %d", role, rank);
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        if (strcmp(member(e, "ph")->valuestring, "M") ||
            strcmp(member(e, "name")->valuestring, "thread_name"))
            continue;
        if (strcmp(member(member(e, "args"), "name")->valuestring, thread))
            continue;
        int p = member(e, "pid")->valueint;
        const cJSON *f;
        cJSON_ArrayForEach(f, events)
        {
            if (!strcmp(member(f, "ph")->valuestring, "M") &&
                !strcmp(member(f, "name")->valuestring, "process_name") &&
                member(f, "pid")->valueint == p &&
                !strcmp(member(member(f, "args"), "name")->valuestring, host)) {
                *pid = p;
                *tid = member(e, "tid")->valueint;
                return 1;
            }
        }
    }
    return 0;
}

/* The name of thread tid of process pid ("worker 3 sends 2"), "" when there is none. */
static const char *thread_name(const cJSON *events, int pid, int tid)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        if (strcmp(member(e, "ph")->valuestring, "M"))
            break; /* the metadata comes first */
        if (!strcmp(member(e, "name")->valuestring, "thread_name") &&
            member(e, "pid")->valueint == pid && member(e, "tid")->valueint == tid)
            return member(member(e, "args"), "name")->valuestring;
    }
    return "";
}

/* Message slices by process, start, length. */
static int ms_cmp(const void *x, const void *y)
{
    const slice_t *a = x, *b = y;
    if (a->pid != b->pid)
        return a->pid - b->pid;
    if (a->ts != b->ts)
        return (a->ts > b->ts) - (a->ts < b->ts);
    return (a->dur > b->dur) - (a->dur < b->dur);
}

/* By track, then start. */
static int track_cmp(const void *x, const void *y)
{
    const slice_t *a = x, *b = y;
    if (a->pid != b->pid || a->tid != b->tid)
        return a->pid != b->pid ? a->pid - b->pid : a->tid - b->tid;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

/* The unused message slice named name ("send", "receive") of process pid on a track
 * named "ROLE RANK WHAT" or "ROLE RANK WHAT K" at exactly [ts, ts + dur) microseconds; marks
 * it used. NULL when there is none. */
static slice_t *message_slice(slice_t *ms, int n, int pid, const char *name, const char *role,
                              int rank, const char *what, double ts, double dur)
{
    char track[96];
    int len = snprintf(track, sizeof track, "%s %d %s", role, rank, what);
    int lo = 0, hi = n; /* ms is sorted by ms_cmp: the first at (pid, ts) */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ms[mid].pid < pid || (ms[mid].pid == pid && ms[mid].ts < ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    for (int i = lo; i < n && ms[i].pid == pid && ms[i].ts == ts; i++) {
        slice_t *s = &ms[i];
        if (s->used || strcmp(s->name, name) || s->dur != dur ||
            strncmp(s->thread, track, (size_t)len) || (s->thread[len] && s->thread[len] != ' '))
            continue;
        s->used = 1;
        return s;
    }
    return NULL;
}

/* A slice of track (pid, tid) holds t strictly inside. */
static int inside_slice(const slice_t *sl, int n, int pid, int tid, double t)
{
    for (int i = 0; i < n; i++)
        if (sl[i].pid == pid && sl[i].tid == tid && sl[i].ts < t && t < sl[i].ts + sl[i].dur)
            return 1;
    return 0;
}

/* Run id's trace: every timeline row is one slice on its host's track at its exact time; a
 * process per host; every message a flow from the sender's track to the receiver's, both
 * ends strictly inside a slice. */
static void check_trace(sqlite3 *h, int64_t id)
{
    char out[160], arg[32];
    snprintf(out, sizeof out, "%s/trace.json", dir);
    snprintf(arg, sizeof arg, "%lld", (long long)id);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", arg, "--db", db, "--out", out, NULL}), 0);
    char *text = slurp(out);
    cJSON *doc = cJSON_Parse(text);
    ck_assert_msg(doc != NULL, "not JSON near: %.60s", cJSON_GetErrorPtr());
    ck_assert_str_eq(member(doc, "displayTimeUnit")->valuestring, "ms");
    ck_assert_int_eq(member(member(doc, "otherData"), "run")->valueint, id);
    const cJSON *events = member(doc, "traceEvents"), *e;
    ck_assert(cJSON_IsArray(events));
    int n = 0, n_ms = 0, processes = 0;
    slice_t *sl = calloc((size_t)cJSON_GetArraySize(events), sizeof *sl);
    slice_t *ms = calloc((size_t)cJSON_GetArraySize(events), sizeof *ms);
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = member(e, "ph")->valuestring;
        if (!strcmp(ph, "M") && !strcmp(member(e, "name")->valuestring, "process_name"))
            processes++;
        if (strcmp(ph, "X"))
            continue;
        slice_t x = {member(e, "pid")->valueint,
                     member(e, "tid")->valueint,
                     member(e, "ts")->valuedouble,
                     member(e, "dur")->valuedouble,
                     member(e, "name")->valuestring,
                     0,
                     NULL};
        if (!strcmp(member(e, "cat")->valuestring, "message")) {
            x.thread = thread_name(events, x.pid, x.tid);
            ms[n_ms++] = x;
        } else {
            sl[n++] = x;
        }
    }
    /* slices of one track never overlap (viewers nest them) */
    qsort(ms, (size_t)n_ms, sizeof *ms, track_cmp);
    for (int i = 1; i < n_ms; i++)
        ck_assert_msg(ms[i].pid != ms[i - 1].pid || ms[i].tid != ms[i - 1].tid ||
                          ms[i].ts >= ms[i - 1].ts + ms[i - 1].dur,
                      "run %lld: message slices overlap on %s", (long long)id, ms[i].thread);
    qsort(ms, (size_t)n_ms, sizeof *ms, ms_cmp);
    /* each message's flow events, by id */
    int n_ev = cJSON_GetArraySize(events);
    const cJSON **flow_from = calloc((size_t)n_ev + 1, sizeof *flow_from),
                **flow_to = calloc((size_t)n_ev + 1, sizeof *flow_to);
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = member(e, "ph")->valuestring;
        if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
            int fid = member(e, "id")->valueint;
            ck_assert(fid >= 1 && fid <= n_ev);
            *(ph[0] == 's' ? &flow_from[fid] : &flow_to[fid]) = e;
        }
    }
    ck_assert_int_eq(processes, one_int(h,
                                        "SELECT count(DISTINCT host) FROM timeline WHERE "
                                        "run = ?1",
                                        id));
    sqlite3_stmt *s = prepare(h, "SELECT host, role, rank, state, start, end FROM timeline"
                                 " WHERE run = ?1");
    sqlite3_bind_int64(s, 1, id);
    int rows = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        int pid, tid;
        ck_assert(track_of(events, (const char *)sqlite3_column_text(s, 0),
                           (const char *)sqlite3_column_text(s, 1), sqlite3_column_int(s, 2), &pid,
                           &tid));
        double start = sqlite3_column_double(s, 4), end = sqlite3_column_double(s, 5);
        const char *state = (const char *)sqlite3_column_text(s, 3);
        int found = 0;
        for (int i = 0; i < n && !found; i++)
            if (!sl[i].used && sl[i].pid == pid && sl[i].tid == tid && sl[i].ts == start * 1e6 &&
                sl[i].dur == (end - start) * 1e6 && !strcmp(sl[i].name, state))
                found = sl[i].used = 1;
        ck_assert_msg(found, "run %lld: no slice for %s %s [%.17g, %.17g)", (long long)id,
                      sqlite3_column_text(s, 0), state, start, end);
        rows++;
    }
    sqlite3_finalize(s);
    ck_assert_int_eq(rows, n);
    ck_assert_int_gt(rows, 10);

    /* every message: a send slice on a sends track of its sender from when it was posted to
     * when it was received, a receive slice on a receives track of its receiver from when
     * its transfer began (when it was posted, for a transfer that had no time of its own) to
     * when it was received, both at exactly the database's times; a flow from the send's
     * start to the receive's end, a nanosecond inside each. Messages in order by send time. */
    s = prepare(h, "SELECT src_host, src_role, src_rank, dst_host, dst_role, dst_rank, sent,"
                   " start, done FROM messages WHERE run = ?1 ORDER BY sent, rowid");
    sqlite3_bind_int64(s, 1, id);
    int msgs = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        msgs++;
        int sp, st, dp, dt;
        ck_assert(track_of(events, (const char *)sqlite3_column_text(s, 0),
                           (const char *)sqlite3_column_text(s, 1), sqlite3_column_int(s, 2), &sp,
                           &st));
        ck_assert(track_of(events, (const char *)sqlite3_column_text(s, 3),
                           (const char *)sqlite3_column_text(s, 4), sqlite3_column_int(s, 5), &dp,
                           &dt));
        double sent = sqlite3_column_double(s, 6), start = sqlite3_column_double(s, 7),
               done = sqlite3_column_double(s, 8), from_t = start < done ? start : sent;
        slice_t *snd =
            message_slice(ms, n_ms, sp, "send", (const char *)sqlite3_column_text(s, 1),
                          sqlite3_column_int(s, 2), "sends", sent * 1e6, (done - sent) * 1e6);
        slice_t *rcv = message_slice(
            ms, n_ms, dp, "receive", (const char *)sqlite3_column_text(s, 4),
            sqlite3_column_int(s, 5), "receives", from_t * 1e6, (done - from_t) * 1e6);
        ck_assert_msg(snd && rcv, "run %lld message %d [%.17g, %.17g, %.17g]: %s%s", (long long)id,
                      msgs, sent, start, done, snd ? "" : "no send slice ",
                      rcv ? "" : "no receive slice");
        const cJSON *from = msgs <= n_ev ? flow_from[msgs] : NULL,
                    *to = msgs <= n_ev ? flow_to[msgs] : NULL;
        ck_assert(from && to);
        ck_assert_int_eq(member(from, "pid")->valueint, snd->pid);
        ck_assert_int_eq(member(from, "tid")->valueint, snd->tid);
        ck_assert_int_eq(member(to, "pid")->valueint, rcv->pid);
        ck_assert_int_eq(member(to, "tid")->valueint, rcv->tid);
        ck_assert_str_eq(member(to, "bp")->valuestring, "e");
        double in_s = snd->dur > 2e-3 ? 1e-3 : snd->dur / 2,
               in_r = rcv->dur > 2e-3 ? 1e-3 : rcv->dur / 2;
        ck_assert(member(from, "ts")->valuedouble == snd->ts + in_s);
        ck_assert(member(to, "ts")->valuedouble == rcv->ts + rcv->dur - in_r);
        if (snd->dur > 0)
            ck_assert(inside_slice(snd, 1, snd->pid, snd->tid, member(from, "ts")->valuedouble));
        if (rcv->dur > 0)
            ck_assert(inside_slice(rcv, 1, rcv->pid, rcv->tid, member(to, "ts")->valuedouble));
    }
    sqlite3_finalize(s);
    ck_assert_int_gt(msgs, 0);
    ck_assert_int_eq(n_ms, 2 * msgs);
    /* its extent: the timeline's, said in otherData.covers against the run's simulated time */
    double extent = 0, last = 0;
    for (int i = 0; i < n; i++)
        extent = fmax(extent, sl[i].ts + sl[i].dur);
    s = prepare(h, "SELECT max(t.end), s.sim_time FROM timeline t JOIN summary s ON"
                   " s.run = t.run WHERE t.run = ?1");
    sqlite3_bind_int64(s, 1, id);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    last = sqlite3_column_double(s, 0);
    double sim_time = sqlite3_column_double(s, 1);
    sqlite3_finalize(s);
    ck_assert_msg(fabs(extent - last * 1e6) <= 1e-9 * extent, "extent %.17g us, rows to %.17g s",
                  extent, last);
    const char *covers = member(member(doc, "otherData"), "covers")->valuestring;
    if (last >= sim_time * (1 - 1e-6))
        ck_assert_msg(!strncmp(covers, "the whole run: 0 to ", 20), "%s", covers);
    else
        ck_assert_msg(strstr(covers, " s of the run's ") || strstr(covers, "sampled"), "%s",
                      covers);
    free(ms);
    free(flow_from);
    free(flow_to);
    int flows = 0;
    cJSON_ArrayForEach(e, events) flows += !strcmp(member(e, "ph")->valuestring, "s");
    ck_assert_int_eq(flows, msgs);
    free(sl);
    cJSON_Delete(doc);
    free(text);
}

START_TEST(trace_of_each_timeline)
{
    sqlite3 *h = db_open();
    /* the whole run: the timeline ends where the run does */
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM summary s WHERE s.run IN (SELECT id FROM"
                             " runs WHERE sweep IS NOT NULL) AND abs((SELECT max(end) FROM"
                             " timeline t WHERE t.run = s.run) - s.sim_time) > 1e-9 *"
                             " s.sim_time",
                             0),
                     0);
    check_trace(h, sweep_run(h, "allreduce", 1.25e8));
    check_trace(h, sweep_run(h, "sync-ps", 1.25e9));
    /* the timeline covers the whole run: the messages are every byte each host received
     * and sent */
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM workers w WHERE run IN (SELECT id FROM"
                             " runs WHERE sweep IS NOT NULL) AND (bytes_recv IS NOT (SELECT"
                             " sum(bytes) FROM messages m WHERE m.run = w.run AND"
                             " m.dst_host = w.host AND m.dst_role = w.role AND m.dst_rank ="
                             " w.worker) OR bytes_sent IS NOT (SELECT sum(bytes) FROM"
                             " messages m WHERE m.run = w.run AND m.src_host = w.host AND"
                             " m.src_role = w.role AND m.src_rank = w.worker))",
                             0),
                     0);
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM messages WHERE NOT (sent <= start AND"
                             " start <= done)",
                             0),
                     0);
    sqlite3_close(h);

    /* a window of 2 gradients: the trace says how far it goes of the run */
    char ini[200], keep[128], path[128];
    snprintf(ini, sizeof ini, "%s/partial.ini", dir);
    snprintf(path, sizeof path, "%s/partial.db", dir);
    write_file(ini, "[run]\nsteps = 6\neval_every = 3\ntimeline_steps = 2\n[model]\n"
                    "arch = logreg\nbatch = 16\n[data]\nsource = synthetic\n"
                    "train_samples = 512\ntest_samples = 128\nsynthetic_dim = 16\n"
                    "synthetic_classes = 4\n[cluster]\nworkers = 2\n[strategy]\n"
                    "kind = sync-ps\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", path, NULL}), 0);
    snprintf(keep, sizeof keep, "%s", db);
    snprintf(db, sizeof db, "%s", path);
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert(one_real(h, "SELECT s.sim_time - (SELECT max(end) FROM timeline) FROM summary s", 0) >
              0);
    check_trace(h, 1);
    sqlite3_close(h);
    snprintf(db, sizeof db, "%s", keep);
}
END_TEST

/* Two nodes on one host (a server and a worker): one process with two tracks, the host's
 * process first as its server comes first; a message between them a flow within it. */
START_TEST(several_nodes_on_one_host)
{
    char path[160], out[160];
    snprintf(path, sizeof path, "%s/shared.db", dir);
    snprintf(out, sizeof out, "%s/shared.json", dir);
    results_db_t *w;
    dt_err_t err = {""};
    ck_assert_int_eq(results_db_open(&w, path, &err), DT_OK);
    results_run_info_t info = {.name = "shared", .strategy = "sync-ps", .config = "x"};
    int64_t run;
    ck_assert_int_eq(results_run_begin(w, &info, &run, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "b", "worker", 0, "compute", 0, 1, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "a", "worker", 1, "comm", 0, 2, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "a", "server", 0, "idle", 0, 1, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "a", "server", 0, "comm", 1, 2, &err), DT_OK);
    results_msg_end_t src = {"a", "worker", 1}, dst = {"a", "server", 0};
    ck_assert_int_eq(results_message_add(w, run, &src, &dst, 0.5, 1, 2, 8, &err), DT_OK);
    results_db_close(w);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", "1", "--db", path, "--out", out, NULL}), 0);
    char *text = slurp(out);
    cJSON *doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    const cJSON *events = member(doc, "traceEvents"), *e;
    int sp, st, wp, wt, bp, bt, processes = 0;
    ck_assert(track_of(events, "a", "server", 0, &sp, &st));
    ck_assert(track_of(events, "a", "worker", 1, &wp, &wt));
    ck_assert(track_of(events, "b", "worker", 0, &bp, &bt));
    ck_assert_int_eq(sp, wp);
    ck_assert_int_ne(st, wt);
    ck_assert_int_lt(sp, bp);
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = member(e, "ph")->valuestring;
        processes += !strcmp(ph, "M") && !strcmp(member(e, "name")->valuestring, "process_name");
        if (!strcmp(ph, "s") || !strcmp(ph, "f")) {
            /* from the worker's send (posted at 0.5 s) to the server's receive (its transfer
             * from 1 s to 2 s), a nanosecond inside each, on the tracks named for them */
            ck_assert_int_eq(member(e, "pid")->valueint, sp);
            ck_assert_str_eq(thread_name(events, sp, member(e, "tid")->valueint),
                             ph[0] == 's' ? "worker 1 sends" : "server 0 receives");
            ck_assert(member(e, "ts")->valuedouble == (ph[0] == 's' ? 0.5e6 + 1e-3 : 2e6 - 1e-3));
        }
        if (!strcmp(ph, "X") && !strcmp(member(e, "cat")->valuestring, "message")) {
            int send = !strcmp(member(e, "name")->valuestring, "send");
            ck_assert(member(e, "ts")->valuedouble == (send ? 0.5e6 : 1e6));
            ck_assert(member(e, "dur")->valuedouble == (send ? 1.5e6 : 1e6));
        }
    }
    ck_assert_int_eq(processes, 2);
    cJSON_Delete(doc);
    free(text);
}
END_TEST

/* A timeline row that ends at 1e308 s (1e314 microseconds: inf as a double) used to be
 * written "dur":inf, which no JSON reader takes: the trace parses, the finite slice and
 * the message are in it, the other left out and counted in otherData.skipped. */
START_TEST(trace_of_infinite_times_is_json)
{
    char path[160], out[160];
    snprintf(path, sizeof path, "%s/inf.db", dir);
    snprintf(out, sizeof out, "%s/inf.json", dir);
    results_db_t *w;
    dt_err_t err = {""};
    ck_assert_int_eq(results_db_open(&w, path, &err), DT_OK);
    results_run_info_t info = {.name = "inf", .strategy = "sync-ps", .config = "x"};
    int64_t run;
    ck_assert_int_eq(results_run_begin(w, &info, &run, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "a", "worker", 0, "compute", 0, 1, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "a", "worker", 0, "idle", 1, 1e308, &err), DT_OK);
    ck_assert_int_eq(results_timeline_add(w, run, "b", "server", 0, "comm", 0, 1, &err), DT_OK);
    results_msg_end_t src = {"a", "worker", 0}, dst = {"b", "server", 0};
    ck_assert_int_eq(results_message_add(w, run, &src, &dst, 0.25, 0.5, 1, 8, &err), DT_OK);
    results_db_close(w);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", "1", "--db", path, "--out", out, NULL}), 0);
    char *text = slurp(out);
    ck_assert_msg(!strstr(text, "inf") || strstr(text, "\"name\":\"inf\""), "%s", text);
    cJSON *doc = cJSON_Parse(text);
    ck_assert_msg(doc, "not JSON: %s", text);
    const cJSON *e;
    int slices = 0, flows = 0;
    cJSON_ArrayForEach(e, member(doc, "traceEvents"))
    {
        const char *ph = member(e, "ph")->valuestring;
        slices += !strcmp(ph, "X");
        flows += !strcmp(ph, "s") || !strcmp(ph, "f");
    }
    ck_assert_int_eq(slices, 4); /* the finite row, the server's, the message's two */
    ck_assert_int_eq(flows, 2);
    const cJSON *note = member(member(doc, "otherData"), "skipped");
    ck_assert_str_eq(note->valuestring,
                     "1 slices or messages left out: their times are not finite numbers");
    cJSON_Delete(doc);
    free(text);
}
END_TEST

/* A run named like a formula is exported with a leading quote (OWASP's CSV-injection
 * advice): =, +, -, @, tab and CR first; a plain number such as -0.5 stays a number. */
START_TEST(csv_formulas_are_defused)
{
    char path[160], out[160];
    snprintf(path, sizeof path, "%s/formula.db", dir);
    snprintf(out, sizeof out, "%s/formula", dir);
    results_db_t *w;
    dt_err_t err = {""};
    ck_assert_int_eq(results_db_open(&w, path, &err), DT_OK);
    const char *names[] = {
        "=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "-0.5", "plain"};
    const char *want[] = {"\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"",
                          "'+1+1",
                          "'-2+3",
                          "'@SUM(A1)",
                          "'\tx",
                          "-0.5",
                          "plain"};
    for (int i = 0; i < 7; i++) {
        results_run_info_t info = {.name = names[i], .strategy = "sync-ps", .config = "x"};
        int64_t run;
        ck_assert_int_eq(results_run_begin(w, &info, &run, &err), DT_OK);
    }
    results_db_close(w);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--csv", "--db", path, "--out", out, NULL}),
                     0);
    char file[200];
    snprintf(file, sizeof file, "%s/runs.csv", out);
    char *text = slurp(file);
    char *line = strchr(text, '\n') + 1;
    for (int i = 0; i < 7; i++) {
        /* id,name,... */
        char *comma = strchr(line, ',');
        ck_assert_ptr_nonnull(comma);
        ck_assert_msg(!strncmp(comma + 1, want[i], strlen(want[i])) &&
                          comma[1 + strlen(want[i])] == ',',
                      "run %d written as %.40s, want %s", i + 1, comma + 1, want[i]);
        line = strchr(line, '\n') + 1;
    }
    free(text);
}
END_TEST

/* --- errors ---------------------------------------------------------------------------- */

/* One line, exit code 2, and the file at --out left as it was. */
START_TEST(errors_touch_nothing)
{
    char out[160];
    snprintf(out, sizeof out, "%s/kept.json", dir);
    write_file(out, "kept");
    sqlite3 *h = db_open();
    char no_timeline[32];
    snprintf(no_timeline, sizeof no_timeline, "%lld",
             (long long)one_int(h, "SELECT id FROM runs WHERE sweep IS NULL", 0));
    sqlite3_close(h);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", "99", "--db", db, "--out", out, NULL}), 2);
    one_error_line("no run 99");
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", no_timeline, "--db", db, "--out", out, NULL}),
        2);
    one_error_line("has no timeline rows");
    ck_assert_int_eq(dtsim((const char *[]){"export", "--trace", "x", "--db", db, NULL}), 2);
    one_error_line("--trace x: expected an integer >= 1");
    ck_assert_int_eq(dtsim((const char *[]){"export", "--tidy", "--sweep", "nope", "--db", db,
                                            "--out", out, NULL}),
                     2);
    one_error_line("no sweep \"nope\"");
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--tidy", "--runs", "42", "--db", db, "--out", out, NULL}),
        2);
    one_error_line("no run 42");
    ck_assert_int_eq(dtsim((const char *[]){"export", "--tidy", "--runs", "1", "--sweep", sweep,
                                            "--db", db, NULL}),
                     2);
    one_error_line("give one");
    ck_assert_int_eq(dtsim((const char *[]){"export", "--db", db, NULL}), 2);
    one_error_line("--csv, --tidy or --trace");
    char *kept = slurp(out);
    ck_assert_str_eq(kept, "kept");
    free(kept);
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.db", dir);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", "1", "--db", missing, "--out", out, NULL}), 2);
    one_error_line("missing.db: No such file or directory");
    ck_assert_msg(access(missing, F_OK) != 0, "export made %s", missing);
}
END_TEST

/* A file from before the messages table (schema version 4), read as it is: its trace has
 * the slices and no flow, its CSV export no messages.csv. */
START_TEST(older_file_without_messages)
{
    char old[160], out[160], csv[160], file[200];
    snprintf(old, sizeof old, "%s/v4.db", dir);
    snprintf(out, sizeof out, "%s/v4.json", dir);
    snprintf(csv, sizeof csv, "%s/v4csv", dir);
    sqlite3 *h = db_open();
    char sql[256];
    snprintf(sql, sizeof sql, "VACUUM INTO '%s'", old);
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    int64_t run = sweep_run(h, "sync-ps", 1.25e8);
    int64_t rows = one_int(h, "SELECT count(*) FROM timeline WHERE run = ?1", run);
    sqlite3_close(h);
    ck_assert_int_eq(sqlite3_open(old, &h), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(h, "DROP TABLE messages; PRAGMA user_version = 4", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(h);
    char arg[32];
    snprintf(arg, sizeof arg, "%lld", (long long)run);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--trace", arg, "--db", old, "--out", out, NULL}), 0);
    char *text = slurp(out);
    cJSON *doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    int slices = 0, flows = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, member(doc, "traceEvents"))
    {
        slices += !strcmp(member(e, "ph")->valuestring, "X");
        flows += !strcmp(member(e, "ph")->valuestring, "s");
    }
    ck_assert_int_eq(slices, rows);
    ck_assert_int_eq(flows, 0);
    cJSON_Delete(doc);
    free(text);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--csv", "--db", old, "--out", csv, NULL}),
                     0);
    snprintf(file, sizeof file, "%s/messages.csv", csv);
    ck_assert_int_ne(access(file, F_OK), 0);
    snprintf(file, sizeof file, "%s/timeline.csv", csv);
    ck_assert_int_eq(access(file, F_OK), 0);
}
END_TEST

/* --- the README's pandas snippet -------------------------------------------------------- */

/* The Python interpreter that has pandas: Debian's (python3-pandas installs there), else the
 * first python3 on PATH; NULL when neither imports it. */
static const char *python_with_pandas(void)
{
    static const char *const candidates[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < 2; i++)
        if (run_in(NULL, (const char *[]){candidates[i], "-c", "import pandas", NULL}) == 0)
            return candidates[i];
    return NULL;
}

/* The code block after "<!-- tests/test_export.c runs this snippet -->" in results/README.md. */
static char *readme_snippet(void)
{
    char *readme = slurp(DTSIM_SOURCE "/results/README.md");
    const char *mark = strstr(readme, "<!-- tests/test_export.c runs this snippet -->");
    ck_assert_msg(mark != NULL, "results/README.md has no tested snippet");
    const char *begin = strstr(mark, "```python\n");
    ck_assert_ptr_nonnull(begin);
    begin += strlen("```python\n");
    const char *end = strstr(begin, "```");
    ck_assert_ptr_nonnull(end);
    char *code = strndup(begin, (size_t)(end - begin));
    free(readme);
    return code;
}

START_TEST(readme_pandas_snippet)
{
    const char *python = python_with_pandas();
    if (!python) {
        fprintf(stderr, "export: readme_pandas_snippet skipped: no python3 with pandas "
                        "(Debian: python3-pandas)\n");
        return;
    }
    char work[160], csv_dir[200], tidy[240], script[200];
    snprintf(work, sizeof work, "%s/pandas", dir);
    snprintf(csv_dir, sizeof csv_dir, "%s/results/csv", work);
    snprintf(tidy, sizeof tidy, "%s/tidy.csv", csv_dir);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--tidy", "--sweep", sweep, "--db", db,
                                            "--out", tidy, NULL}),
                     0);
    char *code = readme_snippet();
    snprintf(script, sizeof script, "%s/snippet.py", work);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "%s\nfor (strategy, gbps), t in times.items():\n"
            "    print('CHECK', strategy, repr(gbps), repr(t))\n",
            code);
    fclose(f);
    free(code);
    ck_assert_msg(run_in(work, (const char *[]){python, "snippet.py", NULL}) == 0, "%s",
                  slurp(err_path));
    char *printed = slurp(out_path);
    sqlite3 *h = db_open();
    int checked = 0;
    for (char *line = strtok(printed, "\n"); line; line = strtok(NULL, "\n")) {
        char strategy[64], gbps[64], t[64];
        if (sscanf(line, "CHECK %63s %63s %63s", strategy, gbps, t) != 3)
            continue;
        double bw = strtod(gbps, NULL) * 1e9 / 8;
        int64_t id = sweep_run(h, strategy, bw);
        ck_assert(bw * 8 / 1e9 == strtod(gbps, NULL));
        sqlite3_stmt *s = prepare(h, "SELECT sim_time FROM summary WHERE run = ?1");
        sqlite3_bind_int64(s, 1, id);
        ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
        ck_assert_msg(strtod(t, NULL) == sqlite3_column_double(s, 0), "%s: %s for %.17g", line, t,
                      sqlite3_column_double(s, 0));
        sqlite3_finalize(s);
        checked++;
    }
    ck_assert_int_eq(checked, 4);
    sqlite3_close(h);
    free(printed);
}
END_TEST

/* run.timeline: a timing-only run of 48 workers whose ring all-reduces go in 5 MB buckets
 * writes 12.7 MB of timeline and messages whole; sampled (its default) it grows the file by at
 * most 1 MB (the old behaviour, everything, fails that), keeps the first step whole (from 0
 * to the step time) of at most 16 hosts, the first and last among them, in boxes that tile
 * each lane, messages only between kept hosts, and still makes a trace whose flows lie in
 * slices; whole keeps every host, in the timeline and receiving messages. */
static int64_t pages(const char *path)
{
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *s = prepare(h, "SELECT page_count * page_size FROM pragma_page_count,"
                                 " pragma_page_size");
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t bytes = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return bytes;
}

static double one_real(sqlite3 *h, const char *sql, int64_t a)
{
    sqlite3_stmt *s = prepare(h, sql);
    sqlite3_bind_int64(s, 1, a);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    double v = sqlite3_column_double(s, 0);
    sqlite3_finalize(s);
    return v;
}

START_TEST(sampled_timeline_of_a_timing_only_run)
{
    char ini[128], path[128], keep[128];
    snprintf(ini, sizeof ini, "%s/timing.ini", dir);
    snprintf(path, sizeof path, "%s/timing.db", dir);
    write_file(ini, "[run]\nname = timing\nsteps = 2\neval_every = 0\ntimeline_steps = 2\n"
                    "[model]\narch = profile:resnet50\nbatch = 32\n"
                    "[cluster]\nworkers = 48\n"
                    "[strategy]\nkind = allreduce\nalgorithm = ring\nbucket_mb = 5\n");
    /* a first run makes the schema; then whole, then sampled (the default) */
    ck_assert_int_eq(
        dtsim((const char *[]){"run", ini, "--db", path, "--set", "run.timeline_steps=0", NULL}),
        0);
    int64_t p0 = pages(path);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", ini, "--db", path, "--set", "run.timeline=whole", NULL}), 0);
    int64_t p1 = pages(path);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", path, NULL}), 0);
    int64_t p2 = pages(path);
    ck_assert_msg(p1 - p0 > 2 * 1024 * 1024, "whole grew the file by only %lld bytes",
                  (long long)(p1 - p0));
    ck_assert_msg(p2 - p1 <= 1024 * 1024, "sampled grew the file by %lld bytes",
                  (long long)(p2 - p1));

    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(one_int(h,
                             "SELECT value = 'whole' FROM params WHERE run = 2 AND"
                             " key = 'run.timeline'",
                             0),
                     1);
    ck_assert_int_eq(one_int(h,
                             "SELECT value = 'sampled' FROM params WHERE run = 3 AND"
                             " key = 'run.timeline'",
                             0),
                     1);
    /* whole: every host, in the timeline and receiving messages */
    ck_assert_int_eq(one_int(h, "SELECT count(DISTINCT rank) FROM timeline WHERE run = ?1", 2), 48);
    ck_assert_int_eq(one_int(h, "SELECT count(DISTINCT dst_rank) FROM messages WHERE run = ?1", 2),
                     48);
    /* sampled: 16 hosts, the first and the last among them */
    ck_assert_int_eq(one_int(h, "SELECT count(DISTINCT rank) FROM timeline WHERE run = ?1", 3), 16);
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM timeline WHERE run = ?1 AND"
                             " rank IN (0, 47) AND start = 0",
                             3),
                     2);
    /* the first step whole: every lane from 0 to the step time, its boxes tiling it */
    double step = one_real(h, "SELECT sim_time / steps FROM summary WHERE run = ?1", 3);
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM (SELECT rank, min(start) AS lo,"
                             " max(end) AS hi, sum(end - start) AS busy FROM timeline"
                             " WHERE run = ?1 GROUP BY rank) WHERE lo = 0 AND"
                             " abs(hi - (SELECT sim_time / steps FROM summary WHERE"
                             " run = ?1)) < 1e-9 AND abs(busy - hi) < 1e-9 * hi",
                             3),
                     16);
    ck_assert_double_eq_tol(one_real(h, "SELECT max(end) FROM timeline WHERE run = ?1", 3), step,
                            1e-9 * step);
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM timeline a JOIN timeline b ON"
                             " a.run = b.run AND a.rank = b.rank AND a.rowid < b.rowid AND"
                             " a.start < b.end AND b.start < a.end WHERE a.run = ?1",
                             3),
                     0);
    /* it was coarsened (more boxes whole in that step) and messages only between kept hosts */
    ck_assert_int_lt(one_int(h, "SELECT count(*) FROM timeline WHERE run = ?1", 3),
                     one_int(h,
                             "SELECT count(*) FROM timeline WHERE run = ?1 AND start < "
                             "(SELECT sim_time / steps FROM summary WHERE run = ?1) AND rank"
                             " IN (SELECT DISTINCT rank FROM timeline WHERE run = 3)",
                             2));
    ck_assert_int_gt(one_int(h, "SELECT count(*) FROM messages WHERE run = ?1", 3), 0);
    ck_assert_int_eq(one_int(h,
                             "SELECT count(*) FROM messages WHERE run = ?1 AND (src_rank NOT"
                             " IN (SELECT rank FROM timeline WHERE run = ?1) OR dst_rank NOT"
                             " IN (SELECT rank FROM timeline WHERE run = ?1) OR done > "
                             "(SELECT sim_time / steps FROM summary WHERE run = ?1) + 1e-9)",
                             3),
                     0);
    sqlite3_close(h);
    /* its trace: every slice and every flow where it belongs */
    snprintf(keep, sizeof keep, "%s", db);
    snprintf(db, sizeof db, "%s", path);
    ck_assert_int_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    check_trace(h, 3);
    sqlite3_close(h);
    snprintf(db, sizeof db, "%s", keep);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("export");
    TCase *tc = tcase_create("export");
    tcase_add_unchecked_fixture(tc, make_db, remove_db);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, shortest_doubles_round_trip);
    tcase_add_test(tc, csv_every_table_read_back);
    tcase_add_test(tc, tidy_table_of_a_sweep);
    tcase_add_test(tc, trace_of_each_timeline);
    tcase_add_test(tc, several_nodes_on_one_host);
    tcase_add_test(tc, trace_of_infinite_times_is_json);
    tcase_add_test(tc, csv_formulas_are_defused);
    tcase_add_test(tc, errors_touch_nothing);
    tcase_add_test(tc, older_file_without_messages);
    tcase_add_test(tc, readme_pandas_snippet);
    tcase_add_test(tc, csv_headers_name_their_units);
    tcase_add_test(tc, sampled_timeline_of_a_timing_only_run);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
