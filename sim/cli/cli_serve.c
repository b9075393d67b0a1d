/* dtsim serve: a web page about the runs of a results database, on 127.0.0.1 only.
 *
 * The server reads the database and nothing else: no SimGrid here. A run under way shows as its
 * evals rows land (the page polls /api/evals every two seconds); a stored run replays from the
 * same rows at a pace the page chooses. Built only with libmicrohttpd (DTSIM_HAVE_MHD). */
#include "cli.h"
#include "cli_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DTSIM_HAVE_MHD
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <unistd.h>

/* A growing text buffer for one JSON answer. */
typedef struct {
    char *text;
    size_t len, cap;
    int failed;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *grown = realloc(b->text, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->text = grown;
        b->cap = cap;
    }
    memcpy(b->text + b->len, s, n);
    b->len += n;
    b->text[b->len] = 0;
}

static void buf_str(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

/* Appends S as a JSON string, quotes included (NULL: null). */
static void buf_json_string(buf_t *b, const char *s)
{
    if (!s) {
        buf_str(b, "null");
        return;
    }
    buf_str(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            buf_add(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            buf_str(b, esc);
        } else {
            buf_add(b, (const char *)&c, 1);
        }
    }
    buf_str(b, "\"");
}

/* Appends a number; NULL and non-finite values become null. */
static void buf_json_number(buf_t *b, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        buf_str(b, "null");
        return;
    }
    char num[40];
    snprintf(num, sizeof num, "%.17g", sqlite3_column_double(st, col));
    buf_str(b, num);
}

static const char *serve_db_path;

/* /api/runs: [{"id":..,"name":..,"strategy":..,"status":..,"sweep":..}, ...] by id. */
static int json_runs(sqlite3 *db, buf_t *b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id, name, strategy, status, sweep FROM runs ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    buf_str(b, "[");
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char id[32];
        snprintf(id, sizeof id, "%s{\"id\":%lld,\"name\":", n++ ? "," : "",
                 (long long)sqlite3_column_int64(st, 0));
        buf_str(b, id);
        buf_json_string(b, (const char *)sqlite3_column_text(st, 1));
        buf_str(b, ",\"strategy\":");
        buf_json_string(b, (const char *)sqlite3_column_text(st, 2));
        buf_str(b, ",\"status\":");
        buf_json_string(b, (const char *)sqlite3_column_text(st, 3));
        buf_str(b, ",\"sweep\":");
        buf_json_string(b, (const char *)sqlite3_column_text(st, 4));
        buf_str(b, "}");
    }
    buf_str(b, "]");
    sqlite3_finalize(st);
    return 0;
}

/* /api/evals?run=N: [[sim_time, test_acc, step], ...] in simulated-time order. */
static int json_evals(sqlite3 *db, long long run, buf_t *b)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT sim_time, test_acc, step FROM evals WHERE run = ?1"
                           " ORDER BY sim_time, step",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, run);
    buf_str(b, "[");
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        buf_str(b, n++ ? ",[" : "[");
        buf_json_number(b, st, 0);
        buf_str(b, ",");
        buf_json_number(b, st, 1);
        buf_str(b, ",");
        buf_json_number(b, st, 2);
        buf_str(b, "]");
    }
    buf_str(b, "]");
    sqlite3_finalize(st);
    return 0;
}

#include "serve_page.h"

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type,
                              char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_len, void **state)
{
    (void)cls, (void)version, (void)upload, (void)upload_len, (void)state;
    static char not_found[] = "not found\n", failed[] = "database error\n",
                bad[] = "bad request\n";
    if (strcmp(method, "GET"))
        return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", bad, strlen(bad),
                      MHD_RESPMEM_PERSISTENT);
    if (!strcmp(url, "/"))
        return answer(c, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)serve_page_html,
                      sizeof serve_page_html - 1, MHD_RESPMEM_PERSISTENT);
    int runs = !strcmp(url, "/api/runs"), evals = !strcmp(url, "/api/evals");
    if (!runs && !evals)
        return answer(c, MHD_HTTP_NOT_FOUND, "text/plain", not_found, strlen(not_found),
                      MHD_RESPMEM_PERSISTENT);
    long long run = 0;
    if (evals) {
        const char *arg = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "run");
        char *end;
        run = arg ? strtoll(arg, &end, 10) : 0;
        if (!arg || !*arg || *end || run < 1)
            return answer(c, MHD_HTTP_BAD_REQUEST, "text/plain", bad, strlen(bad),
                          MHD_RESPMEM_PERSISTENT);
    }
    sqlite3 *db = NULL;
    buf_t b = {0};
    int rc = sqlite3_open_v2(serve_db_path, &db, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        rc = runs ? json_runs(db, &b) : json_evals(db, run, &b);
    }
    sqlite3_close(db);
    if (rc != SQLITE_OK || b.failed || !b.text) {
        free(b.text);
        return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", failed, strlen(failed),
                      MHD_RESPMEM_PERSISTENT);
    }
    return answer(c, MHD_HTTP_OK, "application/json", b.text, b.len, MHD_RESPMEM_MUST_FREE);
}

static volatile sig_atomic_t serve_stop;
static void on_signal(int sig) { (void)sig, serve_stop = 1; }
#endif

static void serve_usage(FILE *out)
{
    fprintf(out,
            "usage: dtsim serve [--db PATH] [--port N]\n"
            "A web page about the runs of a results database, on http://127.0.0.1:N/ only:\n"
            "accuracy against simulated time for every run, a colour per strategy, redrawn\n"
            "every two seconds (a run under way grows as its evals rows land), and any run\n"
            "replayed from its evals rows. JSON: /api/runs, /api/evals?run=ID.\n"
            "  --db PATH   results database (default " DEFAULT_DB ")\n"
            "  --port N    TCP port on 127.0.0.1 (default 8037; 0: any free port, printed)\n"
            "Needs libmicrohttpd at configure time. Stops on Ctrl-C.\n");
}

int cli_serve(int argc, char **argv)
{
    const char *db_path = DEFAULT_DB;
    long port = 8037;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            serve_usage(stdout);
            return CLI_EXIT_OK;
        } else if (!strcmp(argv[i], "--db") && i + 1 < argc) {
            db_path = argv[++i];
        } else if (!strcmp(argv[i], "--port") && i + 1 < argc) {
            if (cli_parse_long(argv[++i], 0, 65535, &port))
                return cli_usage_error("serve", "--port: \"%s\" is not a port (0 to 65535)",
                                       argv[i]);
        } else {
            return cli_usage_error("serve", "unknown or incomplete option \"%s\"", argv[i]);
        }
    }
#ifndef DTSIM_HAVE_MHD
    (void)db_path;
    fprintf(stderr, "dtsim serve: not built (no libmicrohttpd found at configure time; "
                    "install libmicrohttpd-dev and configure again)\n");
    return CLI_EXIT_USAGE;
#else
    sqlite3 *probe = NULL;
    int rc = sqlite3_open_v2(db_path, &probe, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(probe, "SELECT id FROM runs LIMIT 1", NULL, NULL, NULL);
    sqlite3_close(probe);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "dtsim serve: %s: not a dtsim results database\n", db_path);
        return CLI_EXIT_USAGE;
    }
    serve_db_path = db_path;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL, on_request, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "dtsim serve: --port: cannot listen on 127.0.0.1:%ld\n", port);
        return CLI_EXIT_USAGE;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("dtsim serve: http://127.0.0.1:%u/ (%s)\n", info ? info->port : (unsigned)port,
           db_path);
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    while (!serve_stop)
        pause();
    MHD_stop_daemon(d);
    return CLI_EXIT_OK;
#endif
}
