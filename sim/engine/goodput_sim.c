/* Simulated crashes, checkpoints and restarts of jobs (goodput_sim.h), on SimGrid: a job
 * actor sleeps through its compute and its checkpoint writes, a failure actor per job draws
 * the crash times, kills the job actor at each and starts a new one, which restarts and goes
 * on from the last complete checkpoint. What a crash loses is counted from the state the
 * job keeps outside its actor (a killed actor's stack is gone), as the engine keeps nodes'. */
#define _POSIX_C_SOURCE 200809L
#include "goodput_sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <xbt/config.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "rng.h"
#include "transport.h"

/* the crash times' stream of a seed (rng.h: every random choice has its own) */
enum { GOODPUT_STREAM = 202 };

typedef struct job_state {
    sim_goodput_job_t *job;
    sg_host_t host;
    sg_actor_t actor; /* the live incarnation */
    int incarnation;
    int restarting; /* in a restart since restart_from */
    double restart_from;
    double segment_from; /* the last complete checkpoint (or the restart's end) */
    double done_s;       /* work a complete checkpoint holds */
    int finished;
    trainer_rng_t rng;
} job_state_t;

static void job_main(int argc, char **argv);

static void job_start(job_state_t *s)
{
    char name[32];
    snprintf(name, sizeof name, "job-%d", s->incarnation);
    s->actor = sg_actor_init(name, s->host);
    sg_actor_set_data(s->actor, s);
    sg_actor_start(s->actor, job_main, 0, NULL);
}

/* One incarnation: the restart (after a crash), then segments of compute and a checkpoint
 * until the work is done. */
static void job_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    job_state_t *s = sg_actor_self_get_data();
    sim_goodput_job_t *j = s->job;
    if (s->incarnation > 0) {
        s->restarting = 1;
        s->restart_from = simgrid_get_clock();
        sg_actor_sleep_for(j->restart_s);
        j->restart_spent_s += j->restart_s;
        s->restarting = 0;
    }
    s->segment_from = simgrid_get_clock();
    while (s->done_s < j->work_s) {
        double tau = fmin(j->interval_s, j->work_s - s->done_s);
        sg_actor_sleep_for(tau);
        sg_actor_sleep_for(j->ckpt_s);
        /* the checkpoint is complete: what it holds survives any later crash */
        s->done_s += tau;
        j->useful_s += tau;
        j->ckpt_spent_s += j->ckpt_s;
        j->checkpoints++;
        s->segment_from = simgrid_get_clock();
    }
    s->finished = 1;
    j->wall_s = simgrid_get_clock();
}

/* The crashes of one job: exponential gaps of mean mtbf_s; each kills the live incarnation
 * and starts the next. A daemon: it ends when the last job does. */
static void failures_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    job_state_t *s = sg_actor_self_get_data();
    sim_goodput_job_t *j = s->job;
    for (;;) {
        sg_actor_sleep_for(-j->mtbf_s * log(1.0 - trainer_rng_uniform(&s->rng)));
        if (s->finished)
            return;
        double t = simgrid_get_clock();
        if (s->restarting)
            j->restart_spent_s += t - s->restart_from;
        else
            j->rework_s += t - s->segment_from;
        j->failures++;
        sg_actor_t dead = s->actor;
        s->incarnation++;
        s->restarting = 0;
        job_start(s); /* before the kill, so that a job actor is always there */
        sg_actor_kill(dead);
    }
}

dt_status sim_goodput_simulate(sim_goodput_job_t *jobs, int n, const char *argv0, dt_err_t *err)
{
    for (int i = 0; i < n; i++) {
        const sim_goodput_job_t *j = &jobs[i];
        if (!(j->interval_s > 0 && j->ckpt_s > 0 && j->restart_s >= 0 && j->mtbf_s > 0 &&
              j->work_s > 0 &&
              isfinite(j->interval_s + j->ckpt_s + j->restart_s + j->mtbf_s + j->work_s)))
            return dt_err_input(err,
                                "goodput simulation: job %d has a time that is not "
                                "positive",
                                i);
    }
    /* one host for the jobs, one for the failure actors: nothing here computes or sends */
    char path[] = "/tmp/dtsim-goodput-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return dt_err_input(err, "goodput simulation: cannot write a platform file in /tmp: %s",
                            strerror(errno));
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "<zone id=\"goodput\" routing=\"Full\">\n"
               "  <host id=\"cluster\" speed=\"1Gf\"/>\n"
               "  <host id=\"failures\" speed=\"1Gf\"/>\n"
               "</zone>\n</platform>\n");
    if (fclose(f)) {
        unlink(path);
        return dt_err_input(err, "goodput simulation: cannot write %s", path);
    }
    sim_transport_init(argv0);
    /* every crash starts an actor: small stacks (these actors only sleep) make thousands of
     * them cheap to map */
    sg_cfg_set_int("contexts/stack-size", 64);
    simgrid_load_platform(path);
    unlink(path);
    sg_host_t cluster = sg_host_by_name("cluster"), other = sg_host_by_name("failures");

    job_state_t *st = calloc((size_t)n, sizeof *st);
    if (!st)
        return dt_err_input(err, "goodput simulation: out of memory");
    for (int i = 0; i < n; i++) {
        sim_goodput_job_t *j = &jobs[i];
        j->wall_s = j->useful_s = j->ckpt_spent_s = j->rework_s = j->restart_spent_s = 0;
        j->failures = j->checkpoints = 0;
        st[i] = (job_state_t){.job = j, .host = cluster};
        trainer_rng_seed(&st[i].rng, j->seed, GOODPUT_STREAM);
        job_start(&st[i]);
        char name[32];
        snprintf(name, sizeof name, "failures-%d", i);
        sg_actor_t a = sg_actor_init(name, other);
        sg_actor_set_data(a, &st[i]);
        sg_actor_start(a, failures_main, 0, NULL);
        sg_actor_daemonize(a);
    }
    simgrid_run();
    free(st);
    return DT_OK;
}
