/* `dtsim validate SCENARIO`: simulated time checked against real time. For each link
 * setting (bandwidth x latency) the scenario runs real, one process per host on the
 * shaped-link testbed (tests/testbed/testbed.sh: network namespaces, shaped veth links,
 * mpirun), and simulated under SimGrid's CM02, LV08 and SMPI network models and the tcp model
 * (given the testbed's congestion control and buffer caps), with the compute speed `dtsim
 * calibrate` measures here with as many processes at once as the real run has training (its
 * hosts but the servers'). `--edge` runs it on the edge platform, the testbed shaping each
 * host's asymmetric link as `dtsim platform --links` lists it; `--calibrate` fits the tcp
 * model to transfers timed on the testbed instead (cli_calibrate_tcp.c).
 * It prints real and simulated seconds per step and each model's error, and stores every run
 * in one database (results/validate.db) for `dtsim plot` and `dtsim report`.
 *
 * Every run is a child process (`dtsim run`, `dtsim calibrate`, the testbed script) started
 * without a shell: nothing the user typed is pasted into a command line. Needs root (the
 * testbed's namespaces) and a dtsim built with MPI; says so in one line otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_calibrate_tcp.h"
#include "cli_exec.h"
#include "cli_util.h"
#include "scenario.h"
#include "transport_mpi.h"

#define MAX_SETS 64
#define MAX_LIST 8
#define N_MODELS 4

static const char *const MODELS[N_MODELS] = {"CM02", "LV08", "SMPI", "tcp"};

typedef struct validate_opts {
    const char *scenario, *db, *testbed;
    const char *sets[MAX_SETS];
    int n_sets;
    char bw_text[256], lat_text[256];
    char congestion[32]; /* the testbed's and the tcp model's; "" = the machine's default */
    char *bw[MAX_LIST], *lat[MAX_LIST];
    int n_bw, n_lat;
    long steps, repeat;
    int calibrate; /* --calibrate: fit the tcp model to transfers, no scenario */
    int edge;      /* --edge: the edge platform's asymmetric access links, on the testbed too */
} validate_opts_t;

/* A real cell whose runs spread more than this (max - min over the median) claims no
 * model's error: the real side is not known well enough to compare with. */
#define SPREAD_MAX 0.05

enum {
    OPT_SET = 1,
    OPT_BANDWIDTH,
    OPT_LATENCY,
    OPT_CONGESTION,
    OPT_STEPS,
    OPT_REPEAT,
    OPT_DB,
    OPT_EDGE,
    OPT_CALIBRATE
};

static const cli_option validate_options[] = {
    {.id = OPT_SET,
     .name = "set",
     .kind = CLI_VALUE_TEXT,
     .metavar = "section.key=value",
     .help = "override a scenario key (repeatable)"},
    {.id = OPT_BANDWIDTH,
     .name = "bandwidth",
     .kind = CLI_VALUE_TEXT,
     .metavar = "LIST",
     .help = "host link bandwidths [10Mbps,100Mbps,1Gbps]"},
    {.id = OPT_LATENCY,
     .name = "latency",
     .kind = CLI_VALUE_TEXT,
     .metavar = "LIST",
     .help = "host link latencies [0.1ms,5ms,20ms,50ms]"},
    {.id = OPT_CONGESTION,
     .name = "congestion",
     .kind = CLI_VALUE_CHOICE,
     .metavar = "NAME",
     .choices = "cubic,bbr,reno",
     .help = "the testbed's congestion control, and the tcp model's [this machine's default]; "
             "a namespace may take only those of net.ipv4.tcp_allowed_congestion_control"},
    {.id = OPT_STEPS,
     .name = "steps",
     .kind = CLI_VALUE_INT,
     .metavar = "N",
     .help = "steps of each run [10]",
     .lo = 1,
     .hi = 1000000},
    {.id = OPT_REPEAT,
     .name = "repeat",
     .kind = CLI_VALUE_INT,
     .metavar = "N",
     .help = "real runs of each setting [3]: the table gives their median, their spread (max - "
             "min over the median) and the 1-minute load average before them; past a 5% spread "
             "no model's error is claimed",
     .lo = 1,
     .hi = 100},
    {.id = OPT_DB,
     .name = "db",
     .kind = CLI_VALUE_PATH,
     .metavar = "PATH",
     .help = "results database [results/validate.db]"},
    {.id = OPT_EDGE,
     .name = "edge",
     .help = "on the edge platform: each client host behind its access class's asymmetric link "
             "(fibre, cable, 4G: down = the bandwidth x 1 / 0.2 / 0.03, up x 0.5 / 0.02 / 0.01, "
             "5 / 15 / 40 ms + the latency), the server behind 1 Gbit/s; the testbed shapes each "
             "host's link as dtsim platform --links lists it"},
    {.id = OPT_CALIBRATE,
     .name = "calibrate",
     .help = "no SCENARIO: fit the tcp model to TCP transfers timed on a 2-host testbed at each "
             "--bandwidth x --latency (fresh connections of 10 kB to 30 MB, a kept one back to "
             "back and after idle) and print the cluster.tcp_* lines that fit them"},
    {0},
};

const cli_spec cli_validate_spec = {
    .usage = "SCENARIO [--set section.key=value ...] [--bandwidth LIST]\n"
             "[--latency LIST] [--congestion NAME] [--edge] [--steps N]\n"
             "[--repeat N] [--db PATH]\n"
             "dtsim validate --calibrate [--bandwidth LIST] [--latency LIST]\n"
             "[--congestion NAME]",
    .about = "Runs the scenario real on the shaped-link testbed (one process per host, each\n"
             "host's link shaped to the bandwidth and latency) and simulated under the CM02,\n"
             "LV08, SMPI and tcp network models, with the compute speed dtsim calibrate\n"
             "measures here with as many processes at once; prints real and simulated seconds\n"
             "per step and each model's error. The tcp model gets the testbed's TCP: its\n"
             "congestion control and this machine's socket buffer caps (net.ipv4.tcp_wmem,\n"
             "tcp_rmem). Needs root (network namespaces), Open MPI and a dtsim built with it.\n",
    .options = validate_options,
};

/* "a,b,c" into out[] (pointers into text), at most MAX_LIST; -1 past that or on an empty. */
static int split(char *text, char **out)
{
    int n = 0;
    for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
        if (n == MAX_LIST || !tok[0])
            return -1;
        out[n++] = tok;
    }
    return n;
}

static int parse(validate_opts_t *o, int argc, char **argv)
{
    memset(o, 0, sizeof *o);
    o->db = "results/validate.db";
    o->steps = 10;
    o->repeat = 3;
    snprintf(o->bw_text, sizeof o->bw_text, "10Mbps,100Mbps,1Gbps");
    snprintf(o->lat_text, sizeof o->lat_text, "0.1ms,5ms,20ms,50ms");
    int id;
    cli_parser p;
    cli_parse_init(&p, "validate", &cli_validate_spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case OPT_SET:
            if (o->n_sets == MAX_SETS)
                return cli_usage_error("validate", "more than %d --set options", MAX_SETS);
            o->sets[o->n_sets++] = p.value;
            break;
        case OPT_BANDWIDTH:
            snprintf(o->bw_text, sizeof o->bw_text, "%s", p.value);
            break;
        case OPT_LATENCY:
            snprintf(o->lat_text, sizeof o->lat_text, "%s", p.value);
            break;
        case OPT_STEPS:
            o->steps = p.integer;
            break;
        case OPT_DB:
            o->db = p.value;
            break;
        case OPT_REPEAT:
            o->repeat = p.integer;
            break;
        case OPT_CONGESTION:
            snprintf(o->congestion, sizeof o->congestion, "%s", p.value);
            break;
        case OPT_CALIBRATE:
            o->calibrate = 1;
            break;
        case OPT_EDGE:
            o->edge = 1;
            break;
        }
    }
    if (id < 0)
        return p.status == CLI_EXIT_OK ? -1 : p.status;
    if (o->calibrate) {
        if (p.n_args)
            return cli_usage_error("validate",
                                   "--calibrate takes no SCENARIO (unexpected "
                                   "\"%s\")",
                                   p.args[0]);
        if (o->n_sets)
            return cli_usage_error("validate", "--calibrate runs no scenario: --set does not "
                                               "apply");
    } else {
        if (o->edge && o->n_sets + 2 > MAX_SETS)
            return cli_usage_error("validate", "more than %d --set options", MAX_SETS - 2);
        if (o->edge) { /* the server behind a link the testbed can shape (not 40 Gbit/s) */
            o->sets[o->n_sets++] = "cluster.platform=edge";
            o->sets[o->n_sets++] = "cluster.uplink_bandwidth=1Gbps";
        }
        if (!p.n_args)
            return cli_usage_error("validate", "missing SCENARIO file");
        if (p.n_args > 1)
            return cli_usage_error("validate", "unexpected argument \"%s\"", p.args[1]);
        o->scenario = p.args[0];
    }
    if ((o->n_bw = split(o->bw_text, o->bw)) <= 0)
        return cli_usage_error("validate",
                               "--bandwidth: expected 1 to %d values such as "
                               "10Mbps,1Gbps",
                               MAX_LIST);
    if ((o->n_lat = split(o->lat_text, o->lat)) <= 0)
        return cli_usage_error("validate",
                               "--latency: expected 1 to %d values such as "
                               "0.1ms,5ms",
                               MAX_LIST);
    return 0;
}

/* The scenario's runs share these arguments: --set k=v for the user's and ours. */
typedef struct argv_buf {
    const char *a[2 * MAX_SETS + 64 + 2 * 64]; /* and --host I:... for up to 64 hosts */
    int n;
    char owned[16][128];
    int n_owned;
} argv_buf_t;

static void add(argv_buf_t *b, const char *s)
{
    b->a[b->n++] = s;
}

static void add_set(argv_buf_t *b, const char *fmt, const char *v)
{
    char *s = b->owned[b->n_owned++];
    snprintf(s, 128, fmt, v);
    add(b, "--set");
    add(b, s);
}

/* The common tail of every run of one setting. */
static void add_setting(argv_buf_t *b, const validate_opts_t *o, const char *bw, const char *lat,
                        const char *name)
{
    for (int i = 0; i < o->n_sets; i++) {
        add(b, "--set");
        add(b, o->sets[i]);
    }
    char steps[32];
    snprintf(steps, sizeof steps, "%ld", o->steps);
    add_set(b, "run.steps=%s", steps);
    add_set(b, "run.eval_every=%s", "0");
    add_set(b, "cluster.bandwidth=%s", bw);
    add_set(b, "cluster.latency=%s", lat);
    add_set(b, "run.name=%s", name);
}

/* The latest run's seconds per step in db. */
static double seconds_per_step(const char *db)
{
    sqlite3 *h;
    double out = NAN;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return out;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, "SELECT sim_time, steps FROM summary ORDER BY run DESC LIMIT 1", -1,
                           &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 1) > 0)
        out = sqlite3_column_double(st, 0) / (double)sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return out;
}

/* The machine's 1-minute load average (NAN where /proc does not say). */
static double load_average(void)
{
    double load = NAN;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf", &load) != 1)
        load = NAN;
    if (f)
        fclose(f);
    return load;
}

/* `dtsim calibrate` of the scenario's model, as many at once as the real run has
 * processes; their mean speed written as a device profile to `path`. */
static int calibrate(const scenario_t *sc, const char *self, int hosts, const char *dir,
                     const char *path)
{
    const trainer_model_config_t *m = &sc->model;
    char hidden[128] = "", conv[32], fc[16], batch[24], data[600];
    for (int i = 0; i < m->n_hidden; i++)
        snprintf(hidden + strlen(hidden), sizeof hidden - strlen(hidden), "%s%d", i ? "," : "",
                 m->hidden[i]);
    snprintf(conv, sizeof conv, "%d,%d", m->conv[0], m->conv[1]);
    snprintf(fc, sizeof fc, "%d", m->fc);
    snprintf(batch, sizeof batch, "%ld", sc->batch);
    snprintf(data, sizeof data, "%s",
             !strcmp(sc->data_source, "fashion-mnist") ? TRAINER_FASHION_MNIST_DIR
                                                       : sc->data_source);
    pid_t *kids = dt_calloc((size_t)hosts, sizeof(pid_t));
    char out[700];
    for (int i = 0; i < hosts; i++) {
        snprintf(out, sizeof out, "%s/cal-%d.ini", dir, i);
        const char *args[] = {self,       "calibrate",
                              "--model",  trainer_arch_name(m->arch),
                              "--hidden", m->n_hidden ? hidden : "256,128",
                              "--conv",   conv,
                              "--fc",     fc,
                              "--batch",  batch,
                              "--data",   data,
                              "--steps",  "100",
                              "--limit",  "8192",
                              "--out",    out,
                              NULL};
        kids[i] = cli_spawn_start(self, args, -1);
    }
    int bad = 0;
    double sum = 0;
    for (int i = 0; i < hosts; i++) {
        if (cli_spawn_wait(kids[i])) {
            bad = 1;
            continue;
        }
        snprintf(out, sizeof out, "%s/cal-%d.ini", dir, i);
        FILE *f = fopen(out, "r");
        char line[256];
        double gf = NAN;
        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "flops = %lfGf", &gf) == 1)
                break;
        if (f)
            fclose(f);
        unlink(out);
        if (!(gf > 0))
            bad = 1;
        sum += gf;
    }
    free(kids);
    if (bad)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "; dtsim validate: mean of %d dtsim calibrate run at once on this machine\n"
            "[device]\nname = validate-%d\nflops = %.6gGf\n",
            hosts, hosts, sum / hosts);
    return fclose(f) ? -1 : 0;
}

/* "# hosts: N" of `dtsim platform SCENARIO --links` (with the user's --set); *servers gets
 * the hosts that run a server (they average, the others train). */
static int count_hosts(const validate_opts_t *o, const char *self, const char *dir, int *servers)
{
    char path[600];
    snprintf(path, sizeof path, "%s/hosts.txt", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    argv_buf_t b = {.n = 0};
    add(&b, self);
    add(&b, "platform");
    add(&b, o->scenario);
    add(&b, "--links");
    for (int i = 0; i < o->n_sets; i++) {
        add(&b, "--set");
        add(&b, o->sets[i]);
    }
    add(&b, NULL);
    int rc = cli_spawn(self, b.a, fd);
    close(fd);
    FILE *f = fopen(path, "r");
    int hosts = -1;
    char line[256];
    *servers = 0;
    while (rc == 0 && f && fgets(line, sizeof line, f)) {
        sscanf(line, "# hosts: %d", &hosts);
        *servers += !strncmp(line, "host ", 5) && strstr(line, " server-") != NULL;
    }
    if (f)
        fclose(f);
    unlink(path);
    return hosts;
}

/* --edge: the testbed's --host I:DOWN:UP:LATENCY of every host, from `dtsim platform
 * SCENARIO --links` at this setting: the server (host 0: real mode puts servers first)
 * behind dc_DOWN / dc_UP, client host k (host 1 + k) behind down-k / up-k. Into b, the
 * texts in specs (one row a host); -1 when the listing fails or lacks a link. */
static int edge_hosts(const validate_opts_t *o, const char *self, const char *dir, const char *bw,
                      const char *lat, int hosts, char (*specs)[128], argv_buf_t *b)
{
    char path[600], set_bw[300], set_lat[300];
    snprintf(path, sizeof path, "%s/links.txt", dir);
    snprintf(set_bw, sizeof set_bw, "cluster.bandwidth=%s", bw);
    snprintf(set_lat, sizeof set_lat, "cluster.latency=%s", lat);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    argv_buf_t l = {.n = 0};
    const char *head[] = {self, "platform", o->scenario, "--links"};
    for (size_t k = 0; k < sizeof head / sizeof *head; k++)
        add(&l, head[k]);
    for (int i = 0; i < o->n_sets; i++) {
        add(&l, "--set");
        add(&l, o->sets[i]);
    }
    const char *tail[] = {"--set", set_bw, "--set", set_lat, NULL};
    for (size_t k = 0; k < sizeof tail / sizeof *tail; k++)
        add(&l, tail[k]);
    int rc = cli_spawn(self, l.a, fd);
    close(fd);
    /* per host: down and up bandwidth texts, latency text */
    char down[64][32] = {{0}}, up[64][32] = {{0}}, late[64][32] = {{0}};
    FILE *f = fopen(path, "r");
    char line[256], name[64], rate[32], delay[32];
    while (rc == 0 && f && fgets(line, sizeof line, f)) {
        int k;
        if (sscanf(line, "link %63s %31s %31s", name, rate, delay) != 3)
            continue;
        int h = !strcmp(name, "dc_DOWN") || !strcmp(name, "dc_UP")                   ? 0
                : sscanf(name, "down-%d", &k) == 1 || sscanf(name, "up-%d", &k) == 1 ? 1 + k
                                                                                     : -1;
        if (h < 0 || h >= hosts || h >= 64)
            continue;
        int is_down = !strncmp(name, "down", 4) || !strcmp(name, "dc_DOWN");
        snprintf(is_down ? down[h] : up[h], 32, "%s", rate);
        snprintf(late[h], 32, "%s", delay);
    }
    if (f)
        fclose(f);
    unlink(path);
    if (rc || hosts > 64)
        return -1;
    for (int h = 0; h < hosts; h++) {
        if (!down[h][0] || !up[h][0])
            return -1;
        snprintf(specs[h], 128, "%d:%.31s:%.31s:%.31s", h, down[h], up[h], late[h]);
        add(b, "--host");
        add(b, specs[h]);
    }
    return 0;
}

/* Every setting of --bandwidth and --latency as the runs will take it, checked before any
 * runs: a bad value is one line here, not a failed row later. */
static dt_status settings_load(const validate_opts_t *o, const scenario_t *base, dt_err_t *err)
{
    scenario_t *probe = dt_malloc(sizeof *probe);
    const char *sets[MAX_SETS + 2];
    char bw[300], lat[300];
    memcpy(sets, o->sets, sizeof(char *) * (size_t)o->n_sets);
    dt_status st = DT_OK;
    for (int i = 0; i < o->n_bw && !st; i++)
        for (int j = 0; j < o->n_lat && !st; j++) {
            snprintf(bw, sizeof bw, "cluster.bandwidth=%s", o->bw[i]);
            snprintf(lat, sizeof lat, "cluster.latency=%s", o->lat[j]);
            sets[o->n_sets] = bw;
            sets[o->n_sets + 1] = lat;
            st = scenario_load(probe, base->path, sets, o->n_sets + 2, err);
        }
    free(probe);
    return st;
}

/* The testbed's TCP as the tcp model takes it: the congestion control (--congestion, else
 * this machine's default) and the socket buffers' caps, which a new network namespace copies
 * from the machine's (the third values of net.ipv4.tcp_wmem and tcp_rmem). */
typedef struct testbed_tcp {
    char congestion[32];
    char wmem_max[32], rmem_max[32];
} testbed_tcp_t;

static int testbed_tcp(const validate_opts_t *o, testbed_tcp_t *t)
{
    if (o->congestion[0])
        snprintf(t->congestion, sizeof t->congestion, "%s", o->congestion);
    else if (cli_proc_word("/proc/sys/net/ipv4/tcp_congestion_control", 0, t->congestion,
                           sizeof t->congestion))
        return -1;
    if (strcmp(t->congestion, "cubic") && strcmp(t->congestion, "bbr") &&
        strcmp(t->congestion, "reno"))
        return -1;
    return cli_proc_word("/proc/sys/net/ipv4/tcp_wmem", 2, t->wmem_max, sizeof t->wmem_max) ||
                   cli_proc_word("/proc/sys/net/ipv4/tcp_rmem", 2, t->rmem_max, sizeof t->rmem_max)
               ? -1
               : 0;
}

/* The temporary folders of earlier validations killed before they could remove theirs
 * (/tmp/dtsim-validate-PID-XXXXXX whose PID is gone): their files, then the folder. */
static void remove_stale_folders(void)
{
    DIR *d = opendir("/tmp");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid;
        char tail[16];
        if (sscanf(e->d_name, "dtsim-validate-%ld-%15s", &pid, tail) != 2 || pid <= 0 ||
            (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        char path[300];
        snprintf(path, sizeof path, "/tmp/%s", e->d_name);
        DIR *in = opendir(path);
        if (!in)
            continue;
        struct dirent *f;
        while ((f = readdir(in))) {
            char file[600];
            snprintf(file, sizeof file, "%s/%s", path, f->d_name);
            if (strcmp(f->d_name, ".") && strcmp(f->d_name, ".."))
                unlink(file);
        }
        closedir(in);
        rmdir(path);
    }
    closedir(d);
}

/* Copies the file src to dst (new, mode 0755); 0 on success. */
static int copy_executable(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755), rc = out < 0;
    char buf[1 << 16];
    ssize_t got;
    while (!rc && (got = read(in, buf, sizeof buf)) != 0) {
        if (got < 0 && errno == EINTR)
            continue;
        for (ssize_t at = 0; !rc && got > 0 && at < got;) {
            ssize_t put = write(out, buf + at, (size_t)(got - at));
            if (put < 0 && errno != EINTR)
                rc = -1;
            at += put > 0 ? put : 0;
        }
        rc |= got < 0;
    }
    close(in);
    if (out >= 0 && close(out) != 0)
        rc = -1;
    if (rc && out >= 0)
        unlink(dst);
    return rc ? -1 : 0;
}

/* --calibrate: the tcp model fitted to tcpxfer's transfers on a 2-host testbed, at every
 * bandwidth x latency of the lists (cli_calibrate_tcp.c). tcpxfer is beside this dtsim
 * (BUILD/testbed/tcpxfer), or in DTSIM_TESTBED_BIN. */
static int calibrate_tcp(const validate_opts_t *o)
{
    char self[4096], testbed[4200], tcpxfer[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    const char *bin = getenv("DTSIM_TESTBED_BIN");
    snprintf(tcpxfer, sizeof tcpxfer, "%s/tcpxfer", bin && bin[0] ? bin : self);
    if (!bin || !bin[0])
        snprintf(tcpxfer, sizeof tcpxfer, "%s/testbed/tcpxfer", self);
    snprintf(testbed, sizeof testbed, "%s/tests/testbed/testbed.sh", DTSIM_SOURCE_DIR);
    const char *why = geteuid() != 0 ? "needs root: the testbed makes network namespaces"
                      : access(testbed, X_OK) != 0 ? "needs the testbed of the source tree"
                      : access(tcpxfer, X_OK) != 0 ? "needs tcpxfer (cmake --build builds it "
                                                     "beside dtsim, in testbed/)"
                                                   : NULL;
    if (why) {
        fprintf(stderr, "dtsim validate --calibrate: %s\n", why);
        return CLI_EXIT_USAGE;
    }
    /* every value checked before the first testbed: a bad one is one line, nothing run */
    double v;
    dt_err_t err;
    for (int i = 0; i < o->n_bw + o->n_lat; i++) {
        int is_bw = i < o->n_bw;
        const char *text = is_bw ? o->bw[i] : o->lat[i - o->n_bw];
        int bad = is_bw ? scenario_parse_bandwidth(text, &v, &err) != DT_OK
                        : scenario_parse_time(text, &v, &err) != DT_OK;
        if (bad || !(v > 0)) {
            fprintf(stderr, "dtsim validate --calibrate: --%s %s: %s\n",
                    is_bw ? "bandwidth" : "latency", text,
                    bad ? err.msg : "expected a value above 0");
            return CLI_EXIT_USAGE;
        }
    }
    int rc = CLI_EXIT_OK;
    for (int i = 0; i < o->n_bw; i++)
        for (int j = 0; j < o->n_lat; j++) {
            printf("%s# links of %s and %s\n", i || j ? "\n" : "", o->bw[i], o->lat[j]);
            fflush(stdout);
            int r = cli_calibrate_tcp(testbed, tcpxfer, o->bw[i], o->lat[j], o->congestion, stdout);
            if (r == 2)
                return CLI_EXIT_USAGE;
            if (r)
                rc = CLI_EXIT_RUN;
            fflush(stdout);
        }
    return rc;
}

/* What every cell of a validation shares: the options, the scenario, the testbed script,
 * the dtsim the runs start, the working folder, the calibrated device file, the testbed's
 * TCP and the hosts of the run. */
typedef struct cell {
    const validate_opts_t *o;
    const scenario_t *sc;
    const char *testbed, *self, *dir, *device;
    const testbed_tcp_t *tcp;
    int hosts;
} cell_t;

/* The simulated seconds per step of cell NAME at bw and lat under network model m. */
static double cell_simulated(const cell_t *c, const char *bw, const char *lat, const char *name,
                             int m)
{
    argv_buf_t s = {.n = 0};
    const char *cmd[] = {c->self, "run", c->o->scenario, "--db", c->o->db};
    for (size_t k = 0; k < sizeof cmd / sizeof *cmd; k++)
        add(&s, cmd[k]);
    add_setting(&s, c->o, bw, lat, name);
    add_set(&s, "cluster.network_model=%s", MODELS[m]);
    if (!strcmp(MODELS[m], "tcp")) {
        add_set(&s, "cluster.tcp_congestion=%s", c->tcp->congestion);
        add_set(&s, "cluster.tcp_wmem_max=%s", c->tcp->wmem_max);
        add_set(&s, "cluster.tcp_rmem_max=%s", c->tcp->rmem_max);
        /* real mode's processes meet in a barrier before its clock starts: the
         * connections are open (at their initial windows) when it does */
        add_set(&s, "cluster.tcp_handshake=%s", "0");
    }
    add_set(&s, "cluster.device=%s", c->device);
    add(&s, NULL);
    return cli_spawn(c->self, s.a, -1) == 0 ? seconds_per_step(c->o->db) : NAN;
}

/* One cell of the table, links of bw and lat: the run real on the testbed (--repeat times:
 * the median, the spread), then simulated under each network model, the one nearest
 * named. Returns CLI_EXIT_RUN when a run failed. */
static int validate_cell(const cell_t *c, const char *bw, const char *lat)
{
    const validate_opts_t *o = c->o;
    char name[SCENARIO_STR + 64], hosts_text[16];
    snprintf(name, sizeof name, "%s-%s-%s", c->sc->name, bw, lat);
    snprintf(hosts_text, sizeof hosts_text, "%d", c->hosts);
    argv_buf_t b = {.n = 0};
    const char *head[] = {c->testbed,    "with", "--hosts",   hosts_text,
                          "--bandwidth", bw,     "--latency", lat};
    for (size_t k = 0; k < sizeof head / sizeof *head; k++)
        add(&b, head[k]);
    if (o->congestion[0]) {
        add(&b, "--congestion");
        add(&b, o->congestion);
    }
    static char specs[64][128];
    if (o->edge && edge_hosts(o, c->self, c->dir, bw, lat, c->hosts, specs, &b)) {
        fprintf(stderr,
                "dtsim validate: %s: cannot list the edge platform's links of "
                "its %d hosts (dtsim platform --links)\n",
                o->scenario, c->hosts);
        return CLI_EXIT_RUN;
    }
    const char *tail[] = {"--", c->self, "run", o->scenario, "--real", "--db", o->db};
    for (size_t k = 0; k < sizeof tail / sizeof *tail; k++)
        add(&b, tail[k]);
    add_setting(&b, o, bw, lat, name);
    add(&b, NULL);
    double load = load_average(), runs[100];
    int n_runs = 0;
    for (long k = 0; k < o->repeat; k++) {
        double t = cli_spawn(c->testbed, b.a, -1) == 0 ? seconds_per_step(o->db) : NAN;
        if (!isnan(t))
            runs[n_runs++] = t;
    }
    double real = NAN, spread = NAN;
    if (n_runs == o->repeat) {           /* a failed run leaves the cell without a figure */
        real = cli_median(runs, n_runs); /* sorted: the spread is last - first */
        spread = (runs[n_runs - 1] - runs[0]) / real;
    }
    printf("%-10s %-9s %-7s %10.4g %6.1f%% %5.2f", c->sc->strategy->name, bw, lat, real,
           100 * spread, load);
    double best = INFINITY;
    int best_m = -1;
    for (int m = 0; m < N_MODELS; m++) {
        double sim = cell_simulated(c, bw, lat, name, m);
        double e = (sim - real) / real;
        printf(" %10.4g %+7.1f%%", sim, 100 * e);
        if (fabs(e) < best) {
            best = fabs(e);
            best_m = m;
        }
    }
    int rc = CLI_EXIT_OK;
    if (best_m < 0) {
        printf("  (failed: see the lines above)\n");
        rc = CLI_EXIT_RUN;
    } else if (spread > SPREAD_MAX) {
        printf("  %s, but the real runs spread %.1f%%: no error claimed\n", MODELS[best_m],
               100 * spread);
    } else {
        printf("  %s, %s\n", MODELS[best_m], best <= 0.10 ? "within 10%" : "off by more than 10%");
    }
    fflush(stdout);
    return rc;
}

int cli_validate(int argc, char **argv)
{
    validate_opts_t o;
    int rc = parse(&o, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;
    if (o.calibrate)
        return calibrate_tcp(&o);
    scenario_t *sc = dt_malloc(sizeof *sc);
    dt_err_t err;
    if (scenario_load(sc, o.scenario, o.sets, o.n_sets, &err) || settings_load(&o, sc, &err)) {
        fprintf(stderr, "dtsim validate: %s\n", err.msg);
        free(sc);
        return CLI_EXIT_USAGE;
    }
    char self[4096], testbed[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    snprintf(testbed, sizeof testbed, "%s/tests/testbed/testbed.sh", DTSIM_SOURCE_DIR);
    const char *why = sc->sweep.n_keys ? "validates one run, not a [sweep]"
                      : !strcmp(sc->data_source, "synthetic")
                          ? "calibrates on a data set (data.source = synthetic has no files)"
                      : !sim_real_built()          ? "needs a dtsim built with MPI (Open MPI: "
                                                     "make deps, then configure again)"
                      : geteuid() != 0             ? "needs root: the testbed makes network "
                                                     "namespaces and shapes their links"
                      : access(testbed, X_OK) != 0 ? "needs the testbed of the source tree"
                                                   : NULL;
    if (why || !n) {
        fprintf(stderr, "dtsim validate: %s: %s\n", o.scenario,
                why ? why : "cannot find the dtsim binary");
        free(sc);
        return CLI_EXIT_USAGE;
    }
    testbed_tcp_t tcp;
    if (testbed_tcp(&o, &tcp)) {
        fprintf(stderr,
                "dtsim validate: %s: this machine's TCP is not one the tcp model "
                "follows (net.ipv4.tcp_congestion_control: cubic, bbr or reno; "
                "tcp_wmem and tcp_rmem readable): give --congestion\n",
                o.scenario);
        free(sc);
        return CLI_EXIT_USAGE;
    }
    /* its children (the testbed, the runs) die with it (cli_spawn_start); a folder it could
     * not remove, killed, is removed by the next validation */
    remove_stale_folders();
    char dir[64], device[96];
    snprintf(dir, sizeof dir, "/tmp/dtsim-validate-%ld-XXXXXX", (long)getpid());
    if (!mkdtemp(dir)) {
        fprintf(stderr, "dtsim validate: mkdtemp: %s\n", strerror(errno));
        free(sc);
        return CLI_EXIT_RUN;
    }
    snprintf(device, sizeof device, "%s/device.ini", dir);
    /* its children run a copy of it: a dtsim rebuilt during a validation of many minutes
     * neither changes the cells after nor fails them (the binary replaced under them: its
     * sims "Permission denied"); without a copy, itself */
    char copy[96];
    snprintf(copy, sizeof copy, "%s/dtsim", dir);
    if (copy_executable(self, copy) == 0)
        snprintf(self, sizeof self, "%s", copy);
    else
        copy[0] = '\0';
    int servers, hosts = count_hosts(&o, self, dir, &servers);
    /* as many at once as the real run has processes training: its hosts without servers */
    int trainers = hosts - servers > 0 ? hosts - servers : hosts;
    if (hosts < 1 || calibrate(sc, self, trainers, dir, device)) {
        fprintf(stderr, "dtsim validate: %s: %s\n", o.scenario,
                hosts < 1 ? "cannot list its hosts (dtsim platform --links)"
                          : "dtsim calibrate failed");
        if (copy[0])
            unlink(copy);
        rmdir(dir);
        free(sc);
        return CLI_EXIT_RUN;
    }
    printf("# %s: %s on %d hosts, %ld steps; compute: dtsim calibrate x %d at once "
           "(%s); real: the median of %ld runs, their spread and the load before them\n",
           sc->name, sc->strategy->name, hosts, o.steps, trainers, device, o.repeat);
    printf("# tcp: the testbed's congestion control %s%s, send and receive buffers up to %s "
           "and %s bytes (this machine's net.ipv4.tcp_wmem and tcp_rmem), connections open "
           "when the clock starts (real mode's barrier opens them: tcp_handshake = 0)\n",
           tcp.congestion, o.congestion[0] ? " (--congestion)" : " (this machine's default)",
           tcp.wmem_max, tcp.rmem_max);
    printf("%-10s %-9s %-7s %10s %7s %5s", "strategy", "bandwidth", "latency", "real s/step",
           "spread", "load");
    for (int m = 0; m < N_MODELS; m++)
        printf(" %10s %8s", MODELS[m], "error");
    printf("  best\n");
    fflush(stdout);
    rc = CLI_EXIT_OK;
    for (int i = 0; i < o.n_bw; i++)
        for (int j = 0; j < o.n_lat; j++) {
            cell_t cell = {&o, sc, testbed, self, dir, device, &tcp, hosts};
            if (validate_cell(&cell, o.bw[i], o.lat[j]) != CLI_EXIT_OK)
                rc = CLI_EXIT_RUN;
        }
    printf("# stored in %s (real runs: NAME-BANDWIDTH-LATENCY-real)\n", o.db);
    unlink(device);
    if (copy[0])
        unlink(copy);
    rmdir(dir);
    free(sc);
    return rc;
}
