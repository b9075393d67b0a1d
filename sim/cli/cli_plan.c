/* `dtsim plan`: capacity planning of a timing-only model on N devices. Enumerates the
 * tensor x pipeline x data layouts (strategy.kind = pipeline) of one global batch with their
 * micro-batch sizes and ZeRO stage 0 or 1, drops the layouts that do not fit the device's
 * memory (the check `dtsim check` makes, no simulation), and tries one that does not fit
 * again with what saves more memory at a cost: ZeRO stages 2 and 3 over its replicas and
 * selective or full recomputation (each fitting combination with nothing less saving that
 * fits); a fitting one of replicas without ZeRO it tries again with gradient buckets. It runs the fitting ones as one sweep (the machinery of `dtsim run`, -j children,
 * one database, one sweep id) and prints them by step time with memory, achieved FLOP/s per
 * device, energy and cost, read back from the database. The scenarios are written to
 * temporary files (removed at the end): a base made of the options, then the same with each
 * layout's keys. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "cli_sweep.h"
#include "db.h"
#include "model_profile.h"
#include "profile_memory.h"
#include "query.h"
#include "scenario.h"

#define PLAN_MAX_SETS 64
#define PLAN_MAX_LAYOUTS 4096
/* the runs of one plan: their scenarios are held in memory at once */
#define PLAN_MAX_RUNS 256
/* gradient buckets tried besides one all-reduce per stage: PyTorch DDP's bucket_cap_mb */
#define PLAN_BUCKET_MB 25

typedef struct plan_opts {
    const char *profile, *device, *precision, *db;
    long devices, per_server, global_batch, heads, steps, top, max_runs;
    int jobs, no_run;
    const char *sets[PLAN_MAX_SETS];
    int n_sets;
} plan_opts_t;

/* One layout: t x p x d devices, each replica's batch b = global / d in b / mbs micro-batches
 * of mbs samples, ZeRO stage 0 to 3 over the d replicas, model.recompute rc, gradient
 * buckets of bucket_mb (PLAN_BUCKET_MB or 0) over the replicas. */
typedef struct plan_layout {
    long t, p, d, mbs, m;
    int zero, bucket_mb;
    sim_recompute_t rc;
    int fits;         /* the fullest device holds no more than its memory */
    char memory[512]; /* "worker 0 holds 40.5 GB of 80 GB (a100-80gb)", or why dropped */
    int64_t run;      /* its run in the database; 0: none */
    double step_s, samples_s, mem_bytes, joules, dollars_per_sample;
} plan_layout_t;

static void plan_help(void)
{
    printf("usage: dtsim plan --profile P --device D --devices N --global-batch B [OPTIONS]\n"
           "\n"
           "Capacity planning of a timing-only model (sim/README.md: Planning a layout):\n"
        "enumerates the tensor x pipeline x data layouts of N devices for one global\n"
        "batch, with micro-batches of 1, 2 or 4 samples and ZeRO stage 0 or 1, drops\n"
        "those that do not fit the device's memory, tries those again with ZeRO stage\n"
        "2 or 3 and selective or full recomputation (the least that fits), and those\n"
        "of replicas without ZeRO that fit with gradient buckets too, simulates\n"
        "the rest as one sweep (strategy.kind = pipeline, 1F1B) stored in the\n"
        "database, and prints them by step time with the fullest device's memory,\n"
        "achieved TFLOP/s per device, energy and cost.\n"
        "\n"
        "required:\n"
        "  --profile P         model profile: a built-in name or a file (dtsim profile\n"
        "                      transformer writes one)\n"
        "  --device D          cluster.device (dtsim devices lists them)\n"
        "  --devices N         devices in all\n"
        "  --global-batch B    samples per step over all replicas\n"
        "options:\n"
        "  --precision P       model.precision (default bf16); the optimizer is Adam\n"
        "  --per-server S      devices per server (default 8): multi-rack platform, a\n"
        "                      rack per server, 2400 Gbit/s inside, 1600 Gbit/s\n"
        "                      uplinks; a tensor group stays inside a server\n"
        "  --heads A           attention heads: tensor must divide A (default: not\n"
        "                      checked)\n"
        "  --set KEY=VALUE     any scenario key for every layout\n"
        "                      (cluster.price_per_device_hour=4, ...); tensor\n"
        "                      all-reduces are timed in closed form\n"
        "                      (strategy.tensor_comm=formula; =messages simulates\n"
        "                      each ring step)\n"
        "  --steps K           simulated steps per layout (default 1)\n"
        "  -j, --jobs J        layouts checked and simulated at once (default 1)\n"
        "  --db PATH           results database (default " DEFAULT_DB ")\n"
        "  --top K             layouts printed (default 10)\n"
        "  --max-runs M        layouts simulated at most, the first fitting ones in the\n"
        "                      listed order (default and at most %d)\n"
        "  --no-run            list the layouts and their fit; simulate nothing\n"
        "  -h, --help          this text\n"
        "\n"
        "tensor is 1, 2, 4 or 8 (dividing N); pipeline stages divide the profile's\n"
        "transformer layers (its *.scores layers; its pipeline pieces when it has\n"
        "none); data = N / (tensor x stages) must divide B. A fitting layout of\n"
        "replicas without ZeRO runs again with gradient buckets of 25 MB (PyTorch\n"
        "DDP's default; strategy.bucket_mb) all-reduced during the last backward pass\n"
        "instead of one all-reduce per stage after it; ZeRO reduces unbucketed.\n"
        "A layout is named tT pP dD mbSIZExCOUNT zZERO, then b25 with buckets, then\n"
        "selective or full when it recomputes.\n"
        "\n"
        "example (GPT-3 175B, Narayanan et al. 2021):\n"
           "  dtsim profile transformer --layers 96 --hidden 12288 --heads 96 --seq 2048 \\\n"
           "      --vocab 51200 --out gpt3.ini\n"
           "  dtsim plan --profile gpt3.ini --device a100-80gb --devices 1024 --heads 96 \\\n"
           "      --global-batch 1536 --no-run\n",
           PLAN_MAX_RUNS);
}

static int plan_opts_parse(plan_opts_t *o, int argc, char **argv)
{
    static const struct option longs[] = {
        {"profile", required_argument, 0, 'p'},
        {"device", required_argument, 0, 'D'},
        {"devices", required_argument, 0, 'n'},
        {"global-batch", required_argument, 0, 'b'},
        {"precision", required_argument, 0, 'P'},
        {"per-server", required_argument, 0, 'S'},
        {"heads", required_argument, 0, 'a'},
        {"set", required_argument, 0, 's'},
        {"steps", required_argument, 0, 'k'},
        {"jobs", required_argument, 0, 'j'},
        {"db", required_argument, 0, 'd'},
        {"top", required_argument, 0, 't'},
        {"max-runs", required_argument, 0, 'm'},
        {"no-run", no_argument, 0, 'N'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->precision = "bf16";
    o->db = DEFAULT_DB;
    o->per_server = 8;
    o->steps = 1;
    o->jobs = 1;
    o->top = 10;
    o->max_runs = PLAN_MAX_RUNS;
    int c, at = -1;
    long v;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":hj:", longs, &at)) != -1) {
        const char *name = argv[optind - 1]; /* the option itself where it takes no value */
        char named[32];
        snprintf(named, sizeof named, "--%s", c == 'j' ? "jobs" : at >= 0 ? longs[at].name : "");
        at = -1;
        switch (c) {
        case 'p':
            o->profile = optarg;
            break;
        case 'D':
            o->device = optarg;
            break;
        case 'P':
            o->precision = optarg;
            break;
        case 'N':
            o->no_run = 1;
            break;
        case 'd':
            if (!optarg[0])
                return cli_usage_error("plan", "--db needs a path");
            o->db = optarg;
            break;
        case 's':
            if (o->n_sets == PLAN_MAX_SETS)
                return cli_usage_error("plan", "more than %d --set options", PLAN_MAX_SETS);
            o->sets[o->n_sets++] = optarg;
            break;
        case 'n':
        case 'b':
        case 'S':
        case 'a':
        case 'k':
        case 'j':
        case 't':
        case 'm': {
            long hi = c == 'j' ? CLI_SWEEP_MAX_JOBS : c == 'm' ? PLAN_MAX_RUNS : 1000000000L;
            if (cli_parse_long(optarg, 1, hi, &v))
                return cli_usage_error("plan", "%s %s: expected an integer in [1, %ld]", named,
                                       optarg, hi);
            long *dst = c == 'n'   ? &o->devices
                        : c == 'b' ? &o->global_batch
                        : c == 'S' ? &o->per_server
                        : c == 'a' ? &o->heads
                        : c == 'k' ? &o->steps
                        : c == 't' ? &o->top
                                   : &o->max_runs;
            if (c == 'j')
                o->jobs = (int)v;
            else
                *dst = v;
            break;
        }
        case 'h':
            plan_help();
            return -1;
        case ':':
            return cli_usage_error("plan", "%s needs a value", name);
        default:
            return cli_usage_error("plan", "unknown option \"%s\"", name);
        }
    }
    if (optind < argc)
        return cli_usage_error("plan", "unexpected argument \"%s\"", argv[optind]);
    if (!o->profile || !o->device || !o->devices || !o->global_batch)
        return cli_usage_error("plan", "missing %s",
                               !o->profile   ? "--profile P"
                               : !o->device  ? "--device D"
                               : !o->devices ? "--devices N"
                                             : "--global-batch B");
    if (o->devices > o->per_server && o->devices % o->per_server)
        return cli_usage_error("plan",
                               "--devices %ld is not a whole number of servers of %ld "
                               "(--per-server)",
                               o->devices, o->per_server);
    return 0;
}

/* Pipeline stages must divide this: the profile's transformer layers (its attention cores,
 * layers named *.scores), or its pipeline pieces when it has none. */
static long profile_blocks(const sim_model_profile_t *prof)
{
    long blocks = 0, pieces = 1;
    for (int i = 0; i < prof->n_layers; i++) {
        const char *name = prof->layers[i].name;
        size_t len = strlen(name);
        blocks += len >= 7 && !strcmp(name + len - 7, ".scores");
        pieces += prof->layers[i].cut > 0;
    }
    return blocks ? blocks : pieces;
}

/* Every layout of o's devices and batch, in the order printed: tensor, then stages, from
 * small to large, then micro-batch size, then ZeRO. Returns how many went to out. */
static long plan_enumerate(const plan_opts_t *o, long blocks, int splits, plan_layout_t *out,
                           long max)
{
    static const long tensors[] = {1, 2, 4, 8}, sizes[] = {1, 2, 4};
    long n = 0;
    for (size_t ti = 0; ti < sizeof tensors / sizeof *tensors; ti++) {
        long t = tensors[ti];
        if (t > o->per_server || o->devices % t || (o->heads && o->heads % t) || (t > 1 && !splits))
            continue;
        for (long p = 1; p <= blocks && p <= 64; p++) {
            if (blocks % p || (o->devices / t) % p)
                continue;
            long d = o->devices / (t * p);
            if (o->global_batch % d)
                continue;
            long b = o->global_batch / d;
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                long mbs = sizes[si];
                if (b % mbs || b / mbs > 4096)
                    continue;
                for (int zero = 0; zero <= (d > 1); zero++) {
                    if (n == max)
                        return n;
                    out[n++] = (plan_layout_t){
                        .t = t, .p = p, .d = d, .mbs = mbs, .m = b / mbs, .zero = zero};
                }
            }
        }
    }
    return n;
}

static const char *const rc_names[] = {"", "selective", "full"}; /* sim_recompute_t */

static void layout_name(const plan_layout_t *l, char *buf, size_t n)
{
    char bucket[16] = "";
    if (l->bucket_mb)
        snprintf(bucket, sizeof bucket, " b%d", l->bucket_mb);
    snprintf(buf, n, "t%ld p%ld d%ld mb%ldx%ld z%d%s%s%s", l->t, l->p, l->d, l->mbs, l->m,
             l->zero, bucket, l->rc ? " " : "", rc_names[l->rc]);
}

/* The base scenario: every layout's keys but the layout's own. */
static void write_scenario(FILE *f, const plan_opts_t *o, const char *profile, const char *name)
{
    long per_server = o->devices < o->per_server ? o->devices : o->per_server;
    fprintf(f,
            "[run]\nname = %s\nsteps = %ld\neval_every = 0\ndb = %s\n"
            "[model]\narch = profile:%s\nprecision = %s\noptimizer = adam\n"
            "[cluster]\nplatform = multi-rack\nracks = %ld\nworkers = %ld\ndevice = %s\n"
            "bandwidth = 2400Gbps\nuplink_bandwidth = 1600Gbps\nlatency = 2us\n"
            "uplink_latency = 2us\nnetwork_model = CM02\n"
            "[strategy]\nkind = pipeline\nalgorithm = ring\npipeline_schedule = 1f1b\n"
            "tensor_comm = formula\n",
            name, o->steps, o->db, profile, o->precision, o->devices / per_server, o->devices,
            o->device);
}

/* Writes a scenario to a new temporary file; its path into path (PATH_MAX). */
static dt_status write_temp(char *path, const plan_opts_t *o, const char *profile, const char *name,
                            dt_err_t *err)
{
    const char *dir = getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
    snprintf(path, PATH_MAX, "%s/dtsim-plan-XXXXXX.ini", dir);
    int fd = mkstemps(path, 4);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return dt_err_input(err, "cannot write a scenario in %s: %s", dir, strerror(errno));
    write_scenario(f, o, profile, name);
    if (fclose(f) != 0)
        return dt_err_input(err, "cannot write %s: %s", path, strerror(errno));
    return DT_OK;
}

/* Loads the base scenario at path with the user's --set options, then the layout's, and
 * names the run after the profile (name) and the layout. */
static dt_status load_layout(scenario_t *sc, const char *path, const plan_opts_t *o,
                             const plan_layout_t *l, const char *name, dt_err_t *err)
{
    char keys[9][SCENARIO_STR];
    const char *sets[PLAN_MAX_SETS + 10];
    for (int i = 0; i < o->n_sets; i++)
        sets[i] = o->sets[i];
    snprintf(keys[0], sizeof keys[0], "strategy.tensor=%ld", l->t);
    snprintf(keys[1], sizeof keys[1], "strategy.stages=%ld", l->p);
    snprintf(keys[2], sizeof keys[2], "strategy.data_parallel=%ld", l->d);
    snprintf(keys[3], sizeof keys[3], "model.batch=%ld", l->m * l->mbs);
    snprintf(keys[4], sizeof keys[4], "strategy.micro_batches=%ld", l->m);
    char bucket[16] = "";
    if (l->bucket_mb)
        snprintf(bucket, sizeof bucket, "-b%d", l->bucket_mb);
    snprintf(keys[5], sizeof keys[5], "run.name=%.200s-t%ldp%ldd%ld-mb%ldx%ld-z%d%s%s%s", name,
             l->t, l->p, l->d, l->mbs, l->m, l->zero, bucket, l->rc ? "-" : "", rc_names[l->rc]);
    snprintf(keys[6], sizeof keys[6], "strategy.zero_stage=%d", l->zero ? l->zero : 1);
    snprintf(keys[7], sizeof keys[7], "model.recompute=%s", l->rc ? rc_names[l->rc] : "none");
    int n = o->n_sets;
    for (int i = 0; i < 6; i++)
        sets[n++] = keys[i];
    if (l->zero) {
        sets[n++] = "strategy.shard_optimizer=yes";
        sets[n++] = keys[6];
    }
    if (l->rc)
        sets[n++] = keys[7];
    if (l->bucket_mb) {
        snprintf(keys[8], sizeof keys[8], "strategy.bucket_mb=%d", l->bucket_mb);
        sets[n++] = keys[8];
    }
    return scenario_load(sc, path, sets, n, err);
}

/* msg without the temporary scenario's "PATH:LINE: " at its start: the user never saw it. */
static const char *without_path(const char *msg, const char *base)
{
    if (strncmp(msg, base, strlen(base)))
        return msg;
    msg += strlen(base);
    return msg + strspn(msg, ": 0123456789");
}

/* A layout's check under way: its child (cli_dry_run_start), or the error its scenario
 * gave when it did not load. */
typedef struct fit_check {
    cli_dry_t dry;
    dt_err_t err;
    int loaded;
} fit_check_t;

/* Starts the check of a layout's memory against the device's, as `dtsim check` finds it (no
 * simulation). sc: a scenario's room, free again when this returns. */
static void fit_start(const plan_layout_t *l, scenario_t *sc, const char *base,
                      const plan_opts_t *o, const char *name, const char *argv0, fit_check_t *c)
{
    c->err.msg[0] = '\0';
    c->loaded = load_layout(sc, base, o, l, name, &c->err) == DT_OK;
    if (c->loaded)
        cli_dry_run_start(sc, argv0, &c->dry);
}

/* The check's answer: into l->fits, and l->memory says how full or what does not fit. */
static void fit_finish(plan_layout_t *l, fit_check_t *c, const char *base)
{
    char memory[512] = "";
    l->fits = 0;
    if (c->loaded && cli_dry_run_finish(&c->dry, memory, sizeof memory, &c->err) == DT_OK) {
        l->fits = 1;
        snprintf(l->memory, sizeof l->memory, "%s", memory);
        return;
    }
    /* "cluster.device: does not fit: ...; set run.allow_oversubscribed_memory = yes to
     * time it anyway": the plan says what does not fit, and drops it */
    const char *why = without_path(c->err.msg, base);
    if (!strncmp(why, "cluster.device: ", 16))
        why += 16;
    snprintf(l->memory, sizeof l->memory, "%s", why);
    char *hint = strstr(l->memory, "; set run.allow_oversubscribed_memory");
    if (hint)
        *hint = '\0';
}

static void fit_one(plan_layout_t *l, scenario_t *sc, const char *base, const plan_opts_t *o,
                    const char *name, const char *argv0)
{
    fit_check_t c;
    fit_start(l, sc, base, o, name, argv0, &c);
    fit_finish(l, &c, base);
}

/* Each layout's fit, o->jobs checks at once (each is a child process). */
static void plan_fit(plan_layout_t *l, long n, const char *base, const plan_opts_t *o,
                     const char *name, const char *argv0)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    int slots = o->jobs > 1 ? o->jobs : 1;
    fit_check_t *c = dt_malloc(sizeof *c * (size_t)slots);
    for (long i = 0; i < n + slots; i++) {
        if (i >= slots && i - slots < n) /* the oldest first: answers in the listed order */
            fit_finish(&l[i - slots], &c[(i - slots) % slots], base);
        if (i < n)
            fit_start(&l[i], sc, base, o, name, argv0, &c[i % slots]);
    }
    free(c);
    free(sc);
}

/* The rows that fit with more saved than top, the last row of a layout whose most saving
 * row (ZeRO-1 with replicas, else ZeRO-0; no recomputation) does not fit: ZeRO stage z =
 * top's up to 3 (with replicas) and recompute none, selective (a profile with attention
 * cores) or full, each (z, rc) that fits when neither (z - 1, rc) nor a lesser rc at z does
 * (more ZeRO or more recomputation only costs time). Into out (at most max); returns how
 * many. */
static long plan_retry(const plan_layout_t *top, int attention, scenario_t *sc, const char *base,
                       const plan_opts_t *o, const char *name, const char *argv0,
                       plan_layout_t *out, long max)
{
    /* hopeless when the most saving (the highest stage with full, or selective, which
     * may keep less) does not fit: one or two checks, not up to eight */
    int zmax = top->d > 1 ? 3 : 0;
    plan_layout_t probe = *top;
    probe.zero = zmax;
    probe.rc = SIM_RECOMPUTE_FULL;
    fit_one(&probe, sc, base, o, name, argv0);
    if (!probe.fits && attention) {
        probe.rc = SIM_RECOMPUTE_SELECTIVE;
        fit_one(&probe, sc, base, o, name, argv0);
    }
    if (!probe.fits)
        return 0;
    long k = 0;
    int least = SIM_RECOMPUTE_FULL + 1; /* the least recomputation that fits so far */
    for (int z = top->zero; z <= zmax && least > 0; z++)
        for (int rc = 0; rc < least && k < max; rc++) {
            if ((z == top->zero && rc == 0) || (rc == SIM_RECOMPUTE_SELECTIVE && !attention))
                continue;
            out[k] = *top;
            out[k].zero = z;
            out[k].rc = (sim_recompute_t)rc;
            fit_one(&out[k], sc, base, o, name, argv0);
            if (out[k].fits) {
                k++;
                least = rc;
            }
        }
    return k;
}

/* At most (3 + 1) stages x 3 recomputations a layout's retries list. */
#define PLAN_MAX_RETRIES 12

/* A layout's retries under way in a child process (plan -j), which writes how many and the
 * rows to fd. */
typedef struct retry_child {
    pid_t pid; /* 0: none (ran here, rows in the slot) */
    int fd;
    long n;
    plan_layout_t rows[PLAN_MAX_RETRIES];
} retry_child_t;

static void retry_start(retry_child_t *c, const plan_layout_t *top, int attention, scenario_t *sc,
                        const char *base, const plan_opts_t *o, const char *name,
                        const char *argv0)
{
    int fds[2];
    c->pid = 0;
    fflush(NULL);
    if (pipe(fds) == 0 && (c->pid = fork()) == 0) {
        close(fds[0]);
        long n = plan_retry(top, attention, sc, base, o, name, argv0, c->rows, PLAN_MAX_RETRIES);
        int ok = write(fds[1], &n, sizeof n) == (ssize_t)sizeof n;
        for (long i = 0; ok && i < n; i++)
            ok = write(fds[1], &c->rows[i], sizeof c->rows[i]) == (ssize_t)sizeof c->rows[i];
        _exit(ok ? 0 : 1);
    }
    if (c->pid > 0) {
        close(fds[1]);
        c->fd = fds[0];
        return;
    }
    if (c->pid < 0) { /* no child: here, one after the other */
        close(fds[0]);
        close(fds[1]);
        c->pid = 0;
    }
    c->n = plan_retry(top, attention, sc, base, o, name, argv0, c->rows, PLAN_MAX_RETRIES);
}

/* Reads n bytes (a child's answer), 0 when they all came. */
static int read_all(int fd, void *p, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

static void retry_finish(retry_child_t *c)
{
    if (!c->pid)
        return;
    if (read_all(c->fd, &c->n, sizeof c->n) || c->n < 0 || c->n > PLAN_MAX_RETRIES ||
        read_all(c->fd, c->rows, sizeof c->rows[0] * (size_t)c->n))
        c->n = 0; /* a child that died: its retries are lost, the layout stays dropped */
    close(c->fd);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    c->pid = 0;
}

/* The layouts of l (n, as enumerated and fitted) into out (at most max), each layout's rows
 * followed by its retries (plan_retry) when the most saving of them does not fit; o->jobs
 * layouts' retries at once, each in a child process. Returns how many went to out. */
static long plan_more(const plan_layout_t *l, long n, int attention, const char *base,
                      const plan_opts_t *o, const char *name, const char *argv0,
                      plan_layout_t *out, long max)
{
    scenario_t *sc = dt_malloc(sizeof *sc);
    long *tops = dt_malloc(sizeof *tops * (size_t)(n + 1)), n_tops = 0;
    for (long i = 0; i < n; i++) {
        int last = i + 1 == n || l[i + 1].t != l[i].t || l[i + 1].p != l[i].p ||
                   l[i + 1].d != l[i].d || l[i + 1].mbs != l[i].mbs;
        if (last && !l[i].fits)
            tops[n_tops++] = i;
    }
    int slots = o->jobs > 1 ? o->jobs : 1;
    retry_child_t *c = dt_malloc(sizeof *c * (size_t)slots);
    long k = 0, started = 0, done = 0;
    for (long i = 0; i < n && k < max; i++) {
        out[k++] = l[i];
        if (done == n_tops || tops[done] != i)
            continue;
        while (started < n_tops && started < done + slots) {
            retry_start(&c[started % slots], &l[tops[started]], attention, sc, base, o, name,
                        argv0);
            started++;
        }
        retry_child_t *r = &c[done++ % slots];
        retry_finish(r);
        for (long j = 0; j < r->n && k < max; j++)
            out[k++] = r->rows[j];
    }
    while (done < started) /* out was full: the children still end */
        retry_finish(&c[done++ % slots]);
    free(c);
    free(tops);
    free(sc);
    return k;
}

/* The layouts of l (n) into out (at most max), each fitting one with replicas and without
 * ZeRO followed by the same with gradient buckets of PLAN_BUCKET_MB all-reduced during the
 * last backward pass (the pipeline takes buckets without ZeRO only); they hold the same
 * memory. Returns how many went to out. */
static long plan_buckets(const plan_layout_t *l, long n, plan_layout_t *out, long max)
{
    long k = 0;
    for (long i = 0; i < n && k < max; i++) {
        out[k++] = l[i];
        if (l[i].d > 1 && !l[i].zero && l[i].fits && k < max) {
            out[k] = l[i];
            out[k++].bucket_mb = PLAN_BUCKET_MB;
        }
    }
    return k;
}

/* The sweep's runs back from the database: step time, throughput, memory, energy, cost. */
static dt_status plan_read(plan_layout_t *l, long n, const int *ran, const char *db,
                           const char *sweep, dt_err_t *err)
{
    long *index = dt_malloc(sizeof *index * (size_t)(n + 1)); /* sweep index -> layout */
    long k = 0;
    for (long i = 0; i < n; i++)
        if (ran[i])
            index[k++] = i;
    results_query_t *q = NULL;
    results_runs_t runs = {0};
    dt_status st = results_query_open(&q, db, err);
    if (st == DT_OK)
        st = results_query_sweep(q, sweep, &runs, err);
    for (size_t r = 0; st == DT_OK && r < runs.n; r++) {
        const results_run_view_t *v = &runs.v[r];
        if (v->sweep_index < 0 || v->sweep_index >= k || strcmp(v->status, "finished"))
            continue;
        plan_layout_t *x = &l[index[v->sweep_index]];
        x->run = v->id;
        x->step_s = v->steps > 0 ? v->sim_time / (double)v->steps : NAN;
        x->samples_s = v->throughput;
        results_memory_t mem;
        results_energy_view_t en;
        int found = 0;
        st = results_query_memory(q, v->id, &mem, &found, err);
        x->mem_bytes = found ? mem.params + mem.grads + mem.optimizer +
                                   (isnan(mem.activations) ? 0 : mem.activations)
                             : NAN;
        if (st == DT_OK)
            st = results_query_energy(q, v->id, &en, err);
        if (st == DT_OK) {
            double link = isnan(en.link_joules) ? 0 : en.link_joules;
            x->joules = v->steps > 0 ? (en.host_joules + link) / (double)v->steps : NAN;
            x->dollars_per_sample = en.dollars_per_sample;
        }
    }
    results_runs_free(&runs);
    results_query_close(q);
    free(index);
    return st;
}

static int by_step_time(const void *a, const void *b)
{
    const plan_layout_t *x = a, *y = b;
    double u = x->run ? x->step_s : INFINITY, w = y->run ? y->step_s : INFINITY;
    return (u > w) - (u < w);
}

static void print_list(const plan_layout_t *l, long n)
{
    char name[64];
    printf("%-30s %s\n", "layout", "memory (dtsim check)");
    for (long i = 0; i < n; i++) {
        layout_name(&l[i], name, sizeof name);
        printf("%-30s %s %s\n", name, l[i].fits ? "fits:" : "dropped:",
               l[i].memory[0] ? l[i].memory : "no capacity stated");
    }
}

static void print_best(const plan_layout_t *l, long n, long top, const plan_opts_t *o,
                       double flops_per_sample)
{
    char name[64];
    printf("\nbest layouts by step time (t tensor, p stages, d replicas, mb SIZExCOUNT "
           "micro-batches, z ZeRO stage, b%d gradient buckets of %d MB if any, then the "
           "recomputation if any):\n",
           PLAN_BUCKET_MB, PLAN_BUCKET_MB);
    printf("%-4s %-30s %6s %12s %10s %10s %12s %12s %12s\n", "rank", "layout", "run", "s/step",
           "samples/s", "memory GB", "TFLOP/s/dev", "kJ/step", "$/1k samples");
    for (long i = 0, shown = 0; i < n && shown < top; i++) {
        if (!l[i].run)
            continue;
        layout_name(&l[i], name, sizeof name);
        double tflops =
            flops_per_sample * (double)o->global_batch / l[i].step_s / (double)o->devices / 1e12;
        char kj[32] = "-", dollars[32] = "-"; /* none: no power figures, no price */
        if (!isnan(l[i].joules))
            snprintf(kj, sizeof kj, "%.4g", l[i].joules / 1e3);
        if (!isnan(l[i].dollars_per_sample))
            snprintf(dollars, sizeof dollars, "%.4g", 1000 * l[i].dollars_per_sample);
        printf("%-4ld %-30s %6lld %12.6g %10.4g %10.4g %12.4g %12s %12s\n", ++shown, name,
               (long long)l[i].run, l[i].step_s, l[i].samples_s, l[i].mem_bytes / 1e9, tflops, kj,
               dollars);
    }
}

int cli_plan(int argc, char **argv)
{
    plan_opts_t o;
    int rc = plan_opts_parse(&o, argc, argv);
    if (rc)
        return rc < 0 ? CLI_EXIT_OK : rc;

    /* the profile: a file by its absolute path, as the temporary scenario lies elsewhere */
    char profile[PATH_MAX];
    if (sim_model_profile_is_file(o.profile)) {
        if (!realpath(o.profile, profile))
            return cli_usage_error("plan", "--profile %s: %s", o.profile, strerror(errno));
    } else {
        snprintf(profile, sizeof profile, "%s", o.profile);
    }
    /* a device file likewise (the catalogue's names end in no .ini) */
    char device[PATH_MAX];
    size_t dlen = strlen(o.device);
    if (dlen > 4 && !strcmp(o.device + dlen - 4, ".ini")) {
        if (!realpath(o.device, device))
            return cli_usage_error("plan", "--device %s: %s", o.device, strerror(errno));
        o.device = device;
    }
    sim_model_profile_t prof;
    dt_err_t err;
    if (sim_model_profile_load(&prof, profile, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    long blocks = profile_blocks(&prof);
    int splits = prof.has_tensor_splits, attention = sim_profile_has_attention(&prof);
    double flops_per_sample = prof.forward_flops + prof.backward_flops;
    char name[SCENARIO_STR];
    snprintf(name, sizeof name, "plan-%s", prof.name);
    sim_model_profile_free(&prof);

    plan_layout_t *l = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *l), *more = NULL;
    int *run = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *run);
    char base[PATH_MAX] = "";
    scenario_t *list = NULL;
    long n = plan_enumerate(&o, blocks, splits, l, PLAN_MAX_LAYOUTS);
    rc = CLI_EXIT_USAGE;
    if (!n) {
        cli_usage_error("plan",
                        "no layout of %ld devices (tensor 1, 2, 4, 8 of at most %ld "
                        "per server, stages dividing %ld layers) divides the global "
                        "batch of %ld",
                        o.devices, o.per_server, blocks, o.global_batch);
        goto done;
    }
    if (write_temp(base, &o, profile, name, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        goto done;
    }
    /* a bad --set, device or precision is the user's, named once, not once per layout */
    scenario_t *sc = dt_malloc(sizeof *sc);
    dt_status st = load_layout(sc, base, &o, &l[0], name, &err);
    free(sc);
    if (st && (strstr(err.msg, "--set") || strstr(err.msg, "cluster.device") ||
               strstr(err.msg, "model.precision"))) {
        fprintf(stderr, "dtsim plan: %s\n", without_path(err.msg, base));
        goto done;
    }
    plan_fit(l, n, base, &o, name, argv[0]);
    more = dt_calloc(PLAN_MAX_LAYOUTS, sizeof *more);
    n = plan_more(l, n, attention, base, &o, name, argv[0], more, PLAN_MAX_LAYOUTS);
    n = plan_buckets(more, n, l, PLAN_MAX_LAYOUTS);
    long fit = 0, runs = 0;
    for (long i = 0; i < n; i++) {
        fit += l[i].fits;
        run[i] = l[i].fits && runs < o.max_runs;
        runs += run[i];
    }
    printf("plan: %s on %ld x %s, global batch %ld, %s: %ld layouts, %ld fit, %ld to "
           "simulate\n",
           name + 5, o.devices, o.device, o.global_batch, o.precision, n, fit, runs);
    print_list(l, n);
    fflush(stdout);
    if (!fit) { /* the list above says what each would hold */
        fprintf(stderr,
                "dtsim plan: none of the %ld layouts of %s on %ld x %s fits its memory (the "
                "list says what each holds): more --devices, a --device with more memory, or "
                "--set run.allow_oversubscribed_memory=yes to time them anyway\n",
                n, name + 5, o.devices, o.device);
        goto done; /* rc: CLI_EXIT_USAGE */
    }
    rc = CLI_EXIT_OK;
    if (o.no_run || !runs)
        goto done;

    /* the default database's folder is made when missing, as `dtsim run` makes it */
    if (!strcmp(o.db, DEFAULT_DB) && mkdir("results", 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dtsim plan: cannot create results/ for %s: %s\n", DEFAULT_DB,
                strerror(errno));
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    /* the fitting layouts as one sweep, in the order listed: run index k is the k-th */
    list = dt_malloc(sizeof *list * (size_t)runs);
    char sweep[SCENARIO_STR + 64] = "";
    for (long i = 0, k = 0; i < n; i++)
        if (run[i] && load_layout(&list[k++], base, &o, &l[i], name, &err)) {
            fprintf(stderr, "dtsim plan: %s\n", err.msg); /* it loaded a moment ago */
            rc = CLI_EXIT_USAGE;
            goto done;
        }
    rc = cli_sweep_run_list(list, runs, name, o.jobs, argv[0], sweep, sizeof sweep);
    if (rc == CLI_EXIT_USAGE || !sweep[0])
        goto done;
    if (plan_read(l, n, run, o.db, sweep, &err)) {
        fprintf(stderr, "dtsim plan: %s\n", err.msg);
        rc = CLI_EXIT_RUN;
        goto done;
    }
    qsort(l, (size_t)n, sizeof *l, by_step_time);
    print_best(l, n, o.top, &o, flops_per_sample);
    printf("TFLOP/s/dev: the profile's %.4g FLOP per sample (forward and backward, no "
           "recomputation) x %ld samples / s/step / %ld devices\n",
           flops_per_sample, o.global_batch, o.devices);

done:
    if (base[0])
        unlink(base);
    free(list);
    free(run);
    free(l);
    free(more);
    return rc;
}
