/* `dtsim run SCENARIO` and `dtsim check SCENARIO` (and platform, bench sim, keys, strategies):
 * read and validate a scenario (with --set overrides), print its resolved configuration
 * (check) or hand it to the run service (cli_exec.h): in this process, as a sweep of child
 * processes (cli_sweep.h), over MPI (--real, --mpi). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>

#include "cli.h"
#include "cli_exec.h"
#include "cli_spread.h"
#include "cli_sweep.h"
#include "cli_util.h"
#include "jobs.h"
#include "run.h"
#include "scenario.h"
#include "strategy.h"
#include "transport_mpi.h"

#define MAX_SETS 256

typedef struct run_opts {
    const char *scenario;
    const char *sets[MAX_SETS];
    int n_sets;
    const char *db;
    int jobs;           /* sweep runs at once */
    int links;          /* platform: list hosts and links instead of the XML */
    const char *member; /* run: one member of the sweep ("all": every one), or NULL */
    int live;           /* run: CLI_LIVE_TERM (--live), CLI_LIVE_PUBLISH (--publish), or both */
    double pace;        /* run --live / --publish: simulated seconds per wall second, 0: none */
    int real;           /* run --real: real processes over MPI, one per host */
    int mpi;            /* run --mpi: a sweep's members spread over MPI processes */
    int resume;         /* run --resume: continue the stored sweep of this scenario */
} run_opts_t;

/* The option that asked for a live view, for messages. */
static const char *live_option(int live)
{
    return live & CLI_LIVE_TERM ? "--live" : "--publish";
}

enum {
    OPT_SET = 1,
    OPT_DB,
    OPT_JOBS,
    OPT_LINKS,
    OPT_LIVE,
    OPT_MEMBER,
    OPT_PACE,
    OPT_PUBLISH,
    OPT_REAL,
    OPT_MPI,
    OPT_RESUME,
};

#define OPTION_SET                                                                                 \
    {                                                                                              \
        .id = OPT_SET, .name = "set", .kind = CLI_VALUE_TEXT, .metavar = "section.key=value",      \
        .help = "override a scenario key (repeatable)"                                             \
    }
#define SCENARIO_FOOTER                                                                            \
    "Scenario keys, their defaults and units: scenarios/keys.md, or dtsim keys.\n"

static const cli_option run_options[] = {
    OPTION_SET,
    {.id = OPT_DB,
     .name = "db",
     .kind = CLI_VALUE_PATH,
     .metavar = "PATH",
     .help = "results database [run.db: " DEFAULT_DB "]"},
    {.id = OPT_JOBS,
     .name = "jobs",
     .alias = 'j',
     .kind = CLI_VALUE_INT,
     .metavar = "N",
     .help = "sweep runs at once, 1 to 256 [1]",
     .lo = 1,
     .hi = CLI_SWEEP_MAX_JOBS},
    {.id = OPT_RESUME,
     .name = "resume",
     .help =
         "continue the sweep of this scenario (the same file and --set options) stored in --db: "
         "run only the members without a finished run, under its id"},
    {.id = OPT_MEMBER,
     .name = "member",
     .kind = CLI_VALUE_TEXT,
     .metavar = "I",
     .help =
         "run member I (0, 1, ... as dtsim check lists them) of the sweep alone, into --db, as one "
         "job of a job array [SLURM_ARRAY_TASK_ID when set; all: every member]; dtsim merge joins "
         "the members' databases"},
    {.id = OPT_LIVE,
     .name = "live",
     .help =
         "redraw a view of the run on the terminal while it runs: per host its steps and compute / "
         "communication / idle shares, accuracy so far (one run, not a sweep; stderr a terminal)"},
    {.id = OPT_PUBLISH,
     .name = "publish",
     .help =
         "write the run's state beside the database while it runs (DB.live-RUN.json, a few times a "
         "second) for dtsim serve's live page, and take the changes the page asks for "
         "(faults.live_links: bandwidth, latency; faults.live_hosts: crash, straggler)"},
    {.id = OPT_PACE,
     .name = "pace",
     .kind = CLI_VALUE_FLOAT,
     .metavar = "S",
     .help =
         "with --live or --publish: at most S simulated seconds per second of wall-clock time, to "
         "watch a short run",
     .lo = 1e-9,
     .hi = 1e12},
    {.id = OPT_REAL,
     .name = "real",
     .help = "run it for real under mpirun, one process per host of the scenario (mpirun -n HOSTS "
             "dtsim "
             "run SCENARIO --real): the same strategy code, real messages, the wall clock; rank 0 "
             "stores the run as NAME-real (the strategies that run real: dtsim strategies)"},
    {.id = OPT_MPI,
     .name = "mpi",
     .help =
         "under mpirun -n P: spread the sweep's members over the P processes (simulated runs, any "
         "machines); rank 0 merges them into --db"},
    {0},
};

const cli_spec cli_run_spec = {
    .usage = "SCENARIO [--set section.key=value ...] [--db PATH] [-j N] [--resume]\n"
             "[--member I|all] [--live] [--publish] [--pace S] [--real | --mpi]",
    .about = "Runs a scenario in the simulated cluster and stores it; a scenario with a\n"
             "[sweep] runs every combination, each in its own process; a file of jobs\n"
             "([jobs] files = A.ini, B.ini) runs its jobs in one simulation on its\n"
             "platform, each stored as its own run.\n"
             "\n"
             "exit code: 0 finished; 1 a run failed, diverged, stalled or collapsed;\n"
             "2 bad input; 130 (128 + SIGINT) or 143 (SIGTERM) when stopped by that\n"
             "signal, after storing its runs as interrupted and printing the summary.\n",
    .options = run_options,
    .footer = SCENARIO_FOOTER,
};

static const cli_option check_options[] = {
    OPTION_SET,
    {.id = OPT_REAL,
     .name = "real",
     .help = "also what dtsim run --real would refuse (a strategy that does not run real, a model "
             "profile, faults real mode cannot play ...)"},
    {0},
};

const cli_spec cli_check_spec = {
    .usage = "SCENARIO [--set section.key=value ...] [--real]",
    .about = "Validates a scenario (every run of its [sweep], every job of its [jobs]) and\n"
             "prints its runs (jobs with their hosts) and its resolved configuration.\n",
    .options = check_options,
    .footer = SCENARIO_FOOTER,
};

static const cli_option platform_options[] = {
    OPTION_SET,
    {.id = OPT_LINKS, .name = "links", .help = "list hosts and links instead of the XML"},
    {0},
};

const cli_spec cli_platform_spec = {
    .usage = "SCENARIO [--set section.key=value ...] [--links]",
    .about = "Prints the SimGrid platform XML the scenario generates, or with --links the\n"
             "hosts (with the node each one runs) and the links of the loaded platform:\n"
             "the names that [faults] crash, link_down and link_degrade take.\n",
    .options = platform_options,
    .footer = SCENARIO_FOOTER,
};

static const cli_option bench_sim_options[] = {OPTION_SET, {0}};

const cli_spec cli_bench_sim_spec = {
    .usage = "SCENARIO [--set section.key=value ...]",
    .about = "Measures the simulation's own cost: runs the scenario without a database,\n"
             "then the same number of real gradient steps and updates at the same batch\n"
             "size with the plain trainer and no simulation, and prints both wall and CPU\n"
             "times (evaluation timed apart and left out of both).\n",
    .options = bench_sim_options,
    .footer = SCENARIO_FOOTER,
};

/* Reads the options of cmd (run, check, platform, bench sim: spec its table) into o.
 * Returns 0, -1 after --help, or CLI_EXIT_USAGE (reported). */
static int run_opts_parse(run_opts_t *o, const char *cmd, const cli_spec *spec, int argc,
                          char **argv)
{
    memset(o, 0, sizeof *o);
    o->jobs = 1;
    int id;
    cli_parser p;
    cli_parse_init(&p, cmd, spec, argc, argv);
    while ((id = cli_parse_next(&p)) > 0) {
        switch (id) {
        case OPT_SET:
            if (o->n_sets == MAX_SETS)
                return cli_usage_error(cmd, "more than %d --set options", MAX_SETS);
            o->sets[o->n_sets++] = p.value;
            break;
        case OPT_DB:
            o->db = p.value;
            break;
        case OPT_JOBS:
            o->jobs = (int)p.integer;
            break;
        case OPT_MEMBER:
            o->member = p.value;
            break;
        case OPT_LIVE:
            o->live |= CLI_LIVE_TERM;
            break;
        case OPT_PUBLISH:
            o->live |= CLI_LIVE_PUBLISH;
            break;
        case OPT_PACE:
            o->pace = p.number;
            break;
        case OPT_REAL:
            o->real = 1;
            break;
        case OPT_MPI:
            o->mpi = 1;
            break;
        case OPT_RESUME:
            o->resume = 1;
            break;
        case OPT_LINKS:
            o->links = 1;
            break;
        }
    }
    if (id < 0)
        return p.status == CLI_EXIT_OK ? -1 : p.status;
    if (o->pace > 0 && !o->live)
        return cli_usage_error(cmd, "--pace paces the live view: it needs --live or --publish");
    if (!p.n_args)
        return cli_usage_error(cmd, "missing SCENARIO file");
    if (p.n_args > 1)
        return cli_usage_error(cmd, "unexpected argument \"%s\"", p.args[1]);
    o->scenario = p.args[0];
    return 0;
}

/* Parses a command's options and loads its scenario. Returns NULL with *rc set (0 after
 * --help, 2 on a usage or scenario error, already reported) or the scenario to free. */
static scenario_t *load_scenario(run_opts_t *o, const char *cmd, const cli_spec *spec, int argc,
                                 char **argv, int *rc)
{
    *rc = run_opts_parse(o, cmd, spec, argc, argv);
    if (*rc) {
        *rc = *rc < 0 ? CLI_EXIT_OK : *rc;
        return NULL;
    }
    scenario_t *sc = dt_malloc(sizeof *sc);
    dt_err_t err;
    if (scenario_load(sc, o->scenario, o->sets, o->n_sets, &err)) {
        fprintf(stderr, "dtsim %s: %s\n", cmd, err.msg);
        free(sc);
        *rc = CLI_EXIT_USAGE;
        return NULL;
    }
    return sc;
}

/* `dtsim check` of a file of jobs: every job read and checked as a run would, its hosts. */
static int check_jobs(const scenario_t *top, const char *argv0)
{
    sim_jobs_t j;
    dt_err_t err;
    char memory[512];
    int rc = CLI_EXIT_OK;
    if (sim_jobs_load(&j, top, &err)) {
        fprintf(stderr, "dtsim check: %s\n", err.msg);
        sim_jobs_free(&j);
        return CLI_EXIT_USAGE;
    }
    printf("# %s: %d jobs on %ld hosts (%s)\n", top->path, j.n, top->workers,
           top->jobs_placement == SIM_PLACEMENT_PACKED ? "packed" : "interleaved");
    for (int i = 0; i < j.n && rc == CLI_EXIT_OK; i++) {
        /* alone on a platform of its own: its data, model and memory, as a run meets them */
        if (cli_check_scenario(&j.sc[i], argv0, CLI_CHECK_DRY, memory, sizeof memory, &err)) {
            fprintf(stderr, "dtsim check: %s\n", err.msg);
            rc = CLI_EXIT_USAGE;
            break;
        }
        printf("# job %d: %s (%s): %s, hosts", i + 1, j.sc[i].name, j.path[i],
               j.sc[i].strategy->name);
        for (int k = 0; k < j.n_hosts[i]; k++)
            printf(" node-%d", j.hosts[i][k]);
        printf("%s%s\n", memory[0] ? "; memory: " : "", memory);
    }
    if (rc == CLI_EXIT_OK)
        scenario_write(top, stdout);
    sim_jobs_free(&j);
    return rc;
}

/* Adds name to the ", "-separated list (size n) unless it is there. */
static void name_add(char *list, size_t n, const char *name)
{
    size_t len = strlen(name), at = 0;
    for (const char *p = list; *p; p += at) {
        at = strcspn(p, ",");
        if (at == len && !strncmp(p, name, len))
            return;
        at += p[at] == ',' ? 2 : 0;
    }
    size_t used = strlen(list);
    snprintf(list + used, n - used, "%s%s", used ? ", " : "", name);
}

/* One warning line on stderr when runs of sc's sweep share a run.eval_every that counts
 * rounds for some strategies (those with a horizon of their own: federated) and steps for
 * others: their evaluations fall at points that do not compare. */
static void check_eval_counts(const scenario_t *sc, long n)
{
    scenario_t *a = dt_malloc(sizeof *a), *b = dt_malloc(sizeof *b);
    dt_err_t err;
    for (long i = 0; i < n; i++) {
        if (scenario_sweep_run(sc, i, a, &err) || a->eval_every <= 0 || !a->strategy->horizon)
            continue;
        char rounds[256] = "", steps[256] = "";
        for (long j = 0; j < n; j++) {
            if (scenario_sweep_run(sc, j, b, &err) || b->eval_every != a->eval_every)
                continue;
            name_add(b->strategy->horizon ? rounds : steps,
                     b->strategy->horizon ? sizeof rounds : sizeof steps, b->strategy->name);
        }
        if (steps[0]) {
            fprintf(stderr,
                    "dtsim check: %s: warning: run.eval_every = %ld counts rounds for "
                    "%s but steps for %s: their evaluations do not fall at comparable "
                    "points (with run.eval_every = 0, run.eval_samples evaluates "
                    "every run after the same numbers of training samples, "
                    "run.eval_interval at the same simulated times)\n",
                    sc->path, a->eval_every, rounds, steps);
            break;
        }
    }
    free(a);
    free(b);
}

int cli_check(int argc, char **argv)
{
    run_opts_t o;
    int rc;
    scenario_t *sc = load_scenario(&o, "check", &cli_check_spec, argc, argv, &rc);
    if (!sc)
        return rc;
    if (sim_jobs_given(sc)) {
        rc = check_jobs(sc, argv[0]);
        free(sc);
        return rc;
    }
    long n = scenario_sweep_count(sc);
    rc = CLI_EXIT_OK;
    dt_err_t err;
    char memory[512];
    /* the platform file as a run would load it, what real mode refuses (--real), what a run
     * meets before its first step (a sweep's runs each below) */
    unsigned stages = CLI_CHECK_PLATFORM | CLI_CHECK_DRY | (o.real ? CLI_CHECK_REAL : 0);
    if (!sc->sweep.n_keys && cli_check_scenario(sc, argv[0], stages, memory, sizeof memory, &err)) {
        fprintf(stderr, "dtsim check: %s\n", err.msg);
        free(sc);
        return CLI_EXIT_USAGE;
    }
    printf("# %s: %ld run%s\n", o.scenario, n, n == 1 ? "" : "s");
    if (!sc->sweep.n_keys && memory[0])
        printf("# memory: %s\n", memory);
    if (sc->sweep.n_keys) {
        scenario_t *run = dt_malloc(sizeof *run);
        for (long i = 0; i < n && rc == CLI_EXIT_OK; i++) {
            if (scenario_sweep_run(sc, i, run, &err) ||
                cli_check_scenario(run, argv[0], stages, memory, sizeof memory, &err)) {
                fprintf(stderr, "dtsim check: %s\n", err.msg);
                rc = CLI_EXIT_USAGE;
            } else {
                printf("# run %ld: %s%s%s\n", i, run->name, memory[0] ? "; memory: " : "", memory);
            }
        }
        free(run);
    }
    if (rc == CLI_EXIT_OK && sc->sweep.n_keys)
        check_eval_counts(sc, n);
    if (rc == CLI_EXIT_OK)
        scenario_write(sc, stdout);
    free(sc);
    return rc;
}

/* Hosts (and the node on each) and links of the scenario's platform, as loaded. */
static int platform_links(const scenario_t *sc, const char *argv0)
{
    sim_transport_init(argv0);
    sim_platform_t p;
    dt_err_t err;
    if (sim_platform_load(&p, sc, &err)) {
        fprintf(stderr, "dtsim platform: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    sim_platform_print(&p, sc->strategy->worker_role, stdout);
    sim_platform_free(&p);
    return CLI_EXIT_OK;
}

int cli_platform(int argc, char **argv)
{
    run_opts_t o;
    int rc;
    scenario_t *sc = load_scenario(&o, "platform", &cli_platform_spec, argc, argv, &rc);
    if (!sc)
        return rc;
    if (o.links) {
        rc = platform_links(sc, argv[0]);
        free(sc);
        return rc;
    }
    if (sc->platform == SIM_PLATFORM_FILE) {
        fprintf(stderr,
                "dtsim platform: %s: the scenario's platform is a file (%s); --links "
                "lists its hosts and links\n",
                o.scenario, sc->platform_file);
        free(sc);
        return CLI_EXIT_USAGE;
    }
    dt_err_t err;
    sim_platform_plan_t plan;
    dt_status st = sim_platform_plan(&plan, sc, &err);
    if (st)
        fprintf(stderr, "dtsim platform: %s\n", err.msg);
    else
        sim_platform_write_xml(&plan, stdout);
    sim_platform_plan_free(&plan);
    free(sc);
    return st ? CLI_EXIT_USAGE : CLI_EXIT_OK;
}

/* Which member of the sweep to run alone: --member I, or SLURM_ARRAY_TASK_ID in a job
 * array; -1 (every member, or no sweep). Returns the exit code of a bad value. */
static int member_of(const run_opts_t *o, const scenario_t *sc, long *member)
{
    const char *text = o->member, *from = "--member ";
    if (!text && sc->sweep.n_keys && getenv("SLURM_ARRAY_TASK_ID")) {
        text = getenv("SLURM_ARRAY_TASK_ID");
        from = "SLURM_ARRAY_TASK_ID=";
    }
    *member = -1;
    if (!text || (o->member && !strcmp(text, "all")))
        return CLI_EXIT_OK;
    if (!sc->sweep.n_keys)
        return cli_usage_error("run", "--member %s: %s has no [sweep] (it is one run)", text,
                               sc->path);
    long n = scenario_sweep_count(sc);
    if (cli_parse_long(text, 0, n - 1, member))
        return cli_usage_error("run", "%s%s: %s is a sweep of %ld runs (members 0 to %ld%s)", from,
                               text, sc->path, n, n - 1,
                               o->member ? ", or all" : "; --member all runs every one");
    return CLI_EXIT_OK;
}

/* The sweep id every member of one sweep stores, whichever job runs it: NAME-slurmJOB in a
 * Slurm job array, else NAME- and a hash of the sweep's resolved scenario (the database it
 * writes to left out, as each job may write its own). */
static void member_sweep_id(const scenario_t *sc, char *id, size_t size)
{
    const char *job = getenv("SLURM_ARRAY_JOB_ID");
    if (job && job[0] && strspn(job, "0123456789") == strlen(job)) {
        snprintf(id, size, "%s-slurm%s", sc->name, job);
        return;
    }
    char hash[24];
    cli_sweep_fingerprint(sc, hash, sizeof hash);
    snprintf(id, size, "%s-%s", sc->name, hash);
}

/* One member of base's sweep, in this process, under the sweep's id and its index. */
static int run_member(const scenario_t *base, long member, const run_opts_t *o, const char *argv0)
{
    if ((o->live & CLI_LIVE_TERM) && !isatty(STDERR_FILENO))
        return cli_usage_error("run", "--live draws on a terminal and stderr is not one");
    scenario_t *run = dt_malloc(sizeof *run);
    dt_err_t err;
    int rc;
    if (scenario_sweep_run(base, member, run, &err)) {
        fprintf(stderr, "dtsim run: %s\n", err.msg);
        rc = CLI_EXIT_USAGE;
    } else {
        char id[SCENARIO_STR + 64];
        member_sweep_id(base, id, sizeof id);
        rc = cli_exec_run(run, argv0, id, member, 1, o->live, o->pace);
        if (rc != CLI_EXIT_USAGE && sim_real_rank() == 0)
            printf("member %ld of %ld of sweep %s (dtsim merge joins the members' databases)\n",
                   member, scenario_sweep_count(base), id);
    }
    free(run);
    return rc;
}

/* The rank the MPI launcher gave this process (Open MPI, PMIx, MPICH), -1 without one: the
 * processes of a --real run other than rank 0 keep quiet about a scenario they all read. */
static int launcher_rank(void)
{
    static const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && v[0])
            return atoi(v);
    }
    return -1;
}

/* `--real`: one run (a scenario, or one member of its sweep) on real processes under
 * mpirun, one per host; every process returns rank 0's exit code. */
/* The processes of a --real run that stops before running: rank 0 has said why; every
 * process meets the others before exiting, so that mpirun, which ends the job at the first
 * process that fails, does not cut rank 0's line. Without MPI there is no one to meet. */
static int real_refused(int rc)
{
    dt_err_t err;
    if (sim_transport_is_real() || !sim_real_init(NULL, NULL, &err)) { /* MPI up, or now */
        sim_real_min_long(0);
        sim_real_finalize();
    }
    return rc;
}

static int run_real(const scenario_t *sc, const run_opts_t *o, long member, const char *argv0)
{
    dt_err_t err;
    if (sim_real_init(NULL, NULL, &err)) {
        if (launcher_rank() <= 0)
            fprintf(stderr, "dtsim run: %s\n", err.msg);
        return CLI_EXIT_USAGE;
    }
    char why[SCENARIO_STR + 128] = "";
    if (o->live)
        snprintf(why, sizeof why,
                 "%s shows a simulation; a --real run prints its "
                 "progress as it goes",
                 live_option(o->live));
    else if (o->jobs > 1)
        snprintf(why, sizeof why, "--real runs one run on every process: -j does not apply");
    else if (sc->sweep.n_keys && member < 0)
        snprintf(why, sizeof why,
                 "--real runs one run and %s is a sweep of %ld runs "
                 "(--member I runs one of them)",
                 sc->path, scenario_sweep_count(sc));
    if (why[0]) {
        if (sim_real_rank() == 0)
            cli_usage_error("run", "%s", why);
        return real_refused(CLI_EXIT_USAGE);
    }
    long rc =
        member >= 0 ? run_member(sc, member, o, argv0) : cli_exec_run(sc, argv0, NULL, 0, 1, 0, 0);
    sim_real_bcast_long(&rc);
    sim_real_finalize();
    return (int)rc;
}

/* A run stopped by SIGINT or SIGTERM (stored interrupted, its summary printed) ends dtsim on
 * that signal, as a sweep and plan do: 130 or 143 to the shell, and a caller's own handler
 * sees the signal. */
static int end_on_signal(int rc)
{
    int sig = sim_run_stop_signal();
    if (sig) {
        fflush(NULL);
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return rc;
}

int cli_run(int argc, char **argv)
{
    run_opts_t o;
    int rc;
    /* under mpirun (--real, --mpi), every process reads the scenario: rank 0 alone says
     * what is wrong with it, and all meet before exiting (real_refused) */
    int under_mpi = 0;
    for (int i = 1; i < argc; i++)
        under_mpi |=
            (!strcmp(argv[i], "--real") || !strcmp(argv[i], "--mpi")) && launcher_rank() >= 0;
    int saved = -1; /* stderr, while a rank other than 0 reads the scenario */
    if (under_mpi && launcher_rank() > 0) {
        int null = open("/dev/null", O_WRONLY);
        fflush(stderr);
        saved = null >= 0 ? dup(STDERR_FILENO) : -1;
        if (saved >= 0)
            dup2(null, STDERR_FILENO);
        if (null >= 0)
            close(null);
    }
    scenario_t *sc = load_scenario(&o, "run", &cli_run_spec, argc, argv, &rc);
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (!sc && rc == CLI_EXIT_USAGE && under_mpi)
        return real_refused(rc);
    if (!sc)
        return rc;
    if (o.db)
        snprintf(sc->db, sizeof sc->db, "%s", o.db);
    if (!sc->db[0] || !strcmp(sc->db, ":memory:")) {
        fprintf(stderr, "dtsim run: %s: run.db = \"%s\" keeps nothing (expected a file)\n",
                sc->path, sc->db);
        free(sc);
        return CLI_EXIT_USAGE;
    }
    /* the default database's folder is made when missing (a path the user gives is not) */
    if (!strcmp(sc->db, DEFAULT_DB) && mkdir("results", 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dtsim run: cannot create results/ for %s: %s\n", DEFAULT_DB,
                strerror(errno));
        free(sc);
        return CLI_EXIT_USAGE;
    }
    long member = -1;
    if ((rc = member_of(&o, sc, &member)) != CLI_EXIT_OK) {
        free(sc);
        return rc;
    }
    if (o.resume &&
        (!sc->sweep.n_keys || o.real || o.mpi || member >= 0 || o.live || sim_jobs_given(sc))) {
        rc = !sc->sweep.n_keys || sim_jobs_given(sc)
                 ? cli_usage_error("run", "--resume continues a sweep and %s has no [sweep]",
                                   sc->path)
                 : cli_usage_error("run", "--resume runs the sweep's missing members: not with %s",
                                   o.real   ? "--real"
                                   : o.mpi  ? "--mpi"
                                   : o.live ? live_option(o.live)
                                            : "--member");
        free(sc);
        return rc;
    }
    if (o.mpi && (o.real || member >= 0 || o.live)) {
        rc = cli_usage_error("run", "--mpi runs every member of the sweep: not with %s",
                             o.real   ? "--real"
                             : o.live ? live_option(o.live)
                                      : "--member");
        free(sc);
        return rc;
    }
    if (sim_jobs_given(sc)) {
        const char *no = o.real        ? "--real"
                         : o.mpi       ? "--mpi"
                         : o.live      ? live_option(o.live)
                         : member >= 0 ? "--member"
                         : o.jobs > 1  ? "-j"
                                       : NULL;
        char id[SCENARIO_STR + 64];
        member_sweep_id(sc, id, sizeof id);
        rc = no ? cli_usage_error("run",
                                  "%s: %s does not apply to a file of jobs (its jobs "
                                  "are one simulation)",
                                  o.scenario, no)
                : cli_exec_jobs(sc, argv[0], id);
        free(sc);
        return end_on_signal(rc);
    }
    if (o.mpi) {
        rc = cli_sweep_spread(sc, o.scenario, o.sets, o.n_sets, o.jobs, argv[0]);
        free(sc);
        return rc;
    }
    if (o.real) {
        rc = run_real(sc, &o, member, argv[0]);
        free(sc);
        return rc;
    }
    if (member >= 0)
        rc = run_member(sc, member, &o, argv[0]);
    else if (o.live && sc->sweep.n_keys)
        rc = cli_usage_error("run",
                             "%s shows one run and %s is a sweep of %ld runs "
                             "(--member I runs one of them)",
                             live_option(o.live), sc->path, scenario_sweep_count(sc));
    else if ((o.live & CLI_LIVE_TERM) && !isatty(STDERR_FILENO))
        rc = cli_usage_error("run", "--live draws on a terminal and stderr is not one");
    else if (sc->sweep.n_keys)
        rc = cli_sweep_run(sc, o.jobs, o.resume, argv[0], NULL, 0);
    else
        rc = cli_exec_run(sc, argv[0], NULL, 0, 1, o.live, o.pace);
    free(sc);
    return end_on_signal(rc);
}

/* `dtsim bench sim SCENARIO`: the simulation's own cost. Runs the scenario (without a
 * database), then the same number of real gradient steps and updates, at the same batch
 * size, with the plain trainer and no simulation, and prints both wall times, and both CPU
 * times (less disturbed by other work on the machine). Evaluation is instrumentation, timed
 * apart and left out of both. */
int cli_bench_sim(int argc, char **argv)
{
    run_opts_t o;
    int rc;
    scenario_t *sc = load_scenario(&o, "bench sim", &cli_bench_sim_spec, argc, argv, &rc);
    if (!sc)
        return rc;
    sim_run_t *run = dt_malloc(sizeof *run);
    dt_err_t err;
    rc = CLI_EXIT_OK;
    if (sim_run_init(run, sc, argv[0], &err)) {
        fprintf(stderr, "dtsim bench sim: %s\n", err.msg);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    run->progress = SIM_PROGRESS_NONE;
    if (sim_run_execute(run, &err)) {
        fprintf(stderr, "dtsim bench sim: %s\n", err.msg);
        rc = CLI_EXIT_RUN;
        goto done;
    }
    /* gradient steps of model.batch the run computed: its samples / batch (a pipeline's or
     * a tensor split's workers share their steps; accumulation takes several per step) */
    long steps = (long)(run->samples / (double)sc->batch + 0.5);
    double sim_wall = run->execute_wall - run->eval_wall;
    double sim_cpu = run->execute_cpu - run->eval_cpu;

    /* the same steps without simulation: one learner, batch after batch */
    trainer_learner_t l;
    trainer_learner_init(&l, run->be, &run->model, &sc->sgd, (int)sc->batch, sc->seed);
    /* batches drawn in a shuffled order, as the simulated workers draw theirs */
    size_t n = run->train.n;
    uint32_t *order = dt_malloc(sizeof(uint32_t) * n);
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    trainer_rng_shuffle_u32(&l.shuffle, order, n);
    size_t per_epoch = n / (size_t)sc->batch;
    double w0 = dt_wall_seconds(), c0 = sim_cpu_seconds();
    for (long s = 0; s < steps; s++) {
        trainer_learner_grad(&l, &run->train, order + (size_t)s % per_epoch * (size_t)sc->batch,
                             (int)sc->batch);
        trainer_learner_update(&l);
    }
    double trainer_wall = dt_wall_seconds() - w0, trainer_cpu = sim_cpu_seconds() - c0;
    free(order);
    trainer_learner_free(&l);
    printf("bench=sim scenario=%s strategy=%s workers=%d batch=%ld gradient_steps=%ld "
           "sim_time=%.4fs sim_wall_s=%.3f trainer_wall_s=%.3f eval_wall_s=%.3f "
           "overhead=%.3f sim_cpu_s=%.3f trainer_cpu_s=%.3f cpu_overhead=%.3f\n",
           sc->name, sc->strategy->name, run->n_workers, sc->batch, steps, sim_now(), sim_wall,
           trainer_wall, run->eval_wall, (sim_wall - trainer_wall) / sim_wall, sim_cpu, trainer_cpu,
           (sim_cpu - trainer_cpu) / sim_cpu);
done:
    sim_run_free(run);
    free(run);
    free(sc);
    return rc;
}

const cli_spec cli_keys_spec = {
    .about = "Prints every scenario key (Markdown tables).\n",
};

/* `dtsim keys`: every scenario key with its default, accepted values and meaning. */
int cli_keys(int argc, char **argv)
{
    cli_parser p;
    cli_parse_init(&p, "keys", &cli_keys_spec, argc, argv);
    if (cli_parse_next(&p) < 0)
        return p.status;
    if (p.n_args)
        return cli_usage_error("keys", "unexpected argument \"%s\"", p.args[0]);
    scenario_write_keys_markdown(stdout);
    return CLI_EXIT_OK;
}

const cli_spec cli_strategies_spec = {
    .about = "Prints every strategy (strategy.kind), the [strategy] keys it reads and what\n"
             "happens each step (a Markdown table, from the registry).\n",
};

int cli_strategies(int argc, char **argv)
{
    cli_parser p;
    cli_parse_init(&p, "strategies", &cli_strategies_spec, argc, argv);
    if (cli_parse_next(&p) < 0)
        return p.status;
    if (p.n_args)
        return cli_usage_error("strategies", "unexpected argument \"%s\"", p.args[0]);
    sim_strategies_write_markdown(stdout);
    return CLI_EXIT_OK;
}
