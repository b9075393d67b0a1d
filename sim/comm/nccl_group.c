/* Closed-form collectives over a group as NCCL runs them (nccl_group.h). */
#include "nccl_group.h"

#include <math.h>

const char *sim_nccl_group_init(sim_nccl_group_t *ng, const scenario_t *sc, const sim_group_t *g)
{
    ng->size = g->size;
    ng->quorum = g->size;
    ng->arrived = 0;
    ng->sem = NULL;
    int *server = dt_calloc((size_t)g->size, sizeof(int)), nodes = 0, local = -1;
    const char *why = NULL;
    double nic = INFINITY;
    for (int i = 0; i < g->size && !why; i++) {
        int size;
        double bw;
        server[i] = sim_platform_server_of(sc, g->members[i]->rank, &size, &bw);
        if (server[i] < 0)
            why = "dp_comm = nccl needs a star, multi-rack (a rack per server) or rail platform";
        else if (bw < nic)
            nic = bw;
    }
    /* the members in each server they occupy: NCCL's model wants the same number in each */
    for (int i = 0; i < g->size && !why; i++) {
        int first = 1, count = 0;
        for (int j = 0; j < g->size; j++) {
            if (server[j] == server[i]) {
                count++;
                if (j < i)
                    first = 0;
            }
        }
        if (!first)
            continue;
        nodes++;
        if (local < 0)
            local = count;
        else if (count != local)
            why = "the group's servers hold different numbers of its members";
    }
    free(server);
    if (why)
        return why;
    const sim_device_profile_t *d = scenario_device(sc);
    double nvlink = d ? d->value[SIM_DEV_NVLINK_BUSBW] : NAN;
    double eff = d ? d->value[SIM_DEV_NIC_EFFICIENCY] : NAN;
    if (isnan(eff))
        eff = scenario_device_defaults()->value[SIM_DEV_NIC_EFFICIENCY];
    if (local > 1 && !(nvlink > 0))
        return "several members share a server, and the device has no NVLink figure "
               "(nvlink_busbw)";
    /* one NIC a member: the local members' NICs carry a server's share of the ring; a group
     * inside one server runs on its NVLink, with NVLink SHARP where the device has it (NCCL
     * uses NVLS only inside a server without CollNet) */
    double nvls = d ? d->value[SIM_DEV_NVLS_BUSBW] : NAN;
    if (nodes == 1 && local > 1)
        sim_nccl_nvlink(&ng->model, g->size, nvlink, nvls > 0 ? nvls : 0);
    else
        sim_nccl_net(&ng->model, g->size, nodes, nvlink > 0 ? nvlink : 0, local * nic * eff);
    ng->sem = sim_sem_new(0);
    ng->bufs = dt_calloc((size_t)g->size, sizeof(float *));
    return NULL;
}

void sim_nccl_group_free(sim_nccl_group_t *ng)
{
    if (ng->sem)
        sim_sem_free(ng->sem);
    ng->sem = NULL;
    free(ng->bufs);
    ng->bufs = NULL;
}

/* The collective, and with n_sum > 0 the sum of the members' registered buffers */
static void meet(sim_run_t *run, sim_nccl_group_t *ng, sim_node_t *node, sim_nccl_coll_t c,
                 int algo, int proto, double n, size_t n_sum)
{
    double T = ng->size, share = (c == SIM_NCCL_ALLREDUCE ? 2.0 : 1.0) * (T - 1) / T;
    double t0 = sim_now();
    if (ng->size < 2)
        return;
    if (++ng->arrived < ng->quorum) {
        sim_sem_acquire(ng->sem);
    } else {
        double t = sim_nccl_best(&ng->model, c, algo, proto, n, NULL, NULL);
        if (t < 0) /* no such algorithm for this collective here: NCCL's ring */
            t = sim_nccl_best(&ng->model, c, SIM_NCCL_RING, proto, n, NULL, NULL);
        DT_ASSERT(t >= 0);
        ng->start = t0;
        ng->done = t0 + t;
        DT_ASSERT(n_sum == 0 || ng->quorum == ng->size);
        for (int i = 1; n_sum > 0 && i < ng->size; i++)
            run->be->axpy(n_sum, 1.0f, ng->bufs[i], ng->bufs[0]);
        for (int i = 1; n_sum > 0 && i < ng->size; i++)
            run->be->copy(ng->bufs[i], ng->bufs[0], sizeof(float) * n_sum);
        ng->arrived = 0;
        for (int i = 1; i < ng->quorum; i++)
            sim_sem_release(ng->sem);
    }
    /* read before the next collective's last arrival can change them: that needs this
     * member to arrive again */
    double start = ng->start, done = ng->done;
    sim_sleep_until(done);
    node->idle_s += start - t0;
    node->comm_s += done - start;
    sim_record_interval(run, node, SIM_STATE_IDLE, t0, start);
    sim_record_interval(run, node, SIM_STATE_COMM, start, done);
    node->bytes_sent += share * n;
    node->bytes_recv += share * n;
    run->bytes_total += share * n;
}

void sim_nccl_group_run(sim_run_t *run, sim_nccl_group_t *ng, sim_node_t *node, sim_nccl_coll_t c,
                        int algo, int proto, double n)
{
    meet(run, ng, node, c, algo, proto, n, 0);
}

void sim_nccl_group_allreduce(sim_run_t *run, sim_nccl_group_t *ng, sim_node_t *node, int me,
                              float *buf, size_t n, int algo, int proto)
{
    ng->bufs[me] = buf;
    meet(run, ng, node, SIM_NCCL_ALLREDUCE, algo, proto, run->value_bytes * (double)n, n);
}
