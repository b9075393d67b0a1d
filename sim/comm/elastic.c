/* Elastic membership of the all-reduce strategies (see collective.h). The rendezvous is
 * the job's coordination service (etcd for torchrun, the driver for Horovod): its state
 * is shared memory here (actors switch only at SimGrid calls, so no lock is needed), and
 * waiting members poll it every 1/100 of faults.timeout, as agents poll their store. */
#include <stdlib.h>
#include <string.h>

#include "collective.h"

struct sim_elastic {
    sim_groups_t *groups; /* current members */
    int open;             /* a rendezvous waits for its members */
    int *arrived;         /* (workers) */
    long *commit;         /* (workers) step each arrival brings */
    long round;           /* completed rendezvous */
    int closed;
};

static void elastic_free(void *p)
{
    sim_elastic_t *e = p;
    sim_groups_free(e->groups);
    free(e->arrived);
    free(e->commit);
    free(e);
}

void sim_elastic_make(sim_run_t *run)
{
    if (!run->has_faults) {
        sim_groups_make(run);
        return;
    }
    sim_elastic_t *e = dt_calloc(1, sizeof *e);
    e->groups = sim_groups_new(run, NULL, -1);
    e->arrived = dt_calloc((size_t)run->n_workers, sizeof(int));
    e->commit = dt_calloc((size_t)run->n_workers, sizeof(long));
    run->shared = e;
    run->shared_free = elastic_free;
}

sim_groups_t *sim_elastic_groups(sim_run_t *run)
{
    return run->has_faults ? ((sim_elastic_t *)run->shared)->groups : run->shared;
}

int sim_elastic_index(sim_run_t *run, const sim_node_t *node)
{
    return sim_elastic_groups(run)->index[node->rank];
}

int sim_elastic_pending(sim_run_t *run)
{
    return run->has_faults && ((sim_elastic_t *)run->shared)->open;
}

void sim_elastic_close(sim_run_t *run)
{
    if (!run->has_faults)
        return;
    sim_elastic_t *e = run->shared;
    e->closed = 1;
}

/* Every worker that is up and still training has arrived. */
static int complete(const sim_run_t *run, const sim_elastic_t *e)
{
    for (int i = 0; i < run->n_workers; i++) {
        const sim_node_t *w = &run->workers[i];
        if (w->alive && !w->finished && !e->arrived[i])
            return 0;
    }
    return 1;
}

static void form(sim_run_t *run, sim_elastic_t *e)
{
    /* the state comes from the member furthest on (the lowest rank among equals): a worker
     * that comes back never sets the others back */
    int *member = dt_calloc((size_t)run->n_workers, sizeof(int));
    int count = 0, first = -1;
    for (int i = 0; i < run->n_workers; i++)
        if (e->arrived[i] && run->workers[i].alive) {
            member[i] = 1;
            count++;
            if (first < 0 || e->commit[i] > e->commit[first])
                first = i;
        }
    sim_groups_free(e->groups);
    e->groups = sim_groups_new(run, member, first);
    free(member);
    e->open = 0;
    e->round++;
    if (first >= 0 && e->commit[first] >= 0)
        sim_fault_log(run, "reform", run->workers[first].name,
                      "group %ld: %d worker%s from step %ld of %s", e->round, count,
                      count == 1 ? "" : "s", e->commit[first], run->workers[first].name);
    else if (first >= 0)
        sim_fault_log(run, "reform", run->workers[first].name,
                      "group %ld: %d worker%s, all restarted: no state survived, the job "
                      "starts again from the initial weights",
                      e->round, count, count == 1 ? "" : "s");
}

int sim_elastic_rendezvous(sim_run_t *run, sim_node_t *node, float *buf, float *velocity, size_t n,
                           long *step, long commit)
{
    sim_elastic_t *e = run->shared;
    double t0 = sim_now();
    if (!e->open) {
        e->open = 1;
        memset(e->arrived, 0, sizeof(int) * (size_t)run->n_workers);
    }
    e->arrived[node->rank] = 1;
    e->commit[node->rank] = commit;
    long round = e->round;
    while (e->round == round && !e->closed) {
        if (complete(run, e)) {
            form(run, e);
            break;
        }
        sim_sleep(sim_fault_timeout(run) / 100);
    }
    int closed = e->closed && e->round == round;
    node->idle_s += sim_now() - t0;
    if (closed)
        return -1;
    /* the first member's state, by broadcast over the new group */
    sim_groups_t *g = e->groups;
    int me = g->index[node->rank];
    if (me < 0)
        return -1;
    *step = e->commit[g->all.members[0]->rank];
    if (*step < 0) { /* every member restarted: nothing to sync, start over */
        run->be->copy(buf, run->init_params, sizeof(float) * n);
        if (velocity)
            sim_optim_clear(run, node, 0, n);
        *step = 0;
        return 0;
    }
    /* a member dying during the sync makes the next collective fail and re-form again */
    if (sim_broadcast(run, &g->all, me, buf, n) == SIM_OK && velocity &&
        sim_broadcast(run, &g->all, me, velocity, n) == SIM_OK && node->moment2)
        sim_broadcast(run, &g->all, me, node->moment2, n);
    return 0;
}
