/* The results store (see db.h): opening, schema creation and version checks, the sweep that
 * marks runs of vanished writers as interrupted, and one prepared statement per write.
 *
 * Why these choices:
 *   - WAL + busy timeout: sweeps run several writers on one file; readers (plots) never block
 *     them; a killed writer loses only its open transaction.
 *   - statements prepared once, SQLITE_PREPARE_PERSISTENT, values bound with SQLITE_STATIC:
 *     no SQL is ever built from a value, and binding cannot allocate, so a failed bind is a
 *     bug (DT_ASSERT), not a machine failure.
 *   - a run's writer is identified by (host, pid); a later open on the same host marks the
 *     run interrupted when kill(pid, 0) says ESRCH. A pid reused by an unrelated process keeps
 *     the run 'running' until that process ends too: wrong in the safe direction. */
#define _POSIX_C_SOURCE 200809L
#include "db.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema_units.h" /* results_schema_text */

/* 'dtsi' in ASCII, as set by schema.sql. */
#define RESULTS_APPLICATION_ID 1685353321

#define ISO_NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

enum stmt_id {
    ST_RUN_BEGIN,
    ST_RUN_END,
    ST_RUN_STATUS,
    ST_SUMMARY_ADD,
    ST_EVAL_ADD,
    ST_WORKER_ADD,
    ST_STALENESS_ADD,
    ST_MEMORY_ADD,
    ST_LABEL_ADD,
    ST_PARAM_ADD,
    ST_TIMELINE_ADD,
    ST_LINK_ADD,
    ST_FAULT_ADD,
    ST_PRIVACY_ADD,
    ST_CLIENT_ADD,
    ST_MESSAGE_ADD,
    ST_ENERGY_ADD,
    ST_BREAKDOWN_ADD,
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SWEEP,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_RUN_BEGIN] = "INSERT INTO runs (name, strategy, status, config, seed, dtsim_version,"
                     " simgrid_version, pid, host, started, sweep, sweep_index)"
                     " VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8, " ISO_NOW ", ?9, ?10)",
    [ST_RUN_END] =
        "UPDATE runs SET status = ?2, ended = " ISO_NOW " WHERE id = ?1 AND status = 'running'",
    [ST_RUN_STATUS] = "SELECT status FROM runs WHERE id = ?1",
    [ST_SUMMARY_ADD] = "INSERT INTO summary (run, final_accuracy, final_loss, sim_time,"
                       " time_to_target, target_accuracy, total_bytes, compute_share,"
                       " comm_share, idle_share, steps)"
                       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_EVAL_ADD] = "INSERT INTO evals (run, sim_time, step, samples, bytes, test_loss, test_acc,"
                    " perplexity)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_WORKER_ADD] = "INSERT INTO workers (run, worker, host, role, compute_s, comm_s, idle_s,"
                      " bytes_sent, bytes_recv, steps, weight)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_STALENESS_ADD] =
        "INSERT INTO staleness (run, staleness, count) VALUES (?1, ?2, ?3)"
        " ON CONFLICT (run, staleness) DO UPDATE SET count = count + excluded.count",
    [ST_MEMORY_ADD] = "INSERT INTO memory (run, worker, role, params, grads, optimizer,"
                      " activations, weight) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_LABEL_ADD] =
        "INSERT INTO label_hist (run, client, label, count) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT (run, client, label) DO UPDATE SET count = count + excluded.count",
    [ST_PARAM_ADD] = "INSERT INTO params (run, key, value, number) VALUES (?1, ?2, ?3, ?4)",
    [ST_TIMELINE_ADD] = "INSERT INTO timeline (run, host, role, rank, state, start, end)"
                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [ST_LINK_ADD] = "INSERT INTO links (run, link, bytes, weight) VALUES (?1, ?2, ?3, ?4)"
                    " ON CONFLICT (run, link) DO UPDATE SET bytes = bytes + excluded.bytes",
    [ST_ENERGY_ADD] = "INSERT INTO energy (run, hosts, host_joules, link_ports, link_joules,"
                      " joules_per_step, joules_per_sample, dollars, dollars_per_sample,"
                      " dollars_to_target) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_BREAKDOWN_ADD] = "INSERT INTO breakdown (run, part, seconds) VALUES (?1, ?2, ?3)",
    [ST_FAULT_ADD] = "INSERT INTO faults (run, sim_time, kind, target, detail)"
                     " VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_PRIVACY_ADD] = "INSERT INTO privacy (run, round, epsilon, delta) VALUES (?1, ?2, ?3, ?4)",
    [ST_CLIENT_ADD] = "INSERT INTO clients (run, client, rounds, samples, held_out, test_acc,"
                      " test_loss, byzantine) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_MESSAGE_ADD] = "INSERT INTO messages (run, src_host, src_role, src_rank, dst_host,"
                       " dst_role, dst_rank, sent, start, done, bytes)"
                       " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SWEEP] = "UPDATE runs SET status = 'interrupted'"
                 " WHERE status = 'running' AND host = ?1 AND NOT dtsim_pid_alive(pid)",
};

struct results_db {
    sqlite3 *h;
    sqlite3_stmt *st[ST_COUNT];
    char host[256]; /* this machine's name, stored with each run */
    char path[];    /* for error messages */
};

/* Fills err with "PATH: WHAT: SQLITE MESSAGE" and says whose fault rc is: a file the user
 * pointed at that cannot serve (unopenable, read-only, not a database) or a value the caller
 * passed that a constraint rejects is input; anything else is the machine's. */
static dt_status db_error(const char *path, sqlite3 *h, int rc, dt_err_t *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static dt_status db_error(const char *path, sqlite3 *h, int rc, dt_err_t *err, const char *fmt, ...)
{
    if (err) {
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        const char *msg = h ? sqlite3_errmsg(h) : sqlite3_errstr(rc);
        snprintf(err->msg, sizeof err->msg, "%s: %s: %s", path, what, msg);
        dt_err_clean(err);
    }
    switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_CORRUPT:
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return DT_ERR_INPUT;
    default:
        return DT_ERR_RUN;
    }
}

/* Runs a write statement to completion and readies it for the next use. */
static dt_status db_step(results_db_t *db, enum stmt_id id, dt_err_t *err, const char *what,
                         int64_t run)
{
    sqlite3_stmt *s = db->st[id];
    int rc = sqlite3_step(s);
    dt_status st = DT_OK;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        if (run >= 0)
            st = db_error(db->path, db->h, rc, err, "%s of run %lld", what, (long long)run);
        else
            st = db_error(db->path, db->h, rc, err, "%s", what);
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return st;
}

static void bind_int(sqlite3_stmt *s, int i, int64_t v)
{
    DT_ASSERT(sqlite3_bind_int64(s, i, (sqlite3_int64)v) == SQLITE_OK);
}

/* NaN has no SQL value: it is stored as NULL ("undefined"). */
static void bind_real(sqlite3_stmt *s, int i, double v)
{
    int rc = isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
    DT_ASSERT(rc == SQLITE_OK);
}

/* NULL text is stored as NULL. The text must outlive the statement's step (SQLITE_STATIC). */
static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    DT_ASSERT(sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC) == SQLITE_OK);
}

/* Whether pid is a zombie (or dying): killed, not yet reaped by its parent or by init. Its
 * /proc/PID/stat reads "PID (COMM) STATE ..."; COMM may hold spaces and parentheses, so the
 * state follows the last ')'. Unreadable counts as not a zombie. */
static int pid_is_zombie(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[n] = '\0';
    const char *close = strrchr(line, ')');
    return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

/* dtsim_pid_alive(pid): 0 when pid names no process on this machine or only a zombie (a
 * writer killed and not yet reaped has written its last row). A NULL or odd pid counts as
 * alive: a run we cannot judge is left as it is. */
static void sql_pid_alive(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    int alive = 1;
    if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER) {
        sqlite3_int64 pid = sqlite3_value_int64(argv[0]);
        if (pid > 0 && pid <= INT_MAX &&
            ((kill((pid_t)pid, 0) != 0 && errno == ESRCH) || pid_is_zombie((pid_t)pid)))
            alive = 0;
    }
    sqlite3_result_int(ctx, alive);
}

/* The directory must exist: creating it would hide a mistyped --db path. */
static dt_status check_directory(const char *path, dt_err_t *err)
{
    if (path[0] == '\0' || strcmp(path, ":memory:") == 0)
        return DT_OK;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return DT_OK; /* the current directory */
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = dt_malloc(n + 1);
    memcpy(dir, path, n);
    dir[n] = '\0';
    struct stat sb;
    dt_status st = DT_OK;
    if (stat(dir, &sb) != 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            st = dt_err_input(err, "%s: directory %s does not exist (create it first)", path, dir);
        else
            st = dt_err_input(err, "%s: directory %s: %s", path, dir, strerror(errno));
    } else if (!S_ISDIR(sb.st_mode)) {
        st = dt_err_input(err, "%s: %s is not a directory", path, dir);
    }
    free(dir);
    return st;
}

int results_sql_int(sqlite3 *h, const char *sql, int *out)
{
    sqlite3_stmt *s;
    int rc = sqlite3_prepare_v2(h, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int(s, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    return rc;
}

/* Version 1 -> 2: the memory table. */
static const char migrate_1_to_2[] =
    "CREATE TABLE memory (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " worker INTEGER NOT NULL, role TEXT NOT NULL, params REAL, grads REAL, optimizer REAL,"
    " activations REAL);"
    "CREATE INDEX memory_run ON memory (run);"
    "PRAGMA user_version = 2;";

/* Version 2 -> 3: the privacy and clients tables (as in schema.sql). */
static const char migrate_2_to_3[] =
    "CREATE TABLE privacy (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " round INTEGER NOT NULL, epsilon REAL, delta REAL NOT NULL, PRIMARY KEY (run, round))"
    " WITHOUT ROWID;"
    "CREATE TABLE clients (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " client INTEGER NOT NULL, rounds INTEGER NOT NULL, samples INTEGER, held_out INTEGER,"
    " test_acc REAL, test_loss REAL, byzantine INTEGER NOT NULL, PRIMARY KEY (run, client))"
    " WITHOUT ROWID;"
    "CREATE VIEW client_fairness AS "
    "WITH ranked AS ( "
    "SELECT run, test_acc, "
    "row_number() OVER (PARTITION BY run ORDER BY test_acc) AS rk, "
    "count(*) OVER (PARTITION BY run) AS n "
    "FROM clients WHERE test_acc IS NOT NULL AND byzantine = 0), "
    "acc AS ( "
    "SELECT run, max(n) AS evaluated, avg(test_acc) AS mean_acc, "
    "max(CASE WHEN rk = 1 + (n - 1) / 10 THEN test_acc END) AS p10_acc, "
    "max(CASE WHEN rk = n - (n - 1) / 10 THEN test_acc END) AS p90_acc, "
    "min(test_acc) AS min_acc, max(test_acc) AS max_acc, "
    "max(test_acc) - min(test_acc) AS spread "
    "FROM ranked GROUP BY run), "
    "part AS ( "
    "SELECT run, count(*) AS clients, sum(byzantine) AS byzantine, min(rounds) AS min_rounds, "
    "avg(rounds) AS mean_rounds, max(rounds) AS max_rounds, "
    "sum(rounds = 0) AS never_aggregated "
    "FROM clients GROUP BY run) "
    "SELECT part.*, acc.evaluated, acc.mean_acc, acc.p10_acc, acc.p90_acc, acc.min_acc, "
    "acc.max_acc, acc.spread "
    "FROM part LEFT JOIN acc USING (run); "
    "PRAGMA user_version = 3;";

/* Version 3 -> 4: 'stalled' and 'collapsed' join the statuses runs.status may hold. Loosening a
 * CHECK changes nothing stored, so the table's definition is edited in place (SQLite's documented
 * procedure for such changes: writable_schema, then a new schema_version so every connection
 * reads the definition again) rather than the table rebuilt under its foreign keys. */
static int migrate_3_to_4(sqlite3 *h)
{
    int schema = 0, rc = results_sql_int(h, "PRAGMA schema_version", &schema);
    if (rc != SQLITE_OK)
        return rc;
    char sql[512];
    snprintf(sql, sizeof sql,
             "PRAGMA writable_schema = ON;"
             "UPDATE sqlite_schema SET sql = replace(sql, '''diverged'', ''interrupted'')',"
             " '''diverged'', ''interrupted'', ''stalled'', ''collapsed'')')"
             " WHERE type = 'table' AND name = 'runs';"
             "PRAGMA schema_version = %d;"
             "PRAGMA writable_schema = OFF;"
             "PRAGMA user_version = 4;",
             schema + 1);
    return sqlite3_exec(h, sql, NULL, NULL, NULL);
}

/* Version 4 -> 5: the messages table (as in schema.sql). */
static const char migrate_4_to_5[] =
    "CREATE TABLE messages (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " src_host TEXT NOT NULL, src_role TEXT NOT NULL, src_rank INTEGER NOT NULL,"
    " dst_host TEXT NOT NULL, dst_role TEXT NOT NULL, dst_rank INTEGER NOT NULL,"
    " sent REAL NOT NULL, start REAL NOT NULL, done REAL NOT NULL, bytes REAL NOT NULL);"
    "CREATE INDEX messages_run ON messages (run, sent);"
    "PRAGMA user_version = 5;";

/* Version 5 -> 6: the energy table (as in schema.sql). */
static const char migrate_5_to_6[] =
    "CREATE TABLE energy (run INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,"
    " hosts INTEGER, host_joules REAL, link_ports INTEGER, link_joules REAL,"
    " joules_per_step REAL, joules_per_sample REAL, dollars REAL, dollars_per_sample REAL,"
    " dollars_to_target REAL);"
    "PRAGMA user_version = 6;";

/* Version 6 -> 7: the evaluations' perplexity (text data), NULL in the rows already there. */
static const char migrate_6_to_7[] = "ALTER TABLE evals ADD COLUMN perplexity REAL;"
                                     "PRAGMA user_version = 7;";

/* Version 7 -> 8: the weight of a workers, a memory and a links row, 1 (a host or a link
 * each) in the rows already there. */
static const char migrate_7_to_8[] =
    "ALTER TABLE workers ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE memory ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE links ADD COLUMN weight INTEGER NOT NULL DEFAULT 1;"
    "PRAGMA user_version = 8;";

/* Version 8 -> 9: the breakdown table (as in schema.sql); runs stored before it have none. */
static const char migrate_8_to_9[] =
    "CREATE TABLE breakdown (run INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,"
    " part TEXT NOT NULL, seconds REAL NOT NULL, PRIMARY KEY (run, part)) WITHOUT ROWID;"
    "PRAGMA user_version = 9;";

/* migrations[v]: the SQL that takes a version-v file to version v + 1 (NULL: a function) */
static const char *const migrations[] = {NULL,           migrate_1_to_2, migrate_2_to_3,
                                         NULL,           migrate_4_to_5, migrate_5_to_6,
                                         migrate_6_to_7, migrate_7_to_8, migrate_8_to_9};
_Static_assert(sizeof migrations / sizeof migrations[0] == RESULTS_SCHEMA_VERSION,
               "a migration per schema version");

/* Brings the file to RESULTS_SCHEMA_VERSION: creates the schema in an empty file (inside one
 * IMMEDIATE transaction, so that two writers opening a new file at once create it once),
 * migrates an older one step per version (likewise), refuses a foreign or newer file. */
static dt_status schema_ensure(sqlite3 *h, const char *path, dt_err_t *err)
{
    int version = 0, app = 0, rc;
    if ((rc = results_sql_int(h, "PRAGMA user_version", &version)) != SQLITE_OK)
        return db_error(path, h, rc, err, "reading the schema version");
    if (version == 0) {
        if ((rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL)) != SQLITE_OK)
            return db_error(path, h, rc, err, "locking the database to create its schema");
        int objects = 0;
        if ((rc = results_sql_int(h, "PRAGMA user_version", &version)) != SQLITE_OK ||
            (rc = results_sql_int(h, "SELECT count(*) FROM sqlite_schema", &objects)) !=
                SQLITE_OK) {
            dt_status st = db_error(path, h, rc, err, "reading the schema version");
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
            return st;
        }
        if (version == 0 && objects > 0) {
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
            return dt_err_input(err, "%s: an SQLite database, but not a dtsim results database",
                                path);
        }
        if (version == 0) {
            rc = sqlite3_exec(h, results_schema_text(), NULL, NULL, NULL);
            if (rc == SQLITE_OK)
                rc = results_sql_int(h, "PRAGMA user_version", &version);
            if (rc != SQLITE_OK) {
                dt_status st = db_error(path, h, rc, err, "creating the schema");
                sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
                return st;
            }
            DT_ASSERT(version == RESULTS_SCHEMA_VERSION); /* schema.sql and db.h agree */
        }
        if ((rc = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL)) != SQLITE_OK) {
            dt_status st = db_error(path, h, rc, err, "creating the schema");
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
            return st;
        }
    }
    if ((rc = results_sql_int(h, "PRAGMA application_id", &app)) != SQLITE_OK)
        return db_error(path, h, rc, err, "reading the application id");
    if (app != RESULTS_APPLICATION_ID)
        return dt_err_input(err, "%s: an SQLite database, but not a dtsim results database", path);
    while (version >= 1 && version < RESULTS_SCHEMA_VERSION) {
        int from = version;
        if ((rc = sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL)) != SQLITE_OK)
            return db_error(path, h, rc, err, "locking the database to upgrade its schema");
        /* another writer may have upgraded it meanwhile */
        if ((rc = results_sql_int(h, "PRAGMA user_version", &version)) == SQLITE_OK &&
            version == from)
            rc =
                from == 3 ? migrate_3_to_4(h) : sqlite3_exec(h, migrations[from], NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            dt_status st =
                db_error(path, h, rc, err, "upgrading the schema to version %d", from + 1);
            sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
            return st;
        }
        if ((rc = results_sql_int(h, "PRAGMA user_version", &version)) != SQLITE_OK)
            return db_error(path, h, rc, err, "reading the schema version");
    }
    if (version > RESULTS_SCHEMA_VERSION)
        return dt_err_input(err,
                            "%s: written by a newer dtsim (schema version %d; this dtsim knows "
                            "versions up to %d)",
                            path, version, RESULTS_SCHEMA_VERSION);
    return DT_OK;
}

/* Removes what writers on this host killed while making path's database left beside it
 * (PATH.new-HOST-PID and its -wal, -shm, -journal): those whose PID is gone. */
static void remove_stale(const char *path, const char *host)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX], prefix[NAME_MAX + 1];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash == path ? 1 : slash - path) : 1,
             slash ? path : ".");
    int n = snprintf(prefix, sizeof prefix, "%s.new-%.64s-", slash ? slash + 1 : path, host);
    DIR *d = n > 0 && (size_t)n < sizeof prefix ? opendir(dir) : NULL;
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)n))
            continue;
        char *end;
        long pid = strtol(e->d_name + n, &end, 10);
        if (pid <= 0 || pid > INT_MAX || end == e->d_name + n ||
            (*end && strcmp(end, "-wal") && strcmp(end, "-shm") && strcmp(end, "-journal")))
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char full[PATH_MAX + NAME_MAX + 2];
            snprintf(full, sizeof full, "%s/%s", dir, e->d_name);
            unlink(full);
        }
    }
    closedir(d);
}

/* A new database appears whole: made beside path under a name of its own
 * (PATH.new-HOST-PID, the host's name cut to 64 bytes), its schema committed, then linked to path
 * (where another writer's may have appeared meanwhile: then that one is used). Made in place, a
 * writer killed between SQLite's creating the file and committing its schema left an empty file
 * that every read command refuses as no dtsim database. A file system without hard links makes it
 * in place, as before. */
static dt_status create_whole(const char *path, const char *host, dt_err_t *err)
{
    struct stat sb;
    if (!path[0] || !strcmp(path, ":memory:") || stat(path, &sb) == 0 || errno != ENOENT)
        return DT_OK; /* there already, or stat's error, which the open reports */
    remove_stale(path, host);
    char tmp[PATH_MAX + 320], side[PATH_MAX + 340];
    snprintf(tmp, sizeof tmp, "%s.new-%.64s-%ld", path, host, (long)getpid());
    sqlite3 *h = NULL;
    int rc = sqlite3_open_v2(tmp, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    DT_CHECK(h, "out of memory opening SQLite database %s", tmp);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(h, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    dt_status st =
        rc == SQLITE_OK ? schema_ensure(h, path, err) : db_error(path, h, rc, err, "cannot create");
    sqlite3_close(h); /* the last connection: its WAL goes into the file */
    /* failed: EEXIST, another writer's is used; no hard links here, made in place */
    if (st == DT_OK)
        (void)!link(tmp, path);
    unlink(tmp);
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", tmp, sides[i]);
        unlink(side);
    }
    return st;
}

dt_status results_db_open(results_db_t **out, const char *path, dt_err_t *err)
{
    DT_ASSERT(out && path);
    *out = NULL;
    dt_status st = check_directory(path, err);
    if (st != DT_OK)
        return st;

    size_t len = strlen(path);
    results_db_t *db = dt_calloc(1, sizeof *db + len + 1);
    memcpy(db->path, path, len + 1);
    /* DTSIM_HOST: the machine's name where gethostname answers another (the testbed's ranks
     * run in a UTS namespace named after it): a later open on this machine must find the
     * runs of writers that vanished and mark them interrupted */
    const char *host = getenv("DTSIM_HOST");
    if (host && *host)
        snprintf(db->host, sizeof db->host, "%s", host);
    else if (gethostname(db->host, sizeof db->host) != 0)
        strcpy(db->host, "unknown");
    db->host[sizeof db->host - 1] = '\0';
    if ((st = create_whole(path, db->host, err)) != DT_OK)
        goto fail;

    int rc = sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    DT_CHECK(db->h, "out of memory opening SQLite database %s", path);
    if (rc != SQLITE_OK) {
        st = db_error(path, db->h, rc, err, "cannot open");
        goto fail;
    }
    sqlite3_extended_result_codes(db->h, 1);
    sqlite3_busy_timeout(db->h, 10000);
    /* another program's database is refused before anything is written to it (switching it
     * to WAL would change its file): a file with tables or a version and not our id */
    /* the three reads in one read transaction: another writer creating the schema of a new
     * file (a sweep's -j processes) commits all of it at once, but between two separate
     * reads a file could show its version without its id yet (tests: concurrent writers) */
    int app = 0, version = 0, objects = 0;
    rc = sqlite3_exec(db->h, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = results_sql_int(db->h, "PRAGMA application_id", &app);
    if (rc == SQLITE_OK)
        rc = results_sql_int(db->h, "PRAGMA user_version", &version);
    if (rc == SQLITE_OK)
        rc = results_sql_int(db->h, "SELECT count(*) FROM sqlite_schema", &objects);
    if (sqlite3_get_autocommit(db->h) == 0)
        sqlite3_exec(db->h, rc == SQLITE_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    if (rc == SQLITE_OK && app != RESULTS_APPLICATION_ID && (version != 0 || objects > 0)) {
        st = dt_err_input(err, "%s: an SQLite database, but not a dtsim results database", path);
        goto fail;
    }
    /* journal_mode is the first statement that reads the file: a file that is not a database
     * fails here with SQLITE_NOTADB. */
    rc = sqlite3_exec(db->h, "PRAGMA foreign_keys = ON; PRAGMA journal_mode = WAL;", NULL, NULL,
                      NULL);
    /* Switching a new file to WAL while another writer creates it can answer SQLITE_BUSY
     * at once, without the busy handler (seen with 8 writers on 16 cores): retry it for as
     * long as the busy timeout. */
    for (int tries = 0; (rc & 0xff) == SQLITE_BUSY && tries < 1000; tries++) {
        sqlite3_sleep(10);
        rc = sqlite3_exec(db->h, "PRAGMA journal_mode = WAL;", NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) {
        st = db_error(path, db->h, rc, err, "cannot open");
        goto fail;
    }
    if ((st = schema_ensure(db->h, path, err)) != DT_OK)
        goto fail;

    rc = sqlite3_create_function_v2(db->h, "dtsim_pid_alive", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    NULL, sql_pid_alive, NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        st = db_error(path, db->h, rc, err, "registering dtsim_pid_alive");
        goto fail;
    }
    for (int i = 0; i < ST_COUNT; i++) {
        rc =
            sqlite3_prepare_v3(db->h, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->st[i], NULL);
        if (rc != SQLITE_OK) {
            st = db_error(path, db->h, rc, err, "preparing statement %d", i);
            goto fail;
        }
    }

    bind_text(db->st[ST_SWEEP], 1, db->host);
    if ((st = db_step(db, ST_SWEEP, err, "marking runs of vanished writers interrupted", -1)) !=
        DT_OK)
        goto fail;

    *out = db;
    return DT_OK;
fail:
    results_db_close(db);
    return st;
}

struct sqlite3 *results_db_sqlite(results_db_t *db)
{
    return db->h;
}

void results_db_close(results_db_t *db)
{
    if (!db)
        return;
    if (db->h && !sqlite3_get_autocommit(db->h))
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(db->st[i]);
    sqlite3_close(db->h);
    free(db);
}

dt_status results_run_begin(results_db_t *db, const results_run_info_t *info, int64_t *run_id,
                            dt_err_t *err)
{
    DT_ASSERT(db && info && run_id);
    sqlite3_stmt *s = db->st[ST_RUN_BEGIN];
    bind_text(s, 1, info->name);
    bind_text(s, 2, info->strategy);
    bind_text(s, 3, info->config);
    bind_int(s, 4, (int64_t)info->seed); /* the same 64 bits; see schema.sql */
    bind_text(s, 5, info->dtsim_version);
    bind_text(s, 6, info->simgrid_version);
    bind_int(s, 7, (int64_t)getpid());
    bind_text(s, 8, db->host);
    bind_text(s, 9, info->sweep);
    bind_int(s, 10, info->sweep_index);
    dt_status st = db_step(db, ST_RUN_BEGIN, err, "starting a run", -1);
    if (st == DT_OK)
        *run_id = sqlite3_last_insert_rowid(db->h);
    return st;
}

dt_status results_eval_add_text(results_db_t *db, int64_t run, double sim_time, long step,
                                double samples, double bytes, double test_loss, double test_acc,
                                double perplexity, dt_err_t *err)
{
    DT_ASSERT(db);
    sqlite3_stmt *s = db->st[ST_EVAL_ADD];
    bind_int(s, 1, run);
    bind_real(s, 2, sim_time);
    bind_int(s, 3, step);
    bind_real(s, 4, samples);
    bind_real(s, 5, bytes);
    bind_real(s, 6, test_loss);
    bind_real(s, 7, test_acc);
    bind_real(s, 8, perplexity);
    return db_step(db, ST_EVAL_ADD, err, "storing an evaluation", run);
}

dt_status results_eval_add(results_db_t *db, int64_t run, double sim_time, long step,
                           double samples, double bytes, double test_loss, double test_acc,
                           dt_err_t *err)
{
    return results_eval_add_text(db, run, sim_time, step, samples, bytes, test_loss, test_acc, NAN,
                                 err);
}

dt_status results_worker_add(results_db_t *db, int64_t run, int worker, const char *host,
                             const char *role, double compute_s, double comm_s, double idle_s,
                             double bytes_sent, double bytes_recv, long steps, long weight,
                             dt_err_t *err)
{
    DT_ASSERT(db);
    if (!role ||
        (strcmp(role, "worker") != 0 && strcmp(role, "server") != 0 && strcmp(role, "client") != 0))
        return dt_err_input(err, "%s: run %lld: unknown role '%s' (worker, server or client)",
                            db->path, (long long)run, role ? role : "(null)");
    if (weight < 1)
        return dt_err_input(err, "%s: run %lld: a host row's weight %ld (at least 1)", db->path,
                            (long long)run, weight);
    sqlite3_stmt *s = db->st[ST_WORKER_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, worker);
    bind_text(s, 3, host);
    bind_text(s, 4, role);
    bind_real(s, 5, compute_s);
    bind_real(s, 6, comm_s);
    bind_real(s, 7, idle_s);
    bind_real(s, 8, bytes_sent);
    bind_real(s, 9, bytes_recv);
    bind_int(s, 10, steps);
    bind_int(s, 11, weight);
    return db_step(db, ST_WORKER_ADD, err, "storing a worker's totals", run);
}

dt_status results_memory_add(results_db_t *db, int64_t run, int worker, const char *role,
                             double params, double grads, double optimizer, double activations,
                             long weight, dt_err_t *err)
{
    DT_ASSERT(db && role);
    if (weight < 1)
        return dt_err_input(err, "%s: run %lld: a host row's weight %ld (at least 1)", db->path,
                            (long long)run, weight);
    sqlite3_stmt *s = db->st[ST_MEMORY_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, worker);
    bind_text(s, 3, role);
    bind_real(s, 4, params);
    bind_real(s, 5, grads);
    bind_real(s, 6, optimizer);
    bind_real(s, 7, activations);
    bind_int(s, 8, weight);
    return db_step(db, ST_MEMORY_ADD, err, "storing a host's memory", run);
}

dt_status results_privacy_add(results_db_t *db, int64_t run, long round, double epsilon,
                              double delta, dt_err_t *err)
{
    DT_ASSERT(db);
    sqlite3_stmt *s = db->st[ST_PRIVACY_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, round);
    bind_real(s, 3, isfinite(epsilon) ? epsilon : NAN);
    bind_real(s, 4, delta);
    return db_step(db, ST_PRIVACY_ADD, err, "storing a round's epsilon", run);
}

dt_status results_client_add(results_db_t *db, int64_t run, const results_client_t *c,
                             dt_err_t *err)
{
    DT_ASSERT(db && c);
    sqlite3_stmt *s = db->st[ST_CLIENT_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, c->client);
    bind_int(s, 3, c->rounds);
    bind_int(s, 4, c->samples);
    bind_int(s, 5, c->held_out);
    bind_real(s, 6, c->test_acc);
    bind_real(s, 7, c->test_loss);
    bind_int(s, 8, c->byzantine);
    return db_step(db, ST_CLIENT_ADD, err, "storing a client's figures", run);
}

dt_status results_staleness_add(results_db_t *db, int64_t run, long staleness, long count,
                                dt_err_t *err)
{
    DT_ASSERT(db);
    sqlite3_stmt *s = db->st[ST_STALENESS_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, staleness);
    bind_int(s, 3, count);
    return db_step(db, ST_STALENESS_ADD, err, "storing the staleness histogram", run);
}

dt_status results_label_hist_add(results_db_t *db, int64_t run, int client, int label, long count,
                                 dt_err_t *err)
{
    DT_ASSERT(db);
    sqlite3_stmt *s = db->st[ST_LABEL_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, client);
    bind_int(s, 3, label);
    bind_int(s, 4, count);
    return db_step(db, ST_LABEL_ADD, err, "storing a label histogram", run);
}

dt_status results_param_add(results_db_t *db, int64_t run, const char *key, const char *value,
                            double number, dt_err_t *err)
{
    DT_ASSERT(db && key);
    sqlite3_stmt *s = db->st[ST_PARAM_ADD];
    bind_int(s, 1, run);
    bind_text(s, 2, key);
    bind_text(s, 3, value);
    bind_real(s, 4, number);
    return db_step(db, ST_PARAM_ADD, err, "storing a parameter", run);
}

dt_status results_timeline_add(results_db_t *db, int64_t run, const char *host, const char *role,
                               int rank, const char *state, double start, double end, dt_err_t *err)
{
    DT_ASSERT(db);
    if (!state || (strcmp(state, "compute") && strcmp(state, "comm") && strcmp(state, "idle")))
        return dt_err_input(err,
                            "%s: run %lld: unknown timeline state '%s' (compute, comm or "
                            "idle)",
                            db->path, (long long)run, state ? state : "(null)");
    sqlite3_stmt *s = db->st[ST_TIMELINE_ADD];
    bind_int(s, 1, run);
    bind_text(s, 2, host);
    bind_text(s, 3, role);
    bind_int(s, 4, rank);
    bind_text(s, 5, state);
    bind_real(s, 6, start);
    bind_real(s, 7, end);
    return db_step(db, ST_TIMELINE_ADD, err, "storing a timeline interval", run);
}

dt_status results_message_add(results_db_t *db, int64_t run, const results_msg_end_t *src,
                              const results_msg_end_t *dst, double sent, double start, double done,
                              double bytes, dt_err_t *err)
{
    DT_ASSERT(db && src && dst);
    sqlite3_stmt *s = db->st[ST_MESSAGE_ADD];
    bind_int(s, 1, run);
    bind_text(s, 2, src->host);
    bind_text(s, 3, src->role);
    bind_int(s, 4, src->rank);
    bind_text(s, 5, dst->host);
    bind_text(s, 6, dst->role);
    bind_int(s, 7, dst->rank);
    bind_real(s, 8, sent);
    bind_real(s, 9, start);
    bind_real(s, 10, done);
    bind_real(s, 11, bytes);
    return db_step(db, ST_MESSAGE_ADD, err, "storing a message", run);
}

dt_status results_link_add(results_db_t *db, int64_t run, const char *link, double bytes,
                           long weight, dt_err_t *err)
{
    DT_ASSERT(db && link);
    if (weight < 1)
        return dt_err_input(err, "%s: run %lld: a link row's weight %ld (at least 1)", db->path,
                            (long long)run, weight);
    sqlite3_stmt *s = db->st[ST_LINK_ADD];
    bind_int(s, 1, run);
    bind_text(s, 2, link);
    bind_real(s, 3, bytes);
    bind_int(s, 4, weight);
    return db_step(db, ST_LINK_ADD, err, "storing a link's bytes", run);
}

dt_status results_energy_add(results_db_t *db, int64_t run, const results_energy_t *e,
                             dt_err_t *err)
{
    DT_ASSERT(db && e);
    sqlite3_stmt *s = db->st[ST_ENERGY_ADD];
    bind_int(s, 1, run);
    bind_int(s, 2, e->hosts);
    bind_real(s, 3, e->host_joules);
    bind_int(s, 4, e->link_ports);
    bind_real(s, 5, e->link_joules);
    bind_real(s, 6, e->joules_per_step);
    bind_real(s, 7, e->joules_per_sample);
    bind_real(s, 8, e->dollars);
    bind_real(s, 9, e->dollars_per_sample);
    bind_real(s, 10, e->dollars_to_target);
    return db_step(db, ST_ENERGY_ADD, err, "storing the energy", run);
}

const char *const results_part_names[RESULTS_PART_COUNT] = {
    "compute", "recompute", "optimizer", "tensor", "context",
    "expert",  "pipeline",  "data",      "bubble", "wait"};

dt_status results_breakdown_add(results_db_t *db, int64_t run,
                                const double seconds[RESULTS_PART_COUNT], dt_err_t *err)
{
    DT_ASSERT(db && seconds);
    for (int k = 0; k < RESULTS_PART_COUNT; k++) {
        sqlite3_stmt *s = db->st[ST_BREAKDOWN_ADD];
        bind_int(s, 1, run);
        bind_text(s, 2, results_part_names[k]);
        bind_real(s, 3, seconds[k]);
        dt_status st = db_step(db, ST_BREAKDOWN_ADD, err, "storing the breakdown", run);
        if (st)
            return st;
    }
    return DT_OK;
}

void results_breakdown_line(const double seconds[RESULTS_PART_COUNT], const char *unit, char *buf,
                            size_t n)
{
    double step = 0;
    for (int k = 0; k < RESULTS_PART_COUNT; k++)
        step += seconds[k];
    int at = snprintf(buf, n, "%s %.6g s =", unit, step);
    const char *sep = "";
    for (int k = 0; k < RESULTS_PART_COUNT && at > 0 && (size_t)at < n; k++) {
        if (!(seconds[k] > 0))
            continue;
        at += snprintf(buf + at, n - (size_t)at, "%s %s %.4g s (%.1f%%)", sep,
                       results_part_names[k], seconds[k], step > 0 ? 100 * seconds[k] / step : 0);
        sep = " +";
    }
}

dt_status results_fault_add(results_db_t *db, int64_t run, double sim_time, const char *kind,
                            const char *target, const char *detail, dt_err_t *err)
{
    DT_ASSERT(db && kind);
    sqlite3_stmt *s = db->st[ST_FAULT_ADD];
    bind_int(s, 1, run);
    bind_real(s, 2, sim_time);
    bind_text(s, 3, kind);
    bind_text(s, 4, target);
    bind_text(s, 5, detail);
    return db_step(db, ST_FAULT_ADD, err, "storing a fault", run);
}

dt_status results_tx_begin(results_db_t *db, dt_err_t *err)
{
    DT_ASSERT(db);
    return db_step(db, ST_BEGIN, err, "beginning a transaction", -1);
}

dt_status results_tx_commit(results_db_t *db, dt_err_t *err)
{
    DT_ASSERT(db);
    return db_step(db, ST_COMMIT, err, "committing", -1);
}

dt_status results_tx_rollback(results_db_t *db, dt_err_t *err)
{
    DT_ASSERT(db);
    /* SQLite may already have rolled back on the error that brought the caller here. */
    if (sqlite3_get_autocommit(db->h))
        return DT_OK;
    return db_step(db, ST_ROLLBACK, err, "rolling back", -1);
}

dt_status results_run_end(results_db_t *db, int64_t run, const char *status,
                          const results_summary_t *summary, dt_err_t *err)
{
    DT_ASSERT(db);
    static const char *const ends[] = {"finished",    "failed",  "diverged",
                                       "interrupted", "stalled", "collapsed"};
    int known = 0;
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++)
        known |= status && strcmp(status, ends[i]) == 0;
    if (!known)
        return dt_err_input(err,
                            "%s: run %lld: cannot end with status '%s' (finished, failed, "
                            "diverged, interrupted, stalled or collapsed)",
                            db->path, (long long)run, status ? status : "(null)");

    int own_tx = sqlite3_get_autocommit(db->h);
    dt_status st;
    if (own_tx && (st = results_tx_begin(db, err)) != DT_OK)
        return st;

    sqlite3_stmt *s = db->st[ST_RUN_END];
    bind_int(s, 1, run);
    bind_text(s, 2, status);
    if ((st = db_step(db, ST_RUN_END, err, "ending", run)) != DT_OK)
        goto fail;
    if (sqlite3_changes(db->h) == 0) {
        s = db->st[ST_RUN_STATUS];
        bind_int(s, 1, run);
        if (sqlite3_step(s) == SQLITE_ROW)
            st = dt_err_input(err, "%s: run %lld already ended as '%s'", db->path, (long long)run,
                              (const char *)sqlite3_column_text(s, 0));
        else
            st = dt_err_input(err, "%s: no run %lld", db->path, (long long)run);
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        goto fail;
    }
    if (summary) {
        s = db->st[ST_SUMMARY_ADD];
        bind_int(s, 1, run);
        bind_real(s, 2, summary->final_accuracy);
        bind_real(s, 3, summary->final_loss);
        bind_real(s, 4, summary->sim_time);
        bind_real(s, 5, summary->time_to_target);
        bind_real(s, 6, summary->target_accuracy);
        bind_real(s, 7, summary->total_bytes);
        bind_real(s, 8, summary->compute_share);
        bind_real(s, 9, summary->comm_share);
        bind_real(s, 10, summary->idle_share);
        bind_int(s, 11, summary->steps);
        if ((st = db_step(db, ST_SUMMARY_ADD, err, "storing the summary", run)) != DT_OK)
            goto fail;
    }
    if (own_tx && (st = results_tx_commit(db, err)) != DT_OK)
        goto fail;
    return DT_OK;
fail:
    if (own_tx)
        results_tx_rollback(db, NULL);
    return st;
}
