/* The dtsim command as a user meets it: exit codes (0 ok, 2 bad input or usage, 1 failed
 * run), one clear error line naming file, line and key, `check` output that loads back to
 * the same configuration, and a small run that lands in the results database with its
 * configuration, versions and metrics, next to earlier runs that stay intact; a [sweep] that
 * `check` lists and `run -j` runs as parallel processes into one database, and stops on a
 * signal. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_checks.h"
#include "goodput.h"

static char dir[] = "/tmp/dtsim-cli-XXXXXX";
static char out_path[256], err_path[256];

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
}

static char *slurp(const char *path)
{
    return cli_slurp(path);
}

/* Starts dtsim with args (no shell) and returns at once with its pid; stdout and stderr go
 * to the same files as dtsim()'s. */
static pid_t dtsim_start(const char *const *args)
{
    const char *argv[32];
    cli_argv(DTSIM_BINARY, args, argv);
    return cli_start_in(NULL, out_path, err_path, argv);
}

/* Runs dtsim with args (no shell); stdout and stderr go to files. Returns the exit code. */
static int dtsim(const char *const *args)
{
    return cli_wait(dtsim_start(args));
}

/* PRAGMA integrity_check of an open database reads "ok". */
static void assert_intact(sqlite3 *h)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
}

static void write_file(const char *path, const char *text)
{
    cli_write_file(path, text);
}

/* stderr is exactly one line and contains every needle. */
static void one_error_line(const char *needle1, const char *needle2)
{
    cli_one_error_line(err_path, needle1, needle2);
}

/* stderr is exactly one line and starts with prefix. */
static void one_error_line_starting(const char *prefix)
{
    char *e = slurp(err_path);
    char *nl = strchr(e, '\n');
    ck_assert_msg(nl && nl[1] == 0, "expected one error line, got: %s", e);
    ck_assert_msg(!strncmp(e, prefix, strlen(prefix)), "expected \"%s...\", got: %s", prefix, e);
    free(e);
}

static const char *tiny =
    "[run]\nsteps = 6\neval_every = 3\n[model]\narch = logreg\nbatch = 16\n"
    "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\nsynthetic_dim = 16\n"
    "synthetic_classes = 4\n[cluster]\nworkers = 2\n[strategy]\nkind = allreduce\n";

START_TEST(usage_and_versions)
{
    ck_assert_int_eq(dtsim((const char *[]){"--version", NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "SimGrid 3.32"), "%s", o);
    /* the OpenBLAS kernels: AVX-512 ones exactly when the kernel says the CPU has AVX-512
     * (F, BW, DQ, VL) and no OPENBLAS_CORETYPE of the user's decides otherwise */
    ck_assert_msg(strstr(o, "\nOpenBLAS ") && strstr(o, ", kernels "), "%s", o);
    if (!getenv("OPENBLAS_CORETYPE")) {
        FILE *ci = fopen("/proc/cpuinfo", "r");
        if (ci) {
            static char line[1 << 14];
            int avx512 = 0;
            while (fgets(line, sizeof line, ci))
                if (!strncmp(line, "flags", 5)) {
                    avx512 = strstr(line, " avx512f") && strstr(line, " avx512bw") &&
                             strstr(line, " avx512dq") && strstr(line, " avx512vl");
                    break;
                }
            fclose(ci);
            int avx512_kernels = strstr(o, "kernels SkylakeX") || strstr(o, "kernels Cooperlake") ||
                                 strstr(o, "kernels SapphireRapids");
            ck_assert_msg(avx512 == !!avx512_kernels, "AVX-512: %d, but %s", avx512, o);
        }
    }
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"--help", NULL}), 0);
    ck_assert_int_eq(dtsim((const char *[]){"run", "--help", NULL}), 0);
    /* each command's help describes that command (bench sim's once described check's) */
    ck_assert_int_eq(dtsim((const char *[]){"bench", "sim", "--help", NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, "usage: dtsim bench sim ") && strstr(o, "the simulation's own cost") &&
                      !strstr(o, "Validates"),
                  "%s", o);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"run", "--help", NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, "  --resume "), "%s", o);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"frobnicate", NULL}), 2);
    one_error_line("frobnicate", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"run", NULL}), 2);
    one_error_line("missing SCENARIO", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"check", "--bogus", "x.ini", NULL}), 2);
    one_error_line("--bogus", NULL);
}
END_TEST

START_TEST(bad_scenarios_exit_2_with_file_line_key)
{
    char path[300];
    snprintf(path, sizeof path, "%s/bad.ini", dir);
    write_file(path, "[run]\nsteps = 10\n[cluster]\nbandwith = 10Gbps\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, NULL}), 2);
    one_error_line("bad.ini:4: cluster.bandwith", "did you mean bandwidth");

    write_file(path, "[cluster]\nbandwidth = 10Gbs\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("bad.ini:2: cluster.bandwidth", "Gbs");

    write_file(path, "[cluster]\nplatform = evil.so\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, NULL}), 2);
    one_error_line("bad.ini:2: cluster.platform", ".so");

    write_file(path, "[cluster]\nplatform = edge\n[strategy]\nkind = allreduce\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("edge", "allreduce");

    ck_assert_int_eq(dtsim((const char *[]){"run", "/nonexistent/x.ini", NULL}), 2);
    one_error_line("/nonexistent/x.ini", NULL);

    write_file(path, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--set", "model.lr=-1", NULL}), 2);
    one_error_line("--set model.lr", NULL);

    /* gradient buckets over a pipeline's replicas are plain all-reduces, not ZeRO's */
    write_file(path, "[model]\narch = mlp\n[cluster]\nworkers = 4\n[strategy]\n"
                     "kind = pipeline\nstages = 2\ndata_parallel = 2\nshard_optimizer = yes\n"
                     "bucket_mb = 25\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("bad.ini:10: strategy.bucket_mb", "shard_optimizer");

    /* the interleaved schedule goes through the chunks S micro-batches at a time */
    write_file(path, "[model]\nbatch = 24\nhidden = 16,12,12\n[strategy]\nkind = pipeline\n"
                     "micro_batches = 3\npipeline_schedule = interleaved\nvirtual_stages = 2\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, NULL}), 2);
    one_error_line("bad.ini:6: strategy.micro_batches", "multiple of stages = 2");
}
END_TEST

/* Platform files SimGrid would end the process on (SIGABRT, or exit 1 with its own message)
 * and platforms it takes but no run can use: `check` and `run` give one line naming the
 * scenario's cluster.platform, the XML file and its line, exit 2, and `run` writes no row. */
/* Control bytes from the input are written \xNN in an error line: one line, no escape
 * sequence reaching the terminal; a path with a newline is quoted on one line. */
/* The results database: read commands never make one, an empty --db is refused, another
 * program's SQLite file is refused untouched (its journal mode kept), and the default
 * database's folder is made when missing. */
/* An IDX file of unsigned bytes: dims[0..n) big-endian after the magic, then zeros. */
static void write_idx(const char *path, int n, const unsigned *dims)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    unsigned char head[4] = {0, 0, 0x08, (unsigned char)n};
    fwrite(head, 1, 4, f);
    size_t total = 1;
    for (int i = 0; i < n; i++) {
        unsigned char d[4] = {(unsigned char)(dims[i] >> 24), (unsigned char)(dims[i] >> 16),
                              (unsigned char)(dims[i] >> 8), (unsigned char)dims[i]};
        fwrite(d, 1, 4, f);
        total *= dims[i];
    }
    for (size_t i = 0; i < total; i++)
        fputc((int)(i % 10) * (n == 1), f); /* labels 0..9 */
    fclose(f);
}

/* What a run would meet, `check` meets first: a model the data's inputs do not fit, a model
 * or a worker count this machine's memory cannot hold; and data that disagrees with itself
 * (training and test images of two shapes, a FIFO in place of a file) is one line naming
 * data.source, never an assertion or a wait. */
START_TEST(model_data_and_memory_are_checked_up_front)
{
    char ini[300], text[1024];
    snprintf(ini, sizeof ini, "%s/m.ini", dir);
    const char *arch = strstr(tiny, "arch = logreg\n");
    ck_assert_ptr_nonnull(arch);
    int head = (int)(arch - tiny);
    const char *rest = arch + strlen("arch = logreg\n");
    snprintf(text, sizeof text, "%.*sarch = cnn\nkernel = 3\n%s", head, tiny, rest);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("m.ini:5: model.arch: cnn: input 1x16 does not fit",
                   "the inputs of data.source = synthetic");
    snprintf(text, sizeof text, "%.*sarch = mlp\nhidden = 1048576,1048576\n%s", head, tiny, rest);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("m.ini:6: model.hidden: 1.1e+12 parameters in 4 buffers",
                   "GB; this machine has");
    /* 50 M parameters (0.8 GB a node) fit one node of any machine this runs on, not 100,000 */
    snprintf(text, sizeof text, "%.*sarch = mlp\nhidden = 4096,4096,4096,4096\n%s", head, tiny,
             rest);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "cluster.workers=100000",
                                            "--set", "data.train_samples=200000", NULL}),
                     2);
    one_error_line("--set cluster.workers: 5.04e+07 parameters", "on each of 100000 nodes need");

    /* a data folder whose test images are 32x32 while the training ones are 28x28 */
    char data[300], path[400];
    snprintf(data, sizeof data, "%s/idx", dir);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    unsigned tr[3] = {20, 28, 28}, te[3] = {10, 32, 32}, trl[1] = {20}, tel[1] = {10};
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", data);
    write_idx(path, 3, tr);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", data);
    write_idx(path, 1, trl);
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", data);
    write_idx(path, 3, te);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte", data);
    write_idx(path, 1, tel);
    snprintf(text, sizeof text,
             "[run]\nsteps = 2\n[model]\narch = logreg\n[data]\nsource = %s\n[cluster]\n"
             "workers = 2\n[strategy]\nkind = allreduce\n",
             data);
    write_file(ini, text);
    char db[300];
    snprintf(db, sizeof db, "%s/m.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line("m.ini:6: data.source: ", "the training images are 1x28x28, the test images "
                                             "1x32x32 (expected one shape)");
    /* train refuses the same folder in the same words, before an assertion could */
    ck_assert_int_eq(dtsim((const char *[]){"train", "--data", data, NULL}), 2);
    one_error_line("dtsim train: --data ", "the training images are 1x28x28, the test images "
                                           "1x32x32 (expected one shape)");
    /* a FIFO in place of the test labels: refused, not waited on */
    snprintf(path, sizeof path, "%s/t10k-images-idx3-ubyte", data);
    unlink(path);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line("t10k-images-idx3-ubyte: not a regular file", NULL);
}
END_TEST

/* Fault targets are names of the loaded platform: check loads it as a run would (in a child
 * process) and refuses a node or link the platform lacks, naming the key and line. */
START_TEST(check_refuses_fault_targets_the_platform_lacks)
{
    char ini[300], text[1024];
    snprintf(ini, sizeof ini, "%s/ft.ini", dir);
    snprintf(text, sizeof text, "%s[faults]\ncrash = worker-9 at 1s\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("ft.ini:18: faults.crash: item 1: no node or host named \"worker-9\"",
                   "expected worker-0..worker-1");
    snprintf(text, sizeof text, "%s[faults]\nlink_down = nolink at 1s for 1s\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("ft.ini:18: faults.link_down: item 1: the platform has no link, node or host "
                   "named \"nolink\"",
                   NULL);
    snprintf(text, sizeof text, "%s[faults]\ncrash = worker-1 at 1s\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 0);
}
END_TEST

/* Topology shapes: a malformed one, and one too small for the hosts, are one line naming
 * the file, its line and the key. */
START_TEST(check_refuses_bad_topology_shapes)
{
    char ini[300], text[1024];
    snprintf(ini, sizeof ini, "%s/topo.ini", dir);
    snprintf(text, sizeof text, "%s[cluster]\nplatform = dragonfly\ndragonfly = 2,3,4\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("topo.ini:19: cluster.dragonfly: bad dragonfly shape \"2,3,4\"", "G,C,R,N");
    snprintf(text, sizeof text, "%s[cluster]\nplatform = torus\ntorus = 4x0\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("topo.ini:19: cluster.torus: bad torus shape \"4x0\"", NULL);
    snprintf(text, sizeof text, "%s[cluster]\nplatform = torus\ntorus = 1x1\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("topo.ini:19: cluster.torus: a torus of 1 hosts cannot hold the run's 2", NULL);
    snprintf(text, sizeof text, "%s[cluster]\nplatform = rail\ngpus_per_server = 4\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "cluster.workers=6", "--set",
                                            "strategy.algorithm=2d", NULL}),
                     2);
    one_error_line("topo.ini:19: cluster.gpus_per_server: gpus_per_server 4 does not divide 6 "
                   "workers (2d all-reduce",
                   NULL);
    snprintf(text, sizeof text, "%s[cluster]\nplatform = rail\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "cluster.workers=1025", "--set",
                                            "data.train_samples=2048", NULL}),
                     2);
    one_error_line("--set cluster.workers: the rail platform writes out every route: 1025 hosts",
                   "at most 1024 hosts");
    snprintf(text, sizeof text, "%s[cluster]\nplatform = torus\ntorus = 2x1\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 0);
}
END_TEST

START_TEST(databases_are_never_made_by_mistake)
{
    char db[300], ini[300], text[1024];
    snprintf(db, sizeof db, "%s/typo.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, NULL}), 2);
    one_error_line("typo.db: No such file or directory", NULL);
    ck_assert_msg(access(db, F_OK) != 0, "dtsim runs made %s", db);
    ck_assert_int_eq(dtsim((const char *[]){"plot", "--db", db, NULL}), 2);
    ck_assert_int_eq(dtsim((const char *[]){"export", "--csv", "--db", db, NULL}), 2);
    ck_assert_msg(access(db, F_OK) != 0, "a read command made %s", db);

    snprintf(ini, sizeof ini, "%s/tiny.ini", dir);
    write_file(ini, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", "", NULL}), 2);
    one_error_line("--db needs a path", NULL);
    snprintf(text, sizeof text, "%s[run]\ndb = :memory:\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, NULL}), 2);
    one_error_line("run.db = \":memory:\" keeps nothing", NULL);
    write_file(ini, tiny);

    snprintf(db, sizeof db, "%s/foreign.db", dir);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(h, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(h);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line("foreign.db: an SQLite database, but not a dtsim results database", NULL);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "delete");
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* from a folder without results/: run makes it for its default database */
    char cwd[512], here[300];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(here, sizeof here, "%s/fresh", dir);
    ck_assert_int_eq(mkdir(here, 0700), 0);
    ck_assert_int_eq(chdir(here), 0);
    int rc = dtsim((const char *[]){"run", ini, NULL});
    int made = access("results/dtsim.db", F_OK) == 0;
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(made, "no results/dtsim.db under %s", here);
}
END_TEST

/* dtsim plot's --format and --size: a bad value is one line naming the option, exit 2,
 * before any database is opened. */
START_TEST(plot_format_and_size_are_checked)
{
    static const char *const bad[][2] = {
        {"--format", "gif"},    {"--format", "png,"},    {"--format", ""},
        {"--format", "PNG"},    {"--size", "800"},       {"--size", "800x"},
        {"--size", "x600"},     {"--size", "0x600"},     {"--size", "399x600"},
        {"--size", "800x299"},  {"--size", "10001x600"}, {"--size", "800x600x2"},
        {"--size", "-800x600"}, {"--size", "800 x 600"}, {"--size", "1e3x600"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(dtsim((const char *[]){"plot", bad[i][0], bad[i][1], "--db",
                                                "/nonexistent/x.db", NULL}),
                         2);
        one_error_line(bad[i][0], "expected");
    }
    /* good values pass on to the next check: here the missing database */
    ck_assert_int_eq(
        dtsim((const char *[]){"plot", "--format", "svg,pdf", "--format", "png", "--size",
                               "400x300", "--db", "/nonexistent/x.db", NULL}),
        2);
    one_error_line("/nonexistent/x.db", NULL);
}
END_TEST

START_TEST(error_lines_escape_control_bytes)
{
    char path[300];
    snprintf(path, sizeof path, "%s/esc.ini", dir);
    write_file(path, "[cluster]\nbandwidth = 10\x1b[31mGbps\r\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("esc.ini:2: cluster.bandwidth", "\"10\\x1b[31mGbps\"");
    char *e = slurp(err_path);
    for (const char *c = e; *c; c++)
        ck_assert_msg(*c == '\n' || !((unsigned char)*c < 0x20 || *c == 0x7f),
                      "a raw control byte 0x%02x in: %s", (unsigned char)*c, e);
    free(e);
    ck_assert_int_eq(dtsim((const char *[]){"check", path, "--set", "run.name=a\tb", NULL}), 2);
    one_error_line_starting("dtsim check: ");
    snprintf(path, sizeof path, "%s/new\nline.ini", dir);
    write_file(path, "[run]\nsteps = 10\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("new\\x0aline.ini\": the path contains a control character", NULL);
    unlink(path);
}
END_TEST

START_TEST(bad_platform_files_exit_2_naming_file_line)
{
    static const char *head = "<?xml version='1.0'?>\n"
                              "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                              "<platform version=\"4.1\">\n<zone id=\"world\" routing=\"Full\">\n";
    static const struct {
        const char *body; /* after head; NULL: an empty file */
        const char *want; /* in the error line, after "FILE" */
    } cases[] = {
        {NULL, ".xml:1: invalid XML: EOF in prolog"},
        {"  <host id=\"a\" speed=\"1Gf\"/>\n", ".xml:6: invalid XML: Premature EOF"}, /* cut */
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <hots id=\"b\" speed=\"1Gf\"/>\n</zone>\n"
         "</platform>\n",
         ".xml:6: invalid XML:"}, /* an unknown element */
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <host id=\"a\" speed=\"1Gf\"/>\n</zone>\n"
         "</platform>\n",
         ".xml:6: Refusing to create a second host named 'a'"},
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <host id=\"b\" speed=\"1Gf\"/>\n"
         "  <link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
         "  <route src=\"a\" dst=\"c\"><link_ctn id=\"l\"/></route>\n</zone>\n</platform>\n",
         ".xml:8: Route dst 'c' names no host or router of the platform (it has 'a','b')"},
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <host id=\"b\" speed=\"1Gf\"/>\n"
         "  <link id=\"l\" bandwidth=\"0Bps\" latency=\"1us\"/>\n"
         "  <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n</zone>\n</platform>\n",
         ".xml:7: link l has bandwidth 0 B/s (expected 1kbps to 1000TBps: what SimGrid's "
         "solver computes with)"},
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"0Bps\" "
         "lat=\"1us\"/>\n</zone>\n</platform>\n",
         ".xml:5: link c_link_0_DOWN has bandwidth 0"},
        {"  <host id=\"a\" speed=\"0f\"/>\n</zone>\n</platform>\n",
         ".xml:5: host a has speed 0 flop/s (expected 1f to 1e24f: what SimGrid's solver "
         "computes with)"},
        /* values SimGrid takes but its solver does not compute with: a negative latency ran
         * with it, an infinite one failed the run with NaN, one below 1 ns crashed it */
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <host id=\"b\" speed=\"1Gf\"/>\n"
         "  <link id=\"l\" bandwidth=\"1GBps\" latency=\"-5us\"/>\n"
         "  <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n</zone>\n</platform>\n",
         ".xml:7: link l has latency -5e-06 s (expected 0, or 1ns to 1000s: what SimGrid's "
         "solver computes with)"},
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1Gbps\" "
         "lat=\"inf\"/>\n</zone>\n</platform>\n",
         ".xml:5: link c_link_0_DOWN has latency inf s (expected 0, or 1ns to 1000s"},
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" bw=\"1Gbps\" "
         "lat=\"1e-12s\"/>\n</zone>\n</platform>\n",
         ".xml:5: link c_link_0_DOWN has latency 1e-12 s"},
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1e-300f\" "
         "bw=\"1Gbps\" lat=\"1us\"/>\n</zone>\n</platform>\n",
         ".xml:5: host n-0 has speed 1e-300 flop/s (expected 1f to 1e24f"},
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" "
         "bw=\"100Bps\" lat=\"1us\"/>\n</zone>\n</platform>\n",
         ".xml:5: link c_link_0_DOWN has bandwidth 100 B/s (expected 1kbps to 1000TBps"},
        /* hosts the run uses without a route between them: SIGABRT at the first message */
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <host id=\"b\" speed=\"1Gf\"/>\n"
         "  <link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n</zone>\n</platform>\n",
         ".xml:5: no route from host a to host b, both hosts of the run (expected a route "
         "between every two hosts it uses)"},
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <host id=\"b\" speed=\"1Gf\"/>\n"
         "  <link id=\"l\" bandwidth=\"1GBps\" latency=\"1us\"/>\n"
         "  <route src=\"a\" dst=\"b\" symmetrical=\"NO\"><link_ctn id=\"l\"/></route>\n"
         "</zone>\n</platform>\n",
         ".xml:6: no route from host b to host a"},
        /* Floyd routing without links: SimGrid crashed looking the route up */
        {"  <zone id=\"f\" routing=\"Floyd\">\n  <host id=\"a\" speed=\"1Gf\"/>\n"
         "  <host id=\"b\" speed=\"1Gf\"/>\n  </zone>\n</zone>\n</platform>\n",
         ".xml:6: no route from host a to host b"},
        /* sizes bounded before SimGrid allocates: 3e7 hosts took check past 60 s */
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-29999999\" speed=\"1Gf\" "
         "bw=\"1Gbps\" lat=\"1us\"/>\n</zone>\n</platform>\n",
         ".xml:5: 3e+07 hosts up to this element (expected at most 131072 in a platform "
         "file: SimGrid allocates every host before a run starts)"},
        {"  <host id=\"a\" speed=\"1Gf\"/>\n  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" "
         "radical=\"0-3\" speed=\"1Gf\" bw=\"1Gbps\" lat=\"1us\" topology=\"TORUS\" "
         "topo_parameters=\"1000,1000,1000\"/>\n</zone>\n</platform>\n",
         ".xml:6: 1e+09 hosts up to this element"},
        {"  <cluster id=\"c\" prefix=\"n-\" suffix=\"\" radical=\"0-99999,100000-131071\" "
         "speed=\"1Gf\" bw=\"1Gbps\" lat=\"1us\"/>\n  <host id=\"a\" speed=\"1Gf\"/>\n"
         "</zone>\n</platform>\n",
         ".xml:6: 1.31e+05 hosts up to this element"},
        {"  <host id=\"a\" speed=\"1Gf\"/>\n</zone>\n</platform>\n",
         ".xml has 1 host; allreduce needs 2 workers (expected at least 2 hosts"},
    };
    char xml[300], ini[300], db[300], text[1024];
    snprintf(xml, sizeof xml, "%s/p.xml", dir);
    snprintf(ini, sizeof ini, "%s/p.ini", dir);
    snprintf(db, sizeof db, "%s/p.db", dir);
    snprintf(text, sizeof text, "%s[cluster]\nplatform = p.xml\n", tiny);
    write_file(ini, text);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char body[2048];
        snprintf(body, sizeof body, "%s%s", cases[i].body ? head : "",
                 cases[i].body ? cases[i].body : "");
        write_file(xml, body);
        char want[300];
        snprintf(want, sizeof want, "p%s", cases[i].want);
        ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
        one_error_line("p.ini:18: cluster.platform: ", want);
        unlink(db);
        ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
        one_error_line("p.ini:18: cluster.platform: ", want);
        ck_assert_msg(access(db, F_OK) != 0, "case %zu: run wrote %s", i, db);
    }
    /* a FIFO in place of the file: refused at once, not read forever */
    unlink(xml);
    ck_assert_int_eq(mkfifo(xml, 0600), 0);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("p.ini:18: cluster.platform", "is not a regular file");
    unlink(xml);
}
END_TEST

/* What `check` accepts, `run` runs: inputs that crashed or hung a run after check said yes
 * (issue 36) are refused up front, one line naming file, line and key, exit 2, and the run
 * writes no database. */
START_TEST(what_check_accepts_run_runs)
{
    char ini[300], db[300], path[400], text[1024];
    snprintf(db, sizeof db, "%s/c.db", dir);
    /* a latency below SimGrid's precision: SIGSEGV in its solver, rows left `running` */
    const char *alone = DTSIM_SOURCE "/scenarios/jobs/alone.ini";
    const char *lat[] = {"check", alone, "--set", "cluster.latency=2e-09us", NULL};
    ck_assert_int_eq(dtsim(lat), 2);
    one_error_line("--set cluster.latency: 2e-15s is beyond what SimGrid's solver computes "
                   "with (expected 0, or 1ns to 1000s)",
                   NULL);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", alone, "--set", "cluster.latency=2e-09us", "--db", db, NULL}),
        2);
    one_error_line("--set cluster.latency: 2e-15s", NULL);
    ck_assert_msg(access(db, F_OK) != 0, "run wrote %s", db);

    /* a FedScale device trace of 0.001 kbit/s: SimGrid's "The Impossible Did Happen" */
    snprintf(path, sizeof path, "%s/fs.csv", dir);
    write_file(path, "client_id,computation,communication\n0,10,1000\n1,10,0.001\n");
    snprintf(ini, sizeof ini, "%s/fs.ini", dir);
    write_file(ini, "[run]\nsteps = 2\n[model]\narch = logreg\nbatch = 16\n[data]\n"
                    "source = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                    "[cluster]\nplatform = edge\nworkers = 2\n[strategy]\nkind = fedavg\n"
                    "clients = 2\nfraction = 1\nrounds = 1\n[faults]\ndevice_trace = fs.csv\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("fs.ini:19: faults.device_trace: ",
                   "fs.csv:3: column communication: \"0.001\" is beyond what SimGrid's solver "
                   "computes with");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    ck_assert_msg(access(db, F_OK) != 0, "run wrote %s", db);

    /* FIFOs, as the scenario and as a job's file: refused at once, not read forever */
    snprintf(path, sizeof path, "%s/f.ini", dir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("f.ini: not a regular file", NULL);
    snprintf(ini, sizeof ini, "%s/jobs.ini", dir);
    write_file(ini, "[cluster]\nworkers = 4\n[jobs]\nfiles = f.ini\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("jobs.ini:4: jobs.files: ", "f.ini: not a regular file");
    unlink(path);

    /* a device file whose values no run can use */
    snprintf(path, sizeof path, "%s/dev.ini", dir);
    write_file(path, "[device]\nfp32 = 1e-300f\n");
    snprintf(ini, sizeof ini, "%s/d.ini", dir);
    snprintf(text, sizeof text, "%s[cluster]\ndevice = dev.ini\n", tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("d.ini:18: cluster.device: ",
                   "dev.ini:2: device.fp32: \"1e-300f\" is "
                   "beyond what SimGrid's solver computes with (expected 1f to 1e24f)");
    write_file(path, "[device]\nfp32 = 10Tf\npower_idle = 500W\npower_max = 100W\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("d.ini:18: cluster.device: ",
                   "dev.ini:3: device.power_idle: power_idle "
                   "500 W above power_max 100 W (expected power_idle <= power_max)");
}
END_TEST

START_TEST(check_output_loads_back)
{
    char path[300], again[300];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    snprintf(again, sizeof again, "%s/again.ini", dir);
    write_file(path, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"check", path, "--set", "cluster.latency=7us", NULL}),
                     0);
    char *first = slurp(out_path);
    ck_assert_msg(strstr(first, "latency = 7us"), "%s", first);
    write_file(again, strchr(first, '\n') + 1); /* drop the "# ...: 1 run" line */
    ck_assert_int_eq(dtsim((const char *[]){"check", again, NULL}), 0);
    char *second = slurp(out_path);
    /* identical apart from the name, which comes from the file name */
    char *a = strstr(first, "[run]"), *b = strstr(second, "[run]");
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(strstr(a, "seed ="), strstr(b, "seed ="));
    free(first);
    free(second);
}
END_TEST

static long query_long(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    long v = (long)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

START_TEST(run_lands_in_database)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
    write_file(path, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "finished") && strstr(o, "allreduce"), "%s", o);
    char stored[400];
    snprintf(stored, sizeof stored, "stored as run 1 in %s\n", db_path);
    ck_assert_msg(strstr(o, stored), "no \"%s\" in: %s", stored, o);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "strategy.kind=sync-ps", NULL}),
                     0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 2);
    /* marks at steps 3 and 6 for each run */
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM evals"), 4);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs WHERE config LIKE '%kind = sync-ps%'"
                                    " AND simgrid_version = '3.32.0' AND seed = 1"),
                     1);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM workers WHERE run = 2"), 3);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM summary WHERE total_bytes > 0"), 2);
    ck_assert_int_eq(query_long(db, "SELECT sum(count) FROM label_hist WHERE run = 1"), 512);
    sqlite3_close(db);

    /* its stderr a file, a run of its own prints plain progress lines (every step at an
     * interval of 0 s), counting to the run's 6 steps; a sweep's members print none (the
     * sweep prints its own) */
    setenv("DTSIM_PROGRESS_EVERY", "0", 1);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 0);
    char *e = slurp(err_path);
    ck_assert_msg(strstr(e, ": step 1/6, simulated ") && strstr(e, ": step 6/6, simulated ") &&
                      !strchr(e, '\r'),
                  "%s", e);
    free(e);
    char swept[300], text[1024];
    snprintf(swept, sizeof swept, "%s/tiny-sweep.ini", dir);
    snprintf(text, sizeof text, "%s[sweep]\nmodel.lr = 0.1, 0.2\n", tiny);
    write_file(swept, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", swept, "--db", db_path, NULL}), 0);
    e = slurp(err_path);
    ck_assert_msg(!strstr(e, "/6, simulated"), "%s", e);
    free(e);
    unsetenv("DTSIM_PROGRESS_EVERY");

    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", missing, NULL}), 2);
    one_error_line(missing, NULL);
}
END_TEST

/* A federated population larger than the training set (64 samples, 200 clients): the
 * partition leaves clients empty, rounds sample only among those holding data, every sample
 * is some client's, and a second run gives the same rows. A strategy that cannot take empty
 * clients still refuses the split in one line. */
START_TEST(population_larger_than_training_set)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/population.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/population.db", dir);
    write_file(path, "[run]\neval_every = 0\n[model]\narch = logreg\nbatch = 4\n"
                     "[data]\nsource = synthetic\ntrain_samples = 64\ntest_samples = 32\n"
                     "synthetic_dim = 8\nsynthetic_classes = 4\npartition = dirichlet:0.3\n"
                     "[cluster]\nworkers = 4\n[strategy]\nkind = fedavg\nclients = 200\n"
                     "fraction = 0.1\nrounds = 3\n");
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 0);
    /* more sampled than hold data: each round takes all of them */
    ck_assert_int_eq(
        dtsim((const char *[]){"run", path, "--db", db_path, "--set", "strategy.fraction=1", NULL}),
        0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    long holders = query_long(db, "SELECT count(*) FROM clients WHERE run = 1 AND samples > 0");
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM clients WHERE run = 1"), 200);
    ck_assert_int_eq(query_long(db, "SELECT sum(samples) FROM clients WHERE run = 1"), 64);
    ck_assert_msg(holders > 0 && holders < 64, "%ld clients hold data", holders);
    /* 3 rounds of floor(0.1 x 200) = 20 clients, none of them empty */
    ck_assert_int_eq(query_long(db, "SELECT sum(rounds) FROM clients WHERE run = 1"), 60);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM clients WHERE samples = 0 AND "
                                    "rounds > 0"),
                     0);
    ck_assert_int_eq(query_long(db, "SELECT sum(rounds) FROM clients WHERE run = 3"), 3 * holders);
    /* the same seed, the same rows */
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM clients a JOIN clients b ON "
                                    "b.client = a.client AND b.run = 2 WHERE a.run = 1 AND "
                                    "a.rounds = b.rounds AND a.samples = b.samples"),
                     200);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM summary a, summary b WHERE a.run = 1 "
                                    "AND b.run = 2 AND a.final_loss = b.final_loss AND "
                                    "a.sim_time = b.sim_time AND a.final_loss > 0"),
                     1);
    sqlite3_close(db);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", path, "--db", db_path, "--set", "strategy.kind=fedbuff",
                               "--set", "strategy.concurrency=4", NULL}),
        2);
    one_error_line("64 samples for 200 clients (expected at least one sample each)", NULL);
}
END_TEST

/* A model profile: the run is timed, not trained; the summary says so and the evaluation
 * rows keep their time and step with empty loss and accuracy. */
START_TEST(timing_only_run_has_empty_accuracy)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/timing.db", dir);
    write_file(path, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "model.arch=profile:bert_large", NULL}),
                     0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "timing only: model profile bert_large (335.1 M parameters"), "%s", o);
    free(o);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM evals WHERE test_acc IS NULL AND "
                                    "test_loss IS NULL AND sim_time > 0"),
                     2);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM evals WHERE test_acc IS NOT NULL"), 0);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM label_hist"), 0);
    sqlite3_close(db);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "model.arch=profile:resnet18", NULL}),
                     2);
    one_error_line("model.arch: unknown model profile \"resnet18\"", NULL);
    /* a sweep's table: no accuracy, no time to target ("-", not "never") */
    write_file(path, "[run]\nsteps = 2\n[model]\narch = profile:resnet50\n[strategy]\n"
                     "kind = allreduce\n[sweep]\ncluster.workers = 2, 3\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 0);
    o = slurp(out_path);
    const char *row = strstr(o, "\ntiny/workers=3 ");
    ck_assert_msg(row && strstr(row, " allreduce ") && strstr(row, " - ") && !strstr(o, "never"),
                  "%s", o);
    free(o);
}
END_TEST

static double query_double(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    double v = sqlite3_column_type(st, 0) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* SELECT expr FROM table WHERE run = run. */
static double run_value(sqlite3 *db, const char *expr, const char *table, int run)
{
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT %s FROM %s WHERE run = %d", expr, table, run);
    return query_double(db, sql);
}

static void assert_close(double got, double want, const char *what)
{
    ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want), "%s: %.17g, expected %.17g", what, got,
                  want);
}

/* Energy against the hand formula: every host draws power_max while dtsim counted it
 * computing and power_idle for the rest of the run, each of the 2 x hosts ports (star)
 * link_power for the whole run; dollars are hosts x hours x price, exactly. */
START_TEST(energy_and_cost_follow_their_formulas)
{
    char path[300], dev[300], db_path[300], text[1024];
    snprintf(path, sizeof path, "%s/energy.ini", dir);
    snprintf(dev, sizeof dev, "%s/board.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/energy.db", dir);
    write_file(dev, "[device]\nname = test board\nfp32 = 2Tf\nefficiency = 1\n"
                    "power_idle = 10W\npower_max = 110W\n");
    snprintf(text, sizeof text,
             "[run]\nsteps = 4\n[model]\narch = profile:resnet50\n[cluster]\nworkers = 2\n"
             "device = %s\nprice_per_device_hour = 2.5\nlink_power = 7\n"
             "[strategy]\nkind = sync-ps\n",
             dev);
    write_file(path, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "\nenergy: ") && strstr(o, "\ncost: $") && strstr(o, "(3 hosts)"), "%s",
                  o);
    free(o);
    /* a run that reaches its target: the cost to it */
    ck_assert_int_eq(
        dtsim((const char *[]){"run", path, "--db", db_path, "--set", "model.arch=logreg", "--set",
                               "run.steps=6", "--set", "run.eval_every=2", "--set",
                               "run.target_accuracy=0.01", NULL}),
        0);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    for (int run = 1; run <= 2; run++) {
        double t = run_value(db, "sim_time", "summary", run);
        double hosts = run_value(db, "count(*)", "workers", run);
        ck_assert_double_eq(hosts, 3);
        double compute = run_value(db, "sum(compute_s)", "workers", run);
        ck_assert(compute > 0 && compute < hosts * t);
        double host_j = compute * 110 + (hosts * t - compute) * 10, link_j = 2 * hosts * 7 * t;
        assert_close(run_value(db, "host_joules", "energy", run), host_j, "host joules");
        assert_close(run_value(db, "link_joules", "energy", run), link_j, "link joules");
        double steps = run_value(db, "steps", "summary", run);
        double samples = run_value(db, "max(samples)", "evals", run);
        assert_close(run_value(db, "joules_per_step", "energy", run), (host_j + link_j) / steps,
                     "joules per step");
        assert_close(run_value(db, "joules_per_sample", "energy", run), (host_j + link_j) / samples,
                     "joules per sample");
        double dollars = hosts * t / 3600 * 2.5;
        ck_assert_double_eq(run_value(db, "dollars", "energy", run), dollars);
        ck_assert_double_eq(run_value(db, "dollars_per_sample", "energy", run), dollars / samples);
        double ttt = run_value(db, "time_to_target", "summary", run);
        double to_target = run_value(db, "dollars_to_target", "energy", run);
        if (run == 1)
            ck_assert(isnan(ttt) && isnan(to_target)); /* timing only: no accuracy */
        else
            ck_assert_double_eq(to_target, hosts * ttt / 3600 * 2.5);
    }
    /* ports: two per host and per switch-to-switch link; 3 hosts on 2 racks: 2 uplinks; a
     * fat-tree of 3 hosts: 3 spines and 2 leaves, 6 leaf-to-spine links; a 2x2x1 torus (the
     * auto shape for 3): 4 positions x 3 dimensions, no host links (SimGrid makes 12); a
     * dragonfly of one chassis of 4 routers: 3 host links and 6 router pairs; a rail server
     * of 8 GPUs: 3 NICs, 8 NVLink ports and 8 leaf-to-spine links */
    static const char *const platforms[][2] = {{"cluster.platform=multi-rack", "10"},
                                               {"cluster.platform=fat-tree", "18"},
                                               {"cluster.platform=torus", "24"},
                                               {"cluster.platform=dragonfly", "18"},
                                               {"cluster.platform=rail", "38"}};
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(
            dtsim((const char *[]){"run", path, "--db", db_path, "--set", platforms[k][0], NULL}),
            0);
        int run = 3 + k;
        double ports = run_value(db, "link_ports", "energy", run);
        ck_assert_double_eq(ports, atof(platforms[k][1]));
        assert_close(run_value(db, "link_joules", "energy", run),
                     ports * 7 * run_value(db, "sim_time", "summary", run), "link joules");
    }
    sqlite3_close(db);
    /* without a price no cost; a device without power figures has no host joules */
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "cluster.price_per_device_hour=0", "--set",
                                            "cluster.device_flops=1Tf", NULL}),
                     0);
    o = slurp(out_path);
    ck_assert_msg(!strstr(o, "\ncost: ") && strstr(o, "no device power figures"), "%s", o);
    free(o);
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM energy WHERE run = 8 AND dollars IS NULL"
                                    " AND host_joules IS NULL AND link_joules > 0"),
                     1);
    sqlite3_close(db);
    /* bad values: one line, exit 2 */
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "cluster.link_power=-1", NULL}),
                     2);
    one_error_line("cluster.link_power", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "cluster.price_per_device_hour=cheap", NULL}),
                     2);
    one_error_line("cluster.price_per_device_hour", NULL);
}
END_TEST

/* tiny without the keys its sweeps vary */
static const char *tiny_sweep =
    "[run]\nsteps = 6\neval_every = 3\n[model]\narch = logreg\nbatch = 16\n"
    "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\nsynthetic_dim = 16\n"
    "synthetic_classes = 4\n\n[sweep]\nstrategy.kind = allreduce, sync-ps\n"
    "cluster.workers = 2, 3\n";

static const char *const tiny_sweep_names[] = {
    "tiny/kind=allreduce,workers=2", "tiny/kind=allreduce,workers=3", "tiny/kind=sync-ps,workers=2",
    "tiny/kind=sync-ps,workers=3"};

/* A sweep over strategy.kind whose run.eval_every counts rounds for the federated
 * strategies and steps for the others: check accepts it (exit 0) with one warning line naming
 * both groups; none when nothing mixes. */
START_TEST(check_warns_when_eval_every_counts_rounds_and_steps)
{
    char path[300];
    snprintf(path, sizeof path, "%s/mixed.ini", dir);
    write_file(path, "[run]\nsteps = 20\neval_every = 10\n[model]\narch = logreg\nbatch = 16\n"
                     "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                     "synthetic_dim = 16\nsynthetic_classes = 4\n[strategy]\nrounds = 4\n"
                     "[sweep]\nstrategy.kind = sync-ps, fedavg, allreduce, fedbuff\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 0);
    char want[600];
    snprintf(want, sizeof want,
             "dtsim check: %s: warning: run.eval_every = 10 counts rounds for "
             "fedavg, fedbuff but steps for sync-ps, allreduce: ",
             path);
    one_error_line_starting(want);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "# run 3: "), "%s", o); /* the runs listed as ever */
    free(o);
    /* no evaluation by steps, or no federated strategy: nothing to say */
    ck_assert_int_eq(dtsim((const char *[]){"check", path, "--set", "run.eval_every=0", NULL}), 0);
    char *e = slurp(err_path);
    ck_assert_str_eq(e, "");
    free(e);
    write_file(path, "[run]\nsteps = 20\neval_every = 10\n[model]\narch = logreg\nbatch = 16\n"
                     "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                     "synthetic_dim = 16\nsynthetic_classes = 4\n"
                     "[sweep]\nstrategy.kind = sync-ps, allreduce\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 0);
    e = slurp(err_path);
    ck_assert_str_eq(e, "");
    free(e);
}
END_TEST

/* run.eval_samples puts every strategy of a mixed sweep on the same points: sync-ps and
 * all-reduce (8 workers x 16 samples: 128 a step) and fedavg (8 clients x 64 samples: 512 a
 * round) each evaluate at the first step or round boundary at or past every multiple of 640
 * samples, 4 times in 2560 samples, where run.eval_every = 1 gives 20 points against 5. */
START_TEST(eval_samples_gives_every_strategy_the_same_points)
{
    char path[300], db[300];
    snprintf(path, sizeof path, "%s/mixed.ini", dir);
    snprintf(db, sizeof db, "%s/mixed.db", dir);
    write_file(path, "[run]\nsteps = 20\neval_every = 0\neval_samples = 640\n"
                     "[model]\narch = logreg\nbatch = 16\n"
                     "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                     "synthetic_dim = 16\nsynthetic_classes = 4\n[cluster]\nworkers = 8\n"
                     "[strategy]\nrounds = 5\nclients = 8\nfraction = 1\n"
                     "[sweep]\nstrategy.kind = sync-ps, fedavg, allreduce\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db, NULL}), 0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT r.strategy, e.samples FROM runs r JOIN evals e"
                                        " ON e.run = r.id ORDER BY r.id, e.samples",
                                        -1, &st, NULL),
                     SQLITE_OK);
    const char *kinds[] = {"sync-ps", "fedavg", "allreduce"};
    const double boundary[] = {128, 512, 128}; /* samples a step or round */
    int seen[3] = {0, 0, 0};
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        int k = 0;
        while (k < 3 && strcmp(kind, kinds[k]))
            k++;
        ck_assert_int_lt(k, 3);
        /* evaluation m (1, 2, ...) at the first boundary at or past m x 640 */
        double m = ++seen[k], want = ceil(m * 640 / boundary[k]) * boundary[k];
        ck_assert_msg(sqlite3_column_double(st, 1) == want,
                      "%s: evaluation %g at %g samples, "
                      "not %g",
                      kind, m, sqlite3_column_double(st, 1), want);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    for (int k = 0; k < 3; k++)
        ck_assert_msg(seen[k] == 4, "%s: %d evaluations", kinds[k], seen[k]);
}
END_TEST

START_TEST(check_lists_the_runs_of_a_sweep)
{
    char path[300], again[300], want[1024];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    snprintf(again, sizeof again, "%s/again.ini", dir);
    write_file(path, tiny_sweep);
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 0);
    char *first = slurp(out_path);
    snprintf(want, sizeof want,
             "# %s: 4 runs\n# run 0: %s\n# run 1: %s\n# run 2: %s\n# run 3: %s\n;", path,
             tiny_sweep_names[0], tiny_sweep_names[1], tiny_sweep_names[2], tiny_sweep_names[3]);
    ck_assert_msg(!strncmp(first, want, strlen(want)), "%s", first);
    ck_assert_msg(strstr(first, "\n[sweep]\nstrategy.kind = allreduce, sync-ps\n"
                                "cluster.workers = 2, 3\n"),
                  "%s", first);
    /* the output is a scenario with the same runs */
    write_file(again, first);
    ck_assert_int_eq(dtsim((const char *[]){"check", again, NULL}), 0);
    char *second = slurp(out_path);
    ck_assert_str_eq(strchr(first, '\n'), strchr(second, '\n'));
    free(first);
    free(second);
    /* one invalid combination: file:line of the sweep, exit 2, and -j is run's alone */
    write_file(path, "[strategy]\nservers = 3\n[sweep]\ncluster.workers = 4, 2\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", path, NULL}), 2);
    one_error_line("tiny.ini:4: sweep cluster.workers: value 2 \"2\": 3 servers for 2 workers",
                   NULL);
    ck_assert_int_eq(dtsim((const char *[]){"check", "-j", "2", path, NULL}), 2);
    one_error_line("unknown option \"-j\"", NULL);
}
END_TEST

START_TEST(sweep_runs_in_parallel_into_one_database)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/sweep.db", dir);
    write_file(path, tiny_sweep);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "-j", "2", "--db", db_path, NULL}), 0);
    /* the summary table: one row per run, in sweep order */
    char *o = slurp(out_path);
    const char *at = o;
    for (int i = 0; i < 4; i++) {
        char row[128];
        snprintf(row, sizeof row, "\n%s ", tiny_sweep_names[i]);
        const char *hit = strstr(at, row);
        ck_assert_msg(hit, "no row %d in:\n%s", i, o);
        const char *eol = strchr(hit + 1, '\n');
        ck_assert_msg(strstr(hit, i < 2 ? "allreduce" : "sync-ps") < eol &&
                          strstr(hit, "10Gbps") < eol && strstr(hit, "finished") < eol,
                      "%s", o);
        at = eol;
    }
    free(o);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs WHERE status = 'finished'"), 4);
    ck_assert_int_eq(query_long(db, "SELECT count(DISTINCT sweep) FROM runs "
                                    "WHERE sweep LIKE 'tiny-2%'"),
                     1);
    ck_assert_int_eq(query_long(db, "SELECT sum(sweep_index * (sweep_index + 1)) FROM runs"),
                     0 + 2 + 6 + 12); /* indices 0, 1, 2, 3 once each */
    ck_assert_int_eq(query_long(db, "SELECT count(DISTINCT sweep_index) FROM runs"), 4);
    ck_assert_int_eq(query_long(db, "SELECT count(DISTINCT pid) FROM runs"), 4);
    /* each row is its run: name, strategy and the swept values among its parameters */
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs r JOIN params p ON p.run = r.id"
                                    " AND p.key = 'cluster.workers'"
                                    " WHERE r.name = 'tiny/kind=sync-ps,workers=3'"
                                    " AND r.sweep_index = 3 AND r.strategy = 'sync-ps'"
                                    " AND p.value = '3'"),
                     1);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs WHERE sweep_index = 1"
                                    " AND name = 'tiny/kind=allreduce,workers=3'"
                                    " AND config LIKE '%workers = 3%' AND config NOT LIKE "
                                    "'%[sweep]%'"),
                     1);
    sqlite3_close(db);

    /* a bad value: exit 2 before anything runs, nothing written */
    write_file(path, "[data]\nsource = synthetic\n[sweep]\nstrategy.kind = allreduce, sync-ps\n"
                     "cluster.workers = 2, 3, x\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "-j", "2", "--db", db_path, NULL}), 2);
    one_error_line("tiny.ini:5: sweep cluster.workers: value 3 \"x\": \"x\" is not an integer",
                   NULL);
    /* an invalid combination and a bad -j are bad input too */
    write_file(path, "[data]\nsource = synthetic\ntrain_samples = 2\n[sweep]\n"
                     "cluster.workers = 2, 3\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 2);
    one_error_line("tiny.ini:5: sweep cluster.workers: value 2 \"3\": 2 samples for 3 workers",
                   NULL);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "-j", "0", NULL}), 2);
    one_error_line("--jobs 0: expected an integer in [1, 256]", NULL);
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs"), 4);
    sqlite3_close(db);
}
END_TEST

START_TEST(sweep_failed_runs_are_named)
{
    /* a data directory without the files: each child fails in its own process, its error is
     * relayed with its run index, the table and the exit code say which runs failed */
    char path[300], db_path[300], data[300];
    snprintf(path, sizeof path, "%s/empty.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/empty.db", dir);
    snprintf(data, sizeof data, "%s/nodata", dir);
    ck_assert_int_eq(mkdir(data, 0700), 0);
    write_file(path, "[data]\nsource = nodata\n[sweep]\nmodel.lr = 0.1, 0.2\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "-j", "2", "--db", db_path, NULL}), 1);
    char *e = slurp(err_path), *o = slurp(out_path);
    ck_assert_msg(strstr(e, "member 0: dtsim run: ") && strstr(e, "member 1: dtsim run: ") &&
                      strstr(e, "nodata/train-images-idx3-ubyte"),
                  "%s", e);
    ck_assert_msg(strstr(e, "dtsim run: member 1 (empty/lr=0.2): failed, exit code 2\n") &&
                      strstr(e, "dtsim run: 2 of 2 runs did not finish\n"),
                  "%s", e);
    ck_assert_msg(strstr(o, "\nempty/lr=0.1 ") && strstr(o, "failed"), "%s", o);
    free(e);
    free(o);
    rmdir(data);
}
END_TEST

START_TEST(sweep_interrupted_stops_its_children)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/long.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/long.db", dir);
    /* runs far too long to finish: only a signal ends them */
    write_file(path, "[run]\nsteps = 100000000\neval_every = 0\n[model]\narch = logreg\n"
                     "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                     "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n"
                     "[sweep]\ncluster.workers = 2, 3, 4\n");
    pid_t pid = dtsim_start((const char *[]){"run", path, "-j", "2", "--db", db_path, NULL});
    /* wait until both children have started their runs */
    long running = 0;
    for (int tries = 0; tries < 600 && running < 2; tries++) {
        nanosleep(&(struct timespec){0, 50000000}, NULL);
        sqlite3 *db;
        if (access(db_path, F_OK) || sqlite3_open(db_path, &db) != SQLITE_OK)
            continue;
        sqlite3_busy_timeout(db, 1000);
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM runs WHERE status = 'running'", -1, &st,
                               NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            running = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
    }
    ck_assert_int_eq(running, 2);
    nanosleep(&(struct timespec){0, 200000000}, NULL);
    kill(pid, SIGTERM);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 2);
    ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs"), 2);
    /* each run that did not finish named by its member index and the id dtsim show takes */
    char want[160];
    snprintf(want, sizeof want, "dtsim run: member 0, run %ld (long/",
             query_long(db, "SELECT id FROM runs WHERE sweep_index = 0"));
    sqlite3_close(db);
    char *o = slurp(out_path), *e = slurp(err_path);
    ck_assert_msg(strstr(o, "long/workers=2 ") && strstr(o, "interrupted") &&
                      strstr(o, "long/workers=4 ") && strstr(o, "not run"),
                  "%s", o);
    ck_assert_msg(strstr(e, want) && strstr(e, "): interrupted"), "%s", e);
    free(o);
    free(e);
}
END_TEST

/* The two runs that were recorded `finished` with nonsense, scaled down: async-ps of 4 workers
 * at lr 0.05, momentum 0.9 on the fortunes' byte windows (5.89 -> 20.57 nats in the report;
 * here 9301 nats at the first evaluation) ends diverged by loss, exit 1, the step and the
 * loss on stdout; SCAFFOLD with client momentum (3.41 -> 447.6 nats) is refused, as the
 * paper's client step is plain SGD. */
START_TEST(loss_divergence_ends_the_run_exit_1)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/div.ini", dir);
    snprintf(db, sizeof db, "%s/div.db", dir);
    static const char *const text =
        "[run]\nsteps = 40\neval_every = 25\n[model]\narch = gpt\nlayers = 2\nhidden = 32\n"
        "heads = 2\nseq = 32\nbatch = 32\nlr = 0.05\nmomentum = 0.9\n[data]\nsource = text\n"
        "text = fortunes\ntest_samples = 64\n[cluster]\nworkers = 4\n[strategy]\n"
        "kind = async-ps\n";
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 1);
    char *o = slurp(out_path);
    /* bound 3 ln 256 = 16.64 nats; stopped after step 26 of 40 */
    ck_assert_msg(strstr(o, " diverged ") && strstr(o, "\ndiverged: test loss ") &&
                      strstr(o, " at step 25, above 16.64 "
                                "(run.divergence_factor 3 x "
                                "ln 256 classes)\n"),
                  "%s", o);
    free(o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT r.status, (SELECT count(*) FROM faults f WHERE "
                                        "f.run = r.id AND f.kind = 'diverged'), (SELECT "
                                        "max(step) FROM evals e WHERE e.run = r.id) FROM runs r",
                                        -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "diverged");
    ck_assert_int_eq(sqlite3_column_int(st, 1), 1);
    ck_assert_int_le(sqlite3_column_int(st, 2), 27);
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* SCAFFOLD with client momentum: refused in one line, naming the line */
    snprintf(ini, sizeof ini, "%s/scaffold.ini", dir);
    write_file(ini, "[model]\nmomentum = 0.9\n[strategy]\nkind = fedavg\nscaffold = yes\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("scaffold.ini:2: model.momentum: scaffold's client steps are plain SGD",
                   "Karimireddy et al. 2020");
}
END_TEST

/* dtsim train with stdout a file, stopped by SIGINT after its first epoch: what it printed
 * is in the file (a line is flushed as it is printed; a fully buffered stdout would lose it
 * with the process). */
START_TEST(train_interrupted_keeps_what_it_printed)
{
    char text[300], line[80];
    snprintf(text, sizeof text, "%s/train.txt", dir);
    FILE *f = fopen(text, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 400; i++) { /* 16 KB: a few hundred windows, an epoch in well under 1 s */
        snprintf(line, sizeof line, "line %d of a small corpus for dtsim train's test.\n", i);
        fputs(line, f);
    }
    fclose(f);
    write_file(out_path, "");
    pid_t pid = dtsim_start((const char *[]){"train", "--model", "gpt", "--text", text, "--hidden",
                                             "16", "--layers", "1", "--heads", "2", "--seq", "16",
                                             "--batch", "16", "--epochs", "100000", NULL});
    int seen = 0;
    for (int tries = 0; tries < 12000 && !seen; tries++) { /* 60 s at most */
        char *o = slurp(out_path);
        seen = strstr(o, "\nepoch 1 train_loss=") != NULL;
        free(o);
        if (!seen)
            nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    ck_assert_msg(seen, "no epoch printed within 60 s");
    kill(pid, SIGINT);
    ck_assert_int_eq(cli_wait(pid), 128 + SIGINT);
    char *o = slurp(out_path);
    /* the header, the unigram baseline and at least the first epoch, each a whole line */
    ck_assert_msg(!strncmp(o, "model=gpt ", 10) && strstr(o, "\nunigram val_loss=") &&
                      strstr(o, "\nepoch 1 train_loss=") && strstr(o, " val_loss=") &&
                      o[strlen(o) - 1] == '\n',
                  "%s", o);
    free(o);
}
END_TEST

/* A sweep stopped by SIGINT after k of its 4 members finished, then run again with
 * --resume: only the 4 - k others run, under the same sweep id, and every member ends with
 * exactly one finished run, the earlier rows untouched. stderr is no terminal here, so the
 * sweep prints a progress line per finished member, the first one with an estimate. */
START_TEST(sweep_interrupted_then_resumed_runs_only_the_rest)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/resume.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/resume.db", dir);
    write_file(path, "[run]\nsteps = 10000\neval_every = 0\n[model]\narch = logreg\n"
                     "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                     "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n"
                     "[sweep]\ncluster.workers = 2, 3, 4, 5\n");
    /* --resume needs a sweep */
    char one[300];
    snprintf(one, sizeof one, "%s/one.ini", dir);
    write_file(one, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", one, "--resume", "--db", db_path, NULL}), 2);
    one_error_line("--resume continues a sweep", "one.ini");

    write_file(err_path, "");
    pid_t pid = dtsim_start((const char *[]){"run", path, "--db", db_path, NULL});
    /* up to 2 minutes: a sanitized build on a busy machine takes 30 s and more */
    for (int tries = 0; tries < 24000; tries++) {
        char *e = slurp(err_path);
        int two = strstr(e, "sweep resume: 2/4 done, ") != NULL;
        free(e);
        if (two)
            break;
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    kill(pid, SIGINT);
    ck_assert_int_eq(cli_wait(pid), 130);
    char *e = slurp(err_path), *first = e;
    /* AddressSanitizer's warning on SimGrid's context switches comes first in a sanitized
     * build: three lines that are not dtsim's */
    for (;;) { /* each maybe under a run's "run K: " prefix */
        const char *nl = strchr(first, '\n');
        size_t len = nl ? (size_t)(nl - first) : strlen(first);
        char line[400];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1),
                 first);
        if (!*first || !(strstr(line, "==WARNING: ASan") || strstr(line, "False positive error") ||
                         strstr(line, "google/sanitizers")))
            break;
        first += len + (nl != NULL);
    }
    /* the first progress line: one member done, with the time left */
    ck_assert_msg(!strncmp(first, "sweep resume: 1/4 done, ", 24) && strstr(first, " left\n") &&
                      strstr(first, " left\n") < strchr(first, '\n') + 1,
                  "%s", e);
    ck_assert_msg(strstr(e, " --resume"), "%s", e);
    free(e);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    long k = query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'");
    long before = query_long(h, "SELECT count(*) FROM runs");
    long first_ids = query_long(h, "SELECT sum(id * (sweep_index + 1)) FROM runs WHERE status "
                                   "= 'finished'");
    sqlite3_close(h);
    ck_assert_msg(k >= 2 && k < 4, "%ld finished", k);

    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--resume", "--db", db_path, NULL}), 0);
    char *o = slurp(out_path);
    char line[80];
    snprintf(line, sizeof line, ": %ld of 4 runs finished, %ld to run\n", k, 4 - k);
    ck_assert_msg(!strncmp(o, "resuming sweep resume-", 22) && strstr(o, line), "%s", o);
    free(o);
    e = slurp(err_path);
    /* first where it stands, with an estimate from the earlier runs' pace, then counted on */
    snprintf(line, sizeof line, "sweep resume: %ld/4 done, 0 s, about ", k);
    ck_assert_msg(!strncmp(e, line, strlen(line)) && strstr(e, " left\n") &&
                      strstr(e, " left\n") < strchr(e, '\n') + 1,
                  "%s", e);
    snprintf(line, sizeof line, "sweep resume: %ld/4 done, ", k + 1);
    ck_assert_msg(strstr(e, line), "%s", e);
    free(e);
    ck_assert_int_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT sweep) FROM runs"), 1);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs"), before + 4 - k);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 4);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT sweep_index) FROM runs WHERE status "
                                   "= 'finished'"),
                     4);
    /* the members finished before kept their rows (same ids) */
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT sum(id * (sweep_index + 1)) FROM runs WHERE status = "
             "'finished' AND id <= %ld",
             before);
    ck_assert_int_eq(query_long(h, sql), first_ids);
    assert_intact(h);
    sqlite3_close(h);
    /* all finished: another --resume runs nothing */
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--resume", "--db", db_path, NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, ": 4 of 4 runs finished, 0 to run\n"), "%s", o);
    free(o);
    ck_assert_int_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs"), before + 4 - k);
    sqlite3_close(h);
    /* the fingerprint is bookkeeping: no tidy column, even beside a run that lacks it */
    ck_assert_int_eq(dtsim((const char *[]){"run", one, "--db", db_path, NULL}), 0);
    char tidy[320];
    snprintf(tidy, sizeof tidy, "%s/resume-tidy.csv", dir);
    ck_assert_int_eq(
        dtsim((const char *[]){"export", "--tidy", "--db", db_path, "--out", tidy, NULL}), 0);
    o = slurp(tidy);
    ck_assert_msg(strstr(o, ",cluster.workers,") && !strstr(o, "fingerprint"), "%.400s", o);
    free(o);
}
END_TEST

/* Run ids follow the sweep's order under -j 2 even when the first run takes longest to set
 * up (its data set is 500 times larger): without the gate between the runs, the second run's
 * row comes first. */
START_TEST(sweep_run_ids_follow_sweep_order)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/order.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/order.db", dir);
    write_file(path, "[run]\nsteps = 2\neval_every = 0\n[model]\narch = logreg\nbatch = 16\n"
                     "[data]\nsource = synthetic\ntest_samples = 128\nsynthetic_dim = 64\n"
                     "synthetic_classes = 4\n[sweep]\ndata.train_samples = 400000, 800, 600\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "-j", "2", "--db", db_path, NULL}), 0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db_path, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs"), 3);
    /* each run's id against its index: 1, 2, 3 for 0, 1, 2 */
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE id = sweep_index + 1"), 3);
    sqlite3_close(h);
}
END_TEST

/* Processes whose command line holds `needle` (the sweep's children are forks of dtsim and
 * keep its command line). */
static int processes_with(const char *needle)
{
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], cmd[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        size_t n = fread(cmd, 1, sizeof cmd - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++)
            if (!cmd[i])
                cmd[i] = ' ';
        cmd[n] = '\0';
        found += strstr(cmd, needle) != NULL; /* a zombie's command line is empty */
    }
    if (d)
        closedir(d);
    return found;
}

/* A sweep killed with SIGKILL (no handler runs) takes its running children with it; the
 * database stays intact, and the next open marks their runs interrupted. */
START_TEST(sweep_killed_takes_its_children_with_it)
{
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/killed.ini", dir);
    write_file(path, "[run]\nsteps = 100000000\neval_every = 0\n[model]\narch = logreg\n"
                     "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                     "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n"
                     "[sweep]\ncluster.workers = 2, 3, 4\n");
    /* killed at once (its runs starting or not yet), then with both runs under way */
    for (int point = 0; point < 2; point++) {
        snprintf(db_path, sizeof db_path, "%s/killed-%d.db", dir, point);
        pid_t pid = dtsim_start((const char *[]){"run", path, "-j", "2", "--db", db_path, NULL});
        if (point == 0) {
            nanosleep(&(struct timespec){0, 150000000}, NULL);
        } else {
            int children = 0;
            for (int tries = 0; tries < 600 && children < 3; tries++) { /* sweep + 2 runs */
                nanosleep(&(struct timespec){0, 50000000}, NULL);
                children = processes_with(path);
            }
            ck_assert_int_eq(children, 3);
            nanosleep(&(struct timespec){0, 300000000}, NULL);
        }
        kill(pid, SIGKILL);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        int left = 1;
        for (int tries = 0; tries < 200 && left; tries++) {
            nanosleep(&(struct timespec){0, 50000000}, NULL);
            left = processes_with(path);
        }
        ck_assert_msg(left == 0, "point %d: %d run%s of the killed sweep still running", point,
                      left, left == 1 ? "" : "s");
        struct stat sb;
        if (point == 0 && (stat(db_path, &sb) != 0 || sb.st_size == 0)) {
            /* killed before anything was written, or between the file's creation and its
             * schema: an empty file is no database, refused in one line (exit 2) */
            if (stat(db_path, &sb) == 0)
                ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db_path, NULL}), 2);
            continue;
        }
        ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db_path, NULL}), 0);
        sqlite3 *db;
        ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
        assert_intact(db);
        ck_assert_int_eq(query_long(db, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
        if (point == 1)
            ck_assert_int_ge(query_long(db, "SELECT count(*) FROM runs WHERE status = "
                                            "'interrupted'"),
                             1);
        sqlite3_close(db);
    }
}
END_TEST

/* A run SIGKILLed at several points (during set-up, early, later): the database passes
 * PRAGMA integrity_check, the rows written before the kill are there (evaluations in
 * order of time, every one of an existing run), and after the next open the run reads
 * interrupted, never running. */
/* Runs stored in db so far (0 when it cannot be read yet). */
static long runs_in(const char *db)
{
    long n = 0;
    sqlite3 *w;
    if (sqlite3_open_v2(db, &w, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(w, 1000);
        sqlite3_stmt *q;
        if (sqlite3_prepare_v2(w, "SELECT count(*) FROM runs", -1, &q, NULL) == SQLITE_OK &&
            sqlite3_step(q) == SQLITE_ROW)
            n = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    sqlite3_close(w);
    return n;
}

START_TEST(runs_killed_at_several_points_leave_a_consistent_database)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/kill.ini", dir);
    snprintf(db, sizeof db, "%s/kill.db", dir);
    write_file(ini, "[run]\nsteps = 100000000\neval_every = 200\n[model]\narch = logreg\n"
                    "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                    "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n"
                    "[cluster]\nworkers = 2\n[strategy]\nkind = allreduce\n");
    static const long after_ms[] = {30, 400, 1500};
    long runs = 0;
    for (int k = 0; k < 3; k++) {
        pid_t pid = dtsim_start((const char *[]){"run", ini, "--db", db, NULL});
        nanosleep(&(struct timespec){after_ms[k] / 1000, (after_ms[k] % 1000) * 1000000}, NULL);
        /* the second time: kill once the run is stored (on a loaded machine, or under the
         * sanitizers, 400 ms may not reach it) */
        for (int tries = 0; k == 1 && tries < 600 && runs_in(db) <= runs; tries++)
            nanosleep(&(struct timespec){0, 50000000}, NULL);
        long seen = 0; /* the last time: kill once evaluations are stored, then count them */
        for (int tries = 0; k == 2 && tries < 600 && seen < 2; tries++) {
            sqlite3 *w;
            if (sqlite3_open_v2(db, &w, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
                sqlite3_busy_timeout(w, 1000);
                sqlite3_stmt *q;
                if (sqlite3_prepare_v2(w,
                                       "SELECT count(*) FROM evals WHERE run = (SELECT "
                                       "max(id) FROM runs)",
                                       -1, &q, NULL) == SQLITE_OK &&
                    sqlite3_step(q) == SQLITE_ROW)
                    seen = sqlite3_column_int64(q, 0);
                sqlite3_finalize(q);
            }
            sqlite3_close(w);
            if (seen < 2)
                nanosleep(&(struct timespec){0, 50000000}, NULL);
        }
        kill(pid, SIGKILL);
        int status;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        if (access(db, F_OK) != 0)
            continue; /* killed before it made the database: nothing to check yet */
        ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, NULL}), 0);
        sqlite3 *h;
        ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
        assert_intact(h);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'running'"), 0);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status != "
                                       "'interrupted'"),
                         0);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM evals WHERE run NOT IN (SELECT id "
                                       "FROM runs)"),
                         0);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM evals a JOIN evals b ON a.run = "
                                       "b.run AND a.step < b.step AND a.sim_time > b.sim_time"),
                         0);
        runs = query_long(h, "SELECT count(*) FROM runs");
        if (k == 2) {
            ck_assert_int_ge(seen, 2);
            ck_assert_msg(query_long(h, "SELECT count(*) FROM evals WHERE run = (SELECT max(id) "
                                        "FROM runs)") >= seen,
                          "the killed run lost evaluations stored before the kill (%ld seen)",
                          seen);
        }
        sqlite3_close(h);
    }
    ck_assert_int_ge(runs, 2);
}
END_TEST

/* A run whose last run.collapse_after evaluations sit at chance (a learning rate too small
 * to move a 10-class model off its start) ends `collapsed`, exit 1, not `finished`; with the
 * rule off, or a rate that learns, it is `finished`. */
START_TEST(runs_at_chance_end_collapsed)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/col.ini", dir);
    snprintf(db, sizeof db, "%s/col.db", dir);
    write_file(ini, "[run]\nsteps = 60\neval_every = 10\n[model]\narch = logreg\nbatch = 16\n"
                    "lr = 1e-9\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                    "test_samples = 256\nsynthetic_dim = 16\nsynthetic_classes = 10\n"
                    "[cluster]\nworkers = 2\n[strategy]\nkind = allreduce\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 1);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", ini, "--db", db, "--set", "run.collapse_after=0", NULL}), 0);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, "--set", "model.lr=0.5", NULL}),
                     0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE id = 1 AND status = "
                                   "'collapsed'"),
                     1);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE id > 1 AND status = "
                                   "'finished'"),
                     2);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM evals WHERE run = 1 AND test_acc > "
                                   "0.15"),
                     0);
    sqlite3_close(h);
}
END_TEST

/* A livelock of recoveries (a ring at 10 kb/s whose every all-reduce times out after a
 * crash: abort, re-form, abort...) ends: the watchdog stops it after run.stall_after of
 * wall-clock time without a step, recorded `stalled` with a `stalled` fault row; and a
 * SIGTERM ends it at once (it used to be ignored, no step boundary ever coming), recorded
 * interrupted. */
START_TEST(recovery_livelocks_end)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/loop.ini", dir);
    snprintf(db, sizeof db, "%s/loop.db", dir);
    write_file(ini, "[run]\nsteps = 50\neval_every = 10\nstall_after = 2s\n[model]\narch = mlp\n"
                    "hidden = 256\nbatch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                    "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n[cluster]\n"
                    "workers = 4\nbandwidth = 10kbps\n[strategy]\nkind = allreduce\n[faults]\n"
                    "timeout = 0.1s\ncrash = worker-1 at 0.01s for 0.05s\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 1);
    char *e = slurp(err_path);
    ck_assert_msg(strstr(e, "stalled: no step finished for run.stall_after = 2 s"), "%s", e);
    free(e);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'stalled'"), 1);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM faults WHERE kind = 'stalled'"), 1);
    sqlite3_close(h);

    unlink(db);
    pid_t pid =
        dtsim_start((const char *[]){"run", ini, "--set", "run.stall_after=0", "--db", db, NULL});
    /* once the run is in the database (a loaded machine or a sanitizer build can take
     * longer than a second to get there), plus a second of its livelock */
    for (int tries = 0; tries < 600; tries++) {
        sqlite3_stmt *st = NULL;
        int in = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                 sqlite3_prepare_v2(h, "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
        sqlite3_finalize(st);
        sqlite3_close(h);
        if (in)
            break;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    nanosleep(&(struct timespec){1, 0}, NULL);
    kill(pid, SIGTERM);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(waited < 5, "the run took %.1f s to stop after SIGTERM", waited);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    sqlite3_close(h);
}
END_TEST

/* async-ps with a straggler and a time limit: a fast worker asked for the stop at its own
 * step, the straggler then moved it below the steps the others had reached, and they left
 * without a last push while the shard waited for them forever (it now hears a goodbye). */
START_TEST(async_straggler_with_time_limit_ends)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/straggler.ini", dir);
    snprintf(db, sizeof db, "%s/straggler.db", dir);
    write_file(ini, "[run]\nsteps = 1000000\nmax_time = 0.05s\neval_every = 15\n[model]\n"
                    "arch = mlp\nhidden = 256,128\nbatch = 32\nlr = 0.02\nmomentum = 0\n[data]\n"
                    "source = synthetic\ntrain_samples = 4096\ntest_samples = 128\n"
                    "synthetic_dim = 784\nsynthetic_classes = 10\n[cluster]\nplatform = star\n"
                    "bandwidth = 100Gbps\nworkers = 4\n[strategy]\nkind = async-ps\n"
                    "servers = 1\n[faults]\nstraggler = worker-0 x8\n");
    pid_t pid = dtsim_start((const char *[]){"run", ini, "--db", db, NULL});
    int status = 0, waited = 0;
    while (waitpid(pid, &status, WNOHANG) == 0 && waited < 600) {
        nanosleep(&(struct timespec){0, 100000000}, NULL);
        waited++;
    }
    if (waited >= 600) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ck_abort_msg("the run did not end within 60 s");
    }
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
    /* it stopped at the time limit, not at the end of its steps */
    ck_assert_int_lt(query_long(h, "SELECT max(step) FROM evals"), 1000);
    sqlite3_close(h);
}
END_TEST

START_TEST(device_cuda_without_gpu_is_one_clear_error)
{
    /* Where no GPU can be used (this build has no CUDA, or no device answers), asking for one
     * is bad input naming the key; where one can, the run simply works. auto always runs. */
    char path[300], db_path[300];
    snprintf(path, sizeof path, "%s/tiny.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/runs.db", dir);
    write_file(path, tiny);
    int rc =
        dtsim((const char *[]){"run", path, "--db", db_path, "--set", "model.device=cuda", NULL});
    ck_assert_msg(rc == 0 || rc == 2, "exit %d", rc);
    if (rc == 2)
        one_error_line("model.device = cuda: ", NULL);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", path, "--db", db_path, "--set", "model.device=auto", NULL}),
        0);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--set", "model.device=tpu", NULL}), 2);
    one_error_line("--set model.device", "tpu");
}
END_TEST

/* tiny with a [faults] section of one key: writes it to path and returns the key's line. */
static int write_tiny_with_fault(const char *path, const char *key_value)
{
    char text[1024];
    snprintf(text, sizeof text, "%s[faults]\n%s\n", tiny, key_value);
    write_file(path, text);
    int line = 2; /* [faults], then the key */
    for (const char *c = tiny; *c; c++)
        line += *c == '\n';
    return line;
}

START_TEST(fault_naming_no_node_is_bad_input)
{
    /* the names are checked once the platform is loaded, before the database is opened:
     * exit 2, one line naming file, line and key, and no database */
    char path[300], db_path[300], want[700];
    snprintf(path, sizeof path, "%s/crash.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/crash.db", dir);
    int line = write_tiny_with_fault(path, "crash = worker-99 at 1s");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 2);
    snprintf(want, sizeof want,
             "dtsim run: %s:%d: faults.crash: item 1: no node or host named \"worker-99\"", path,
             line);
    one_error_line_starting(want);
    one_error_line("(expected worker-0..worker-1", NULL); /* the names that exist */
    ck_assert_int_eq(access(db_path, F_OK), -1);
    /* the same through --set, and for a straggler */
    write_file(path, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "faults.crash=worker-0 at 1s, worker-2 at 2s", NULL}),
                     2);
    one_error_line_starting("dtsim run: --set faults.crash: item 2: no node or host named "
                            "\"worker-2\"");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "faults.straggler=server-0 x2", NULL}),
                     2);
    one_error_line_starting("dtsim run: --set faults.straggler: item 1: no node or host named "
                            "\"server-0\"");
    ck_assert_int_eq(access(db_path, F_OK), -1);
}
END_TEST

START_TEST(fault_naming_no_link_is_bad_input)
{
    char path[300], db_path[300], want[700];
    snprintf(path, sizeof path, "%s/link.ini", dir);
    snprintf(db_path, sizeof db_path, "%s/link.db", dir);
    int line = write_tiny_with_fault(path, "link_down = nosuchlink at 1s for 1s");
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, NULL}), 2);
    snprintf(want, sizeof want,
             "dtsim run: %s:%d: faults.link_down: item 1: the platform has no link, node or "
             "host named \"nosuchlink\"",
             path, line);
    one_error_line_starting(want);
    ck_assert_int_eq(access(db_path, F_OK), -1);
    write_file(path, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", path, "--db", db_path, "--set",
                                            "faults.link_degrade=nosuchlink at 1s to 1Gbps", NULL}),
                     2);
    one_error_line_starting("dtsim run: --set faults.link_degrade: item 1: the platform has no "
                            "link, node or host named \"nosuchlink\"");
    ck_assert_int_eq(access(db_path, F_OK), -1);
}
END_TEST

/* 1 when the README at DTSIM_SOURCE + path holds text word for word. */
static int readme_holds(const char *path, const char *text)
{
    char full[4096];
    snprintf(full, sizeof full, "%s%s", DTSIM_SOURCE, path);
    FILE *f = fopen(full, "rb");
    ck_assert_msg(f != NULL, "%s: cannot open", full);
    static char readme[1 << 18];
    size_t n = fread(readme, 1, sizeof readme - 1, f);
    readme[n] = 0;
    fclose(f);
    return strstr(readme, text) != NULL;
}

/* The activation values one sample of a profile keeps (its [forward] outputs), read from
 * the profile file by a parser of its own. */
static double profile_outputs(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int in_forward = 0;
    double sum = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '[')
            in_forward = !strncmp(line, "[forward]", 9);
        char *eq = strchr(line, '=');
        double flops, outputs;
        if (in_forward && eq && sscanf(eq + 1, "%lf %lf", &flops, &outputs) == 2)
            sum += outputs;
    }
    fclose(f);
    return sum;
}

/* GPT-2 XL data parallel on h100s: batch 8 holds 2 x 1,557,611,200 x 4 bytes of parameters
 * and gradients and 8 x 4 bytes of every [forward] output, 84.7 GB: check and run refuse it
 * in one line naming the key, writing nothing, and so does a sweep before its first run;
 * run.allow_oversubscribed_memory times it and records it; batch 2 fits and check says by
 * how much. */
START_TEST(layouts_that_do_not_fit_are_refused)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/gpt.ini", dir);
    snprintf(db, sizeof db, "%s/fit.db", dir);
    write_file(ini, "[run]\nsteps = 1\n[model]\narch = profile:gpt2_xl\nbatch = 8\n[cluster]\n"
                    "workers = 2\ndevice = h100\n[strategy]\nkind = allreduce\n");
    double act = profile_outputs(DTSIM_SOURCE "/scenarios/profiles/gpt2_xl.ini") * 8 * 4;
    double total = 2.0 * 1557611200 * 4 + act;
    char want[160];
    snprintf(want, sizeof want,
             "gpt.ini:8: cluster.device: does not fit: %.3g GB > 80 GB on "
             "worker 0 (parameters 6.23 GB, gradients 6.23 GB, optimizer 0 "
             "GB, activations %.3g GB",
             total / 1e9, act / 1e9);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line(want, "set run.allow_oversubscribed_memory = yes to time it anyway");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line(want, NULL);
    ck_assert_int_eq(access(db, F_OK), -1);
    /* a sweep: refused before its first run */
    char sweep[300];
    snprintf(sweep, sizeof sweep, "%s/gpt-sweep.ini", dir);
    write_file(sweep, "[run]\nsteps = 1\n[model]\narch = profile:gpt2_xl\n[cluster]\n"
                      "workers = 2\ndevice = h100\n[strategy]\nkind = allreduce\n[sweep]\n"
                      "model.batch = 2, 8\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", sweep, "--db", db, NULL}), 2);
    one_error_line("dtsim run: member 1: ", "does not fit: ");
    ck_assert_int_eq(access(db, F_OK), -1);
    /* timed anyway, and recorded */
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, "--set",
                                            "run.allow_oversubscribed_memory=yes", NULL}),
                     0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM faults WHERE kind = 'memory' AND "
                                   "detail LIKE 'does not fit: % > 80 GB on worker 0%'"),
                     1);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 1);
    /* the memory table holds what the message summed */
    ck_assert_int_eq(query_long(h, "SELECT params + grads + optimizer + activations FROM memory "
                                   "WHERE worker = 0"),
                     (long)total);
    sqlite3_close(h);
    /* batch 2 fits: check says how full the fullest host is */
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "model.batch=2", NULL}), 0);
    char *o = slurp(out_path), line[160];
    snprintf(line, sizeof line, "\n# memory: worker 0 holds %.3g GB of 80 GB (h100)\n",
             (2.0 * 1557611200 * 4 + act / 4) / 1e9);
    ck_assert_msg(strstr(o, line), "no \"%s\" in:\n%.300s", line + 1, o);
    free(o);
}
END_TEST

/* A MoE profile's plan (--no-run) adds expert groups of 2 and 4 replicas to each layout of 4
 * replicas without ZeRO, right after it, and none to ZeRO's or the bucketed ones; a layout
 * with experts holds less, the more replicas share them (dtsim check's memory). */
START_TEST(plan_searches_expert_groups)
{
    char prof[300], db[300];
    snprintf(prof, sizeof prof, "%s/moe.ini", dir);
    snprintf(db, sizeof db, "%s/plan-moe.db", dir);
    ck_assert_int_eq(
        dtsim((const char *[]){"profile",   "transformer", "--family",  "llama", "--layers", "2",
                               "--hidden",  "64",          "--heads",   "2",     "--seq",    "32",
                               "--vocab",   "100",         "--experts", "4",     "--top-k",  "2",
                               "--moe-ffn", "256",         "--out",     prof,    NULL}),
        0);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", "a100-80gb",
                                            "--devices", "4", "--per-server", "4", "--global-batch",
                                            "4", "--db", db, "--no-run", NULL}),
                     0);
    char *o = slurp(out_path);
    static const char *const after[] = {"t1 p1 d4 mb1x1 z0", "t1 p1 d4 mb1x1 z0 b25",
                                        "t1 p1 d4 mb1x1 z0 e2", "t1 p1 d4 mb1x1 z0 e4",
                                        "t1 p1 d4 mb1x1 z1"};
    double gb[5];
    char *line = strstr(o, "\nt1 p1 d4 mb1x1 z0 ");
    for (int i = 0; i < 5; i++) {
        ck_assert_msg(line && !strncmp(line + 1, after[i], strlen(after[i])) &&
                          line[1 + strlen(after[i])] == ' ',
                      "layout %d is not %s in:\n%s", i, after[i], o);
        const char *holds = strstr(line, " holds ");
        ck_assert_ptr_nonnull(holds);
        gb[i] = atof(holds + 7);
        line = strchr(line + 1, '\n');
    }
    ck_assert_msg(gb[3] < gb[2] && gb[2] < gb[0] && gb[1] == gb[0], "%g %g %g %g", gb[0], gb[1],
                  gb[2], gb[3]);
    ck_assert_msg(!strstr(o, "z1 e") && !strstr(o, "b25 e") && !strstr(o, "z2") &&
                      !strstr(o, "d1 mb1x4 z0 e"),
                  "%s", o);
    free(o);
}
END_TEST

/* dtsim plan of a 2-layer, 2-head GPT on 4 devices, 2 per server, global batch 2. By hand:
 * tensor 1 or 2 (it divides the heads and fits a server), stages dividing the 2 layers, data
 * = 4 / (tensor x stages) dividing the batch (1 x 1 x 4 does not), micro-batches of 1 or 2
 * samples of each replica's batch; then on each: the interleaved schedule over 2 virtual
 * stages (v2) where there are 2 stages and 2 micro-batches (2 x 2 chunks of the profile's 5
 * pieces; 4 would need 8), sequence parallelism (sp) with tensor 2, no, selective or full
 * recomputation, ZeRO-1 only with replicas, and a fitting layout of replicas without ZeRO
 * again with 25 MB gradient buckets (b25): 45 on an A100. On a device of 800 kB the layouts
 * of 2 replicas without ZeRO hold more and are dropped with their memory (and not tried with
 * buckets); the others run as one sweep, the printed memory and best step time are their
 * stored runs', and the variants run with their keys. The plan prints its ranking right
 * after what it planned and a line counting the layouts; --no-run lists each. */
START_TEST(plan_enumerates_fits_and_runs_layouts)
{
    char prof[300], dev[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny.ini", dir);
    snprintf(dev, sizeof dev, "%s/small.ini", dir);
    snprintf(db, sizeof db, "%s/plan.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    write_file(dev, "[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory = 800kB\n");
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", "a100-80gb",
                                            "--devices", "4", "--per-server", "2", "--heads", "2",
                                            "--global-batch", "2", "--db", db, "--no-run", NULL}),
                     0);
    static const char *const hand[] = {"t1 p2 d2 mb1x1 z0", "t1 p2 d2 mb1x1 z1",
                                       "t2 p1 d2 mb1x1 z0", "t2 p1 d2 mb1x1 z1",
                                       "t2 p2 d1 mb1x2 z0", "t2 p2 d1 mb2x1 z0"};
    static const char *const listed[] = {"t1 p2 d2 mb1x1 z0",
                                         "t1 p2 d2 mb1x1 z0 b25",
                                         "t1 p2 d2 mb1x1 z1",
                                         "t1 p2 d2 mb1x1 z0 selective",
                                         "t1 p2 d2 mb1x1 z0 b25 selective",
                                         "t1 p2 d2 mb1x1 z1 selective",
                                         "t1 p2 d2 mb1x1 z0 full",
                                         "t1 p2 d2 mb1x1 z0 b25 full",
                                         "t1 p2 d2 mb1x1 z1 full",
                                         "t2 p1 d2 mb1x1 z0",
                                         "t2 p1 d2 mb1x1 z0 b25",
                                         "t2 p1 d2 mb1x1 z1",
                                         "t2 p1 d2 mb1x1 z0 selective",
                                         "t2 p1 d2 mb1x1 z0 b25 selective",
                                         "t2 p1 d2 mb1x1 z1 selective",
                                         "t2 p1 d2 mb1x1 z0 full",
                                         "t2 p1 d2 mb1x1 z0 b25 full",
                                         "t2 p1 d2 mb1x1 z1 full",
                                         "t2 p1 d2 mb1x1 z0 sp",
                                         "t2 p1 d2 mb1x1 z0 b25 sp",
                                         "t2 p1 d2 mb1x1 z1 sp",
                                         "t2 p1 d2 mb1x1 z0 sp selective",
                                         "t2 p1 d2 mb1x1 z0 b25 sp selective",
                                         "t2 p1 d2 mb1x1 z1 sp selective",
                                         "t2 p1 d2 mb1x1 z0 sp full",
                                         "t2 p1 d2 mb1x1 z0 b25 sp full",
                                         "t2 p1 d2 mb1x1 z1 sp full",
                                         "t2 p2 d1 mb1x2 z0",
                                         "t2 p2 d1 mb1x2 z0 selective",
                                         "t2 p2 d1 mb1x2 z0 full",
                                         "t2 p2 d1 mb1x2 z0 sp",
                                         "t2 p2 d1 mb1x2 z0 sp selective",
                                         "t2 p2 d1 mb1x2 z0 sp full",
                                         "t2 p2 d1 mb1x2 z0 v2",
                                         "t2 p2 d1 mb1x2 z0 v2 selective",
                                         "t2 p2 d1 mb1x2 z0 v2 full",
                                         "t2 p2 d1 mb1x2 z0 sp v2",
                                         "t2 p2 d1 mb1x2 z0 sp v2 selective",
                                         "t2 p2 d1 mb1x2 z0 sp v2 full",
                                         "t2 p2 d1 mb2x1 z0",
                                         "t2 p2 d1 mb2x1 z0 selective",
                                         "t2 p2 d1 mb2x1 z0 full",
                                         "t2 p2 d1 mb2x1 z0 sp",
                                         "t2 p2 d1 mb2x1 z0 sp selective",
                                         "t2 p2 d1 mb2x1 z0 sp full"};
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, ": 45 layouts, 45 fit, at most 45 to simulate\n"), "%s", o);
    char *line = strstr(o, "\nlayout ");
    ck_assert_ptr_nonnull(line);
    for (size_t i = 0; i < sizeof listed / sizeof *listed; i++) {
        line = strchr(line + 1, '\n');
        ck_assert_msg(line && !strncmp(line + 1, listed[i], strlen(listed[i])) &&
                          line[1 + strlen(listed[i])] == ' ',
                      "layout %zu is not %s in:\n%s", i, listed[i], o);
    }
    ck_assert_msg(!strchr(line + 1, '\n')[1], "more layouts than by hand:\n%s", o);
    free(o);
    ck_assert_int_eq(access(db, F_OK), -1); /* --no-run writes nothing */

    ck_assert_int_eq(
        dtsim((const char *[]){
            "plan", "--profile",    prof, "--device", dev, "--memory-margin", "0", "--devices",
            "4",    "--per-server", "2",  "--heads",  "2", "--global-batch",  "2", "--db",
            db,     "-j",           "2",  NULL}),
        0);
    o = slurp(out_path);
    /* the ranking first: what was planned, the layouts counted in a line, the ranking */
    ck_assert_msg(!strncmp(o, "plan: tiny on 4 x ", 18) &&
                      strstr(o, ": 36 layouts, 27 fit, at most 27 to simulate\nfit: at least 0 GB "
                                "left free on every device (--memory-margin 0)\n36 layouts: 27 "
                                "fit, 9 do not fit the device's memory (--verbose or --no-run "
                                "lists each with its memory)\n\nbest layouts of ") &&
                      !strstr(o, " fits: ") && !strstr(o, " dropped: "),
                  "%s", o);
    long pruned = 0; /* the bound prunes what cannot win; what it leaves runs */
    const char *pr = strstr(o, "\npruned ");
    ck_assert_msg(!pr || sscanf(pr, "\npruned %ld of 27 layouts", &pruned) == 1, "%s", o);
    /* each layout's fit as --no-run and --verbose list it */
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", dev, "--devices", "4",
                               "--per-server", "2", "--heads", "2", "--global-batch", "2",
                               "--no-run", "--memory-margin", "0", NULL}),
        0);
    char *listed_o = slurp(out_path);
    for (int i = 0; i < 6; i++) {
        char *at = strstr(listed_o, hand[i]);
        ck_assert_ptr_nonnull(at);
        double used, cap;
        int dropped = i == 0 || i == 2;
        if (dropped)
            ck_assert_msg(sscanf(at + 26, " dropped: does not fit: %lf GB > %lf GB", &used, &cap) ==
                              2,
                          "%s", at);
        else
            ck_assert_msg(sscanf(at + 26, " fits: worker 0 holds %lf GB of %lf GB", &used, &cap) ==
                              2,
                          "%s", at);
        ck_assert_double_eq(cap, 0.0008);
        ck_assert_msg(dropped ? used > cap : used <= cap, "%s", at);
    }
    free(listed_o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished' AND "
                                   "sweep LIKE 'plan-tiny-%'"),
                     27 - pruned);
    /* each variant with its keys, and none without them */
    static const struct {
        const char *name, *config;
    } keyed[] = {
        {"plan-tiny-t2p2d1-mb1x2-z0-sp-v2", "%pipeline_schedule = interleaved%sequence_parallel "
                                            "= yes%virtual_stages = 2%"},
        {"plan-tiny-t2p2d1-mb1x2-z0-v2", "%pipeline_schedule = interleaved%sequence_parallel = "
                                         "no%virtual_stages = 2%"},
        {"plan-tiny-t2p2d1-mb1x2-z0-sp", "%pipeline_schedule = 1f1b%sequence_parallel = yes%"},
        {"plan-tiny-t1p2d2-mb1x1-z1-selective", "%recompute = selective%"},
        {"plan-tiny-t2p1d2-mb1x1-z1-sp-full", "%recompute = full%sequence_parallel = yes%"},
    };
    for (size_t i = 0; i < sizeof keyed / sizeof *keyed; i++) {
        char q[400];
        snprintf(q, sizeof q,
                 "SELECT count(*) FROM runs WHERE name = '%s' AND status = "
                 "'finished' AND config LIKE '%s'",
                 keyed[i].name, keyed[i].config);
        ck_assert_msg(query_long(h, q) == 1, "%s", q);
    }
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE (name LIKE '%-sp%') != "
                                   "(config LIKE '%sequence_parallel = yes%') OR (name LIKE "
                                   "'%-v2%') != (config LIKE '%virtual_stages = 2%')"),
                     0);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT sweep) FROM runs"), 1);
    /* the best row: its run, step time and memory as stored, and no run faster */
    char *best = strstr(o, "\n1    ");
    ck_assert_msg(best, "%s", o);
    char t[8], p[8], d[8], mb[16], z[8];
    long run;
    double step, samples, tokens, mem, headroom;
    ck_assert_int_eq(sscanf(best, " 1 %7s %7s %7s %15s %7s %ld %lf %lf %lf %lf %lf", t, p, d, mb, z,
                            &run, &step, &samples, &tokens, &mem, &headroom),
                     11);
    /* the profile's sequences of 32 tokens; the device's 800 kB less the fullest device's */
    ck_assert_msg(fabs(tokens - 32 * samples) <= 1e-3 * tokens, "%g tokens/s, %g samples/s", tokens,
                  samples);
    ck_assert_msg(fabs(headroom - (0.0008 - mem)) <= 1e-3 * 0.0008, "headroom %g GB, %g GB held",
                  headroom, mem);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT sim_time / steps FROM run_summary WHERE run = %ld", run);
    double stored = query_double(h, sql);
    ck_assert_msg(fabs(step - stored) <= 1e-5 * stored, "printed %g, stored %g", step, stored);
    ck_assert_double_eq(query_double(h, "SELECT min(sim_time / steps) FROM run_summary"), stored);
    snprintf(sql, sizeof sql,
             "SELECT max(params + grads + optimizer + activations) FROM memory "
             "WHERE run = %ld",
             run);
    double held = query_double(h, sql) / 1e9;
    ck_assert_msg(fabs(mem - held) <= 1e-3 * held, "printed %g GB, stored %g GB", mem, held);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM runs WHERE id = %ld AND name = "
             "'plan-tiny-%s%s%s-%s-%s'",
             run, t, p, d, mb, z);
    ck_assert_msg(query_long(h, sql) == 1, "run %ld is not %s %s %s %s %s", run, t, p, d, mb, z);
    assert_intact(h);
    sqlite3_close(h);
    free(o);

    /* bad input: one line, exit code 2, no database */
    snprintf(db, sizeof db, "%s/plan-bad.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100",
                                            "--devices", "4", "--db", db, NULL}),
                     2);
    one_error_line("dtsim plan: missing --global-batch B", NULL);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100", "--devices", "6",
                               "--per-server", "4", "--global-batch", "6", "--db", db, NULL}),
        2);
    one_error_line("--devices 6 is not a whole number of servers of 4", NULL);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100", "--devices", "4",
                               "--heads", "1", "--global-batch", "1", "--db", db, NULL}),
        2);
    one_error_line("no layout of 4 devices", "global batch of 1");
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100", "--devices", "4",
                               "--global-batch", "4", "--set", "cluster.nope=1", "--db", db, NULL}),
        2);
    one_error_line("dtsim plan: --set cluster.nope", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100",
                                            "--devices", "4", "--global-batch", "4", "--set",
                                            "strategy.sequence_parallel=yes", "--db", db, NULL}),
                     2);
    one_error_line("dtsim plan: --set strategy.sequence_parallel=yes: the plan searches "
                   "strategy.sequence_parallel itself",
                   NULL);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100", "--devices", "0",
                               "--global-batch", "4", "--db", db, NULL}),
        2);
    one_error_line("--devices 0: expected an integer", NULL);
    /* --tensor and --stages: sizes of 1, 2, 4, 8 and counts of 1 to 64, each once; stages
     * beyond the profile's 2 layers leave no layout */
    static const char *const lists[][3] = {
        {"--tensor", "3", "--tensor 3: expected tensor sizes of 1, 2, 4 or 8"},
        {"--tensor", "2,16", "--tensor 2,16: expected tensor sizes of 1, 2, 4 or 8"},
        {"--stages", "0", "--stages 0: expected stage counts in [1, 64]"},
        {"--stages", "2,2", "--stages 2,2: expected stage counts in [1, 64]"},
        {"--stages", "4", "stages of --stages, at most 2 layers) divides the global batch"}};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
        ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100",
                                                "--devices", "4", "--global-batch", "4",
                                                lists[i][0], lists[i][1], "--db", db, NULL}),
                         2);
        one_error_line(lists[i][2], NULL);
    }
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--stages", "2", "--db", db, NULL}),
                     2);
    one_error_line("--show ranks a stored plan: --stages does not go with it", NULL);
    ck_assert_int_eq(access(db, F_OK), -1);
}
END_TEST

/* A plan where nothing fits: the list of what each layout would hold on stdout, one line
 * on stderr, exit code 2, no database; --no-run the same. */
START_TEST(plan_where_nothing_fits_is_one_error_line)
{
    char prof[300], dev[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny4.ini", dir);
    snprintf(dev, sizeof dev, "%s/tiny4-dev.ini", dir);
    snprintf(db, sizeof db, "%s/plan4.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    write_file(dev, "[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory = 10kB\n");
    for (int no_run = 0; no_run < 2; no_run++) {
        ck_assert_int_eq(
            dtsim((const char *[]){"plan", "--profile", prof, "--device", dev, "--devices", "4",
                                   "--per-server", "2", "--heads", "2", "--global-batch", "2",
                                   "--db", db, no_run ? "--no-run" : NULL, NULL}),
            2);
        one_error_line("dtsim plan: none of the 54 layouts of tiny4 on 4 x ", "fits its memory");
        char *o = slurp(out_path);
        ck_assert_msg(strstr(o, ": 54 layouts, 0 fit, at most 0 to simulate\n") &&
                          !strstr(o, " fits: "),
                      "%s", o);
        free(o);
        ck_assert_int_ne(access(db, F_OK), 0);
    }
}
END_TEST

/* A layout that does not fit at ZeRO-1 is tried again at ZeRO-2, and at ZeRO-3 where ZeRO-2
 * does not fit: the tiny GPT of plan_enumerates_fits_and_runs_layouts on a device of 550 kB.
 * Every variant of 2 replicas (its ZeRO-1 row prints parameters P, gradients G, optimizer
 * state O and activations A) fits only at ZeRO-3, which holds P/2 + G/2 + O + A (ZeRO-2,
 * P + G/2 + O + A, is more than 550 kB), but t2 p1 d2 with sequence parallelism and full
 * recomputation, which fits at ZeRO-2 and is not tried at 3; t2 p2 d1 fits with sequence
 * parallelism, or with full recomputation, and with micro-batches of two samples only with
 * sequence parallelism; interleaved over 2 chunks a stage (its 4 chunks as even as the
 * largest allows) only with recomputation, selective with sequence parallelism. Each retry is
 * listed after the row it retries, runs with its keys
 * (--no-prune: all of them), and holds what its row says. */
START_TEST(plan_tries_zero3_and_recompute_to_fit)
{
    char prof[300], dev[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny3.ini", dir);
    snprintf(dev, sizeof dev, "%s/small3.ini", dir);
    snprintf(db, sizeof db, "%s/plan3.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    write_file(dev, "[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory = 550kB\n");
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile",       prof,        "--device",
                                            dev,    "--memory-margin", "0",         "--devices",
                                            "4",    "--per-server",    "2",         "--heads",
                                            "2",    "--global-batch",  "2",         "--db",
                                            db,     "--no-prune",      "--verbose", NULL}),
                     0);
    static const char *const hand[] = {"t1 p2 d2 mb1x1 z0 ",
                                       "t1 p2 d2 mb1x1 z1 ",
                                       "t1 p2 d2 mb1x1 z2 ",
                                       "t1 p2 d2 mb1x1 z3 ",
                                       "t1 p2 d2 mb1x1 z0 selective ",
                                       "t1 p2 d2 mb1x1 z1 selective ",
                                       "t1 p2 d2 mb1x1 z2 selective ",
                                       "t1 p2 d2 mb1x1 z3 selective ",
                                       "t1 p2 d2 mb1x1 z0 full ",
                                       "t1 p2 d2 mb1x1 z1 full ",
                                       "t1 p2 d2 mb1x1 z2 full ",
                                       "t1 p2 d2 mb1x1 z3 full ",
                                       "t2 p1 d2 mb1x1 z0 ",
                                       "t2 p1 d2 mb1x1 z1 ",
                                       "t2 p1 d2 mb1x1 z2 ",
                                       "t2 p1 d2 mb1x1 z3 ",
                                       "t2 p1 d2 mb1x1 z0 selective ",
                                       "t2 p1 d2 mb1x1 z1 selective ",
                                       "t2 p1 d2 mb1x1 z2 selective ",
                                       "t2 p1 d2 mb1x1 z3 selective ",
                                       "t2 p1 d2 mb1x1 z0 full ",
                                       "t2 p1 d2 mb1x1 z1 full ",
                                       "t2 p1 d2 mb1x1 z2 full ",
                                       "t2 p1 d2 mb1x1 z3 full ",
                                       "t2 p1 d2 mb1x1 z0 sp ",
                                       "t2 p1 d2 mb1x1 z1 sp ",
                                       "t2 p1 d2 mb1x1 z2 sp ",
                                       "t2 p1 d2 mb1x1 z3 sp ",
                                       "t2 p1 d2 mb1x1 z0 sp selective ",
                                       "t2 p1 d2 mb1x1 z1 sp selective ",
                                       "t2 p1 d2 mb1x1 z2 sp selective ",
                                       "t2 p1 d2 mb1x1 z3 sp selective ",
                                       "t2 p1 d2 mb1x1 z0 sp full ",
                                       "t2 p1 d2 mb1x1 z1 sp full ",
                                       "t2 p1 d2 mb1x1 z2 sp full ",
                                       "t2 p2 d1 mb1x2 z0 ",
                                       "t2 p2 d1 mb1x2 z0 selective ",
                                       "t2 p2 d1 mb1x2 z0 full ",
                                       "t2 p2 d1 mb1x2 z0 sp ",
                                       "t2 p2 d1 mb1x2 z0 sp selective ",
                                       "t2 p2 d1 mb1x2 z0 sp full ",
                                       "t2 p2 d1 mb1x2 z0 v2 ",
                                       "t2 p2 d1 mb1x2 z0 v2 selective ",
                                       "t2 p2 d1 mb1x2 z0 v2 full ",
                                       "t2 p2 d1 mb1x2 z0 sp v2 ",
                                       "t2 p2 d1 mb1x2 z0 sp v2 selective ",
                                       "t2 p2 d1 mb1x2 z0 sp v2 full ",
                                       "t2 p2 d1 mb2x1 z0 ",
                                       "t2 p2 d1 mb2x1 z0 selective ",
                                       "t2 p2 d1 mb2x1 z0 full ",
                                       "t2 p2 d1 mb2x1 z0 sp ",
                                       "t2 p2 d1 mb2x1 z0 sp selective ",
                                       "t2 p2 d1 mb2x1 z0 sp full "};
    static const int fits[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0,
                               0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0,
                               0, 1, 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1};
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, ": 53 layouts, 19 fit, at most 19 to simulate\n"), "%s", o);
    char *line = strstr(o, "\nlayout ");
    ck_assert_ptr_nonnull(line);
    /* the last ZeRO-1 row's (the variant's, listed before its retries) */
    double P = 0, G = 0, O = 0, A = 0, used, cap, p_t2 = 0; /* t2 p1 d2 z1's parameters */
    for (size_t i = 0; i < sizeof hand / sizeof *hand; i++) {
        line = strchr(line + 1, '\n');
        ck_assert_msg(line && !strncmp(line + 1, hand[i], strlen(hand[i])),
                      "layout %zu is not %s in:\n%s", i, hand[i], o);
        const char *what = line + 1 + strlen(hand[i]);
        if (!fits[i]) {
            double p, g, q, a;
            ck_assert_msg(sscanf(what,
                                 " dropped: does not fit: %lf GB > %lf GB on worker 0 "
                                 "(parameters %lf GB, gradients %lf GB, optimizer %lf GB, "
                                 "activations %lf GB",
                                 &used, &cap, &p, &g, &q, &a) == 6,
                          "%s", what);
            if (hand[i][16] == '1') {
                P = p, G = g, O = q, A = a;
                if (!strcmp(hand[i], "t2 p1 d2 mb1x1 z1 "))
                    p_t2 = P;
            }
            continue;
        }
        ck_assert_msg(sscanf(what, " fits: worker 0 holds %lf GB of %lf GB", &used, &cap) == 2,
                      "%s", what);
        ck_assert_msg(used <= cap && cap == 0.00055, "%s", what);
        if (hand[i][16] == '3') { /* after its ZeRO-1 and ZeRO-2 rows */
            double z3 = P / 2 + G / 2 + O + A, z2 = P + G / 2 + O + A;
            ck_assert_msg(fabs(used - z3) <= 2e-3 * z3 && z2 > cap,
                          "%s: %g GB, want %g (ZeRO-2 "
                          "%g)",
                          hand[i], used, z3, z2);
        }
    }
    line = strchr(line + 1, '\n');
    ck_assert_msg(line && line[1] != 't', "more layouts than by hand:\n%s", o);
    free(o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 19);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE name LIKE '%-z3' AND config "
                                   "LIKE '%shard_optimizer = yes%' AND config LIKE "
                                   "'%zero_stage = 3%' AND config LIKE '%recompute = none%'"),
                     2);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE name = "
                                   "'plan-tiny3-t2p2d1-mb1x2-z0-full' AND config LIKE "
                                   "'%shard_optimizer = no%' AND config LIKE "
                                   "'%recompute = full%'"),
                     1);
    /* the ZeRO-3 runs hold half the parameters and gradients of their ZeRO-1 rows */
    double held = query_double(h, "SELECT max(m.params) FROM memory m JOIN runs r ON r.id = "
                                  "m.run WHERE r.name = 'plan-tiny3-t2p1d2-mb1x1-z3'");
    ck_assert_msg(fabs(held / 1e9 - p_t2 / 2) <= 2e-3 * p_t2, "%g bytes, ZeRO-1 %g GB", held, p_t2);
    assert_intact(h);
    sqlite3_close(h);
    /* -j checks and retries layouts in child processes at once: the same list, in order */
    char *lists[2];
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(
            dtsim((const char *[]){"plan", "--profile", prof, "--device", dev, "--memory-margin",
                                   "0", "--devices", "4", "--per-server", "2", "--heads", "2",
                                   "--global-batch", "2", "--no-run", "-j", i ? "3" : "1", NULL}),
            0);
        lists[i] = slurp(out_path);
    }
    ck_assert_msg(strstr(lists[0], ": 53 layouts, 19 fit, at most 19 to simulate\n") &&
                      !strcmp(lists[0], lists[1]),
                  "-j 1:\n%s\n-j 3:\n%s", lists[0], lists[1]);
    free(lists[0]);
    free(lists[1]);
}
END_TEST

/* The plan checks its layouts' memory in its own process (the pipeline's memory slot, no
 * platform); `dtsim check` prepares a whole run in a child. Both must say the same: for a
 * handful of layouts of plan_tries_zero3_and_recompute_to_fit (fitting and dropped, ZeRO-1
 * to 3, sequence parallelism, recomputation, interleaved) and of a 5-layer GPT in 2 stages
 * (--stages 2, which does not divide 5; its interleaved t2 p2 d1 mb1x2 v2, 4 chunks of 5
 * layers, is fullest on worker 2, its second stage), each listed line equals check's line
 * for a scenario written by hand with the plan's keys: "fits: " and check's "# memory: "
 * line, or "dropped: " and check's error without its "FILE:LINE: cluster.device: " and
 * hint. The 5-layer plan, by hand: tensor 1 (2 replicas of one sample: 1 micro-batch, ZeRO
 * 0 or 1, 3 recomputations, and ZeRO 0 again with buckets: 9) and tensor 2 (one replica of
 * 2 samples: micro-batches of 1, 1F1B or interleaved over 2 or 4 virtual stages, 8 chunks
 * of its 11 pieces, and of 2, 1F1B only; each with and without sp and 3 recomputations:
 * 24): 33, all fitting on an A100. */
START_TEST(plan_memory_equals_check)
{
    char prof[300], prof5[300], dev[300], ini[300];
    snprintf(prof, sizeof prof, "%s/tinym.ini", dir);
    snprintf(prof5, sizeof prof5, "%s/tinym5.ini", dir);
    snprintf(dev, sizeof dev, "%s/smallm.ini", dir);
    snprintf(ini, sizeof ini, "%s/layout.ini", dir);
    for (int k = 0; k < 2; k++)
        ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", k ? "5" : "2",
                                                "--hidden", "64", "--heads", "2", "--seq", "32",
                                                "--vocab", "100", "--out", k ? prof5 : prof, NULL}),
                         0);
    write_file(dev, "[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory = 550kB\n");
    static const struct {
        int uneven; /* the 5-layer GPT on an A100, --stages 2 */
        const char *layout, *keys;
    } cases[] = {
        {0, "t1 p2 d2 mb1x1 z1 ",
         "tensor = 1\nstages = 2\ndata_parallel = 2\nmicro_batches = 1\n"
         "shard_optimizer = yes\nzero_stage = 1\n[model]\nbatch = 1\n"},
        {0, "t1 p2 d2 mb1x1 z3 ",
         "tensor = 1\nstages = 2\ndata_parallel = 2\nmicro_batches = 1\n"
         "shard_optimizer = yes\nzero_stage = 3\n[model]\nbatch = 1\n"},
        {0, "t2 p1 d2 mb1x1 z2 sp full ",
         "tensor = 2\nstages = 1\ndata_parallel = 2\nmicro_batches = 1\nshard_optimizer = yes\n"
         "zero_stage = 2\nsequence_parallel = yes\n[model]\nbatch = 1\nrecompute = full\n"},
        {0, "t2 p2 d1 mb1x2 z0 sp v2 ",
         "tensor = 2\nstages = 2\ndata_parallel = 1\nmicro_batches = 2\nsequence_parallel = yes\n"
         "pipeline_schedule = interleaved\nvirtual_stages = 2\n[model]\nbatch = 2\n"},
        {0, "t2 p2 d1 mb2x1 z0 selective ",
         "tensor = 2\nstages = 2\ndata_parallel = 1\nmicro_batches = 1\n[model]\nbatch = 2\n"
         "recompute = selective\n"},
        {0, "t2 p2 d1 mb1x2 z0 sp full ",
         "tensor = 2\nstages = 2\ndata_parallel = 1\nmicro_batches = 2\nsequence_parallel = yes\n"
         "[model]\nbatch = 2\nrecompute = full\n"},
        {1, "t1 p2 d2 mb1x1 z1 selective ",
         "tensor = 1\nstages = 2\ndata_parallel = 2\nmicro_batches = 1\nshard_optimizer = yes\n"
         "zero_stage = 1\n[model]\nbatch = 1\nrecompute = selective\n"},
        {1, "t2 p2 d1 mb1x2 z0 v2 ",
         "tensor = 2\nstages = 2\ndata_parallel = 1\nmicro_batches = 2\n"
         "pipeline_schedule = interleaved\nvirtual_stages = 2\n[model]\nbatch = 2\n"},
        {1, "t2 p2 d1 mb1x2 z0 sp full ",
         "tensor = 2\nstages = 2\ndata_parallel = 1\nmicro_batches = 2\nsequence_parallel = yes\n"
         "[model]\nbatch = 2\nrecompute = full\n"},
    };
    char *lists[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(
            dtsim((const char *[]){"plan", "--profile", k ? prof5 : prof, "--device",
                                   k ? "a100-80gb" : dev, "--memory-margin", "0", "--devices", "4",
                                   "--per-server", "2", "--heads", "2", "--global-batch", "2",
                                   "--no-run", "--stages", k ? "2" : "1,2", NULL}),
            0);
        lists[k] = slurp(out_path);
    }
    ck_assert_msg(strstr(lists[0], ": 53 layouts, 19 fit, at most 19 to simulate\n"), "%s",
                  lists[0]);
    ck_assert_msg(strstr(lists[1], ": 33 layouts, 33 fit, at most 33 to simulate\n"), "%s",
                  lists[1]);
    int fits = 0, dropped = 0, other = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[2048], want[1024], find[128];
        snprintf(text, sizeof text,
                 "[model]\narch = profile:%s\nprecision = bf16\noptimizer = adam\n"
                 "[cluster]\nplatform = multi-rack\nracks = 2\nworkers = 4\ndevice = %s\n"
                 "bandwidth = 2400Gbps\nuplink_bandwidth = 1600Gbps\nlatency = 2us\n"
                 "uplink_latency = 2us\nnetwork_model = CM02\n"
                 "[strategy]\nkind = pipeline\nalgorithm = ring\ntensor_comm = formula\n%s",
                 cases[i].uneven ? prof5 : prof, cases[i].uneven ? "a100-80gb" : dev,
                 cases[i].keys);
        write_file(ini, text);
        int rc = dtsim((const char *[]){"check", ini, NULL});
        if (rc == 0) {
            char *o = slurp(out_path), *at = strstr(o, "\n# memory: ");
            ck_assert_msg(at, "%s: no memory line:\n%s", cases[i].layout, o);
            at += 11;
            snprintf(want, sizeof want, "fits: %.*s", (int)strcspn(at, "\n"), at);
            other += strncmp(at, "worker 0 ", 9) != 0;
            free(o);
            fits++;
        } else {
            ck_assert_int_eq(rc, 2);
            char *e = slurp(err_path), *at = strstr(e, "cluster.device: does not fit: ");
            ck_assert_msg(at && strstr(at, "; set run."), "%s: %s", cases[i].layout, e);
            at += 16;
            snprintf(want, sizeof want, "dropped: %.*s", (int)(strstr(at, "; set run.") - at), at);
            free(e);
            dropped++;
        }
        snprintf(find, sizeof find, "\n%s", cases[i].layout);
        const char *line = strstr(lists[cases[i].uneven], find);
        ck_assert_msg(line, "no %s in:\n%s", cases[i].layout, lists[cases[i].uneven]);
        line += strlen(find);
        line += strspn(line, " ");
        ck_assert_msg(!strncmp(line, want, strlen(want)) && line[strlen(want)] == '\n',
                      "%s: plan\n  %.*s\ncheck\n  %s", cases[i].layout, (int)strcspn(line, "\n"),
                      line, want);
    }
    ck_assert_int_eq(fits, 6);
    ck_assert_int_eq(dropped, 3);
    ck_assert_int_eq(other, 1); /* worker 2 */
    free(lists[0]);
    free(lists[1]);
}
END_TEST

/* A plan's ranking block: from its "best layouts" line to the end of its output. */
static char *plan_ranking(const char *out)
{
    const char *at = strstr(out, "\nbest layouts of ");
    ck_assert_msg(at, "no ranking in:\n%s", out);
    return strdup(at + 1);
}

/* The ranked rows of a plan's output without their run ids (which differ between
 * databases), one a line. */
static char *plan_rows(const char *out)
{
    char *rows = calloc(1, strlen(out) + 1), *w = rows;
    const char *line = strstr(out, "\nrank ");
    ck_assert_msg(line, "no ranking in:\n%s", out);
    for (line = strchr(line + 1, '\n'); line && line[1] >= '1' && line[1] <= '9';
         line = strchr(line + 1, '\n')) {
        const char *end = strchr(line + 1, '\n');
        size_t len = end ? (size_t)(end - line - 1) : strlen(line + 1);
        /* the run id: the first word after the rank of digits only (a layout's words, t1,
         * mb1x2, z0, sp, v2, full, are not), however long the layout's name */
        const char *id = line + 1 + strcspn(line + 1, " ");
        for (;;) {
            id += strspn(id, " ");
            size_t n = strcspn(id, " \n"), digits = strspn(id, "0123456789");
            ck_assert_msg(n && id < line + 1 + len, "no run id in %.*s", (int)len, line + 1);
            if (digits == n)
                break;
            id += n;
        }
        size_t head = (size_t)(id - line - 1), skip = strcspn(id, " \n");
        memcpy(w, line + 1, head);
        memcpy(w + head, id + skip, len - head - skip);
        w += len - skip;
        *w++ = '\n';
    }
    return rows;
}

/* The first number after "PARTIAL: " in out, -1 when there is no such line. */
static long plan_partial(const char *out)
{
    const char *at = strstr(out, "\nPARTIAL: ");
    long k = -1, n = 0;
    if (at)
        ck_assert_int_eq(sscanf(at, "\nPARTIAL: %ld of %ld layouts simulated", &k, &n), 2);
    return k;
}

/* The peak of a device of the catalogue at a precision, read from catalogue.ini here. */
static double catalogue_peak(const char *device, const char *precision)
{
    char path[512], line[512], section[128];
    snprintf(path, sizeof path, "%s/scenarios/devices/catalogue.ini", DTSIM_SOURCE);
    snprintf(section, sizeof section, "[device %s]\n", device);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int in = 0;
    double tf = NAN;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '[')
            in = !strcmp(line, section);
        size_t n = strlen(precision);
        if (in && !strncmp(line, precision, n) && sscanf(line + n, " = %lfTf", &tf) == 1)
            break;
    }
    fclose(f);
    ck_assert_msg(!isnan(tf), "no %s peak of %s in %s", precision, device, path);
    return tf * 1e12;
}

/* The ranking's new columns of the tiny GPT of plan_enumerates_fits_and_runs_layouts on 4
 * A100s at $4 a device-hour, with --tokens 2T, each against what the test works out itself:
 * tokens/s = 32 tokens x samples/s; %peak = the printed TFLOP/s over the catalogue's BF16
 * peak (read from catalogue.ini here); headroom = 80 GB less the memory printed; $/M tokens,
 * days, MWh and $ of 2T tokens from the stored cost per sample and the printed step time and
 * energy. --show prints the same ranking from the database alone; bad options are one line,
 * exit code 2, nothing written. */
START_TEST(plan_ranks_tokens_peak_headroom_and_cost)
{
    char prof[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny-r.ini", dir);
    snprintf(db, sizeof db, "%s/plan-r.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    ck_assert_int_eq(dtsim((const char *[]){"plan",
                                            "--profile",
                                            prof,
                                            "--device",
                                            "a100-80gb",
                                            "--devices",
                                            "4",
                                            "--per-server",
                                            "2",
                                            "--heads",
                                            "2",
                                            "--global-batch",
                                            "2",
                                            "--db",
                                            db,
                                            "--set",
                                            "cluster.price_per_device_hour=4",
                                            "--tokens",
                                            "2T",
                                            "--no-prune",
                                            "--max-runs",
                                            "8",
                                            NULL}),
                     0);
    char *o = slurp(out_path), *e = slurp(err_path);
    ck_assert_msg(plan_partial(o) == -1 && strstr(e, "plan: 8/8 done, ") &&
                      strstr(o, "\nnot simulated 37 of 45 layouts: past --max-runs"),
                  "%s\n%s", o, e);
    free(e);
    const char *best = strstr(o, "\n1    ");
    ck_assert_msg(best, "%s", o);
    char t[8], p[8], d[8], mb[16], z[8];
    long run;
    double step, samples, tokens, mem, headroom, tflops, peak, kj, per_1k, per_m, days, mwh,
        dollars;
    ck_assert_int_eq(sscanf(best, " 1 %7s %7s %7s %15s %7s", t, p, d, mb, z), 5);
    /* the run id: the first word of digits after the layout's (sp, v2, selective, ...) */
    const char *id = best + strspn(best, "\n 1");
    while (*id != '\n' && strspn(id, "0123456789") != strcspn(id, " \n"))
        id += strcspn(id, " \n") + strspn(id + strcspn(id, " \n"), " ");
    ck_assert_int_eq(sscanf(id, "%ld %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &run,
                            &step, &samples, &tokens, &mem, &headroom, &tflops, &peak, &kj, &per_1k,
                            &per_m, &days, &mwh, &dollars),
                     14);
    ck_assert_msg(fabs(tokens - 32 * samples) <= 1e-3 * tokens, "%g vs %g", tokens, samples);
    double want_peak = 100 * tflops * 1e12 / catalogue_peak("a100-80gb", "bf16");
    ck_assert_msg(fabs(peak - want_peak) <= 1e-2 * want_peak, "%%peak %g, want %g", peak,
                  want_peak);
    ck_assert_msg(fabs(headroom - (80 - mem)) <= 1e-3 * 80, "headroom %g, memory %g", headroom,
                  mem);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT dollars_per_sample FROM energy WHERE run = %ld", run);
    double per_sample = query_double(h, sql);
    ck_assert_msg(per_sample > 0, "run %ld costs %g", run, per_sample);
    ck_assert_msg(fabs(per_1k - 1000 * per_sample) <= 1e-3 * per_1k, "%g", per_1k);
    ck_assert_msg(fabs(per_m - 1e6 * per_sample / 32) <= 1e-3 * per_m, "%g", per_m);
    double steps = 2e12 / (32 * 2);
    ck_assert_msg(fabs(days - steps * step / 86400) <= 1e-3 * days, "%g days", days);
    ck_assert_msg(fabs(mwh - steps * kj * 1e3 / 3.6e9) <= 1e-3 * mwh, "%g MWh", mwh);
    ck_assert_msg(fabs(dollars - 2e12 / 32 * per_sample) <= 1e-3 * dollars, "$%g", dollars);
    /* what --show needs is stored with every run */
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM params WHERE key = 'plan.options'"), 8);
    sqlite3_close(h);

    /* the precision the layouts train at named, where --set (or an --option) sets it past
     * --precision: the title and the %peak note say fp32, as the peak is fp32's */
    char db32[300];
    snprintf(db32, sizeof db32, "%s/plan-r32.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"plan",
                                            "--profile",
                                            prof,
                                            "--device",
                                            "a100-80gb",
                                            "--devices",
                                            "4",
                                            "--per-server",
                                            "2",
                                            "--heads",
                                            "2",
                                            "--global-batch",
                                            "2",
                                            "--db",
                                            db32,
                                            "--set",
                                            "model.precision=fp32",
                                            "--no-prune",
                                            "--max-runs",
                                            "1",
                                            NULL}),
                     0);
    char *o32 = slurp(out_path);
    ck_assert_msg(strstr(o32, "global batch 2, fp32") && strstr(o32, "device's fp32 peak") &&
                      !strstr(o32, "bf16"),
                  "%s", o32);
    free(o32);

    /* --show: the same ranking from the database alone, the profile gone */
    char *ranking = plan_ranking(o);
    free(o);
    ck_assert_int_eq(unlink(prof), 0);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, "--tokens", "2T", NULL}),
                     0);
    o = slurp(out_path);
    char *again = plan_ranking(o);
    ck_assert_msg(!strcmp(ranking, again), "plan:\n%s\n--show:\n%s", ranking, again);
    free(again);
    free(o);
    free(ranking);

    /* bad options: one line, exit code 2, nothing written */
    snprintf(db, sizeof db, "%s/plan-r-bad.db", dir);
    static const struct {
        const char *option, *value, *want;
    } bad[] = {
        {"--time-limit", "10", "--time-limit 10: expected a wall time"},
        {"--time-limit", "0s", "--time-limit 0s: expected a wall time"},
        {"--tokens", "2X", "--tokens 2X: expected a count of tokens"},
        {"--tokens", "-1T", "--tokens -1T: expected a count of tokens"},
        {"--sweep", "s1", "--sweep s1 goes with --show"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", "gpt2_xl", "--device", "h100",
                                                "--devices", "4", "--global-batch", "4", "--db", db,
                                                bad[i].option, bad[i].value, NULL}),
                         2);
        one_error_line(bad[i].want, NULL);
    }
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", "resnet50", "--device", "h100", "--devices",
                               "4", "--global-batch", "4", "--db", db, "--tokens", "1T", NULL}),
        2);
    one_error_line("--tokens 1T: profile resnet50 counts no tokens per sample", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, "--devices", "4", NULL}),
                     2);
    one_error_line("--show ranks a stored plan: --devices does not go with it", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, NULL}), 2);
    one_error_line("dtsim plan: ", db);
    ck_assert_int_eq(access(db, F_OK), -1);
}
END_TEST

/* A ranked row's layout and figures from at, where its layout's words start in a line of
 * len characters: the layout (its words up to the run id, the first word of digits only: a
 * layout's words, t1, mb1x2, z0, sp, v2, full, are not) into layout (64), then the numbers
 * after the run id into x (at most n); returns how many. */
static int plan_row_after(const char *line, const char *at, char *layout, double *x, int n)
{
    at += strspn(at, " ");
    const char *id = at;
    for (;;) {
        id += strspn(id, " ");
        size_t len = strcspn(id, " "), digits = strspn(id, "0123456789");
        ck_assert_msg(len, "no run id in %s", line);
        if (digits == len)
            break;
        id += len;
    }
    snprintf(layout, 64, "%.*s", (int)(id - at), at);
    for (char *end = layout + strlen(layout); end > layout && end[-1] == ' ';)
        *--end = '\0';
    long run;
    int k = 0, used;
    ck_assert_int_eq(sscanf(id, "%ld%n", &run, &used), 1);
    for (id += used; k < n && sscanf(id, "%lf%n", &x[k], &used) == 1; id += used)
        k++;
    return k;
}

/* The rank 1 row of a plan's ranking: its layout (after "1    ", up to its run id) into
 * layout (64), and after its run id the numbers into x (at most n); returns how many. */
static int plan_best_row(const char *out, char *layout, double *x, int n)
{
    const char *row = strstr(out, "\n1    ");
    ck_assert_msg(row, "no rank 1 in:\n%s", out);
    char line[1024]; /* the row alone: the next one starts with a number too */
    snprintf(line, sizeof line, "%.*s", (int)strcspn(row + 1, "\n"), row + 1);
    return plan_row_after(line, line + 5, layout, x, n);
}

/* The line of option name in a comparison's table (rank, option, device, N, layout, ...)
 * into line (1024): where its layout starts, after the first four words. */
static const char *plan_option_line(const char *out, const char *name, char *line)
{
    const char *table = strstr(out, "\nbest layout of each option");
    ck_assert_msg(table, "no option table in:\n%s", out);
    for (const char *row = strchr(table + 1, '\n'); row; row = strchr(row + 1, '\n')) {
        char rank[16], option[64];
        snprintf(line, 1024, "%.*s", (int)strcspn(row + 1, "\n"), row + 1);
        if (sscanf(line, "%15s %63s", rank, option) == 2 && !strcmp(option, name)) {
            const char *at = line;
            for (int w = 0; w < 4; w++) {
                at += strspn(at, " ");
                at += strcspn(at, " ");
            }
            return at;
        }
    }
    ck_assert_msg(0, "no row %s in:\n%s", name, table);
    return NULL;
}

/* The row of option name in a comparison's table: its layout (after its rank, name, device
 * and device count, up to its run id) into layout (64) and the numbers after the run id into
 * x (at most n); returns how many. */
static int plan_option_row(const char *out, const char *name, char *layout, double *x, int n)
{
    char line[1024];
    const char *at = plan_option_line(out, name, line);
    return plan_row_after(line, at, layout, x, n);
}

/* The rank (0: "-") and device count N of option name's row in a comparison's table. */
static void plan_option_rank(const char *out, const char *name, long *rank, long *devices)
{
    char line[1024], option[64], device[64], r[16];
    plan_option_line(out, name, line);
    ck_assert_int_eq(sscanf(line, "%15s %63s %63s %ld", r, option, device, devices), 4);
    *rank = strcmp(r, "-") ? strtol(r, NULL, 10) : 0;
}

/* The parameters of a profile file ("params = N" in its [profile] section). */
static double profile_params(const char *path)
{
    char *text = slurp(path);
    const char *at = strstr(text, "\nparams = ");
    ck_assert_msg(at, "no params in %s", path);
    double v = strtod(at + 10, NULL);
    free(text);
    return v;
}

/* Two devices side by side (--device a100-80gb,h100) on the tiny GPT of
 * plan_enumerates_fits_and_runs_layouts at $4 a device-hour with --tokens 2T: each option's
 * row of the final table is the rank 1 row of the same plan made alone for that device (its
 * layout, step time, tokens/s, TFLOP/s, kJ, $/M tokens, days, MWh, $, checkpoint interval,
 * goodput and the same with failures); both plans prune by the same bound, and pruning never
 * drops the winner (plan_prunes_what_cannot_win), so the rank 1 rows are the same. The goodput
 * columns are what sim_goodput_layout gives here for the printed step time (the defaults: Llama 3's
 * MTBF and storage), and, through
 * --show with --mtbf 2h --ckpt-bandwidth 1kBps --restart 1min (a checkpoint of 6 minutes: a
 * goodput well below 1), what sim_goodput_compute gives with those. A port price adds ports x
 * price to the cost: the energy table's ports. Bad devices and options: one line naming the
 * option, exit code 2, nothing written. */
START_TEST(plan_compares_devices_and_goodput)
{
    char prof[300], db[300], one[300];
    snprintf(prof, sizeof prof, "%s/tiny-c.ini", dir);
    snprintf(db, sizeof db, "%s/plan-c.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
#define PLAN_C                                                                                     \
    "plan", "--profile", prof, "--devices", "4", "--per-server", "2", "--heads", "2",              \
        "--global-batch", "2", "--set", "cluster.price_per_device_hour=4", "--tokens", "2T"
    ck_assert_int_eq(
        dtsim((const char *[]){PLAN_C, "--device", "a100-80gb,h100", "--db", db, NULL}), 0);
    char *both = slurp(out_path);
    ck_assert_msg(strstr(both, "=== option a100-80gb: --device a100-80gb --devices 4 ===") &&
                      strstr(both, "=== option h100: --device h100 --devices 4 ==="),
                  "%s", both);
    static const char *const devices[] = {"a100-80gb", "h100"};
    double params = profile_params(prof), steps = 2e12 / (32 * 2);
    for (int i = 0; i < 2; i++) {
        snprintf(one, sizeof one, "%s/plan-c-%s.db", dir, devices[i]);
        ck_assert_int_eq(dtsim((const char *[]){PLAN_C, "--device", devices[i], "--db", one, NULL}),
                         0);
        char *alone = slurp(out_path), want[64], got[64];
        /* run s/step samples/s tokens/s memory headroom TFLOP/s %peak kJ $/1k $/M days MWh $
         * ckpt/steps goodput days+fail $+fail */
        double a[18], b[13];
        ck_assert_int_eq(plan_best_row(alone, want, a, 18), 17);
        ck_assert_int_eq(plan_option_row(both, devices[i], got, b, 13), 12);
        ck_assert_msg(!strcmp(want, got), "%s: best %s alone, %s side by side", devices[i], want,
                      got);
        /* s/step tokens/s TFLOP/s kJ $/M days MWh $ ckpt goodput days+fail $+fail */
        static const int same[] = {0, 2, 5, 7, 9, 10, 11, 12, 13, 14, 15, 16};
        for (int k = 0; k < 12; k++)
            ck_assert_msg(a[same[k]] == b[k], "%s: column %d: %g alone, %g side by side",
                          devices[i], k, a[same[k]], b[k]);
        /* the goodput columns at the defaults, for the printed step time */
        sim_goodput_t g;
        dt_err_t err;
        ck_assert_int_eq(sim_goodput_layout(4, a[0], params, 14, steps * a[0], &g, &err), DT_OK);
        ck_assert_msg(fabs(a[14] - g.goodput) <= 1e-4 &&
                          fabs(a[13] - (double)g.interval_steps) <= 1e-4 * (double)g.interval_steps,
                      "%s: goodput %g every %g steps, want %g every %ld", devices[i], a[14], a[13],
                      g.goodput, g.interval_steps);
        /* the same --show'n with another failure model */
        ck_assert_int_eq(
            dtsim((const char *[]){"plan", "--show", "--db", one, "--tokens", "2T", "--mtbf", "2h",
                                   "--ckpt-bandwidth", "1kBps", "--restart", "1min", NULL}),
            0);
        free(alone);
        alone = slurp(out_path);
        ck_assert_int_eq(plan_best_row(alone, want, a, 18), 17);
        sim_goodput_in_t in;
        sim_goodput_defaults(&in);
        in.devices = 4;
        in.mtbf_device_s = 7200;
        in.ckpt_bw_device = 1000;
        in.restart_s = 60;
        in.ckpt_bytes = params * 14;
        in.step_s = a[0];
        in.train_s = steps * a[0];
        ck_assert_int_eq(sim_goodput_compute(&in, &g, &err), DT_OK);
        ck_assert_msg(g.goodput < 0.9, "goodput %g", g.goodput);
        ck_assert_msg(fabs(a[14] - g.goodput) <= 1e-4 &&
                          fabs(a[13] - (double)g.interval_steps) <= 1e-4 * g.interval_steps &&
                          fabs(a[15] - g.wall_s / 86400) <= 1e-3 * a[15] &&
                          fabs(a[16] - a[12] / g.goodput) <= 1e-3 * a[16],
                      "%s: goodput %g every %g steps, %g days, $%g; want %g every %ld, %g days, "
                      "$%g",
                      devices[i], a[14], a[13], a[15], a[16], g.goodput, g.interval_steps,
                      g.wall_s / 86400, a[12] / g.goodput);
        free(alone);
    }
    free(both);

    /* a port price: the cost per sample grows by ports x price over devices x price */
    snprintf(db, sizeof db, "%s/plan-c-ports.db", dir);
    ck_assert_int_eq(
        dtsim((const char *[]){PLAN_C, "--device", "h100", "--option", "free:port_price=0",
                               "--option", "priced:port_price=1", "--db", db, NULL}),
        0);
    char *o = slurp(out_path), layout[64], priced[64];
    double x[13], y[13];
    ck_assert_int_eq(plan_option_row(o, "free", layout, x, 13), 12);
    ck_assert_int_eq(plan_option_row(o, "priced", priced, y, 13), 12);
    /* each option's plan: its 45 layouts fit (plan_enumerates_fits_and_runs_layouts), and
     * what the bound does not prune runs; the price changes no step, so the same are pruned */
    long pruned[2] = {0, 0};
    static const char *const sections[] = {"=== option free: ", "=== option priced: "};
    for (int i = 0; i < 2; i++) {
        const char *at = strstr(o, sections[i]), *end = i ? NULL : strstr(o, sections[1]);
        ck_assert_msg(at && strstr(at, ": 45 layouts, 45 fit, at most 45 to simulate\n"), "%s", o);
        const char *pr = strstr(at, "\npruned ");
        if (pr && (!end || pr < end))
            ck_assert_msg(sscanf(pr, "\npruned %ld of 45 layouts", &pruned[i]) == 1, "%s", o);
    }
    free(o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    double ports = query_double(h, "SELECT e.link_ports FROM energy e JOIN runs r ON r.id = "
                                   "e.run WHERE r.name LIKE 'plan-tiny-c-priced-%' LIMIT 1");
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE name LIKE "
                                   "'plan-tiny-c-free-%'"),
                     45 - pruned[0]);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE name LIKE "
                                   "'plan-tiny-c-priced-%'"),
                     45 - pruned[1]);
    sqlite3_close(h);
    ck_assert_int_eq(pruned[0], pruned[1]);
    ck_assert_msg(ports >= 8 && x[0] == y[0] && !strcmp(layout, priced),
                  "%g ports, %g and %g s/step, %s and %s", ports, x[0], y[0], layout, priced);
    ck_assert_msg(fabs(y[4] - x[4] * (4 * 4 + ports) / (4 * 4)) <= 1e-3 * y[4],
                  "$/M tokens %g with %g ports at $1, %g without", y[4], ports, x[4]);

    /* bad input: one line naming the option, exit code 2, nothing written */
    snprintf(db, sizeof db, "%s/plan-c-bad.db", dir);
    static const struct {
        const char *option, *value, *want;
    } bad[] = {
        {"--device", "h100,h900", "dtsim plan: --device h900: cluster.device: unknown device"},
        {"--device", "h100,", "dtsim plan: --device h100,: an empty device name"},
        {"--option", "x", "dtsim plan: --option x: expected NAME:KEY=VALUE"},
        {"--option", "fast:uplink", "dtsim plan: --option fast:uplink: \"uplink\" is not"},
        {"--option", "fast:nic=1Gbps", "dtsim plan: --option fast:nic=1Gbps: unknown key"},
        {"--option", "fast:uplink=quick",
         "dtsim plan: --option fast:uplink=quick: "
         "cluster.uplink_bandwidth: bad bandwidth"},
        {"--option", "tp:strategy.tensor=2",
         "dtsim plan: --option tp:strategy.tensor=2: "
         "strategy.tensor=2: the plan searches "
         "strategy.tensor itself"},
        {"--mtbf", "0h", "dtsim plan: --mtbf 0h: expected a positive time"},
        {"--restart", "soon", "dtsim plan: --restart soon: expected a time"},
        {"--ckpt-bandwidth", "fast", "dtsim plan: --ckpt-bandwidth fast: expected a positive"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *device = strcmp(bad[i].option, "--device") ? "h100,a100-80gb" : bad[i].value;
        ck_assert_int_eq(dtsim((const char *[]){PLAN_C, "--device", device, bad[i].option,
                                                bad[i].value, "--db", db, NULL}),
                         2);
        one_error_line(bad[i].want, NULL);
        ck_assert_msg(access(db, F_OK) != 0, "%s %s wrote %s", bad[i].option, bad[i].value, db);
        o = slurp(out_path);
        ck_assert_msg(!o[0], "%s %s printed: %s", bad[i].option, bad[i].value, o);
        free(o);
    }
#undef PLAN_C
}
END_TEST

/* A plan always answers. The tiny GPT on 4 devices (8 layouts by --max-runs and --no-prune,
 * 200 steps each, tensor all-reduces as messages, so that a plan takes a while) is planned
 * whole in one database; in another it is stopped by SIGINT
 * once 2 runs are done (exit code 130, a PARTIAL ranking of k < 8 layouts and how to go
 * on), and --resume simulates only the 8 - k missing layouts under the same sweep id: its
 * ranking is the whole plan's, row for row (simulated times are deterministic), the runs
 * stored before are kept and ranked, and --show prints the same ranking again. A time limit
 * that passes mid-way (a quarter of the whole plan's wall time) stops it as well (exit code
 * 0, PARTIAL), and --resume completes it. */
START_TEST(plan_stopped_ranks_partial_and_resumes)
{
    char prof[300], whole[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny-s.ini", dir);
    snprintf(whole, sizeof whole, "%s/plan-whole.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
#define PLAN_ARGS(DB, ...)                                                                         \
    (const char *[])                                                                               \
    {                                                                                              \
        "plan", "--profile", prof, "--device", "a100-80gb", "--devices", "4", "--per-server", "2", \
            "--heads", "2", "--global-batch", "2", "--steps", "200", "--set",                      \
            "strategy.tensor_comm=messages", "--no-prune", "--max-runs", "8", "--db", DB,          \
            __VA_ARGS__                                                                            \
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_int_eq(dtsim(PLAN_ARGS(whole, NULL)), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* the whole plan's wall time, for a time limit that passes mid-way below (a quarter of
     * it: a fixed limit let a quiet machine finish the plan first) */
    long whole_ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    char want_line[96];
    char *o = slurp(out_path);
    char *want = plan_rows(o);
    long rows = 0;
    for (const char *c = want; *c; c++)
        rows += *c == '\n';
    ck_assert_msg(plan_partial(o) == -1 && rows == 8, "%s", o);
    /* the ranking first: the layouts counted in a line, none listed (--verbose lists them) */
    ck_assert_msg(strstr(o, ": 45 layouts, 45 fit, at most 8 to simulate\nfit: at least ") &&
                      strstr(o, " and 5%)\n45 layouts: 45 fit, 0 do not fit the "
                                "device's memory (--verbose or --no-run lists each with its "
                                "memory)\n\nbest layouts of ") &&
                      !strstr(o, " fits: "),
                  "%s", o);
    free(o);

    /* SIGINT once 2 runs are done */
    snprintf(db, sizeof db, "%s/plan-int.db", dir);
    write_file(err_path, ""); /* the whole plan's lines are not this one's */
    pid_t pid = dtsim_start(PLAN_ARGS(db, NULL));
    for (int tries = 0; tries < 3000; tries++) {
        char *e = slurp(err_path);
        int two = strstr(e, "plan: 2/8 done, ") != NULL;
        free(e);
        if (two)
            break;
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    }
    kill(pid, SIGINT);
    ck_assert_int_eq(cli_wait(pid), 130);
    o = slurp(out_path);
    char *e = slurp(err_path);
    long k = plan_partial(o);
    ck_assert_msg(k >= 2 && k < 8 && strstr(o, " --resume\n") &&
                      strstr(e, "dtsim plan: interrupted (SIGINT): "),
                  "%s\n%s", o, e);
    /* the PARTIAL line's counts are the progress's: k done of 8 (the runs stopped mid-way
     * not done), the others stopped mid-run or not started */
    long simulated = -1, owed = 0, cut = -1, idle = -1, done = -1, total = -1;
    ck_assert_msg(sscanf(strstr(o, "\nPARTIAL: "),
                         "\nPARTIAL: %ld of %ld layouts simulated, "
                         "the ranking is of those; %ld stopped mid-run or failed, %ld not "
                         "started;",
                         &simulated, &owed, &cut, &idle) == 4 &&
                      owed == 8 && k + cut + idle == 8,
                  "%s", o);
    for (const char *line = e; *line; line += strcspn(line, "\n"), line += *line == '\n')
        if (!strncmp(line, "plan: ", 6)) /* the last progress line's counts */
            ck_assert(sscanf(line, "plan: %ld/%ld done, ", &done, &total) == 2);
    ck_assert_msg(done == k && total == 8, "%ld/%ld done, %ld simulated:\n%s", done, total, k, e);
    snprintf(want_line, sizeof want_line, "interrupted (SIGINT): %ld of 8 layouts simulated", k);
    ck_assert_msg(strstr(e, want_line), "%s", e);
    free(e);
    char *partial = plan_rows(o);
    free(o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), k);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT sweep_index) FROM runs WHERE status "
                                   "!= 'finished'"),
                     cut);
    long before = query_long(h, "SELECT count(*) FROM runs");
    sqlite3_close(h);
    /* each partial row is one of the whole plan's */
    for (char *line = partial; *line; line = strchr(line, '\n') + 1) {
        char row[400];
        snprintf(row, sizeof row, "%.*s", (int)(strchr(line, '\n') - line + 1), line);
        ck_assert_msg(strstr(want, row + 5), "%s not in:\n%s", row, want);
    }
    free(partial);

    ck_assert_int_eq(dtsim(PLAN_ARGS(db, "--resume", NULL)), 0);
    o = slurp(out_path);
    char line[80];
    snprintf(line, sizeof line, ": %ld of 8 layouts finished, at most %ld to simulate\n", k, 8 - k);
    ck_assert_msg(strstr(o, line) && plan_partial(o) == -1, "%s", o);
    char *got = plan_rows(o);
    ck_assert_msg(!strcmp(got, want), "resumed:\n%s\nwhole:\n%s", got, want);
    free(got);
    char *ranking = plan_ranking(o);
    free(o);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 8);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT sweep) FROM runs"), 1);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs"), before + 8 - k);
    assert_intact(h);
    sqlite3_close(h);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, NULL}), 0);
    o = slurp(out_path);
    char *shown = plan_ranking(o);
    ck_assert_msg(!strcmp(shown, ranking), "--show:\n%s\nplan:\n%s", shown, ranking);
    free(shown);
    free(ranking);
    free(o);

    /* a time limit that passes before the first run (while the layouts' memory is checked):
     * still a PARTIAL answer, empty, and how to go on, the ranking's --tokens and --top
     * kept in the command it prints */
    snprintf(db, sizeof db, "%s/plan-early.db", dir);
    ck_assert_int_eq(
        dtsim(PLAN_ARGS(db, "--time-limit", "1ms", "--tokens", "2T", "--top", "3", NULL)), 0);
    o = slurp(out_path);
    e = slurp(err_path);
    ck_assert_msg(plan_partial(o) == 0 && strstr(o, " --tokens 2T --top 3 --resume\n") &&
                      strstr(e, "the time limit passed before the first layout"),
                  "stdout ends %.300s\nstderr %.300s", o + (strlen(o) > 300 ? strlen(o) - 300 : 0),
                  e);
    free(e);
    free(o);

    /* a time limit that passes mid-way: exit code 0, PARTIAL; --resume completes it */
    snprintf(db, sizeof db, "%s/plan-limit.db", dir);
    char limit[32];
    snprintf(limit, sizeof limit, "%ldms", whole_ms / 4 > 1 ? whole_ms / 4 : 1);
    ck_assert_int_eq(dtsim(PLAN_ARGS(db, "--time-limit", limit, NULL)), 0);
    o = slurp(out_path);
    e = slurp(err_path);
    k = plan_partial(o);
    ck_assert_msg(k >= 0 && k < 8 && strstr(e, "dtsim plan: the time limit passed"),
                  "stdout ends %.300s\nstderr %.300s", o + (strlen(o) > 300 ? strlen(o) - 300 : 0),
                  e);
    free(e);
    free(o);
    ck_assert_int_eq(dtsim(PLAN_ARGS(db, "--resume", NULL)), 0);
    o = slurp(out_path);
    got = plan_rows(o);
    ck_assert_msg(!strcmp(got, want) && plan_partial(o) == -1, "resumed:\n%s\nwhole:\n%s", o, want);
    free(got);
    free(o);
    free(want);
#undef PLAN_ARGS
}
END_TEST

/* Pruning never drops the winner. The tiny GPT of plan_enumerates_fits_and_runs_layouts on a
 * slow device (10 GFLOP/s: compute, not latency, decides the step) of 800 kB: 27 layouts fit;
 * with pruning some of them are not simulated, as the one line says, and the ranking's best
 * row is --no-prune's, each row simulated as --no-prune simulates it, and no step below its
 * bound; --show says what was pruned again, and --no-prune does not go with --show. */
START_TEST(plan_prunes_what_cannot_win)
{
    char prof[300], dev[300], db[300], all[300];
    snprintf(prof, sizeof prof, "%s/tiny-p.ini", dir);
    snprintf(dev, sizeof dev, "%s/slow-p.ini", dir);
    snprintf(db, sizeof db, "%s/plan-p.db", dir);
    snprintf(all, sizeof all, "%s/plan-p-all.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    write_file(dev, "[device]\nfp32 = 1Gf\nbf16 = 10Gf\nmemory = 800kB\n");
    ck_assert_int_eq(
        dtsim((const char *[]){
            "plan", "--profile",    prof, "--device", dev, "--memory-margin", "0", "--devices",
            "4",    "--per-server", "2",  "--heads",  "2", "--global-batch",  "2", "--db",
            all,    "--no-prune",   "-j", "2",        NULL}),
        0);
    char *o = slurp(out_path);
    ck_assert_msg(!strstr(o, "\npruned "), "%s", o);
    char *want = plan_rows(o);
    free(o);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", dev, "--memory-margin", "0",
                               "--devices", "4", "--per-server", "2", "--heads", "2",
                               "--global-batch", "2", "--db", db, NULL}),
        0);
    o = slurp(out_path);
    char *e = slurp(err_path);
    long pruned = 0;
    double best;
    const char *at = strstr(o, "\npruned ");
    ck_assert_msg(at &&
                      sscanf(at,
                             "\npruned %ld of 27 layouts: their lower bound exceeds the "
                             "best simulated step (%lf s)",
                             &pruned, &best) == 2 &&
                      pruned > 0 && pruned < 27 && strstr(o, ": 36 layouts, 27 fit, ") &&
                      !strstr(e, "below their lower bound") && plan_partial(o) == -1,
                  "%s\n%s", o, e);
    free(e);
    char *got = plan_rows(o);
    /* the same best row, and every row one of --no-prune's */
    ck_assert_msg(!strncmp(got, want, strcspn(want, "\n") + 1), "pruned:\n%s\nall:\n%s", got, want);
    for (char *line = got; *line; line = strchr(line, '\n') + 1) {
        char row[400];
        snprintf(row, sizeof row, "%.*s", (int)(strchr(line, '\n') - line + 1), line);
        ck_assert_msg(strstr(want, row + 5), "%s not in:\n%s", row, want);
    }
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"),
                     27 - pruned);
    ck_assert_double_eq_tol(query_double(h, "SELECT min(sim_time / steps) FROM run_summary"), best,
                            1e-5 * best); /* printed to 6 digits */
    sqlite3_close(h);
    ck_assert_int_eq(sqlite3_open(all, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 27);
    ck_assert_double_eq_tol(query_double(h, "SELECT min(sim_time / steps) FROM run_summary"), best,
                            1e-5 * best);
    sqlite3_close(h);
    free(got);
    free(want);
    free(o);
    char line[120];
    snprintf(line, sizeof line, "\npruned %ld of 27 layouts: their lower bound exceeds", pruned);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, line) && plan_partial(o) == -1, "%s", o);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, "--no-prune", NULL}), 2);
    one_error_line("--show ranks a stored plan: --no-prune does not go with it", NULL);
}
END_TEST

/* Step time of the plan's run named name in h. */
static double plan_step(sqlite3 *h, const char *name)
{
    char sql[300];
    snprintf(sql, sizeof sql,
             "SELECT sim_time / steps FROM run_summary WHERE name = '%s' AND "
             "status = 'finished'",
             name);
    return query_double(h, sql);
}

/* Gradient buckets in plan (b25): with the stages' gradients in one bucket of 25 MB each (the
 * tiny GPT of plan_enumerates_fits_and_runs_layouts) the bucket's all-reduce starts where the
 * unbucketed one does, after the last backward pass: the same step time to the last digit.
 * A GPT of 2 layers of hidden 1024 (25.2 MB of bf16 gradients each, 52.7 MB in all) on one
 * stage of 4 replicas and a slow device (1 TFLOP/s: a 10 ms backward pass per layer and
 * sample against well under 1 ms for an all-reduce) has 3 buckets, the first (the head and
 * the last layer) reduced during the first layer's backward pass: that layout is faster
 * with buckets, by less than its exposed all-reduce (its step less the compute). */
START_TEST(plan_tries_gradient_buckets)
{
    char prof[300], dev[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny-b.ini", dir);
    snprintf(dev, sizeof dev, "%s/slow.ini", dir);
    snprintf(db, sizeof db, "%s/plan-b.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", "a100-80gb",
                                            "--devices", "4", "--per-server", "2", "--heads", "2",
                                            "--global-batch", "2", "--db", db, "--no-prune", NULL}),
                     0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    /* t1 p2 d2 and t2 p1 d2 at ZeRO-0, each recomputation, t2 with and without sp */
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE name LIKE '%-b25%' AND "
                                   "config LIKE '%bucket_mb = 25%' AND status = 'finished'"),
                     9);
    static const char *const twins[] = {"plan-tiny-b-t1p2d2-mb1x1-z0",
                                        "plan-tiny-b-t2p1d2-mb1x1-z0"};
    for (int i = 0; i < 2; i++) {
        char b25[100];
        snprintf(b25, sizeof b25, "%s-b25", twins[i]);
        double plain = plan_step(h, twins[i]), bucketed = plan_step(h, b25);
        ck_assert_msg(plain > 0 && bucketed == plain, "%s: %.9g s, with buckets %.9g s", twins[i],
                      plain, bucketed);
    }
    sqlite3_close(h);

    snprintf(prof, sizeof prof, "%s/mid-b.ini", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "1024", "--heads", "8", "--seq", "128", "--vocab",
                                            "1000", "--out", prof, NULL}),
                     0);
    char *o = slurp(out_path);
    double fwd, bwd;
    const char *at = strstr(o, "parameters, ");
    ck_assert_msg(at &&
                      sscanf(at, "parameters, %lf GFLOP forward and %lf backward", &fwd, &bwd) == 2,
                  "%s", o);
    free(o);
    write_file(dev, "[device]\nfp32 = 1Tf\nbf16 = 1Tf\ntensor_efficiency = 1\nmemory = 80GB\n");
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", prof, "--device", dev, "--devices",
                                            "4", "--per-server", "2", "--global-batch", "4", "--db",
                                            db, "--verbose", NULL}),
                     0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, "\nt1 p1 d4 mb1x1 z0 b25 ") && strstr(o, "\nt1 p2 d2 mb2x1 z0 b25 ") &&
                      !strstr(o, "z1 b25") && !strstr(o, "d1 mb1x4 z0 b25"),
                  "%s", o);
    free(o);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    double compute = (fwd + bwd) * 1e9 / 1e12; /* one sample a replica */
    double plain = plan_step(h, "plan-mid-b-t1p1d4-mb1x1-z0");
    double bucketed = plan_step(h, "plan-mid-b-t1p1d4-mb1x1-z0-b25");
    ck_assert_msg(plain > compute && bucketed < plain && bucketed > compute,
                  "compute %.9g s, step %.9g s, with buckets %.9g s", compute, plain, bucketed);
    assert_intact(h);
    sqlite3_close(h);
}
END_TEST

/* dtsim plan searches context parallelism for long sequences: a 2-layer, 2-head GPT of 32768
 * tokens a sample on 4 devices, global batch 1. By hand: one replica (d = 1), so tensor x
 * stages x context = 4: (t1 p1 cp4), (t1 p2 cp2), (t2 p1 cp2), (t2 p2); each with no,
 * selective or full recomputation, sp with tensor 2, ZeRO 0 or 1 and 25 MB buckets (b25) over
 * its data x context group where it has one: 3 x 3 + 3 x 3 + 6 x 3 + 6 = 42 layouts, where
 * without context parallelism only t2 p2's 6 are (as at 16384 tokens, below the 32768 from
 * which the plan tries it). */
START_TEST(plan_tries_context_parallelism_for_long_sequences)
{
    char prof[300], db[300];
    snprintf(db, sizeof db, "%s/plan-cp.db", dir);
    static const char *const seqs[] = {"32768", "16384"};
    for (int k = 0; k < 2; k++) {
        snprintf(prof, sizeof prof, "%s/long-%s.ini", dir, seqs[k]);
        ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2",
                                                "--hidden", "64", "--heads", "2", "--seq", seqs[k],
                                                "--vocab", "100", "--out", prof, NULL}),
                         0);
        ck_assert_int_eq(
            dtsim((const char *[]){"plan", "--profile", prof, "--device", "a100-80gb", "--devices",
                                   "4", "--per-server", "4", "--heads", "2", "--global-batch", "1",
                                   "--db", db, "--no-run", NULL}),
            0);
        char *o = slurp(out_path);
        int n = k == 0 ? 42 : 6;
        char want[96];
        snprintf(want, sizeof want, ": %d layouts, %d fit, at most %d to simulate\n", n, n, n);
        ck_assert_msg(strstr(o, want), "%s tokens: want%s in:\n%s", seqs[k], want, o);
        ck_assert_msg(k == 1 || (strstr(o, "\nt1 p1 d1 mb1x1 z0 cp4 ") &&
                                 strstr(o, "\nt2 p1 d1 mb1x1 z1 cp2 sp full ")),
                      "%s", o);
        ck_assert_msg(k == 0 || !strstr(o, " cp"), "%s", o);
        free(o);
    }
}
END_TEST

/* A pipeline's evaluation rows count every replica's samples of the steps before them: each
 * row's samples are its step x the global batch (model.batch x data_parallel), so the
 * summary's throughput is the global batch per step time. One stage on a tensor group of 2
 * with 2 replicas wrote replica 0's row before replica 1 had counted its step (half the
 * samples of a one-step run); more stages and one replica are checked alike. */
START_TEST(pipeline_rows_count_every_replica)
{
    char prof[300], ini[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny-count.ini", dir);
    snprintf(ini, sizeof ini, "%s/count.ini", dir);
    snprintf(db, sizeof db, "%s/count.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    static const int layouts[][3] = {{2, 1, 2}, {1, 2, 2}, {2, 2, 1}, {1, 1, 3}}; /* t, p, d */
    for (int k = 0; k < 4; k++) {
        int t = layouts[k][0], p = layouts[k][1], d = layouts[k][2];
        char text[600];
        snprintf(text, sizeof text,
                 "[run]\nname = count-%d\nsteps = 3\neval_every = 1\n[model]\narch = profile:%s\n"
                 "batch = 4\n[cluster]\nworkers = %d\n[strategy]\nkind = pipeline\ntensor = %d\n"
                 "stages = %d\ndata_parallel = %d\nmicro_batches = 2\n",
                 k, prof, t * p * d, t, p, d);
        write_file(ini, text);
        ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    }
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    for (int k = 0; k < 4; k++) {
        char sql[400];
        long global = 4L * layouts[k][2];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM evals e JOIN runs r ON r.id = e.run "
                 "WHERE r.name = 'count-%d' AND e.samples = e.step * %ld",
                 k, global);
        ck_assert_msg(query_long(h, sql) == 3, "count-%d: not 3 rows of step x %ld samples", k,
                      global);
        snprintf(sql, sizeof sql,
                 "SELECT round(throughput * sim_time / steps) FROM run_summary "
                 "WHERE name = 'count-%d'",
                 k);
        ck_assert_int_eq(query_long(h, sql), global);
    }
    sqlite3_close(h);
}
END_TEST

/* strategy.tensor_comm = nccl's bad input, one line naming the file, line and key, exit 2:
 * NVLS on a device whose switch has no SHARP (the A100), NCCL on a device without NVLink
 * figures; the same scenario on the H100 runs, its summary saying how. */
START_TEST(nccl_bad_input_names_its_key)
{
    char prof[300], ini[300], db[300], text[700];
    snprintf(prof, sizeof prof, "%s/tiny-nccl.ini", dir);
    snprintf(ini, sizeof ini, "%s/nccl.ini", dir);
    snprintf(db, sizeof db, "%s/nccl.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    static const char *const form =
        "[run]\nname = nccl\nsteps = 2\n[model]\narch = profile:%s\nbatch = 4\n"
        "[cluster]\nworkers = 2\ndevice = %s\n[strategy]\nkind = pipeline\nstages = 1\n"
        "tensor = 2\nmicro_batches = 2\ntensor_comm = nccl\nnccl_algorithm = %s\n";
    snprintf(text, sizeof text, form, prof, "a100", "nvls");
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line("nccl.ini:16: strategy.nccl_algorithm: nccl_algorithm = nvls needs NVLink "
                   "SHARP",
                   "(cluster.device at line 9)");
    snprintf(text, sizeof text, form, prof, "v100", "auto");
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line("nccl.ini:15: strategy.tensor_comm: tensor_comm = nccl runs on the server's "
                   "NVLink, but the device v100 has no nvlink_busbw",
                   NULL);
    snprintf(text, sizeof text, form, prof, "h100", "nvls");
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "tensor all-reduces as NCCL runs them (algorithm nvls, protocol by "
                            "size, on the device's NVLink with NVLS"),
                  "%s", o);
    free(o);
    /* tensor_overlap hides a collective behind compute only where it is timed in closed form */
    snprintf(text, sizeof text,
             "[run]\nname = nccl\nsteps = 2\n[model]\narch = profile:%s\nbatch = 4\n"
             "[cluster]\nworkers = 2\n[strategy]\nkind = pipeline\nstages = 1\ntensor = 2\n"
             "micro_batches = 2\ntensor_overlap = yes\n",
             prof);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 2);
    one_error_line("nccl.ini:14: strategy.tensor_overlap: tensor_overlap needs tensor > 1 and "
                   "tensor_comm = formula or nccl (tensor = 2, tensor_comm = messages",
                   NULL);
}
END_TEST

/* dtsim devices: the table's rows against the catalogue's figures, one device's values with
 * numbered sources, a profile file, and the errors. */
/* `dtsim calibrate --gemm` on the CPU: each size's TFLOP/s is 2 n^3 over its seconds, its
 * result the double-precision product's, its fraction of the --like device's FP32 peak
 * (read back from `dtsim devices`) and gemm_efficiency that fraction x 0.75; bad options in
 * one line. */
START_TEST(calibrate_gemm_curve)
{
    ck_assert_int_eq(dtsim((const char *[]){"devices", "h100", NULL}), 0);
    char *d = slurp(out_path);
    char *fp = strstr(d, " fp32 ");
    ck_assert_ptr_nonnull(fp);
    double peak;
    ck_assert_int_eq(sscanf(fp, " fp32 %lf", &peak), 1); /* TFLOP/s */
    free(d);
    ck_assert_int_eq(
        dtsim((const char *[]){"calibrate", "--gemm", "--max", "512", "--like", "h100", NULL}), 0);
    char *o = slurp(out_path);
    int rows = 0;
    double best = 0;
    for (char *p = strstr(o, "gemm m=n=k="); p; p = strstr(p + 1, "gemm m=n=k=")) {
        long n;
        double sec, tf, err, of;
        ck_assert_int_eq(sscanf(p,
                                "gemm m=n=k=%ld seconds=%lf tflops=%lf max_rel_error=%lf "
                                "of_peak=%lf",
                                &n, &sec, &tf, &err, &of),
                         5);
        ck_assert_int_eq(n, 256 << rows);
        ck_assert_double_eq_tol(tf, 2.0 * n * n * n / sec * 1e-12, tf * 1e-3);
        ck_assert_msg(err <= 1e-5, "%ld: error %g", n, err);
        ck_assert_double_eq_tol(of, tf / peak, 1e-4 + of * 2e-3); /* printed to 4 places */
        if (tf > best)
            best = tf;
        rows++;
    }
    ck_assert_int_eq(rows, 2);
    double eff, measured;
    char *e = strstr(o, "\ngemm_efficiency = "),
         *m = strstr(o, "source.gemm_efficiency = measured ");
    ck_assert_msg(e && m, "%s", o);
    ck_assert_int_eq(sscanf(e, "\ngemm_efficiency = %lf", &eff), 1);
    ck_assert_int_eq(sscanf(m, "source.gemm_efficiency = measured %lf", &measured), 1);
    ck_assert_double_eq_tol(measured, best / peak, 1e-3 + measured * 2e-3);
    ck_assert_double_eq_tol(eff, measured * 0.75, 1e-3 + eff * 2e-3);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"calibrate", "--gemm", "--like", "tpu", NULL}), 2);
    one_error_line("--like: unknown device \"tpu\"", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"calibrate", "--gemm", "--max", "100", NULL}), 2);
    one_error_line("--max: expected an integer in [256, 16384]", NULL);
    /* tensor-core precisions are cuBLAS's: refused on the CPU backend, and a precision
     * there is none of */
    ck_assert_int_eq(dtsim((const char *[]){"calibrate", "--gemm", "--precision", "bf16", NULL}),
                     2);
    one_error_line("--precision bf16: tensor-core GEMMs are timed with cuBLAS", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"calibrate", "--gemm", "--precision", "fp64", NULL}),
                     2);
    one_error_line("--precision: expected fp32, tf32 or bf16", NULL);
}
END_TEST

START_TEST(devices_lists_the_catalogue)
{
    ck_assert_int_eq(dtsim((const char *[]){"devices", NULL}), 0);
    char *o = slurp(out_path);
    static const char *const rows[] = {
        "\nh100            67   494.7   989.4  1978.9     80  3350    70   700  0.7    0.5  132 "
        "0.60075  NVIDIA H100 SXM5 80 GB\n",
        "\ncpu           0.09       -       -       -      -     -     -     -    1      -    -  "
        "     -  ",
        "\nv100          15.7       -     125       -     32   900    30   300  0.7    0.5   80 "
        "    0.6  ",
        "\nmi300x       163.4   653.7  1307.4  2614.9    192  5300    75   750  0.7    0.5  304 "
        "0.45075  ",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        ck_assert_msg(strstr(o, rows[i]), "no row %s in:\n%s", rows[i], o);
    int lines = 0;
    for (char *c = o; *c; c++)
        lines += *c == '\n';
    ck_assert_int_eq(lines, 1 + 10 + 2); /* header, the ten devices, the note */
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"devices", "a100", NULL}), 0);
    o = slurp(out_path);
    ck_assert_ptr_nonnull(strstr(o, "a100: NVIDIA A100 SXM4 40 GB\n"));
    ck_assert_ptr_nonnull(strstr(o, "\n  memory               40 GB           [1]\n"));
    ck_assert_ptr_nonnull(strstr(o, "\n  power_idle           40 W            [2]\n"));
    ck_assert_ptr_nonnull(strstr(o, "fp32 13.65 TFLOP/s, tf32 78 TFLOP/s, bf16 156 TFLOP/s\n"));
    ck_assert_ptr_nonnull(strstr(o, "\n  [1] NVIDIA A100 Tensor Core GPU datasheet"));
    ck_assert_ptr_nonnull(strstr(o, "\n  [2] assumed: 10% of power_max"));
    free(o);
    char file[300];
    snprintf(file, sizeof file, "%s/dev.ini", dir);
    write_file(file, "[device]\nname = measured\nflops = 40Gf\n");
    ck_assert_int_eq(dtsim((const char *[]){"devices", file, NULL}), 0);
    o = slurp(out_path);
    ck_assert_ptr_nonnull(strstr(o, "fp32                 0.04 TFLOP/s    [1]\n"));
    free(o);
    write_file(file, "[device]\nname = measured\nflops = 40Gf\nmemory = lots\n");
    ck_assert_int_eq(dtsim((const char *[]){"devices", file, NULL}), 2);
    one_error_line("dev.ini:4: device.memory: bad size \"lots\"", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"devices", "tpu", NULL}), 2);
    one_error_line("dtsim devices: unknown device \"tpu\" (expected one of cpu, v100", NULL);
    /* --nic: NCCL between servers of 8 H100s on NDR (sim/docs/scale.md, Collectives between
     * servers: 364.9 GB/s by ring at 2 GB on 2 servers, 8.4 + 26 x 3.4 + 4 x 14 us of
     * latency and 2 x 15/16 of 2 GB at NVLink's 370 GB/s) */
    ck_assert_int_eq(dtsim((const char *[]){"devices", "h100", "--nic", "400Gbps", NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, "        2   2147483648  ring/simple      11035.3    194.6    364.9    "
                            "364.9\n"),
                  "%s", o);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"devices", "h100", "--nic", "fast", NULL}), 2);
    one_error_line("dtsim devices: --nic fast: ", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"devices", "h100", "--nic", NULL}), 2);
    one_error_line("dtsim devices: --nic needs a bandwidth", NULL);
}
END_TEST

/* `dtsim check --real`: the check pipeline's real-mode stage (sim_real_check, the rules
 * sim_real_setup applies under mpirun) refuses in one line with the key, exit 2; a scenario
 * real mode runs passes it; only run and check take --real. */
START_TEST(check_real_refuses_what_real_mode_cannot_run)
{
    char ini[300], set[64];
    snprintf(ini, sizeof ini, "%s/real.ini", dir);
    write_file(ini, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--real", NULL}), 0);
    static const struct {
        const char *set, *key, *says;
    } no[] = {
        {"strategy.bucket_mb=1", "strategy.bucket_mb", "real mode exchanges whole gradients"},
        {"strategy.kind=tensor", "strategy.kind", "does not run real"},
        {"run.max_time=10s", "run.max_time", "real mode stops after run.steps"},
        {"model.device=cuda", "model.device", "real mode trains on the cpu backend"},
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        snprintf(set, sizeof set, "%s", no[i].set);
        if (!strstr(set, "cuda")) /* without --real: a simulation's, fine (cuda: this machine's) */
            ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", set, NULL}), 0);
        ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", set, "--real", NULL}), 2);
        one_error_line(no[i].key, no[i].says);
    }
    ck_assert_int_eq(dtsim((const char *[]){"platform", ini, "--real", NULL}), 2);
    one_error_line("unknown option \"--real\"", NULL);
}
END_TEST

START_TEST(readme_lists_every_key)
{
    /* the key tables in scenarios/keys.md are exactly what `dtsim keys` prints (regenerate
     * them with `make docs` when a key changes) */
    ck_assert_int_eq(dtsim((const char *[]){"keys", NULL}), 0);
    char *keys = slurp(out_path);
    ck_assert(strlen(keys) > 1000);
    ck_assert_msg(readme_holds("/scenarios/keys.md", keys),
                  "scenarios/keys.md does not contain the output of dtsim keys (make docs)");
    free(keys);
}
END_TEST

START_TEST(readme_lists_every_strategy)
{
    /* the strategy table in sim/README.md is exactly what `dtsim strategies` prints from the
     * registry (regenerate it with it when a strategy changes) */
    ck_assert_int_eq(dtsim((const char *[]){"strategies", NULL}), 0);
    char *table = slurp(out_path);
    ck_assert(strstr(table, "| `single` |") && strstr(table, "| `fedavg` |"));
    ck_assert_msg(readme_holds("/sim/README.md", table),
                  "sim/README.md does not contain the output of dtsim strategies");
    free(table);
}
END_TEST

/* --- dtsim runs, dtsim show, completion and installation ---------------------------------- */

/* A database of runs whose names a table must shorten: run 1 "head-mmm...m-tail" (with a
 * link degraded, so it has fault rows; not a crash, whose killed actors LeakSanitizer cannot
 * scan at exit in `make asan`), run 2 a long UTF-8 name, runs 3 and 4 a sweep with a long
 * name, run 5 a name with control bytes (written into the file: dtsim refuses them). */
static void make_runs_db(const char *db)
{
    char ini[300], name[400], text[1024];
    snprintf(ini, sizeof ini, "%s/names.ini", dir);
    snprintf(text, sizeof text,
             "%s[faults]\nlink_degrade = star_link_1_UP at 0.00001s to 1Gbps for 0.0001s\n", tiny);
    write_file(ini, text);
    int k = snprintf(name, sizeof name, "run.name=head-");
    for (int i = 0; i < 120; i++)
        name[k++] = 'm';
    snprintf(name + k, sizeof name - k, "-tail");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, "--set", name, NULL}), 0);
    write_file(ini, tiny);
    k = snprintf(name, sizeof name, "run.name=été ");
    for (int i = 0; i < 28; i++) /* 178 bytes: "name = VALUE" must fit a line of 198 */
        k += snprintf(name + k, sizeof name - k, "日本");
    snprintf(name + k, sizeof name - k, " fin");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, "--set", name, "--set",
                                            "strategy.kind=sync-ps", NULL}),
                     0);
    snprintf(text, sizeof text,
             "%s[run]\nname = a-sweep-whose-name-runs-on-and-on-well-past-any-table-column"
             "-at-all\n[sweep]\nmodel.lr = 0.1, 0.2\n",
             tiny);
    write_file(ini, text);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    write_file(ini, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h,
                                  "UPDATE runs SET name = 'two' || char(10) || 'lines' ||"
                                  " char(27) || '[31m' WHERE id = 5",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
}

/* Columns of UTF-8 text: its code points. */
static size_t cols_of(const char *s, size_t bytes)
{
    size_t n = 0;
    for (size_t i = 0; i < bytes; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

/* The byte offset of column c of s. */
static size_t byte_of_col(const char *s, size_t c)
{
    size_t i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && c-- == 0)
            break;
    return i;
}

/* Text as a table shows it: control bytes written \xNN (a second implementation). */
static void escaped(const char *s, char *out, size_t size)
{
    size_t k = 0;
    for (; *s && k + 5 < size; s++)
        k += (unsigned char)*s < 0x20 || *s == 0x7f
                 ? (size_t)snprintf(out + k, size - k, "\\x%02x", (unsigned char)*s)
                 : (size_t)snprintf(out + k, size - k, "%c", *s);
    out[k] = 0;
}

/* "7.65s", "1.24min", "12.3us" in seconds. */
static double duration_of(const char *t)
{
    char *end;
    double v = strtod(t, &end);
    static const struct {
        const char *unit;
        double s;
    } units[] = {{"us", 1e-6}, {"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit))
            return v * units[i].s;
    ck_abort_msg("\"%s\" is not a duration", t);
    return 0;
}

/* A shown duration rounds the stored one to 3 significant digits. */
static void assert_duration(const char *shown, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL) {
        ck_assert_str_eq(shown, "-");
        return;
    }
    double want = sqlite3_column_double(st, col), got = duration_of(shown);
    ck_assert_msg(fabs(got - want) <= 0.005 * want + 1e-12, "shown %s, stored %g", shown, want);
}

/* A command that only reads a database (runs, show, export) closes it as a writer would:
 * the last connection checkpoints and removes the -wal and -shm files (a read-only
 * connection left both beside every database it had read, plan's too). */
START_TEST(read_commands_leave_no_wal_files)
{
    char ini[300], db[300], side[320], out[320];
    snprintf(ini, sizeof ini, "%s/wal.ini", dir);
    snprintf(db, sizeof db, "%s/wal.db", dir);
    snprintf(out, sizeof out, "%s/csv", dir);
    write_file(ini, tiny);
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    const char *const reads[][6] = {
        {"runs", "--db", db, NULL},
        {"show", "1", "--db", db, NULL},
        {"export", "--csv", "--db", db, "--out", out},
    };
    for (int i = 0; i < 3; i++) {
        const char *args[8] = {0};
        for (int j = 0; j < 6 && reads[i][j]; j++)
            args[j] = reads[i][j];
        ck_assert_int_eq(dtsim(args), 0);
        static const char *const ext[] = {"-wal", "-shm"};
        for (int e = 0; e < 2; e++) {
            snprintf(side, sizeof side, "%s%s", db, ext[e]);
            ck_assert_msg(access(side, F_OK) != 0, "dtsim %s left %s", reads[i][0], side);
        }
    }
}
END_TEST

START_TEST(runs_fit_100_columns_and_match_the_database)
{
    char db[300];
    snprintf(db, sizeof db, "%s/names.db", dir);
    make_runs_db(db);
    ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, NULL}), 0);
    char *o = slurp(out_path);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT r.name, r.strategy, r.status, s.final_accuracy,"
                                        " s.sim_time, (julianday(r.ended) - julianday(r.started))"
                                        " * 86400 FROM runs r LEFT JOIN summary s ON s.run = r.id"
                                        " WHERE r.id = ?1",
                                        -1, &st, NULL),
                     SQLITE_OK);
    const char *header = o, *name_at = strstr(header, "name"),
               *strategy_at = strstr(header, "strategy");
    ck_assert(name_at && strategy_at);
    size_t name_col = (size_t)(name_at - header), name_width = (size_t)(strategy_at - name_at) - 2;
    int rows = 0, sweeps = 0;
    for (char *line = o, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        ck_assert_msg(cols_of(line, strlen(line)) <= 100, "%zu columns: %s",
                      cols_of(line, strlen(line)), line);
        if (line == o)
            continue;
        if (!strncmp(line, "sweep ", 6)) {
            /* the sweep's id and its runs, as stored */
            char want[400];
            sqlite3_stmt *sw;
            ck_assert_int_eq(
                sqlite3_prepare_v2(h, "SELECT sweep FROM runs WHERE id = 3", -1, &sw, NULL),
                SQLITE_OK);
            ck_assert_int_eq(sqlite3_step(sw), SQLITE_ROW);
            /* whole, or (too long for the line) its ends around "..." */
            const char *id = (const char *)sqlite3_column_text(sw, 0);
            snprintf(want, sizeof want, "sweep %s: runs 3-4", id);
            char *dots = strstr(line, "...");
            if (strlen(want) <= 100) {
                ck_assert_str_eq(line, want);
            } else {
                ck_assert_msg(dots, "%s", line);
                ck_assert_int_eq(cols_of(line, strlen(line)), 100);
                ck_assert(!strncmp(line, want, (size_t)(dots - line)));
                ck_assert_str_eq(want + strlen(want) - strlen(dots + 3), dots + 3);
            }
            sqlite3_finalize(sw);
            sweeps++;
            continue;
        }
        long id = strtol(line, NULL, 10);
        sqlite3_bind_int64(st, 1, id);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        /* the name: whole, or its two ends around "..." in exactly the column's width */
        size_t a = byte_of_col(line, name_col), b = byte_of_col(line, name_col + name_width);
        char shown[512], stored[1024];
        snprintf(shown, sizeof shown, "%.*s", (int)(b - a), line + a);
        for (size_t n = strlen(shown); n && shown[n - 1] == ' ';)
            shown[--n] = 0;
        escaped((const char *)sqlite3_column_text(st, 0), stored, sizeof stored);
        char *dots = strstr(shown, "...");
        if (cols_of(stored, strlen(stored)) <= name_width) {
            ck_assert_str_eq(shown, stored);
        } else {
            ck_assert_msg(dots, "run %ld: \"%s\" for \"%s\"", id, shown, stored);
            ck_assert_int_eq(cols_of(shown, strlen(shown)), name_width);
            ck_assert_msg(!strncmp(stored, shown, (size_t)(dots - shown)), "%s", shown);
            ck_assert_str_eq(stored + strlen(stored) - strlen(dots + 3), dots + 3);
            ck_assert_int_ge(dots - shown, 10); /* both ends kept */
            ck_assert_int_ge(strlen(dots + 3), 10);
        }
        /* the columns after the name */
        char strategy[32], status[32], acc[32], sim[32], wall[32];
        ck_assert_int_eq(
            sscanf(line + b, "%31s %31s %31s %31s %31s", strategy, status, acc, sim, wall), 5);
        ck_assert_str_eq(strategy, (const char *)sqlite3_column_text(st, 1));
        ck_assert_str_eq(status, (const char *)sqlite3_column_text(st, 2));
        char want_acc[32] = "-";
        if (sqlite3_column_type(st, 3) != SQLITE_NULL)
            snprintf(want_acc, sizeof want_acc, "%.4f", sqlite3_column_double(st, 3));
        ck_assert_str_eq(acc, want_acc);
        assert_duration(sim, st, 4);
        assert_duration(wall, st, 5);
        sqlite3_reset(st);
        rows++;
    }
    ck_assert_int_eq(rows, query_long(h, "SELECT count(*) FROM runs"));
    ck_assert_int_eq(rows, 5);
    ck_assert_int_eq(sweeps, 1);
    free(o);

    /* --wide: every name whole (escaped), one line per run */
    ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, "--wide", NULL}), 0);
    o = slurp(out_path);
    sqlite3_stmt *names;
    ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT name FROM runs", -1, &names, NULL), SQLITE_OK);
    while (sqlite3_step(names) == SQLITE_ROW) {
        char stored[1024];
        escaped((const char *)sqlite3_column_text(names, 0), stored, sizeof stored);
        ck_assert_msg(strstr(o, stored), "--wide lacks %s", stored);
    }
    sqlite3_finalize(names);
    int lines = 0;
    for (char *c = o; *c; c++)
        lines += *c == '\n';
    ck_assert_int_eq(lines, 6);
    free(o);
    sqlite3_finalize(st);
    sqlite3_close(h);
}
END_TEST

/* The text after "\n" label and its blanks, up to the end of the line, into buf. */
static const char *after_label(const char *o, const char *label, char *buf, size_t size)
{
    char needle[128];
    snprintf(needle, sizeof needle, "\n%s ", label);
    const char *p = strstr(o, needle);
    ck_assert_msg(p, "no line \"%s\" in:\n%s", label, o);
    p += strlen(needle);
    while (*p == ' ')
        p++;
    snprintf(buf, size, "%.*s", (int)strcspn(p, "\n"), p);
    return buf;
}

START_TEST(show_prints_a_run_whole)
{
    char db[300], text[512], want[512];
    snprintf(db, sizeof db, "%s/names.db", dir);
    make_runs_db(db);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(dtsim((const char *[]){"show", "1", "--db", db, NULL}), 0);
    char *o = slurp(out_path);
    sqlite3_stmt *st;
    ck_assert_int_eq(
        sqlite3_prepare_v2(h,
                           "SELECT r.name, r.status, r.seed, s.final_accuracy,"
                           " s.final_loss, s.sim_time, s.steps, r.strategy"
                           " FROM runs r JOIN summary s ON s.run = r.id WHERE r.id = 1",
                           -1, &st, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    snprintf(want, sizeof want, "run 1: %s\n", sqlite3_column_text(st, 0));
    ck_assert_msg(!strncmp(o, want, strlen(want)), "%s", o);
    ck_assert_str_eq(after_label(o, "  status", text, sizeof text),
                     (const char *)sqlite3_column_text(st, 1));
    ck_assert_str_eq(after_label(o, "  strategy", text, sizeof text),
                     (const char *)sqlite3_column_text(st, 7));
    ck_assert_int_eq(strtol(after_label(o, "  seed", text, sizeof text), NULL, 10),
                     sqlite3_column_int64(st, 2));
    snprintf(want, sizeof want, "%.4f, loss %.4f", sqlite3_column_double(st, 3),
             sqlite3_column_double(st, 4));
    ck_assert_str_eq(after_label(o, "  final accuracy", text, sizeof text), want);
    snprintf(want, sizeof want, "%.6g s", sqlite3_column_double(st, 5));
    ck_assert_str_eq(after_label(o, "  simulated time", text, sizeof text), want);
    ck_assert_int_eq(strtol(after_label(o, "  steps", text, sizeof text), NULL, 10),
                     sqlite3_column_int64(st, 6));
    sqlite3_finalize(st);
    /* the energy row: the cpu device has no power figures, the links do */
    ck_assert_int_eq(
        sqlite3_prepare_v2(h, "SELECT link_joules FROM energy WHERE run = 1", -1, &st, NULL),
        SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    snprintf(want, sizeof want, "hosts -, links %.4g kJ", sqlite3_column_double(st, 0) / 1e3);
    sqlite3_finalize(st);
    ck_assert_msg(!strncmp(after_label(o, "  energy", text, sizeof text), want, strlen(want)), "%s",
                  text);
    ck_assert_int_eq(strtol(after_label(o, "evaluations", text, sizeof text), NULL, 10),
                     query_long(h, "SELECT count(*) FROM evals WHERE run = 1"));
    /* "2: link-degrade 1, link-restore 1": the count, then each kind's */
    after_label(o, "faults", text, sizeof text);
    long faults = query_long(h, "SELECT count(*) FROM faults WHERE run = 1");
    ck_assert_int_ge(faults, 1);
    ck_assert_int_eq(strtol(text, NULL, 10), faults);
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT kind, count(*) FROM faults WHERE run = 1"
                                        " GROUP BY kind",
                                        -1, &st, NULL),
                     SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        snprintf(want, sizeof want, "%s %lld", sqlite3_column_text(st, 0),
                 (long long)sqlite3_column_int64(st, 1));
        ck_assert_msg(strstr(text, want), "\"%s\" not in faults: %s", want, text);
    }
    sqlite3_finalize(st);
    /* every parameter, each on a line of its own: "  key  value" */
    ck_assert_int_eq(
        sqlite3_prepare_v2(h, "SELECT key, value FROM params WHERE run = 1", -1, &st, NULL),
        SQLITE_OK);
    long params = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char label[128];
        snprintf(label, sizeof label, "  %.100s", sqlite3_column_text(st, 0));
        ck_assert_str_eq(after_label(o, label, text, sizeof text),
                         (const char *)sqlite3_column_text(st, 1));
        params++;
    }
    sqlite3_finalize(st);
    ck_assert_int_ge(params, 100);
    long set = 0, defaults = 0, all = 0;
    const char *p = strstr(o, "\nparameters set (");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(p, "\nparameters set (%ld of %ld", &set, &all), 2);
    p = strstr(o, "\nparameters at their defaults (");
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(sscanf(p, "\nparameters at their defaults (%ld", &defaults), 1);
    ck_assert_int_eq(all, params);
    ck_assert_int_eq(set + defaults, params);
    /* steps, eval_every, the model, the data, the fault... were set: more than 10 */
    ck_assert_int_ge(set, 10);
    free(o);

    /* --config: the stored configuration, byte for byte */
    ck_assert_int_eq(dtsim((const char *[]){"show", "--config", "2", "--db", db, NULL}), 0);
    o = slurp(out_path);
    ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT config FROM runs WHERE id = 2", -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq(o, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    free(o);

    /* a name with control bytes stays on its line */
    ck_assert_int_eq(dtsim((const char *[]){"show", "5", "--db", db, NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(!strncmp(o, "run 5: two\\x0alines\\x1b[31m\n", 28), "%s", o);
    free(o);
    sqlite3_close(h);

    /* what is not there: one line, exit 2, nothing made */
    ck_assert_int_eq(dtsim((const char *[]){"show", "99", "--db", db, NULL}), 2);
    one_error_line("no run 99", db);
    ck_assert_int_eq(dtsim((const char *[]){"show", "3x", "--db", db, NULL}), 2);
    one_error_line("\"3x\" is not a run id", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"show", "--db", db, NULL}), 2);
    one_error_line("missing RUN", NULL);
    ck_assert_int_eq(dtsim((const char *[]){"show", "1", "2", "--db", db, NULL}), 2);
    one_error_line("unexpected argument \"2\"", NULL);
    snprintf(db, sizeof db, "%s/typo.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"show", "1", "--db", db, NULL}), 2);
    one_error_line("typo.db: No such file or directory", NULL);
    ck_assert_msg(access(db, F_OK) != 0, "dtsim show made %s", db);
}
END_TEST

/* Runs argv (argv[0] a path; no shell) in the current directory with stdout and stderr to
 * the usual files; returns the exit code. */
static int run_argv(const char *const *argv)
{
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* What the completion script offers for the command line `line` (cursor at its end), one
 * answer a line, as bash would call it on TAB. */
static char *complete_line(const char *script, const char *line)
{
    static const char *const body =
        "source \"$1\" || exit 3\n"
        "COMP_LINE=$2 COMP_POINT=${#2} COMP_WORDBREAKS=$' \\t\\n\"\\'><=;|&(:'\n"
        "COMP_WORDS=($2) COMP_CWORD=${#COMP_WORDS[@]}\n"
        "_dtsim\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    ck_assert_int_eq(
        run_argv((const char *[]){"/bin/bash", "-c", body, "bash", script, line, NULL}), 0);
    return slurp(out_path);
}

START_TEST(completion_offers_commands_options_files_keys_and_runs)
{
    char script[512], line[1024], db[300], sub[300];
    snprintf(script, sizeof script, "%s/sim/cli/dtsim-completion.bash", DTSIM_SOURCE);
    snprintf(db, sizeof db, "%s/names.db", dir);
    make_runs_db(db);
    static const struct {
        const char *typed, *want;
    } cases[] = {
        {"ru", "run\nruns\n"},
        {"sh", "show\n"},
        {"show --", "--config\n--db\n--help\n"},
        {"runs --w", "--wide\n"},
        {"bench ", "trainer\nsim\n"}, /* the command table's order */
        {"bench sim --s", "--set\n"},
        {"profile ", "transformer\ntime\n"},
        {"profile time --mic", "--micro-batch\n"},
        {"profile transformer --kv", "--kv-heads\n--kv-lora-rank\n"},
        {"profile transformer --layers 2 --family ", "gpt\nllama\nbert\n"},
        {"run x.ini --set cluster.bandw", "cluster.bandwidth=\n"},
        /* bash replaces what follows the = (a word break): the answer is that part */
        {"check x.ini --set=model.l", "model.layers=\nmodel.lr=\nmodel.lr_min=\n"},
        {"run x.ini -j ", "\n"},
        {"dev", "devices\n"},
        {"devices h", "h100\nh100-pcie\nh200\n"},
        /* dtsim plan's device list: the names after the last comma, the list kept */
        {"plan --device a100,h2", "a100,h200\n"},
        {"plan --mt", "--mtbf\n"},
        {"plan --fab", "--fabric\n"},
        {"plan --verb", "--verbose\n"},
        /* plan's help names `dtsim profile transformer --family` without taking it */
        {"plan --fam", "\n"},
        {"export --tr", "--trace\n"},
        /* a key's values where `dtsim keys` lists them; none for a bandwidth */
        {"run x.ini --set strategy.kind=fed", "fedavg\nfedbuff\n"},
        {"run x.ini --set cluster.bandwidth=", "\n"},
        /* a value with its gloss ("text (byte tokens ...)"); the device catalogue; serve's
         * help names run's --publish without taking it; plot's format list and its
         * projector */
        {"run x.ini --set data.source=", "fashion-mnist\nsynthetic\ntext\n"},
        {"run x.ini --set cluster.device=h1", "h100\nh100-pcie\n"},
        {"run x.ini --set cluster.device=cu", "custom\n"},
        {"serve --", "--db\n--help\n--port\n--projector\n"},
        {"plot --format png,s", "png,svg\n"},
        {"plot --pro", "--projector\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(line, sizeof line, "%s %s", DTSIM_BINARY, cases[i].typed);
        char *got = complete_line(script, line);
        ck_assert_msg(!strcmp(got, cases[i].want), "dtsim %s<TAB>: got \"%s\", want \"%s\"",
                      cases[i].typed, got, cases[i].want);
        free(got);
    }
    /* run ids and sweep ids of the database --db names */
    snprintf(line, sizeof line, "%s show --db %s ", DTSIM_BINARY, db);
    char *got = complete_line(script, line);
    ck_assert_str_eq(got, "1\n2\n3\n4\n5\n");
    free(got);
    snprintf(line, sizeof line, "%s plot --db %s --sweep ", DTSIM_BINARY, db);
    got = complete_line(script, line);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    /* the sweep's name (report, plot and export take it: its newest sweep), then its id */
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT name || char(10) || sweep || char(10) FROM runs"
                                        " WHERE id = 3",
                                        -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    const char *row = (const char *)sqlite3_column_text(st, 0);
    char want_sweep[600];
    snprintf(want_sweep, sizeof want_sweep, "%.*s\n%s", (int)strcspn(row, "/\n"), row,
             strchr(row, '\n') + 1);
    ck_assert_str_eq(got, want_sweep);
    sqlite3_finalize(st);
    sqlite3_close(h);
    free(got);
    /* a scenario argument: .ini files and folders, nothing else */
    snprintf(sub, sizeof sub, "%s/sc", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(line, sizeof line, "%s/sc/a.ini", dir);
    write_file(line, tiny);
    snprintf(line, sizeof line, "%s/sc/b.txt", dir);
    write_file(line, "");
    snprintf(line, sizeof line, "%s/sc/inner", dir);
    ck_assert_int_eq(mkdir(line, 0700), 0);
    snprintf(line, sizeof line, "%s run %s/sc/", DTSIM_BINARY, dir);
    got = complete_line(script, line);
    char want_a[400], want_dir[400];
    snprintf(want_a, sizeof want_a, "%s/sc/a.ini\n", dir);
    snprintf(want_dir, sizeof want_dir, "%s/sc/inner\n", dir);
    ck_assert_msg(strstr(got, want_a) && strstr(got, want_dir) && !strstr(got, "b.txt") &&
                      strlen(got) == strlen(want_a) + strlen(want_dir),
                  "%s", got);
    free(got);
}
END_TEST

/* The commands `dtsim --help` lists (a word each, in order), into words; how many. */
static int help_commands(char words[][32], int max)
{
    ck_assert_int_eq(dtsim((const char *[]){"--help", NULL}), 0);
    char *o = slurp(out_path);
    char *p = strstr(o, "\ncommands:\n");
    ck_assert_ptr_nonnull(p);
    int n = 0;
    for (p = strchr(p + 1, '\n') + 1; p[0] == ' ' && n < max; p = strchr(p, '\n') + 1)
        if (p[1] == ' ' && p[2] != ' ' && sscanf(p, "%31s", words[n]) == 1 &&
            (n == 0 || strcmp(words[n - 1], words[n])))
            n++;
    free(o);
    return n;
}

/* `cmake --install` puts dtsim, its man page, its completion and the scenarios under a
 * prefix, and the installed dtsim checks an installed scenario (its traces found beside it)
 * from another folder. */
START_TEST(installed_dtsim_runs_from_anywhere)
{
    char prefix[300], elsewhere[300], path[512], cwd[512];
    snprintf(prefix, sizeof prefix, "%s/inst", dir);
    ck_assert_int_eq(
        run_argv((const char *[]){DTSIM_CMAKE, "--install", DTSIM_BUILD, "--prefix", prefix, NULL}),
        0);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", dir);
    ck_assert_int_eq(mkdir(elsewhere, 0700), 0);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(chdir(elsewhere), 0);
    char bin[400], scenario[512];
    snprintf(bin, sizeof bin, "%s/bin/dtsim", prefix);
    snprintf(scenario, sizeof scenario, "%s/share/dtsim/scenarios/federated/device-traces.ini",
             prefix);
    int rc = run_argv((const char *[]){bin, "check", scenario, NULL});
    ck_assert_int_eq(chdir(cwd), 0);
    ck_assert_int_eq(rc, 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, ": 3 runs\n") && strstr(o, "devices-sample.csv"), "%s", o);
    free(o);
    snprintf(path, sizeof path, "%s/share/dtsim/topologies/fat-tree-16.xml", prefix);
    ck_assert_int_eq(access(path, R_OK), 0);

    /* the completion loads and completes with the installed dtsim */
    snprintf(path, sizeof path, "%s/share/bash-completion/completions/dtsim", prefix);
    char line[512];
    snprintf(line, sizeof line, "%s sh", bin);
    o = complete_line(path, line);
    ck_assert_str_eq(o, "show\n");
    free(o);

    /* the man page names every command `dtsim --help` lists */
    snprintf(path, sizeof path, "%s/share/man/man1/dtsim.1", prefix);
    if (!DTSIM_MAN_PAGE) {
        fprintf(stderr, "cli: help2man was not found at configure time: no man page to check\n");
        ck_assert_int_ne(access(path, F_OK), 0);
        return;
    }
    o = slurp(path);
    char words[32][32];
    int n = help_commands(words, 32);
    ck_assert_int_ge(n, 12);
    for (int i = 0; i < n; i++) {
        char needle[40];
        snprintf(needle, sizeof needle, "\n%.31s", words[i]);
        ck_assert_msg(strstr(o, needle), "the man page lacks the command %s", words[i]);
    }
    ck_assert_msg(strstr(o, ".SH \"EXIT STATUS\"") || strstr(o, ".SH EXIT STATUS"),
                  "no EXIT STATUS section");
    /* each command's options, from its own --help: plan's --time-limit under plan's heading */
    char *plan = strstr(o, ".SS \"dtsim plan\"");
    ck_assert_msg(plan && strstr(plan, "time\\-limit"), "no options of dtsim plan in the man page");
    /* the version is one line: --version's OpenBLAS and MPI lines stay out of the options */
    ck_assert_msg(!strstr(o, "OpenBLAS took"), "--version's text in the man page");
    free(o);
}
END_TEST

/* ---- issue 36: wrong exits, silent acceptance, leftovers ----------------------------- */

/* Waits (at most 60 s) until db holds a row in runs. */
static void wait_for_run_row(const char *db)
{
    for (int tries = 0; tries < 600; tries++) {
        sqlite3 *h = NULL;
        sqlite3_stmt *st = NULL;
        int in = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                 sqlite3_prepare_v2(h, "SELECT count(*) FROM runs", -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
        sqlite3_finalize(st);
        sqlite3_close(h);
        if (in)
            return;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
}

/* Sends sig to pid and waits for it at most limit seconds (then kills it and fails);
 * returns the seconds it took. */
static double stop_within(pid_t pid, int sig, double limit, int *status)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    kill(pid, sig);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double waited = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (waitpid(pid, status, WNOHANG) == pid)
            return waited;
        if (waited > limit) {
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            ck_abort_msg("still running %.0f s after signal %d", limit, sig);
        }
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
}

/* A one-step timing-only run whose step simulates for minutes (a ring of 1024 ResNet-50
 * workers, one message per ring step: 8 million messages) stops within two seconds of a
 * SIGTERM or a SIGINT, recorded interrupted: the signal used to wait for a step boundary
 * that was minutes away. */
START_TEST(signals_stop_a_long_step_at_once)
{
    char db[300];
    const int sigs[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        snprintf(db, sizeof db, "%s/long%d.db", dir, i);
#if defined(__SANITIZE_ADDRESS__) /* LeakSanitizer's tracer crashes walking the stacks of 1024     \
                                     stopped SimGrid actors, losing the summary: no leak check */
        setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
        pid_t pid = dtsim_start((const char *[]){
            "run", DTSIM_SOURCE "/scenarios/scale/ring-4096.ini", "--set", "run.steps=1", "--set",
            "cluster.workers=1024", "--set", "strategy.ring_messages=steps", "--db", db, NULL});
        wait_for_run_row(db);
        nanosleep(&(struct timespec){1, 0}, NULL);
        int status;
        double waited = stop_within(pid, sigs[i], 20, &status);
#if defined(__SANITIZE_ADDRESS__)
        unsetenv("ASAN_OPTIONS");
#endif
#if defined(__SANITIZE_ADDRESS__) /* a Debug build under AddressSanitizer ends its 1024 actors     \
                                     several times slower: the bound is for a Release build */
        const double bound = 10;
#else
        const double bound = 2.5;
#endif
        ck_assert_msg(waited < bound, "the run took %.1f s to stop after signal %d", waited,
                      sigs[i]);
        /* no step finished: the summary says so, not "nan J/step" */
        char *o = slurp(out_path);
        ck_assert_msg(strstr(o, " interrupted ") && !strstr(o, "nan"), "%s", o);
        free(o);
        sqlite3 *h;
        ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'interrupted'"),
                         1);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs"), 1);
        assert_intact(h);
        sqlite3_close(h);
    }
}
END_TEST

/* Returns once pid runs the dtsim binary (it has exec'd): a signal before that would reach
 * a copy of this test process, with the test runner's handlers. */
static void wait_exec(pid_t pid)
{
    char link[64], exe[4096];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    for (int tries = 0; tries < 2000; tries++) {
        ssize_t n = readlink(link, exe, sizeof exe - 1);
        if (n > 0) {
            exe[n] = 0;
            if (strstr(exe, "/dtsim") && !strstr(exe, "test_cli"))
                return;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

/* merge and report stop at once on SIGTERM or SIGINT wherever they are (the default action:
 * neither holds anything a signal must finish), and a merge stopped at any point leaves its
 * target whole: intact, every run in it with all of its evaluation rows (SQLite commits a
 * merge or none of it). */
START_TEST(merge_and_report_stop_on_signal)
{
    char ini[300], src[4][300], into[300], out[300];
    snprintf(ini, sizeof ini, "%s/tiny.ini", dir);
    write_file(ini, tiny);
    for (int i = 0; i < 4; i++) {
        snprintf(src[i], sizeof src[i], "%s/src%d.db", dir, i);
        for (int k = 0; k < 2; k++)
            ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", src[i], NULL}), 0);
    }
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(src[0], &h), SQLITE_OK);
    long evals = query_long(h, "SELECT count(*) FROM evals WHERE run = 1");
    sqlite3_close(h);
    ck_assert(evals > 0);
    static const long delays_us[] = {0, 2000, 5000, 10000, 20000, 40000, 80000};
    for (size_t d = 0; d < sizeof delays_us / sizeof *delays_us; d++) {
        int sig = d % 2 ? SIGINT : SIGTERM, status;
        snprintf(into, sizeof into, "%s/into%zu.db", dir, d);
        pid_t pid = dtsim_start(
            (const char *[]){"merge", src[0], src[1], src[2], src[3], "--into", into, NULL});
        wait_exec(pid);
        nanosleep(&(struct timespec){0, delays_us[d] * 1000}, NULL);
        ck_assert(stop_within(pid, sig, 10, &status) < 2.0);
        if (access(into, F_OK) == 0) {
            ck_assert_int_eq(sqlite3_open(into, &h), SQLITE_OK);
            assert_intact(h);
            long runs = query_long(h, "SELECT count(*) FROM runs");
            char sql[200];
            snprintf(sql, sizeof sql,
                     "SELECT count(*) FROM runs r WHERE (SELECT count(*) FROM evals e "
                     "WHERE e.run = r.id) != %ld",
                     evals);
            ck_assert_msg(query_long(h, sql) == 0, "delay %ld us: a run merged in part",
                          delays_us[d]);
            ck_assert_msg(runs % 2 == 0 && runs <= 8, "delay %ld us: %ld runs", delays_us[d], runs);
            sqlite3_close(h);
        }
        snprintf(out, sizeof out, "%s/report%zu", dir, d);
        pid = dtsim_start((const char *[]){"report", "--db", src[0], "--out", out, NULL});
        wait_exec(pid);
        nanosleep(&(struct timespec){0, delays_us[d] * 1000}, NULL);
        ck_assert(stop_within(pid, sig, 10, &status) < 2.0);
    }
    /* and a report after them draws whole */
    ck_assert_int_eq(dtsim((const char *[]){"report", "--db", src[0], "--out", out, NULL}), 0);
}
END_TEST

/* The read commands over db: each exits 2 with one line naming base (the file's name). */
static void read_commands_refuse(const char *db, const char *base)
{
    char out[300], into[300];
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(into, sizeof into, "%s/into.db", dir);
    const char *const cmds[][8] = {
        {"runs", "--db", db, NULL},
        {"show", "1", "--db", db, NULL},
        {"report", "--db", db, "--out", out, NULL},
        {"plot", "--db", db, "--out", out, NULL},
        {"export", "--csv", "--db", db, "--out", out, NULL},
        {"merge", db, "--into", into, NULL},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        unlink(into);
        int rc = dtsim(cmds[i]);
        char *e = slurp(err_path);
        ck_assert_msg(rc == 2, "dtsim %s on %s: exit %d, %s", cmds[i][0], base, rc, e);
        free(e);
        one_error_line(base, NULL);
    }
}

/* A database with one page zeroed: every read command exits 2 with one line naming the
 * file, whichever table the page held (show, report and merge exited 1; runs listed the
 * runs and exited 0 when the page was not the runs table's). An empty file is no database
 * and stays empty: `runs` used to write a schema into it. */
START_TEST(damaged_and_empty_databases_exit_2)
{
    char ini[300], db[300], bad[300];
    snprintf(ini, sizeof ini, "%s/tiny.ini", dir);
    snprintf(db, sizeof db, "%s/good.db", dir);
    write_file(ini, tiny);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(sqlite3_exec(h, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
                     SQLITE_OK);
    long pages = query_long(h, "PRAGMA page_count"), size = query_long(h, "PRAGMA page_size");
    sqlite3_close(h);
    ck_assert_int_gt(pages, 8);
    /* the first page after the header's, one in the middle, the last */
    const long which[] = {2, pages / 2, pages};
    char *text = NULL;
    {
        FILE *f = fopen(db, "rb");
        ck_assert_ptr_nonnull(f);
        text = malloc((size_t)(pages * size));
        ck_assert_int_eq(fread(text, 1, (size_t)(pages * size), f), (size_t)(pages * size));
        fclose(f);
    }
    for (int k = 0; k < 3; k++) {
        snprintf(bad, sizeof bad, "%s/zeroed-%ld.db", dir, which[k]);
        FILE *f = fopen(bad, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fwrite(text, 1, (size_t)(pages * size), f), (size_t)(pages * size));
        fseek(f, (which[k] - 1) * size, SEEK_SET);
        static char zero[65536];
        ck_assert_int_eq(fwrite(zero, 1, (size_t)size, f), (size_t)size);
        fclose(f);
        char base[64];
        snprintf(base, sizeof base, "zeroed-%ld.db: the database is damaged", which[k]);
        read_commands_refuse(bad, base);
    }
    free(text);

    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty.db", dir);
    write_file(empty, "");
    read_commands_refuse(empty, "empty.db: not a dtsim results database");
    struct stat sb;
    ck_assert_int_eq(stat(empty, &sb), 0);
    ck_assert_int_eq(sb.st_size, 0);
}
END_TEST

/* The plan's errors name what the user gave: --set strategy.kind=fedavg is refused (it
 * planned a federated layout); 65,536 devices of a profile that cannot be cut named
 * "--set strategy.data_parallel", never given; 1e9 devices blamed memory though every
 * layout was dropped for cluster.racks. */
START_TEST(plan_errors_name_what_was_given)
{
    char prof[300];
    snprintf(prof, sizeof prof, "%s/mine.ini", dir);
    write_file(prof, "[profile]\nname = mine\nparams = 30\nforward_flops = 1e6\n[backward]\n"
                     "b = 10 1e6\na = 20 1e6\n");
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", "gpt2_xl", "--device", "h100",
                                            "--devices", "8", "--global-batch", "16", "--no-run",
                                            "--set", "strategy.kind=fedavg", NULL}),
                     2);
    one_error_line("--set strategy.kind=fedavg: a plan lays out tensor x pipeline x data "
                   "parallel runs (strategy.kind = pipeline in every layout)",
                   NULL);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100", "--devices", "65536",
                               "--global-batch", "65536", "--no-run", NULL}),
        2);
    one_error_line("--devices 65536 and --global-batch 65536: no layout can be simulated",
                   "strategy.data_parallel: ");
    char *e = slurp(err_path);
    ck_assert_msg(!strstr(e, "--set"), "%s", e);
    free(e);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--profile", prof, "--device", "h100", "--devices",
                               "1000000000", "--global-batch", "1000000000", "--no-run", NULL}),
        2);
    e = slurp(err_path);
    ck_assert_msg(strstr(e, "can be simulated, none for its memory: cluster.racks: ") &&
                      !strstr(e, "fits its memory"),
                  "%s", e);
    free(e);
}
END_TEST

/* 1 when a network namespace of testbed tb (dttbPID-...) exists. */
static int testbed_namespaces(pid_t tb)
{
    char prefix[32], line[256];
    snprintf(prefix, sizeof prefix, "dttb%ld-", (long)tb);
    FILE *p = popen("ip netns list 2>/dev/null", "r");
    if (!p)
        return 0;
    int found = 0;
    while (fgets(line, sizeof line, p))
        found |= !strncmp(line, prefix, strlen(prefix));
    pclose(p);
    return found;
}

/* `dtsim validate` killed with SIGKILL while its real run trains left testbed.sh running
 * with its namespaces, orted, the delay line and the ranks, and a row `running` for good
 * (its host the namespace's name). Now the testbed dies with it (PR_SET_PDEATHSIG) and
 * tears itself down, and the row records this machine's name, so a later open marks it
 * interrupted. Needs root (network namespaces), Open MPI and the Fashion-MNIST files. */
START_TEST(validate_killed_takes_its_testbed_with_it)
{
    if (geteuid() != 0 || access("/usr/share/datasets/fashion-mnist", R_OK) ||
        system("command -v mpirun >/dev/null && ip netns list >/dev/null 2>&1") != 0) {
        printf("cli: validate_killed_takes_its_testbed_with_it skipped: needs root (network "
               "namespaces), Open MPI and dataset-fashion-mnist\n");
        return;
    }
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/v.ini", dir);
    snprintf(db, sizeof db, "%s/v.db", dir);
    write_file(ini, "[run]\nname = v\nseed = 2\n[model]\narch = mlp\nhidden = 32\nbatch = 16\n"
                    "[data]\ntrain_samples = 2048\ntest_samples = 500\n[cluster]\nworkers = 2\n"
                    "[strategy]\nkind = allreduce\n");
    pid_t pid = dtsim_start((const char *[]){"validate", ini, "--bandwidth", "10Mbps", "--latency",
                                             "5ms", "--steps", "2000", "--db", db, NULL});
    /* until the real run is in the database, then a second of it */
    sqlite3 *h;
    int in = 0;
    for (int tries = 0; tries < 1200 && !in; tries++) {
        sqlite3_stmt *st = NULL;
        in = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(h, "SELECT count(*) FROM runs WHERE name LIKE '%-real'", -1, &st,
                                NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
        sqlite3_finalize(st);
        sqlite3_close(h);
        if (!in)
            nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    ck_assert_msg(in, "no real run in %s after 120 s", db);
    nanosleep(&(struct timespec){1, 0}, NULL);
    /* its child now: the testbed (testbed.sh with ...) */
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
    char *kids = slurp(path);
    long tb = atol(kids);
    free(kids);
    ck_assert_int_gt(tb, 0);
    ck_assert(testbed_namespaces((pid_t)tb));
    /* running its own copy (a dtsim rebuilt meanwhile changes no cell after): a child's
     * command line runs FOLDER/dtsim, FOLDER its /tmp/dtsim-validate-PID-* */
    char prefix[64], want_copy[400] = "";
    snprintf(prefix, sizeof prefix, "dtsim-validate-%ld-", (long)pid);
    DIR *tmp = opendir("/tmp");
    for (struct dirent *e; tmp && (e = readdir(tmp));)
        if (!strncmp(e->d_name, prefix, strlen(prefix)))
            snprintf(want_copy, sizeof want_copy, "/tmp/%.200s/dtsim run ", e->d_name);
    if (tmp)
        closedir(tmp);
    ck_assert_msg(want_copy[0] && processes_with(want_copy) > 0, "no child runs %s",
                  want_copy[0] ? want_copy : prefix);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    int gone = 0;
    for (int tries = 0; tries < 150 && !gone; tries++) {
        gone = kill((pid_t)tb, 0) != 0 && !testbed_namespaces((pid_t)tb);
        if (!gone)
            nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    ck_assert_msg(gone, "testbed %ld or its namespaces still there 15 s after validate died", tb);
    /* its folder (/tmp/dtsim-validate-PID-*) waits for the next validation: removed here */
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf /tmp/dtsim-validate-%ld-*", (long)pid);
    ck_assert_int_eq(system(rm), 0);
    /* a later open marks the killed ranks' run interrupted: its host is this machine's */
    ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, NULL}), 0);
    char host[256] = "";
    gethostname(host, sizeof host);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT status, host FROM runs WHERE name LIKE "
                                        "'%-real'",
                                        -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 1), host);
    ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "interrupted");
    sqlite3_finalize(st);
    sqlite3_close(h);
}
END_TEST

/* ---- reliability, third pass: nothing aborts, hangs or misleads --------------------- */

/* Waits for pid at most limit seconds (then kills it and fails); its exit code (128 + the
 * signal that ended it) in *code, the seconds it took returned. */
static double wait_within(pid_t pid, double limit, int *code)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int status;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double waited = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
        if (waitpid(pid, &status, WNOHANG) == pid) {
            *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            return waited;
        }
        if (waited > limit) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ck_abort_msg("still running after %.0f s", limit);
        }
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
}

/* Waits (at most 60 s) until the query's count on db is above zero. */
static void wait_for_count(const char *db, const char *sql)
{
    for (int tries = 0; tries < 600; tries++) {
        sqlite3 *h = NULL;
        sqlite3_stmt *st = NULL;
        int in = sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                 sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
                 sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0;
        sqlite3_finalize(st);
        sqlite3_close(h);
        if (in)
            return;
        nanosleep(&(struct timespec){0, 100000000}, NULL);
    }
    ck_abort_msg("nothing in %s after 60 s: %s", db, sql);
}

/* Time marks far finer than a step (run.eval_interval = 1e-15 s; 1e-300 s, below the
 * clock's resolution) cost a loop iteration per interval passed at every step boundary:
 * hours of a silent run deaf to SIGTERM and SIGINT, or forever. They now evaluate at every
 * step boundary (the six of a six-step run) within seconds, and a long run so marked stops
 * at once on SIGTERM, recorded interrupted. */
START_TEST(tiny_eval_intervals_neither_hang_nor_deafen)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/tiny.ini", dir);
    snprintf(db, sizeof db, "%s/marks.db", dir);
    write_file(ini, tiny);
    const char *sets[] = {"run.eval_interval=1e-15s", "run.eval_interval=1e-300s"};
    for (int i = 0; i < 2; i++) {
        int code;
        double took = wait_within(
            dtsim_start((const char *[]){"run", ini, "--set", sets[i], "--db", db, NULL}), 60,
            &code);
        ck_assert_msg(code == 0 && took < 30, "%s: exit %d after %.1f s", sets[i], code, took);
    }
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM evals"), 12);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT step) FROM evals"), 6);
    sqlite3_close(h);

    snprintf(ini, sizeof ini, "%s/long.ini", dir);
    snprintf(db, sizeof db, "%s/long.db", dir);
    write_file(ini, "[run]\nsteps = 100000000\neval_interval = 1e-300s\n[model]\narch = logreg\n"
                    "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                    "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n");
    pid_t pid = dtsim_start((const char *[]){"run", ini, "--db", db, NULL});
    wait_for_count(db, "SELECT count(*) FROM evals");
    int status;
    double waited = stop_within(pid, SIGTERM, 30, &status);
    ck_assert_msg(waited < 10, "the run took %.1f s to stop after SIGTERM", waited);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'interrupted'"), 1);
    sqlite3_close(h);
}
END_TEST

/* `check` of a large gpt counts its memory by formula without building it: the lesson's
 * transformer (9 runs on 4 hosts) with 1024 blocks of width 32 took 362 s to check, with
 * windows of 1024 tokens more than 300 s, with width 512 20 s (its weights initialised and
 * every node's buffers zeroed in check's child); each now exits 0 in under a second here,
 * under 30 s on a loaded machine. */
START_TEST(large_gpts_check_in_seconds)
{
    static const char *const sizes[][2] = {
        {"model.layers=1024", "model.hidden=32"},
        {"model.seq=1024", "model.hidden=64"},
        {"model.hidden=512", "model.heads=4"},
    };
    for (int i = 0; i < 3; i++) {
        int code;
        double took = wait_within(
            dtsim_start((const char *[]){"check", DTSIM_SOURCE "/scenarios/lessons/transformer.ini",
                                         "--set", sizes[i][0], "--set", sizes[i][1], NULL}),
            120, &code);
        ck_assert_msg(code == 0 && took < 30, "%s %s: exit %d after %.1f s", sizes[i][0],
                      sizes[i][1], code, took);
    }
}
END_TEST

/* A run stopped by SIGINT or SIGTERM ends on that signal (130 or 143 to a shell), as a sweep
 * and plan do, after storing it interrupted and printing its summary: it used to exit 1
 * while a sweep ended on the signal and the README said 1 for all. The README, the man
 * page's source and run --help say 130 and 143. */
START_TEST(a_stopped_run_ends_on_its_signal)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/long.ini", dir);
    write_file(ini, "[run]\nsteps = 100000000\neval_every = 1\n[model]\narch = logreg\n"
                    "batch = 16\n[data]\nsource = synthetic\ntrain_samples = 512\n"
                    "test_samples = 128\nsynthetic_dim = 16\nsynthetic_classes = 4\n");
    const int sigs[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        snprintf(db, sizeof db, "%s/stopped%d.db", dir, i);
        pid_t pid = dtsim_start((const char *[]){"run", ini, "--db", db, NULL});
        wait_for_count(db, "SELECT count(*) FROM evals");
        int status;
        stop_within(pid, sigs[i], 30, &status);
        ck_assert_int_eq(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                         128 + sigs[i]);
        char *o = slurp(out_path);
        ck_assert_msg(strstr(o, " interrupted ") && strstr(o, "stored as run 1 in "), "%s", o);
        free(o);
        sqlite3 *h;
        ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
        ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'interrupted'"),
                         1);
        assert_intact(h);
        sqlite3_close(h);
    }
    char *readme = slurp(DTSIM_SOURCE "/README.md");
    ck_assert_msg(strstr(readme, "130/143 stopped by SIGINT/SIGTERM"), "README's exit codes");
    free(readme);
    char *man = slurp(DTSIM_SOURCE "/sim/cli/dtsim.h2m");
    ck_assert_msg(strstr(man, ".B 130, 143\nstopped by SIGINT"), "dtsim.h2m's exit codes");
    free(man);
    ck_assert_int_eq(dtsim((const char *[]){"run", "--help", NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "130 (128 + SIGINT) or 143 (SIGTERM)"), "%s", o);
    free(o);
}
END_TEST

/* --set replaces a file's value before it is read, so it repairs a bad one: seed = banana,
 * or a data.text that does not exist, each given in the file and replaced by --set, used to
 * fail on the file's value. Without the --set each is still one error line naming it; a
 * replaced key given twice in the file is still refused. */
START_TEST(set_repairs_a_bad_value_in_the_file)
{
    char ini[300];
    snprintf(ini, sizeof ini, "%s/banana.ini", dir);
    write_file(ini, "[run]\nseed = banana\nsteps = 6\n[model]\narch = logreg\nbatch = 16\n"
                    "[data]\nsource = synthetic\ntrain_samples = 512\ntest_samples = 128\n"
                    "synthetic_dim = 16\nsynthetic_classes = 4\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("banana.ini:2: run.seed", "\"banana\"");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "run.seed=7", NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "\nseed = 7\n"), "%s", o);
    free(o);
    write_file(ini, "[run]\nseed = banana\nseed = 2\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "run.seed=7", NULL}), 2);
    one_error_line("banana.ini:3: run.seed", "given twice (lines 2 and 3)");

    snprintf(ini, sizeof ini, "%s/text.ini", dir);
    write_file(ini, "[run]\nsteps = 2\n[model]\narch = gpt\nhidden = 16\nheads = 2\nlayers = 1\n"
                    "seq = 8\nbatch = 4\n[data]\nsource = text\ntext = missing.txt\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, NULL}), 2);
    one_error_line("text.ini:12: data.text", "missing.txt");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", "data.text=fortunes", NULL}), 0);
}
END_TEST

/* SimGrid's own words used to be the one error line: its "BIG FAT WARNING" banner for a
 * platform without a version or an old one, "THIS FILE COMES FROM THE FUTURE", and a
 * gateway that "does name a node" (its "not" missing). Each is now dtsim's one line, exit
 * code 2, naming the file and line. */
START_TEST(platform_errors_in_dtsims_words)
{
    char ini[300], xml[300];
    snprintf(ini, sizeof ini, "%s/tiny.ini", dir);
    snprintf(xml, sizeof xml, "%s/plat.xml", dir);
    write_file(ini, tiny);
    char set[400];
    snprintf(set, sizeof set, "cluster.platform=%s", xml);
    static const char *const versions[][2] = {
        {"", "plat.xml:3: <platform> with no version (expected version=\"4.1\""},
        {" version=\"2\"", "plat.xml:3: <platform> with version \"2\" (expected version=\"4.1\""},
        {" version=\"5.2\"", "plat.xml:3: <platform> with version \"5.2\" (expected"},
    };
    for (int i = 0; i < 3; i++) {
        char text[600];
        snprintf(text, sizeof text,
                 "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                 "\"https://simgrid.org/simgrid.dtd\">\n<platform%s>\n<zone id=\"world\" "
                 "routing=\"Full\">\n  <cluster id=\"star\" prefix=\"node-\" suffix=\"\" "
                 "radical=\"0-7\" speed=\"1Gf\" bw=\"1GBps\" lat=\"5us\"/>\n</zone>\n"
                 "</platform>\n",
                 versions[i][0]);
        write_file(xml, text);
        int code;
        double took =
            wait_within(dtsim_start((const char *[]){"check", ini, "--set", set, NULL}), 60, &code);
        ck_assert_msg(code == 2 && took < 30, "exit %d after %.1f s", code, took);
        one_error_line(versions[i][1], NULL);
        char *e = slurp(err_path);
        ck_assert_msg(!strstr(e, "*****") && !strstr(e, "BIG FAT"), "%s", e);
        free(e);
    }
    write_file(xml, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
                    "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
                    "<zone id=\"world\" routing=\"Full\">\n"
                    "  <cluster id=\"a\" prefix=\"a-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" "
                    "bw=\"1GBps\" lat=\"5us\" router_id=\"ra\"/>\n"
                    "  <cluster id=\"b\" prefix=\"b-\" suffix=\"\" radical=\"0-3\" speed=\"1Gf\" "
                    "bw=\"1GBps\" lat=\"5us\" router_id=\"rb\"/>\n"
                    "  <link id=\"ab\" bandwidth=\"1GBps\" latency=\"5us\"/>\n"
                    "  <zoneRoute src=\"a\" dst=\"b\" gw_src=\"nosuch\" gw_dst=\"rb\"><link_ctn "
                    "id=\"ab\"/></zoneRoute>\n</zone>\n</platform>\n");
    ck_assert_int_eq(dtsim((const char *[]){"check", ini, "--set", set, NULL}), 2);
    one_error_line("plat.xml:8: zoneRoute gw_src 'nosuch' names no host or router of the "
                   "platform (it has 'a-0',",
                   "'rb')");
}
END_TEST

/* A writer killed while it makes a new database (between SQLite's creating the file and
 * the schema's commit) left an empty file that `dtsim runs` refused as no dtsim database,
 * exit 2 (runs_killed_at_several_points... failed so when its 30 ms kill landed there). A
 * new database now appears whole: made as PATH.new-HOST-PID and linked into place. Killed
 * the moment either name appears, the writer leaves no file at PATH or a whole one; the
 * next run removes the dead writer's leftover and runs. */
START_TEST(a_writer_killed_making_the_database_leaves_none_or_a_whole_one)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/tiny.ini", dir);
    write_file(ini, tiny);
    for (int k = 0; k < 3; k++) {
        snprintf(db, sizeof db, "%s/made%d.db", dir, k);
        pid_t pid = dtsim_start((const char *[]){"run", ini, "--db", db, NULL});
        int seen = 0;
        for (int tries = 0; tries < 200000 && !seen; tries++) {
            DIR *d = opendir(dir);
            ck_assert_ptr_nonnull(d);
            char made[32];
            snprintf(made, sizeof made, "made%d.db", k);
            for (struct dirent *e; (e = readdir(d)) && !seen;)
                seen = !strncmp(e->d_name, made, strlen(made));
            closedir(d);
            if (!seen && waitpid(pid, NULL, WNOHANG) == pid)
                ck_abort_msg("the run ended before it made %s", db);
            if (!seen)
                nanosleep(&(struct timespec){0, 200000}, NULL);
        }
        ck_assert(seen);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        struct stat sb;
        if (stat(db, &sb) == 0) { /* whole: readable, a dtsim database */
            ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, NULL}), 0);
        }
        ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
        ck_assert_int_eq(dtsim((const char *[]){"runs", "--db", db, NULL}), 0);
        DIR *d = opendir(dir);
        for (struct dirent *e; (e = readdir(d));)
            ck_assert_msg(!strstr(e->d_name, ".new-"), "%s left in %s", e->d_name, dir);
        closedir(d);
    }
}
END_TEST

/* A gpt too large for this machine (1024 blocks of width 4096) died in the run with
 * SIGABRT ("out of memory allocating 68719476736 bytes"), and check said only "a run of it
 * could not start (signal 6)" after a minute; 1024 blocks of width 64 got the check's child
 * killed for memory after two. The memory is now counted by formula before anything is
 * allocated (the layout is offsets only) and refused in one line, needed against
 * MemAvailable, exit 2, within seconds, by check and run alike. */
START_TEST(a_gpt_beyond_memory_is_refused_by_formula)
{
    char db[300];
    snprintf(db, sizeof db, "%s/gpt.db", dir);
    static const char *const sizes[][2] = {{"model.layers=1024", "model.hidden=4096"},
                                           {"model.layers=4", "model.hidden=65536"}};
    for (int i = 0; i < 2; i++)
        for (int run = 0; run < 2; run++) {
            int code;
            double took = wait_within(
                dtsim_start((const char *[]){run ? "run" : "check",
                                             DTSIM_SOURCE "/scenarios/lessons/transformer.ini",
                                             "--set", sizes[i][0], "--set", sizes[i][1], "--set",
                                             "model.heads=1", run ? "--db" : NULL, db, NULL}),
                120, &code);
            ck_assert_msg(code == 2 && took < 30, "%s %s: exit %d after %.1f s", sizes[i][0],
                          sizes[i][1], code, took);
            one_error_line("parameters in 4 buffers on each of 4 nodes, and a batch's "
                           "activations on each, need ",
                           " GB available (MemAvailable;");
        }
    ck_assert_int_ne(access(db, F_OK), 0); /* refused before the database */
}
END_TEST

/* One row of a plan's ranking: its layout's name, its step time as printed and its headroom
 * (GB); rows: up to max, their count returned. */
typedef struct margin_row {
    char name[64], step[32];
    double headroom;
} margin_row_t;

static int margin_rows(const char *out, margin_row_t *rows, int max)
{
    const char *line = strstr(out, "\nrank ");
    ck_assert_msg(line, "no ranking in:\n%.300s", out);
    int n = 0;
    for (line = strchr(line + 1, '\n'); n < max && line && line[1] >= '1' && line[1] <= '9';
         line = strchr(line + 1, '\n')) {
        /* the layout's words after the rank, up to the run id (digits only) */
        const char *at = line + 1 + strcspn(line + 1, " ");
        at += strspn(at, " ");
        const char *name = at;
        while (strspn(at, "0123456789") != strcspn(at, " \n")) {
            at += strcspn(at, " \n");
            at += strspn(at, " ");
        }
        int len = (int)(at - name);
        while (len > 0 && name[len - 1] == ' ')
            len--;
        snprintf(rows[n].name, sizeof rows[n].name, "%.*s", len, name);
        char tokens[32];
        double samples, mem;
        long long run;
        ck_assert_msg(sscanf(at, "%lld %31s %lf %31s %lf %lf", &run, rows[n].step, &samples, tokens,
                             &mem, &rows[n].headroom) == 6,
                      "%.200s", line + 1);
        n++;
    }
    return n;
}

/* The line of the plan's list naming layout (its name then spaces), from its verdict on. */
static const char *margin_listed(const char *out, const char *layout)
{
    char head[80];
    snprintf(head, sizeof head, "\n%s ", layout);
    const char *line = strstr(out, head);
    ck_assert_msg(line, "%s not listed in:\n%.300s", layout, out);
    return line + strlen(head) + strspn(line + strlen(head), " ");
}

/* Issue 51: the buyer's rank 1 on 64 H100s left 0.22 GB free. --memory-margin M drops a
 * layout that leaves less than M free on its fullest device. Without a margin the plan
 * ranks first a layout leaving h free; with a margin just above h that layout is listed
 * "dropped: does not fit the margin", every ranked row leaves the margin free and rank 1 is
 * another layout, no slower than the first ranking's fastest that leaves it free; the head
 * and the ranking say the margin, --show ranks the plan the same again, --resume finds it
 * by its margin (stored in plan.options and plan.margin). */
START_TEST(plan_memory_margin_decides_the_best)
{
    char prof[300], dev[300], db0[300], db1[300];
    snprintf(prof, sizeof prof, "%s/tinym.ini", dir);
    snprintf(dev, sizeof dev, "%s/smallm.ini", dir);
    snprintf(db0, sizeof db0, "%s/margin0.db", dir);
    snprintf(db1, sizeof db1, "%s/margin1.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    write_file(dev, "[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory = 800kB\n");
#define PLAN_M                                                                                     \
    "plan", "--profile", prof, "--device", dev, "--devices", "4", "--per-server", "2", "--heads",  \
        "2", "--global-batch", "2", "--no-prune", "--top", "100", "--verbose"
    ck_assert_int_eq(dtsim((const char *[]){PLAN_M, "--memory-margin", "0", "--db", db0, NULL}), 0);
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "\nfit: at least 0 GB left free on every device (--memory-margin 0)"),
                  "%.300s", o);
    margin_row_t before[100], after[100];
    int n0 = margin_rows(o, before, 100);
    ck_assert_int_ge(n0, 3);
    /* just above rank 1's free bytes (printed to 4 figures) */
    double margin = before[0].headroom * 1e9 * 1.002;
    int want = 0;
    while (want < n0 && before[want].headroom * 1e9 < margin * 1.001) {
        ck_assert_msg(before[want].headroom * 1e9 < margin * 0.999, "row %d too close: %g GB",
                      want + 1, before[want].headroom);
        want++;
    }
    ck_assert_msg(want < n0, "no row leaves %g bytes free in:\n%.300s", margin, o);
    free(o);
    char text[32];
    snprintf(text, sizeof text, "%.0fB", margin);
    ck_assert_int_eq(dtsim((const char *[]){PLAN_M, "--memory-margin", text, "--db", db1, NULL}),
                     0);
    o = slurp(out_path);
    char head[160];
    snprintf(head, sizeof head,
             "\nfit: at least %.3g GB left free on every device "
             "(--memory-margin %s)\n",
             margin / 1e9, text);
    ck_assert_msg(strstr(o, head), "no%s in:\n%.300s", head, o);
    const char *dropped = margin_listed(o, before[0].name);
    ck_assert_msg(!strncmp(dropped, "dropped: does not fit the margin: ", 34), "%s", dropped);
    /* rank 1 leaves the margin free, and is no slower than the first ranking's fastest
     * that does (the margin may make ZeRO-2 tried where ZeRO-1 no longer fits: a layout of
     * its own, at least as fast with one micro-batch) */
    int n1 = margin_rows(o, after, 100);
    ck_assert_msg(n1 >= 1 && strcmp(after[0].name, before[0].name) &&
                      atof(after[0].step) <= atof(before[want].step),
                  "rank 1 %s (%s s, %g GB free), want at most %s's %s s in:\n%.300s", after[0].name,
                  after[0].step, after[0].headroom, before[want].name, before[want].step, o);
    for (int i = 0; i < n1; i++)
        ck_assert_msg(after[i].headroom * 1e9 >= margin * 0.999, "%s leaves %g GB", after[i].name,
                      after[i].headroom);
    snprintf(head, sizeof head, ", at least %.3g GB to fit (--memory-margin)", margin / 1e9);
    ck_assert_msg(strstr(o, head), "no%s in:\n%.300s", head, o);
    char *ranked = plan_rows(o);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db1, "--top", "100", NULL}),
                     0);
    o = slurp(out_path);
    char *shown = plan_rows(o);
    ck_assert_msg(!strcmp(shown, ranked) && strstr(o, head), "%s\nagainst\n%.300s", o, ranked);
    free(o);
    free(shown);
    free(ranked);
    /* --resume matches the plan's options, its margin among them */
    ck_assert_int_eq(
        dtsim((const char *[]){PLAN_M, "--memory-margin", text, "--db", db1, "--resume", NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, "\nplan: resuming sweep ") &&
                      strstr(o, "layouts finished, at most 0 to "),
                  "%.300s", o);
    free(o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db1, &h), SQLITE_OK);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM params WHERE key = 'plan.options' AND value "
             "LIKE '%% --memory-margin %s%%'",
             text);
    ck_assert_int_eq(query_long(h, sql), n1);
    ck_assert_msg(fabs(query_double(h, "SELECT max(number) FROM params WHERE key = "
                                       "'plan.margin'") -
                       margin) <= 1,
                  "plan.margin");
    sqlite3_close(h);
#undef PLAN_M
}
END_TEST

/* Bad --memory-margin values: one line naming the option and the value, exit 2. */
START_TEST(plan_memory_margin_bad_values)
{
    static const char *const bad[] = {"lots", "5",  "-1GB", "100%",    "150%",
                                      "-5%",  "x%", "%",    "1e999GB", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile", "gpt2_xl", "--device", "h100",
                                                "--devices", "4", "--global-batch", "4", "--no-run",
                                                "--memory-margin", bad[i], NULL}),
                         2);
        char want[64];
        snprintf(want, sizeof want, "dtsim plan: --memory-margin %s: expected a size", bad[i]);
        one_error_line(want, "or a share of the device's memory below 100%");
    }
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--memory-margin", "4GB", NULL}), 2);
    one_error_line("--show ranks a stored plan: --memory-margin does not go with it", NULL);
}
END_TEST

/* ZeRO-2 and 3 in the form that fits: with 2 micro-batches a replica, ZeRO-2 overlapped
 * holds whole gradients, exactly what ZeRO-1 holds, and does not fit 580 kB; the plan tries
 * the per-micro-batch form (rs, zero_grad_overlap = no), which holds half the gradients:
 * P + G/2 + O + A of the ZeRO-1 row's parts (its optimizer already halved), and fits; ZeRO-3
 * overlapped (P/2 + G + O + A) is tried too, ZeRO-3 rs not. Where ZeRO-2 rs does not fit,
 * nor ZeRO-3 overlapped, ZeRO-3 rs (FSDP's form) fits at P/2 + G/2 + O + A. The rs run is
 * stored with zero_grad_overlap = no and half the gradients, and it is charged its
 * reduce-scatters: the same scenario overlapped runs faster. */
START_TEST(plan_zero2_fits_per_micro_batch)
{
    char prof[300], dev[300], db[300];
    snprintf(prof, sizeof prof, "%s/tinyz.ini", dir);
    snprintf(dev, sizeof dev, "%s/smallz.ini", dir);
    snprintf(db, sizeof db, "%s/planz.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    write_file(dev, "[device]\nfp32 = 10Tf\nbf16 = 100Tf\nmemory = 580kB\n");
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--profile",  prof,        "--device",
                                            dev,    "--devices",  "4",         "--per-server",
                                            "2",    "--heads",    "2",         "--global-batch",
                                            "4",    "--tensor",   "2",         "--memory-margin",
                                            "0",    "--no-prune", "--verbose", "--db",
                                            db,     NULL}),
                     0);
    char *o = slurp(out_path);
    /* shape: t2 p1 d2 mb1x2 full (z2 rs fits) and t2 p1 d2 mb1x2 (z3 rs fits) */
    static const char *const shapes[] = {"t2 p1 d2 mb1x2 z%s full", "t2 p1 d2 mb1x2 z%s"};
    for (int k = 0; k < 2; k++) {
        char name[64];
        double used, cap, p, g, q, a, z2_used;
        snprintf(name, sizeof name, shapes[k], "1");
        ck_assert_msg(sscanf(margin_listed(o, name),
                             "dropped: does not fit: %lf GB > %lf GB "
                             "on worker 0 (parameters %lf GB, gradients %lf GB, optimizer %lf "
                             "GB, activations %lf GB",
                             &used, &cap, &p, &g, &q, &a) == 6,
                      "%s", margin_listed(o, name));
        snprintf(name, sizeof name, shapes[k], "2");
        ck_assert_msg(sscanf(margin_listed(o, name), "dropped: does not fit: %lf GB", &z2_used) ==
                              1 &&
                          z2_used == used,
                      "%s: %s", name, margin_listed(o, name)); /* whole gradients: ZeRO-1's */
        double rs = p + g / 2 + q + a, fsdp = p / 2 + g / 2 + q + a;
        snprintf(name, sizeof name, shapes[k], "2 rs");
        const char *line = margin_listed(o, name);
        double held;
        if (k == 0) {
            ck_assert_msg(sscanf(line, "fits: worker 0 holds %lf GB of", &held) == 1 &&
                              fabs(held - rs) <= 2e-3 * rs && rs <= cap,
                          "%s: %s, want %g GB", name, line, rs);
            /* ZeRO-3 overlapped holds the same, tried as ZeRO-2 overlapped does not fit;
             * ZeRO-3 rs is not, as ZeRO-2 rs fits */
            snprintf(name, sizeof name, shapes[k], "3");
            line = margin_listed(o, name);
            ck_assert_msg(sscanf(line, "fits: worker 0 holds %lf GB of", &held) == 1 &&
                              fabs(held - (p / 2 + g + q + a)) <= 2e-3 * rs,
                          "%s: %s", name, line);
            snprintf(name, sizeof name, shapes[k], "3 rs");
            ck_assert_msg(!strstr(o, name), "%s tried where z2 rs fits:\n%.300s", name, o);
            continue;
        }
        ck_assert_msg(sscanf(line, "dropped: does not fit: %lf GB", &held) == 1 &&
                          fabs(held - rs) <= 2e-3 * rs && rs > cap,
                      "%s: %s, want %g GB", name, line, rs);
        snprintf(name, sizeof name, shapes[k], "3");
        line = margin_listed(o, name);
        ck_assert_msg(sscanf(line, "dropped: does not fit: %lf GB", &held) == 1 &&
                          fabs(held - (p / 2 + g + q + a)) <= 2e-3 * rs,
                      "%s: %s", name, line);
        snprintf(name, sizeof name, shapes[k], "3 rs");
        line = margin_listed(o, name);
        ck_assert_msg(sscanf(line, "fits: worker 0 holds %lf GB of", &held) == 1 &&
                          fabs(held - fsdp) <= 2e-3 * fsdp,
                      "%s: %s, want %g GB", name, line, fsdp);
    }
    free(o);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    const char *rs_run = "(SELECT id FROM runs WHERE name = 'plan-tinyz-t2p1d2-mb1x2-z2-rs-full' "
                         "AND status = 'finished' AND config LIKE '%zero_grad_overlap = no%')";
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT max(grads) / max(params) FROM memory WHERE run = %s", rs_run);
    double half = query_double(h, sql);
    ck_assert_msg(fabs(half - 0.5) <= 1e-3, "rs gradients / parameters %g", half);
    snprintf(sql, sizeof sql, "SELECT config FROM runs WHERE id = %s", rs_run);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    char *config = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    /* the same scenario run both ways into a database of its own */
    double rate[2];
    for (int overlap = 0; overlap < 2; overlap++) {
        char path[300], other[300];
        snprintf(path, sizeof path, "%s/zform%d.ini", dir, overlap);
        snprintf(other, sizeof other, "run.db=%s/zforms.db", dir);
        write_file(path, config);
        ck_assert_int_eq(
            dtsim((const char *[]){"run", path, "--set", other, "--set",
                                   overlap ? "strategy.zero_grad_overlap=yes"
                                           : "strategy.zero_grad_overlap=no",
                                   "--set", "run.allow_oversubscribed_memory=yes", NULL}),
            0);
        o = slurp(out_path);
        const char *at = strstr(o, " samples/s simulated");
        ck_assert_ptr_nonnull(at);
        while (at > o && at[-1] != ' ')
            at--;
        rate[overlap] = atof(at);
        free(o);
    }
    free(config);
    ck_assert_msg(rate[0] > 0 && rate[0] < rate[1], "rs %g samples/s, overlapped %g", rate[0],
                  rate[1]);
}
END_TEST

/* --- rows that stand for many hosts and links (issue 51: run.group_rows) -------------------- */

/* A pipeline of 2 stages on tensor groups of 2, 3 replicas: member 0 of each group simulated
 * for the group and replica 0 for the three (tensor_members, data_members = one), so its 12
 * workers are 2 simulated ones and 10 that take their figures. */
static const char *host_rows_ini =
    "[run]\nname = weighted\nsteps = 2\neval_every = 1\n[model]\narch = profile:%s\nbatch = 4\n"
    "recompute = full\n[cluster]\nplatform = multi-rack\nworkers = 12\nracks = 6\n"
    "bandwidth = 20Mbps\nuplink_bandwidth = 10Mbps\n[strategy]\nkind = pipeline\ntensor = 2\n"
    "stages = 2\ndata_parallel = 3\nmicro_batches = 2\ntensor_comm = formula\n"
    "tensor_members = one\ndp_comm = formula\ndata_members = one\n";

/* The text of path without the lines that hold any of drop's strings (NULL-ended). */
static char *text_without(const char *path, const char *const *drop)
{
    char *t = slurp(path), *out = calloc(strlen(t) + 1, 1), *line = t;
    ck_assert_ptr_nonnull(out);
    while (*line) {
        size_t n = strcspn(line, "\n") + (line[strcspn(line, "\n")] == '\n');
        int keep = 1;
        for (const char *const *d = drop; *d && keep; d++) {
            const char *hit = strstr(line, *d);
            keep = !hit || hit >= line + n;
        }
        if (keep)
            strncat(out, line, n);
        line += n;
    }
    free(t);
    return out;
}

/* a and b are the same text; where not, the first difference is shown (what names them). */
static void same_text(const char *a, const char *b, const char *what)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    size_t from = i > 80 ? i - 80 : 0;
    ck_assert_msg(a[i] == b[i], "%s differ at byte %zu: \"%.160s\" against \"%.160s\"", what, i,
                  a + from, b + from);
}

/* A role's weighted sums of a CSV of the workers table (run, worker, host, role, compute_s,
 * comm_s, idle_s, bytes_sent, bytes_recv, steps, weight): hosts, then the five figures and
 * the steps, each row times its weight; *rows the rows read. */
static void csv_worker_sums(const char *path, double sum[7], long *rows)
{
    char *t = slurp(path);
    ck_assert_msg(strstr(t, ",steps,weight (hosts)\n"), "%s: %.200s", path, t);
    memset(sum, 0, 7 * sizeof *sum);
    *rows = 0;
    for (char *line = strchr(t, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        double v[6];
        long w;
        ck_assert_int_eq(sscanf(line, "%*[^,],%*[^,],%*[^,],worker,%lf,%lf,%lf,%lf,%lf,%lf,%ld",
                                &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &w),
                         7);
        sum[0] += (double)w;
        for (int k = 0; k < 6; k++)
            sum[1 + k] += (double)w * v[k];
        (*rows)++;
    }
    free(t);
}

/* The same run stored with its rows alike as one weighted row (run.group_rows = yes) and as a
 * row per host and link (no): the first file holds a row per simulated worker, weighted by
 * the hosts it stands for, each equal to that worker's row in the other file, and as many
 * rows of the other with its figures as its weight; its links likewise, a row for the links
 * that carried the same bytes, named by the first; every reader then gives the same
 * figures: show (hosts and their summed seconds and bytes, links and the busiest),
 * export --tidy (the same bytes), export --csv (the weight column, its weighted sums the
 * other file's sums), the report's summary and figures, and the figures of dtsim plot (the
 * same files, byte for byte). Left to auto, a run of 12 hosts stores a row each, one of 264
 * its rows alike as one. */
START_TEST(host_rows_weighted_read_alike)
{
    char prof[300], ini[300], db[3][300], path[2][300], text[1024];
    snprintf(prof, sizeof prof, "%s/tiny-rows.ini", dir);
    snprintf(ini, sizeof ini, "%s/rows.ini", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    snprintf(text, sizeof text, host_rows_ini, prof);
    write_file(ini, text);
    static const char *const how[3] = {"run.group_rows=yes", "run.group_rows=no",
                                       "run.group_rows=auto"};
    for (int k = 0; k < 3; k++) {
        snprintf(db[k], sizeof db[k], "%s/rows-%d.db", dir, k);
        ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db[k], "--set", how[k], NULL}),
                         0);
    }
    char *o = slurp(out_path);
    ck_assert_msg(strstr(o, "one member of each tensor group simulated") &&
                      strstr(o, "replica 0 simulated for all 3"),
                  "%s", o);
    free(o);

    /* the rows: 2 of each table for 12 hosts, each the simulated worker's own */
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db[0], &h), SQLITE_OK);
    char sql[1024];
    snprintf(sql, sizeof sql, "ATTACH '%s' AS e; ATTACH '%s' AS a", db[1], db[2]);
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM a.workers WHERE weight = 1"), 12);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM a.links WHERE weight = 1"),
                     query_long(h, "SELECT count(*) FROM e.links"));
    /* auto past 256 hosts: 66 replicas, 264 hosts, grouped */
    char big[300];
    snprintf(big, sizeof big, "%s/rows-big.db", dir);
    ck_assert_int_eq(
        dtsim((const char *[]){"run", ini, "--db", big, "--set", "strategy.data_parallel=66",
                               "--set", "cluster.workers=264", "--set", "cluster.racks=132", NULL}),
        0);
    snprintf(sql, sizeof sql, "ATTACH '%s' AS b", big);
    ck_assert_int_eq(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT sum(weight) FROM b.workers"), 264);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM b.workers"), 2);
    /* the links: fewer rows, as many links, each row its first link's */
    ck_assert_int_lt(query_long(h, "SELECT count(*) FROM main.links"),
                     query_long(h, "SELECT count(*) FROM e.links"));
    ck_assert_int_eq(query_long(h, "SELECT sum(weight) FROM main.links"),
                     query_long(h, "SELECT count(*) FROM e.links WHERE weight = 1"));
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM main.links g WHERE g.weight = (SELECT "
                                   "count(*) FROM e.links x WHERE x.bytes = g.bytes) AND "
                                   "g.link = (SELECT min(link) FROM e.links x WHERE x.bytes = "
                                   "g.bytes)"),
                     query_long(h, "SELECT count(*) FROM main.links"));
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM main.workers"), 2);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM main.memory"), 2);
    ck_assert_int_eq(query_long(h, "SELECT sum(weight) FROM main.workers"), 12);
    ck_assert_int_eq(query_long(h, "SELECT sum(weight) FROM main.memory"), 12);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM e.workers WHERE weight = 1"), 12);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM e.memory WHERE weight = 1"), 12);
#define SAME_WORKER(a, b)                                                                          \
    a ".role = " b ".role AND " a ".compute_s = " b ".compute_s AND " a ".comm_s = " b             \
      ".comm_s AND " a ".idle_s = " b ".idle_s AND " a ".bytes_sent = " b ".bytes_sent AND " a     \
      ".bytes_recv = " b ".bytes_recv AND " a ".steps = " b ".steps"
#define SAME_MEMORY(a, b)                                                                          \
    a ".role = " b ".role AND " a ".params IS " b ".params AND " a ".grads IS " b ".grads AND " a  \
      ".optimizer IS " b ".optimizer AND " a ".activations IS " b ".activations"
    ck_assert_int_eq(
        query_long(h, "SELECT count(*) FROM main.workers g JOIN e.workers x ON "
                      "x.worker = g.worker AND x.host = g.host AND " SAME_WORKER("x", "g")),
        2);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM main.workers g WHERE g.weight = (SELECT "
                                   "count(*) FROM e.workers x WHERE " SAME_WORKER("x", "g") ")"),
                     2);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM main.memory g JOIN e.memory x ON "
                                   "x.worker = g.worker AND " SAME_MEMORY("x", "g")),
                     2);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM main.memory g WHERE g.weight = (SELECT "
                                   "count(*) FROM e.memory x WHERE " SAME_MEMORY("x", "g") ")"),
                     2);
    double each[7];
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(h,
                                        "SELECT count(*), sum(compute_s), sum(comm_s), "
                                        "sum(idle_s), sum(bytes_sent), sum(bytes_recv), "
                                        "sum(steps) FROM e.workers",
                                        -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    for (int c = 0; c < 7; c++)
        each[c] = sqlite3_column_double(st, c);
    sqlite3_finalize(st);
    sqlite3_close(h);

    /* show: the same words and figures (but for the key, which one sets and the other
     * leaves at its default, the file and the wall clock) */
    static const char *const drop[] = {"run.group_rows",
                                       "run.db",
                                       "  started",
                                       "  ended",
                                       "  written by",
                                       "parameters set (",
                                       "parameters at their defaults (",
                                       NULL};
    char *shown[2];
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(dtsim((const char *[]){"show", "1", "--db", db[k], NULL}), 0);
        shown[k] = text_without(out_path, drop);
    }
    same_text(shown[0], shown[1], "show's outputs");
    ck_assert_msg(strstr(shown[0], "12 worker hosts: 24 steps;"), "%s", shown[0]);
    free(shown[0]);
    free(shown[1]);

    /* export --tidy: the same file; --csv: the weight column, its sums the rows' */
    char *tidy[2];
    for (int k = 0; k < 2; k++) {
        snprintf(path[k], sizeof path[k], "%s/tidy-%d.csv", dir, k);
        ck_assert_int_eq(
            dtsim((const char *[]){"export", "--tidy", "--db", db[k], "--out", path[k], NULL}), 0);
        tidy[k] = slurp(path[k]);
    }
    same_text(tidy[0], tidy[1], "the tidy tables");
    free(tidy[0]);
    free(tidy[1]);
    for (int k = 0; k < 2; k++) {
        snprintf(path[k], sizeof path[k], "%s/csv-%d", dir, k);
        ck_assert_int_eq(
            dtsim((const char *[]){"export", "--csv", "--db", db[k], "--out", path[k], NULL}), 0);
        char file[400];
        snprintf(file, sizeof file, "%s/workers.csv", path[k]);
        double sum[7];
        long rows;
        csv_worker_sums(file, sum, &rows);
        ck_assert_int_eq(rows, k ? 12 : 2);
        for (int c = 0; c < 7; c++)
            ck_assert_msg(fabs(sum[c] - each[c]) <= 1e-12 * fabs(each[c]),
                          "%s: column %d sums to %.17g, the rows to %.17g", file, c, sum[c],
                          each[c]);
    }

    /* the report's summary and figures, and dtsim plot's files */
    char *page[2], *plotted[2];
    for (int k = 0; k < 2; k++) {
        snprintf(path[k], sizeof path[k], "%s/report-%d.html", dir, k);
        ck_assert_int_eq(dtsim((const char *[]){"report", "--db", db[k], "--out", path[k], NULL}),
                         0);
        page[k] = slurp(path[k]);
        char *from = strstr(page[k], "<h2>Summary"), *to = strstr(page[k], "<h2>Configuration");
        ck_assert_msg(from && to && from < to, "%s: no summary", path[k]);
        memmove(page[k], from, (size_t)(to - from));
        page[k][to - from] = '\0';
        snprintf(path[k], sizeof path[k], "%s/plots-%d", dir, k);
        int code = dtsim(
            (const char *[]){"plot", "--db", db[k], "--format", "svg", "--out", path[k], NULL});
        char *listed = slurp(out_path);
        plotted[k] = calloc(32, 1);
        snprintf(plotted[k], 32, "exit %d\n", code);
        for (char *line = listed; *line; line += strcspn(line, "\n") + 1) {
            line[strcspn(line, "\n")] = '\0';
            char *svg = slurp(line); /* a file plot wrote */
            const char *name = strrchr(line, '/') + 1;
            size_t n = strlen(plotted[k]) + strlen(name) + strlen(svg) + 2;
            plotted[k] = realloc(plotted[k], n);
            strcat(strcat(strcat(plotted[k], name), "\n"), svg);
            free(svg);
        }
        free(listed);
    }
    same_text(page[0], page[1], "the reports' summaries and figures");
    ck_assert_msg(strstr(page[0], "weighted"), "%s", page[0]);
    same_text(plotted[0], plotted[1], "the figures");
    for (int k = 0; k < 2; k++) {
        free(page[k]);
        free(plotted[k]);
    }
}
END_TEST

/* The row of layout in a plan's ranking: its s/step (the first number after its run id). */
static double plan_layout_step(const char *out, const char *layout)
{
    const char *ranking = strstr(out, "\nbest layouts of ");
    ck_assert_msg(ranking, "no ranking in:\n%s", out);
    char pat[80];
    snprintf(pat, sizeof pat, " %-40s ", layout);
    const char *row = strstr(ranking, pat);
    ck_assert_msg(row, "no row %s in:\n%s", layout, ranking);
    long run;
    double step;
    ck_assert_int_eq(sscanf(row + strlen(pat), "%ld %lf", &run, &step), 2);
    return step;
}

/* Mixed fleets, ownership and sensitivity on the tiny GPT (2 devices a server). Two fleets
 * of their own devices and sizes (4 A100s, 2 H100s) in one command: one table, each row's N,
 * each row the rank 1 row of the same plan made alone (layout and every figure), ranked by
 * step time, and the row of each plan alone resumed with --purchase; --resume with
 * --rank-by capex and energy ranks the same rows by those columns, and the ownership
 * columns are the hand formula of the printed s/step and kJ/step. The
 * sensitivity of a plan on a device file of the test's: each layout's range holds its
 * nominal step, and the step at gemm_efficiency x 1.1 and x 0.9 is what a plan on a device
 * file with that efficiency simulates for the same layout. Bad input: one line, exit 2. */
START_TEST(plan_mixed_fleets_capex_and_sensitivity)
{
    char prof[300], db[300], one[300];
    snprintf(prof, sizeof prof, "%s/tiny-f.ini", dir);
    snprintf(db, sizeof db, "%s/plan-f.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
#define PLAN_F                                                                                     \
    "plan", "--profile", prof, "--per-server", "2", "--heads", "2", "--global-batch", "2",         \
        "--set", "cluster.price_per_device_hour=4"
#define FLEETS                                                                                     \
    "--option", "big:device=a100-80gb,devices=4", "--option",                                      \
        "small:device=h100,cluster.workers=2,purchase=30000"
    ck_assert_int_eq(dtsim((const char *[]){PLAN_F, FLEETS, "--purchase", "20000", "--tokens", "2T",
                                            "--db", db, NULL}),
                     0);
    char *both = slurp(out_path);
    ck_assert_msg(strstr(both, "=== option big: --device a100-80gb --devices 4 ===") &&
                      strstr(both, "=== option small: --device h100 --devices 2 ===") &&
                      strstr(both, "ranked by step time"),
                  "%s", both);
    static const char *const names[] = {"big", "small"}, *const devices[] = {"a100-80gb", "h100"};
    static const char *const counts[] = {"4", "2"};
    double steps[2];
    long rank[2], n[2];
    for (int i = 0; i < 2; i++) {
        snprintf(one, sizeof one, "%s/plan-f-%s.db", dir, names[i]);
        ck_assert_int_eq(dtsim((const char *[]){PLAN_F, "--device", devices[i], "--devices",
                                                counts[i], "--tokens", "2T", "--db", one, NULL}),
                         0);
        char *alone = slurp(out_path), want[64], got[64];
        double a[18], b[18];
        ck_assert_int_eq(plan_best_row(alone, want, a, 18), 17);
        /* s/step tokens/s TFLOP/s kJ $/M, the ownership block (site kJ, own $/h, own $/M,
         * site MWh, own $), then days MWh $ ckpt/steps goodput days+fail $+fail */
        ck_assert_int_eq(plan_option_row(both, names[i], got, b, 18), 17);
        ck_assert_msg(!strcmp(want, got), "%s: best %s alone, %s in the fleet", names[i], want,
                      got);
        static const int alone_at[] = {0, 2, 5, 7, 9, 10, 11, 12, 13, 14, 15, 16};
        static const int fleet_at[] = {0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16};
        for (int k = 0; k < 12; k++)
            ck_assert_msg(a[alone_at[k]] == b[fleet_at[k]],
                          "%s: column %d: %g alone, %g in "
                          "the fleet",
                          names[i], k, a[alone_at[k]], b[fleet_at[k]]);
        steps[i] = b[0];
        plan_option_rank(both, names[i], &rank[i], &n[i]);
        free(alone);
        /* one plan with a purchase price (small's purchase=): its one-row table, the plan
         * resumed as it was, the same row as in the fleet */
        ck_assert_int_eq(
            dtsim((const char *[]){PLAN_F, "--device", devices[i], "--devices", counts[i],
                                   "--tokens", "2T", "--purchase", i ? "30000" : "20000",
                                   "--resume", "--db", one, NULL}),
            0);
        alone = slurp(out_path);
        ck_assert_msg(strstr(alone, "plan: resuming sweep "), "%s", alone);
        ck_assert_int_eq(plan_option_row(alone, devices[i], got, a, 18), 17);
        ck_assert_msg(!strcmp(want, got) && a[0] == b[0] && a[6] == b[6],
                      "%s: %s at %g s, $%g/h alone; %s at %g s, $%g/h in the fleet", names[i], got,
                      a[0], a[6], want, b[0], b[6]);
        free(alone);
    }
    ck_assert_msg(n[0] == 4 && n[1] == 2, "N %ld and %ld", n[0], n[1]);
    ck_assert_msg((rank[0] == 1 && rank[1] == 2 && steps[0] <= steps[1]) ||
                      (rank[0] == 2 && rank[1] == 1 && steps[1] <= steps[0]),
                  "ranks %ld %ld for %g and %g s/step", rank[0], rank[1], steps[0], steps[1]);
    free(both);

    /* ownership: the stored plans ranked again by --resume (nothing simulated) */
    static const char *const by[] = {"capex", "energy"};
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(
            dtsim((const char *[]){PLAN_F, FLEETS, "--purchase", "10000", "--amortize", "4y",
                                   "--pue", "1.5", "--host-power", "100", "--electricity", "0.1",
                                   "--rank-by", by[r], "--resume", "--db", db, NULL}),
            0);
        char *o = slurp(out_path), layout[64];
        double key[2];
        for (int i = 0; i < 2; i++) {
            /* s/step tokens/s TFLOP/s kJ $/M site-kJ own$/h own$/M ckpt goodput */
            double x[10];
            ck_assert_int_eq(plan_option_row(o, names[i], layout, x, 10), 10);
            double nd = i ? 2 : 4, price = i ? 30000 : 10000; /* purchase= over --purchase */
            double site_w = (x[3] * 1e3 / x[0] + nd * 100) * 1.5;
            double hour = nd * price / (4 * 365.25 * 24) + site_w / 1e3 * 0.1;
            ck_assert_msg(fabs(x[5] - site_w * x[0] / 1e3) <= 1e-3 * x[5] &&
                              fabs(x[6] - hour) <= 1e-3 * hour &&
                              fabs(x[7] - hour * x[0] / 3600 / 64 * 1e6) <= 1e-3 * x[7],
                          "%s: site %g kJ, $%g/h, $%g/M; want %g, %g, %g", names[i], x[5], x[6],
                          x[7], site_w * x[0] / 1e3, hour, hour * x[0] / 3600 / 64 * 1e6);
            key[i] = r ? x[5] : x[7];
            plan_option_rank(o, names[i], &rank[i], &n[i]);
        }
        ck_assert_msg((rank[0] == 1 && key[0] <= key[1]) || (rank[1] == 1 && key[1] <= key[0]),
                      "by %s: ranks %ld %ld for %g and %g", by[r], rank[0], rank[1], key[0],
                      key[1]);
        free(o);
    }

    /* sensitivity on a device of the test's, and the same plan at the ends' value */
    char dev[3][300];
    static const double gemm[] = {0.6, 0.66, 0.54};
    for (int i = 0; i < 3; i++) {
        snprintf(dev[i], sizeof dev[i], "%s/sens-dev-%d.ini", dir, i);
        FILE *f = fopen(dev[i], "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f,
                "[device]\nfp32 = 67Tf\nbf16 = 989Tf\nmemory = 80GB\n"
                "memory_bandwidth = 3350GBps\npower_idle = 70W\npower_max = 700W\nsms = 132\n"
                "gemm_efficiency = %g\nattention_efficiency = 0.5\nmemory_efficiency = 0.8\n",
                gemm[i]);
        fclose(f);
    }
    snprintf(db, sizeof db, "%s/plan-sens.db", dir);
    ck_assert_int_eq(
        dtsim((const char *[]){PLAN_F, "--device", dev[0], "--devices", "4", "--sensitivity", "10%",
                               "--sensitivity-top", "2", "--db", db, NULL}),
        0);
    char *o = slurp(out_path);
    const char *table = strstr(o, "\nsensitivity (--sensitivity 10%)");
    const char *ranges = table ? strstr(table, "\nlayout ") : NULL;
    const char *g = table ? strstr(table, "\ngemm_efficiency ") : NULL;
    ck_assert_msg(table && ranges && g && strstr(table, "\nattention_efficiency ") &&
                      strstr(table, "\nmemory_efficiency ") && strstr(table, "\nlink bandwidths "),
                  "%s", o);
    /* the ranges: each holds its nominal step */
    const char *line = strchr(ranges + 1, '\n');
    for (int j = 0; j < 2; j++) {
        char l[1024];
        snprintf(l, sizeof l, "%.*s", (int)strcspn(line + 1, "\n"), line + 1);
        double nominal, lo, hi;
        const char *at = l + 41;
        ck_assert_int_eq(sscanf(at, "%lf %lf %lf", &nominal, &lo, &hi), 3);
        ck_assert_msg(lo <= nominal && nominal <= hi && lo < hi, "%s", l);
        line = strchr(line + 1, '\n');
    }
    /* gemm_efficiency's rows: each layout at x1.1 and x0.9 against plans on those devices */
    char rows[2][1024], layout[2][64];
    double at_lo[2], at_hi[2], nominal[2];
    const char *r0 = g + 1;
    for (int j = 0; j < 2; j++) {
        snprintf(rows[j], sizeof rows[j], "%.*s", (int)strcspn(r0, "\n"), r0);
        snprintf(layout[j], 64, "%.40s", rows[j] + 60);
        for (char *end = layout[j] + strlen(layout[j]); end > layout[j] && end[-1] == ' ';)
            *--end = '\0';
        double c[3];
        ck_assert_int_eq(sscanf(rows[j] + 27, "%lf %lf %lf", &c[0], &c[1], &c[2]), 3);
        ck_assert_msg(c[0] == 0.6 && c[1] == 0.54 && c[2] == 0.66, "%s", rows[j]);
        ck_assert_int_eq(sscanf(rows[j] + 101, "%lf %lf %lf", &nominal[j], &at_lo[j], &at_hi[j]),
                         3);
        ck_assert_msg(at_hi[j] < nominal[j] && nominal[j] < at_lo[j], "%s", rows[j]);
        r0 = strchr(r0, '\n') + 1;
    }
    free(o);
    for (int e = 1; e <= 2; e++) {
        snprintf(one, sizeof one, "%s/plan-sens-%d.db", dir, e);
        ck_assert_int_eq(dtsim((const char *[]){PLAN_F, "--device", dev[e], "--devices", "4",
                                                "--no-prune", "--top", "200", "--db", one, NULL}),
                         0);
        o = slurp(out_path);
        for (int j = 0; j < 2; j++) {
            char want[32], got[32];
            snprintf(want, sizeof want, "%.6g", e == 1 ? at_hi[j] : at_lo[j]);
            snprintf(got, sizeof got, "%.6g", plan_layout_step(o, layout[j]));
            ck_assert_msg(!strcmp(want, got),
                          "%s at gemm_efficiency %g: %s in the sensitivity, "
                          "%s planned",
                          layout[j], gemm[e], want, got);
        }
        free(o);
    }

    /* bad input: one line naming the option, exit code 2, nothing printed or written */
    snprintf(db, sizeof db, "%s/plan-f-bad.db", dir);
    static const struct {
        const char *a, *b, *c, *d, *want;
    } bad[] = {
        {"--option", "a:device=h100,devices=0", NULL, NULL,
         "dtsim plan: --option a:device=h100,devices=0: devices=0: expected a device count"},
        {"--option", "a:device=h100,devices=3", NULL, NULL,
         "dtsim plan: --option a:device=h100,devices=3: devices=3 is not a whole number of "
         "servers of 2"},
        {"--option", "a:devices=2", NULL, NULL, "dtsim plan: --option a:devices=2: no device"},
        {"--option", "a:device=h100", NULL, NULL,
         "dtsim plan: --option a:device=h100: no device count"},
        {"--option", "a:device=h100,devices=2", "--device", "h100,a100-80gb",
         "dtsim plan: --option a:device=h100,devices=2: device= goes with one --device"},
        {"--option", "a:device=h100,devices=2", "--rank-by", "speed",
         "dtsim plan: --rank-by speed: expected time, cost, capex or energy"},
        {"--option", "a:device=h100,devices=2", "--rank-by", "capex",
         "dtsim plan: --rank-by capex: --option a:device=h100,devices=2 has no purchase price"},
        {"--option", "a:device=h100,devices=2,purchase=cheap", NULL, NULL,
         "dtsim plan: --option a:device=h100,devices=2,purchase=cheap: purchase=cheap: expected"},
        {"--option", "a:device=h900,devices=2", NULL, NULL,
         "dtsim plan: --option a:device=h900,devices=2: cluster.device: unknown device"},
        {"--option", "a:device=h100,devices=2", "--pue", "0.5",
         "dtsim plan: --pue 0.5: expected a PUE in [1, 10]"},
        {"--option", "a:device=h100,devices=2", "--amortize", "soon",
         "dtsim plan: --amortize soon: expected a period above 0"},
        {"--option", "a:device=h100,devices=2", "--sensitivity", "10",
         "dtsim plan: --sensitivity 10: expected a share"},
        {"--option", "a:device=h100,devices=2", "--sensitivity-top", "2",
         "dtsim plan: --sensitivity-top 2 goes with --sensitivity"},
        {"--option", "a:device=h100,devices=2", "--electricity", "0.2",
         "dtsim plan: --electricity: the ownership columns need a purchase price"},
        {"--sensitivity", "10%", "--no-run", NULL,
         "dtsim plan: --sensitivity simulates: --no-run does not go with it"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *argv[32] = {PLAN_F, bad[i].a, bad[i].b};
        int at = 0;
        while (argv[at])
            at++;
        if (bad[i].c) {
            argv[at++] = bad[i].c;
            if (bad[i].d)
                argv[at++] = bad[i].d;
        }
        argv[at++] = "--db";
        argv[at++] = db;
        ck_assert_int_eq(dtsim(argv), 2);
        one_error_line(bad[i].want, NULL);
        ck_assert_msg(access(db, F_OK) != 0, "%s %s wrote %s", bad[i].a, bad[i].b, db);
        o = slurp(out_path);
        ck_assert_msg(!o[0], "%s %s printed: %s", bad[i].b, bad[i].c ? bad[i].c : "", o);
        free(o);
    }
#undef FLEETS
#undef PLAN_F
}
END_TEST

/* --- the breakdown of a step ------------------------------------------------------------- */

/* The parts a step is broken into, as dtsim plan --breakdown prints them (compute, recompute,
 * optimizer, tensor, context, expert, pipeline, data, bubble, wait). */
#define BREAKDOWN_PARTS 10

/* The last k numbers of a line (a table row whose first words are a name), into v; how many
 * were read (fewer when the line has fewer). */
static int last_numbers(const char *line, size_t len, double *v, int k)
{
    const char *end = line + len;
    int got = 0;
    while (got < k && end > line) {
        while (end > line && end[-1] == ' ')
            end--;
        const char *start = end;
        while (start > line && start[-1] != ' ')
            start--;
        if (start == end)
            break;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(end - start), start);
        char *stop;
        double x = strtod(word, &stop);
        if (*stop)
            break;
        v[k - 1 - got++] = x;
        end = start;
    }
    return got;
}

/* dtsim plan --breakdown on the tiny transformer, every fitting layout simulated: the block
 * after the ranking has a row per ranked layout whose ten parts sum to its s/step (to the
 * printed digits); in the database each finished run's parts sum to its sim_time / steps
 * within 1e-12, a layout of 2 stages has a bubble, one of tensor groups a tensor part, one
 * under full recomputation a recompute part (none without); --show --breakdown prints the
 * same block, and without --breakdown the output is the same less the block. */
START_TEST(plan_breakdown_sums_to_the_step)
{
    char prof[300], db[300];
    snprintf(prof, sizeof prof, "%s/tiny-bd.ini", dir);
    snprintf(db, sizeof db, "%s/plan-bd.db", dir);
    ck_assert_int_eq(dtsim((const char *[]){"profile", "transformer", "--layers", "2", "--hidden",
                                            "64", "--heads", "2", "--seq", "32", "--vocab", "100",
                                            "--out", prof, NULL}),
                     0);
    ck_assert_int_eq(dtsim((const char *[]){"plan",        "--profile", prof,    "--device",
                                            "a100-80gb",   "--devices", "4",     "--per-server",
                                            "2",           "--heads",   "2",     "--global-batch",
                                            "4",           "--db",      db,      "--no-prune",
                                            "--max-runs",  "16",        "--top", "100",
                                            "--breakdown", NULL}),
                     0);
    char *o = slurp(out_path);
    const char *head = strstr(o, "\nbreakdown of each ranked layout's step");
    ck_assert_msg(head, "%s", o);
    const char *line = strchr(head + 1, '\n') + 1; /* the columns' heads */
    ck_assert_msg(!strncmp(line, "rank layout", 11) && strstr(line, "compute") &&
                      strstr(line, "bubble") && strstr(line, "wait"),
                  "%s", o);
    int rows = 0;
    for (line = strchr(line, '\n') + 1; *line >= '1' && *line <= '9';
         line = strchr(line, '\n') + 1) {
        size_t len = strcspn(line, "\n");
        double v[1 + BREAKDOWN_PARTS], sum = 0;
        ck_assert_msg(last_numbers(line, len, v, 1 + BREAKDOWN_PARTS) == 1 + BREAKDOWN_PARTS,
                      "%.*s", (int)len, line);
        for (int k = 1; k <= BREAKDOWN_PARTS; k++)
            sum += v[k];
        ck_assert_msg(fabs(sum - v[0]) <= 1e-3 * v[0], "%.*s: parts sum to %g", (int)len, line,
                      sum);
        rows++;
    }
    ck_assert_int_eq(rows, 16);
    char *block = strndup(head, (size_t)(line - head));
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM runs WHERE status = 'finished'"), 16);
    ck_assert_int_eq(query_long(h, "SELECT count(DISTINCT run) FROM breakdown"), 16);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM (SELECT b.run FROM breakdown b JOIN "
                                   "summary s ON s.run = b.run GROUP BY b.run HAVING "
                                   "abs(sum(b.seconds) - max(s.sim_time) / max(s.steps)) > "
                                   "1e-12 * max(s.sim_time) / max(s.steps))"),
                     0);
    ck_assert_int_eq(query_long(h, "SELECT count(*) FROM breakdown WHERE seconds < 0"), 0);
    static const struct {
        const char *where, *part; /* runs named so, and the part they must have (or not) */
        int some;
    } expect[] = {{"name LIKE '%p2d%'", "bubble", 1},
                  {"name LIKE '%p2d%'", "pipeline", 1},
                  {"name LIKE '%p1d%'", "bubble", 0},
                  {"name LIKE '%-t2p%'", "tensor", 1},
                  {"name LIKE '%-t1p%'", "tensor", 0},
                  {"name LIKE '%-selective' OR name LIKE '%-full'", "recompute", 1},
                  {"name NOT LIKE '%-selective' AND name NOT LIKE '%-full'", "recompute", 0},
                  {"name LIKE '%d2-%' OR name LIKE '%d4-%'", "data", 1},
                  {"1", "compute", 1}};
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT count(*) FROM runs r JOIN breakdown b ON b.run = r.id WHERE (%s) AND "
                 "b.part = '%s' AND b.seconds %s 0",
                 expect[i].where, expect[i].part, expect[i].some ? "<=" : ">");
        long bad = query_long(h, sql);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE (%s) AND status = 'finished'",
                 expect[i].where);
        ck_assert_msg(query_long(h, sql) > 0 && bad == 0, "%s: %ld runs with %s %s 0",
                      expect[i].where, bad, expect[i].part, expect[i].some ? "<=" : ">");
    }
    sqlite3_close(h);
    free(o);
    ck_assert_int_eq(
        dtsim((const char *[]){"plan", "--show", "--db", db, "--top", "100", "--breakdown", NULL}),
        0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, block), "--show --breakdown:\n%s\nthe plan's:\n%s", o, block);
    char *with = o;
    ck_assert_int_eq(dtsim((const char *[]){"plan", "--show", "--db", db, "--top", "100", NULL}),
                     0);
    o = slurp(out_path);
    char *at = strstr(with, block);
    memmove(at, at + strlen(block), strlen(at + strlen(block)) + 1);
    ck_assert_str_eq(o, with);
    free(o);
    free(with);
    free(block);
}
END_TEST

/* dtsim run prints the step's parts, which sum to its sim_time / steps; dtsim show prints the
 * same line from the database, and of a file from before the breakdown table (schema
 * version 8) that it has none. */
START_TEST(run_and_show_print_the_breakdown)
{
    char ini[300], db[300];
    snprintf(ini, sizeof ini, "%s/bd.ini", dir);
    snprintf(db, sizeof db, "%s/bd.db", dir);
    write_file(ini, "[run]\nname = bd\nsteps = 4\neval_every = 0\n[model]\narch = mlp\n"
                    "hidden = 16,16,16\nbatch = 16\n[data]\nsource = synthetic\n"
                    "train_samples = 512\ntest_samples = 64\nsynthetic_dim = 16\n"
                    "synthetic_classes = 4\n[cluster]\nworkers = 4\n[strategy]\n"
                    "kind = pipeline\nstages = 2\ndata_parallel = 2\nmicro_batches = 4\n");
    ck_assert_int_eq(dtsim((const char *[]){"run", ini, "--db", db, NULL}), 0);
    char *o = slurp(out_path);
    const char *line = strstr(o, "\nbreakdown: step ");
    ck_assert_msg(line, "%s", o);
    double step;
    ck_assert_int_eq(sscanf(line, "\nbreakdown: step %lf s =", &step), 1);
    char *run_line = strndup(line + 12, strcspn(line + 1, "\n") - 11);
    ck_assert_msg(strstr(run_line, " compute ") && strstr(run_line, " pipeline ") &&
                      strstr(run_line, " data ") && strstr(run_line, " bubble "),
                  "%s", run_line);
    sqlite3 *h;
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    double want = query_double(h, "SELECT sim_time / steps FROM summary WHERE run = 1");
    ck_assert_msg(fabs(step - want) <= 1e-5 * want, "printed step %g s, sim_time/steps %g s", step,
                  want);
    ck_assert_msg(fabs(query_double(h, "SELECT sum(seconds) FROM breakdown WHERE run = 1") -
                       want) <= 1e-12 * want,
                  "stored parts do not sum to %g s", want);
    sqlite3_close(h);
    free(o);
    ck_assert_int_eq(dtsim((const char *[]){"show", "1", "--db", db, NULL}), 0);
    o = slurp(out_path);
    line = strstr(o, "\n  breakdown       ");
    ck_assert_msg(line && !strncmp(line + 19, run_line, strlen(run_line)), "show:\n%s\nrun: %s", o,
                  run_line);
    free(o);
    ck_assert_int_eq(sqlite3_open(db, &h), SQLITE_OK);
    ck_assert_int_eq(
        sqlite3_exec(h, "DROP TABLE breakdown; PRAGMA user_version = 8", NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(h);
    ck_assert_int_eq(dtsim((const char *[]){"show", "1", "--db", db, NULL}), 0);
    o = slurp(out_path);
    ck_assert_msg(strstr(o, "\n  breakdown       no breakdown stored"), "%s", o);
    free(o);
    free(run_line);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300); /* the plan tests check dozens of layouts, each a process */
    tcase_add_test(tc, usage_and_versions);
    tcase_add_test(tc, bad_scenarios_exit_2_with_file_line_key);
    tcase_add_test(tc, model_data_and_memory_are_checked_up_front);
    tcase_add_test(tc, layouts_that_do_not_fit_are_refused);
    tcase_add_test(tc, plan_enumerates_fits_and_runs_layouts);
    tcase_add_test(tc, plan_searches_expert_groups);
    tcase_add_test(tc, plan_where_nothing_fits_is_one_error_line);
    tcase_add_test(tc, plan_tries_zero3_and_recompute_to_fit);
    tcase_add_test(tc, plan_memory_equals_check);
    tcase_add_test(tc, plan_tries_gradient_buckets);
    tcase_add_test(tc, plan_tries_context_parallelism_for_long_sequences);
    tcase_add_test(tc, plan_prunes_what_cannot_win);
    tcase_add_test(tc, plan_ranks_tokens_peak_headroom_and_cost);
    tcase_add_test(tc, plan_compares_devices_and_goodput);
    tcase_add_test(tc, plan_stopped_ranks_partial_and_resumes);
    tcase_add_test(tc, pipeline_rows_count_every_replica);
    tcase_add_test(tc, devices_lists_the_catalogue);
    tcase_add_test(tc, calibrate_gemm_curve);
    tcase_add_test(tc, nccl_bad_input_names_its_key);
    tcase_add_test(tc, check_refuses_fault_targets_the_platform_lacks);
    tcase_add_test(tc, check_refuses_bad_topology_shapes);
    tcase_add_test(tc, databases_are_never_made_by_mistake);
    tcase_add_test(tc, plot_format_and_size_are_checked);
    tcase_add_test(tc, error_lines_escape_control_bytes);
    tcase_add_test(tc, check_output_loads_back);
    tcase_add_test(tc, run_lands_in_database);
    tcase_add_test(tc, check_lists_the_runs_of_a_sweep);
    tcase_add_test(tc, sweep_runs_in_parallel_into_one_database);
    tcase_add_test(tc, sweep_failed_runs_are_named);
    tcase_add_test(tc, sweep_interrupted_stops_its_children);
    tcase_add_test(tc, sweep_interrupted_then_resumed_runs_only_the_rest);
    tcase_add_test(tc, sweep_run_ids_follow_sweep_order);
    tcase_add_test(tc, check_warns_when_eval_every_counts_rounds_and_steps);
    tcase_add_test(tc, sweep_killed_takes_its_children_with_it);
    tcase_add_test(tc, recovery_livelocks_end);
    tcase_add_test(tc, runs_at_chance_end_collapsed);
    tcase_add_test(tc, runs_killed_at_several_points_leave_a_consistent_database);
    tcase_add_test(tc, async_straggler_with_time_limit_ends);
    tcase_add_test(tc, device_cuda_without_gpu_is_one_clear_error);
    tcase_add_test(tc, fault_naming_no_node_is_bad_input);
    tcase_add_test(tc, fault_naming_no_link_is_bad_input);
    tcase_add_test(tc, readme_lists_every_key);
    tcase_add_test(tc, large_gpts_check_in_seconds);
    tcase_add_test(tc, check_real_refuses_what_real_mode_cannot_run);
    tcase_add_test(tc, readme_lists_every_strategy);
    tcase_add_test(tc, population_larger_than_training_set);
    tcase_add_test(tc, timing_only_run_has_empty_accuracy);
    tcase_add_test(tc, energy_and_cost_follow_their_formulas);
    tcase_add_test(tc, runs_fit_100_columns_and_match_the_database);
    tcase_add_test(tc, read_commands_leave_no_wal_files);
    tcase_add_test(tc, show_prints_a_run_whole);
    tcase_add_test(tc, completion_offers_commands_options_files_keys_and_runs);
    tcase_add_test(tc, installed_dtsim_runs_from_anywhere);
    suite_add_tcase(s, tc);
    /* issue 36's regressions, a case of their own (CK_RUN_CASE=exits runs only them) */
    TCase *ex = tcase_create("exits");
    tcase_add_checked_fixture(ex, setup, NULL);
    tcase_set_timeout(ex, 300); /* validate calibrates before its real run */
    tcase_add_test(ex, signals_stop_a_long_step_at_once);
    tcase_add_test(ex, merge_and_report_stop_on_signal);
    tcase_add_test(ex, damaged_and_empty_databases_exit_2);
    tcase_add_test(ex, plan_errors_name_what_was_given);
    tcase_add_test(ex, validate_killed_takes_its_testbed_with_it);
    suite_add_tcase(s, ex);
    /* dtsim train's output kept through a SIGINT, a run ended by its loss
     * (CK_RUN_CASE=train_signal) */
    TCase *ts = tcase_create("train_signal");
    tcase_add_checked_fixture(ts, setup, NULL);
    tcase_set_timeout(ts, 120);
    tcase_add_test(ts, train_interrupted_keeps_what_it_printed);
    tcase_add_test(ts, loss_divergence_ends_the_run_exit_1);
    suite_add_tcase(s, ts);
    /* input that crashed, hung or ran wrong after check accepted it (CK_RUN_CASE=inputs) */
    TCase *inputs = tcase_create("inputs");
    tcase_add_checked_fixture(inputs, setup, NULL);
    tcase_set_timeout(inputs, 300);
    tcase_add_test(inputs, bad_platform_files_exit_2_naming_file_line);
    tcase_add_test(inputs, what_check_accepts_run_runs);
    suite_add_tcase(s, inputs);
    /* issue 37's results a researcher trusts (CK_RUN_CASE=results) */
    TCase *res = tcase_create("results");
    tcase_add_checked_fixture(res, setup, NULL);
    tcase_set_timeout(res, 120);
    tcase_add_test(res, eval_samples_gives_every_strategy_the_same_points);
    suite_add_tcase(s, res);
    /* the third reliability pass: aborts, hangs and misleading words (CK_RUN_CASE=reliability) */
    TCase *rel = tcase_create("reliability");
    tcase_add_checked_fixture(rel, setup, NULL);
    tcase_set_timeout(rel, 300);
    tcase_add_test(rel, tiny_eval_intervals_neither_hang_nor_deafen);
    tcase_add_test(rel, set_repairs_a_bad_value_in_the_file);
    tcase_add_test(rel, a_stopped_run_ends_on_its_signal);
    tcase_add_test(rel, platform_errors_in_dtsims_words);
    tcase_add_test(rel, a_writer_killed_making_the_database_leaves_none_or_a_whole_one);
    tcase_add_test(rel, a_gpt_beyond_memory_is_refused_by_formula);
    suite_add_tcase(s, rel);
    /* issue 51: the plan's memory margin and ZeRO's per-micro-batch forms
     * (CK_RUN_CASE=plan_margin) */
    /* the breakdown of a step: a case of its own (CK_RUN_CASE=breakdown) */
    TCase *bd = tcase_create("breakdown");
    tcase_set_timeout(bd, 600);
    tcase_add_checked_fixture(bd, setup, NULL);
    tcase_add_test(bd, plan_breakdown_sums_to_the_step);
    tcase_add_test(bd, run_and_show_print_the_breakdown);
    suite_add_tcase(s, bd);
    TCase *pm = tcase_create("plan_margin");
    tcase_add_checked_fixture(pm, setup, NULL);
    tcase_set_timeout(pm, 300);
    tcase_add_test(pm, plan_memory_margin_decides_the_best);
    tcase_add_test(pm, plan_memory_margin_bad_values);
    tcase_add_test(pm, plan_zero2_fits_per_micro_batch);
    TCase *fl = tcase_create("fleets");
    tcase_add_checked_fixture(fl, setup, NULL);
    tcase_set_timeout(fl, 300);
    tcase_add_test(fl, plan_mixed_fleets_capex_and_sensitivity);
    suite_add_tcase(s, fl);
    suite_add_tcase(s, pm);
    /* issue 51: rows that stand for many hosts and links (CK_RUN_CASE=host_rows) */
    TCase *hr = tcase_create("host_rows");
    tcase_add_checked_fixture(hr, setup, NULL);
    tcase_set_timeout(hr, 120);
    tcase_add_test(hr, host_rows_weighted_read_alike);
    suite_add_tcase(s, hr);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
