/* dtsim serve: the JSON endpoints against the database they read. A small database is written
 * here with SQLite, dtsim serve is started on a free loopback port (--port 0), the answers are
 * fetched over a plain socket and compared with the rows SQLite holds. Built without
 * libmicrohttpd, the command must refuse in one line with exit code 2. */
#define _DEFAULT_SOURCE /* mkstemp */
#include <check.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void exec_sql(sqlite3 *h, const char *sql)
{
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* A database with two runs (one still running) and their evals rows. */
static void make_db(const char *path)
{
    sqlite3 *h;
    unlink(path);
    ck_assert_int_eq(sqlite3_open(path, &h), SQLITE_OK);
    exec_sql(h, "CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT, strategy TEXT,"
                " status TEXT, sweep TEXT);"
                "CREATE TABLE evals (run INTEGER, sim_time REAL, step INTEGER, test_acc REAL,"
                " test_loss REAL, perplexity REAL);"
                "INSERT INTO runs VALUES (1, 'a \"quoted\" run', 'sync-ps', 'finished', 's');"
                "INSERT INTO runs VALUES (2, 'b', 'allreduce', 'running', NULL);"
                /* run 2 a language model's: a perplexity */
                "INSERT INTO evals VALUES (1, 0.5, 10, 0.25, 1.5, NULL), (1, 1.5, 30, 0.75, 0.5,"
                " NULL), (1, 1.0, 20, 0.5, 1.0, NULL), (2, 0.25, 5, 0.125, 2.0, 7.389);"
                "INSERT INTO runs VALUES (3, 'lesson-bandwidth/x', 'sync-ps', 'finished', NULL);"
                "CREATE TABLE timeline (run INTEGER, host TEXT, role TEXT, rank INTEGER,"
                " state TEXT, start REAL, end REAL);"
                "INSERT INTO timeline VALUES (1, 'h1', 'worker', 0, 'comm', 0.5, 0.75),"
                " (1, 'h0', 'server', 0, 'compute', 0, 0.5), (2, 'h9', 'worker', 1, 'idle', 0, 1);"
                "CREATE TABLE faults (run INTEGER, sim_time REAL, kind TEXT, target TEXT,"
                " detail TEXT);"
                "INSERT INTO faults VALUES (1, 0.125, 'link-degrade', 'l0', 'a \"b\"');");
    sqlite3_close(h);
}

/* METHOD PATH (with extra header lines) to 127.0.0.1:PORT; returns the whole answer
 * (headers and body), malloc'd. */
static char *http_req(int port, const char *method, const char *path, const char *headers)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[256];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\n%s%s\r\n", method, path,
                     strstr(headers, "Host:") ? "" : "Host: 127.0.0.1\r\n", headers);
    ck_assert_int_eq(write(fd, req, (size_t)n), n);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    ssize_t got;
    while ((got = read(fd, out + len, cap - len - 1)) > 0)
        len += (size_t)got;
    out[len] = 0;
    close(fd);
    return out;
}

static char *http_get(int port, const char *path)
{
    return http_req(port, "GET", path, "");
}

static pid_t server;

/* Starts dtsim serve --port 0 on DB; returns the port it printed. */
static int start_server(const char *db)
{
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    server = fork();
    ck_assert_int_ge(server, 0);
    if (server == 0) {
        dup2(p[1], 1);
        close(p[0]);
        execl(DTSIM_BINARY, DTSIM_BINARY, "serve", "--db", db, "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    FILE *f = fdopen(p[0], "r");
    char line[256] = "";
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    fclose(f);
    int port = 0;
    ck_assert_int_eq(sscanf(line, "dtsim serve: http://127.0.0.1:%d/", &port), 1);
    return port;
}

static void stop_server(void)
{
    int status;
    kill(server, SIGTERM);
    ck_assert_int_eq(waitpid(server, &status, 0), server);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#ifdef DTSIM_HAVE_MHD
START_TEST(serve_runs_and_evals_match_the_database)
{
    char db[] = "/tmp/dtsim-test-serve-XXXXXX";
    int fd = mkstemp(db);
    ck_assert_int_ge(fd, 0);
    close(fd);
    make_db(db);
    int port = start_server(db);

    char *runs = http_get(port, "/api/runs");
    ck_assert_ptr_nonnull(strstr(runs, "200 OK"));
    ck_assert_ptr_nonnull(strstr(runs, "\r\n\r\n[{\"id\":1,\"name\":\"a \\\"quoted\\\" run\","
                                       "\"strategy\":\"sync-ps\",\"status\":\"finished\","
                                       "\"sweep\":\"s\",\"lm\":0},{\"id\":2,\"name\":\"b\","
                                       "\"strategy\":\"allreduce\",\"status\":\"running\","
                                       "\"sweep\":null,\"lm\":1},{\"id\":3,"
                                       "\"name\":\"lesson-bandwidth/x\",\"strategy\":"
                                       "\"sync-ps\",\"status\":\"finished\",\"sweep\":null,"
                                       "\"lm\":0}]"));
    free(runs);

    /* run 1's rows in simulated-time order, as SQLite gives them */
    char *evals = http_get(port, "/api/evals?run=1");
    const char *body = strstr(evals, "\r\n\r\n");
    ck_assert_ptr_nonnull(body);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT sim_time, test_acc, step, test_loss FROM evals"
                                        " WHERE run = 1 ORDER BY sim_time",
                                        -1, &st, NULL),
                     SQLITE_OK);
    const char *p = body + 4;
    ck_assert_int_eq(*p++, '[');
    int rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        /* a classifier's: no perplexity */
        double t, acc, step, loss;
        int used = 0;
        ck_assert_int_eq(
            sscanf(p, "%*[,][%lf,%lf,%lf,%lf,null]%n", &t, &acc, &step, &loss, &used) == 4 ||
                sscanf(p, "[%lf,%lf,%lf,%lf,null]%n", &t, &acc, &step, &loss, &used) == 4,
            1);
        ck_assert_double_eq(t, sqlite3_column_double(st, 0));
        ck_assert_double_eq(acc, sqlite3_column_double(st, 1));
        ck_assert_double_eq(step, sqlite3_column_double(st, 2));
        ck_assert_double_eq(loss, sqlite3_column_double(st, 3));
        p += used;
        rows++;
    }
    ck_assert_int_eq(rows, 3);
    ck_assert_str_eq(p, "]");
    sqlite3_finalize(st);
    sqlite3_close(h);
    free(evals);

    char *bad = http_get(port, "/api/evals?run=x");
    ck_assert_ptr_nonnull(strstr(bad, " 400 "));
    free(bad);
    /* the timeline by start, the faults, a lesson's text by the run's name */
    char *tl = http_get(port, "/api/timeline?run=1");
    ck_assert_ptr_nonnull(strstr(tl, "\r\n\r\n[[\"h0\",\"server\",0,\"compute\",0,0.5],"
                                     "[\"h1\",\"worker\",0,\"comm\",0.5,0.75]]"));
    free(tl);
    char *fl = http_get(port, "/api/faults?run=1");
    ck_assert_ptr_nonnull(strstr(fl, "\r\n\r\n[[0.125,\"link-degrade\",\"l0\",\"a \\\"b\\\"\"]]"));
    free(fl);
    char *ls = http_get(port, "/api/lesson?run=3");
    ck_assert_ptr_nonnull(strstr(ls, "\r\n\r\n{\"lesson\":\"bandwidth\",\"text\":"
                                     "\"# Communication overhead against bandwidth\\u000a"));
    free(ls);
    ls = http_get(port, "/api/lesson?run=1");
    ck_assert_ptr_nonnull(strstr(ls, "\r\n\r\n{\"lesson\":null}"));
    free(ls);
    /* run 2 publishes nothing: no state, and a link change is refused */
    char *lv = http_get(port, "/api/live?run=2");
    ck_assert_ptr_nonnull(strstr(lv, " 404 "));
    free(lv);
    char *post = http_req(port, "POST", "/api/link?run=2&link=l0&bw=1Gbps", "");
    ck_assert_ptr_nonnull(strstr(post, " 403 ")); /* no X-Dtsim header */
    free(post);
    post = http_req(port, "POST", "/api/link?run=2&link=l0&bw=1Gbps", "X-Dtsim: 1\r\n");
    ck_assert_ptr_nonnull(strstr(post, " 404 "));
    free(post);
    post = http_req(port, "POST", "/api/link?run=2&link=l0&bw=1Gbps",
                    "Host: evil.example\r\nX-Dtsim: 1\r\n"); /* DNS rebinding */
    ck_assert_ptr_nonnull(strstr(post, " 403 "));
    free(post);
    post = http_req(port, "POST", "/api/link?run=2&link=l0&bw=fast", "X-Dtsim: 1\r\n");
    ck_assert_ptr_nonnull(strstr(post, " 400 "));
    free(post);
    /* run 2 published: a link it names (l1: both directions of a split duplex link) is asked
     * for, the command file written; one it does not name is refused */
    char state[300], cmd[300];
    snprintf(state, sizeof state, "%s.live-2.json", db);
    snprintf(cmd, sizeof cmd, "%s.live-2.cmd", db);
    FILE *sf = fopen(state, "w");
    ck_assert_ptr_nonnull(sf);
    fputs("{\"hosts\":[{\"name\":\"worker-0\"}],\"link_names\":[\"l0\",\"l1_UP\","
          "\"l1_DOWN\"]}",
          sf);
    fclose(sf);
    post = http_req(port, "POST", "/api/link?run=2&link=l2&bw=1Gbps", "X-Dtsim: 1\r\n");
    ck_assert_msg(strstr(post, " 404 ") && strstr(post, "no link, node or host"), "%s", post);
    free(post);
    ck_assert_int_ne(access(cmd, F_OK), 0);
    post = http_req(port, "POST", "/api/link?run=2&link=l1&bw=1Gbps", "X-Dtsim: 1\r\n");
    ck_assert_msg(strstr(post, " 202 "), "%s", post);
    free(post);
    char *asked = NULL;
    size_t asked_len = 0;
    FILE *cf = fopen(cmd, "r");
    ck_assert_ptr_nonnull(cf);
    ck_assert_int_gt(getline(&asked, &asked_len, cf), 0);
    fclose(cf);
    ck_assert_str_eq(asked, "link l1 1Gbps\n");
    free(asked);
    unlink(cmd);
    unlink(state);
    /* a run the database does not hold: 404, not an empty 200 */
    static const char *const unknown[] = {"/api/evals?run=99", "/api/timeline?run=99",
                                          "/api/faults?run=99", "/api/lesson?run=99"};
    for (int i = 0; i < 4; i++) {
        char *u = http_get(port, unknown[i]);
        ck_assert_msg(strstr(u, " 404 ") && strstr(u, "no run of that id"), "%s: %s", unknown[i],
                      u);
        free(u);
    }
    /* a foreign name rebound to 127.0.0.1 reads nothing (DNS rebinding) */
    static const char *const paths[] = {"/", "/api/runs", "/api/evals?run=1"};
    for (int i = 0; i < 3; i++) {
        char *f = http_req(port, "GET", paths[i], "Host: evil.example:8037\r\n");
        ck_assert_msg(strstr(f, " 403 "), "%s: %s", paths[i], f);
        free(f);
    }
    char *local = http_req(port, "GET", "/api/runs", "Host: localhost:8037\r\n");
    ck_assert_ptr_nonnull(strstr(local, " 200 "));
    free(local);
    char *page = http_get(port, "/");
    ck_assert_ptr_nonnull(strstr(page, "fetch(\"/api/runs\")"));
    free(page);
    stop_server();
    unlink(db);
}
END_TEST
/* The same run stored with its rows alike as one weighted row (run.group_rows = yes) and a
 * row per host and link (no, the cli suite's host_rows_weighted_read_alike): every endpoint
 * answers the same bytes from either file. */
START_TEST(serve_answers_alike_for_weighted_rows)
{
    char dir[] = "/tmp/dtsim-test-serve-rows-XXXXXX", cmd[2048], db[2][128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
             DTSIM_BINARY " profile transformer --layers 2 --hidden 64 --heads 2 --seq 32 "
                          "--vocab 100 --out %s/p.ini > /dev/null && printf '[run]\nname = w\n"
                          "steps = 2\neval_every = 1\n[model]\narch = profile:%s/p.ini\n"
                          "batch = 4\n[cluster]\nplatform = multi-rack\nworkers = 12\n"
                          "racks = 6\n[strategy]\nkind = pipeline\ntensor = 2\nstages = 2\n"
                          "data_parallel = 3\nmicro_batches = 2\ntensor_comm = formula\n"
                          "tensor_members = one\ndp_comm = formula\ndata_members = one\n' "
                          "> %s/w.ini",
             dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    static const char *const how[2] = {"yes", "no"};
    char *body[2][4];
    static const char *const api[4] = {"/api/runs", "/api/evals?run=1", "/api/timeline?run=1",
                                       "/api/faults?run=1"};
    for (int k = 0; k < 2; k++) {
        snprintf(db[k], sizeof db[k], "%s/%s.db", dir, how[k]);
        snprintf(cmd, sizeof cmd,
                 DTSIM_BINARY " run %s/w.ini --db %s --set run.group_rows=%s > /dev/null", dir,
                 db[k], how[k]);
        ck_assert_int_eq(system(cmd), 0);
        int port = start_server(db[k]);
        for (int a = 0; a < 4; a++) {
            char *answer = http_get(port, api[a]);
            char *b = strstr(answer, "\r\n\r\n");
            ck_assert_msg(strstr(answer, "200 OK") && b, "%s: %s", api[a], answer);
            body[k][a] = strdup(b + 4);
            free(answer);
        }
        stop_server();
    }
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db[0], &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(
        sqlite3_prepare_v2(h, "SELECT count(*), sum(weight) FROM workers", -1, &st, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_int_lt(sqlite3_column_int(st, 0), sqlite3_column_int(st, 1)); /* rows weighted */
    sqlite3_finalize(st);
    sqlite3_close(h);
    for (int a = 0; a < 4; a++) {
        /* every endpoint but the faults (none) answers rows */
        ck_assert_msg(a == 3 || strlen(body[0][a]) > 2, "%s: %s", api[a], body[0][a]);
        ck_assert_msg(!strcmp(body[0][a], body[1][a]), "%s: %.300s against %.300s", api[a],
                      body[0][a], body[1][a]);
        free(body[0][a]);
        free(body[1][a]);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST
#else
START_TEST(serve_without_libmicrohttpd_refuses)
{
    int status = system(DTSIM_BINARY " serve --db /nonexistent.db 2>/dev/null");
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2);
}
END_TEST
#endif

START_TEST(serve_rejects_bad_port_and_database)
{
    int status = system(DTSIM_BINARY " serve --port 70000 2>/dev/null");
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    status = system(DTSIM_BINARY " serve --db /nonexistent/dtsim.db 2>/dev/null");
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("serve");
    tcase_set_timeout(tc, 30);
#ifdef DTSIM_HAVE_MHD
    tcase_add_test(tc, serve_runs_and_evals_match_the_database);
    tcase_add_test(tc, serve_answers_alike_for_weighted_rows);
#else
    tcase_add_test(tc, serve_without_libmicrohttpd_refuses);
#endif
    tcase_add_test(tc, serve_rejects_bad_port_and_database);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
