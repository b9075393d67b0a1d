/* NCCL's collectives inside a server in closed form (nccl.h). The figures are NCCL's tuning
 * model's (NVIDIA/nccl, src/graph/tuning.cc, 2.19-2.21: baseLat, hwLat[NVLINK] and its
 * "model refinements" of the bus bandwidth), used with attribution; the bus bandwidths
 * themselves come from the device catalogue, calibrated on published nccl-tests runs. */
#include "nccl.h"

#include <stddef.h>

/* NCCL's base latencies (us): ring LL 6.6, LL128 14, Simple 8.4; tree 6.8, 14, 0; NVLS 0 */
static const double base_us[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS] = {
    {6.6, 14.0, 8.4}, {6.8, 14.0, 0}, {0, 0, 0}};
/* NCCL's NVLink latency a step (us): ring .6, 1.9, 3.4; tree .6, 1.25, 28 (Simple's chunk of
 * 256 kB); NVLS 23, once: NCCL counts no steps for it inside a node */
static const double hop_us[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS] = {
    {0.6, 1.9, 3.4}, {0.6, 1.25, 28.0}, {0, 0, 23.0}};
/* The fraction of the bus bandwidth each pairing reaches in NCCL's model: ring LL a
 * quarter (an 8-byte line carries 4 bytes of data and a flag, and the tuner halves that
 * again for an all-reduce), ring LL128 0.92 (120 of 128 bytes, less), Simple all of it;
 * tree 0.92 of it, times 1/3.8 for LL and 7/9 for LL128 inside a node. */
static const double eff_nvlink[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS] = {
    {0.25, 0.92, 1.0}, {0.92 / 3.8, 0.92 * 7.0 / 9.0, 0.92}, {0, 0, 1.0}};

static void fill(sim_nccl_t *m, int ranks, double busbw, double nvls_busbw)
{
    m->ranks = ranks;
    m->busbw = busbw;
    m->nvls_busbw = nvls_busbw;
    for (int a = 0; a < SIM_NCCL_ALGOS; a++)
        for (int p = 0; p < SIM_NCCL_PROTOS; p++)
            m->eff[a][p] = eff_nvlink[a][p];
}

void sim_nccl_nvlink(sim_nccl_t *m, int ranks, double busbw, double nvls_busbw)
{
    fill(m, ranks, busbw, nvls_busbw > 0 ? nvls_busbw : 0);
    for (int a = 0; a < SIM_NCCL_ALGOS; a++)
        for (int p = 0; p < SIM_NCCL_PROTOS; p++) {
            m->base[a][p] = base_us[a][p] * 1e-6;
            m->hop[a][p] = hop_us[a][p] * 1e-6;
        }
}

void sim_nccl_links(sim_nccl_t *m, int ranks, double step, double per_byte)
{
    fill(m, ranks, 1.0 / per_byte, 0);
    for (int a = 0; a < SIM_NCCL_ALGOS; a++)
        for (int p = 0; p < SIM_NCCL_PROTOS; p++) {
            m->base[a][p] = 0;
            m->hop[a][p] = step;
        }
}

double sim_nccl_time(const sim_nccl_t *m, sim_nccl_coll_t c, sim_nccl_algo_t a,
                     sim_nccl_proto_t p, double n)
{
    double T = m->ranks, half = (T - 1) / T; /* a GPU's share of a ring's bytes, each way */
    /* the ring's 2 (T-1) steps for an all-reduce, T-1 for either half of it */
    double steps = c == SIM_NCCL_ALLREDUCE ? 2 * (T - 1) : T - 1;
    double share = c == SIM_NCCL_ALLREDUCE ? 2 * half : half;
    switch (a) {
    case SIM_NCCL_RING:
        return m->base[a][p] + steps * m->hop[a][p] + n * share / (m->busbw * m->eff[a][p]);
    case SIM_NCCL_TREE:
        /* a chain inside the server, reduced up and broadcast down: 2 (T-1) steps, and the
         * tuner's algorithm bandwidth of half the bus bandwidth (NCCL's trees all-reduce
         * only) */
        if (c != SIM_NCCL_ALLREDUCE)
            return -1;
        return m->base[a][p] + 2 * (T - 1) * m->hop[a][p] + n / (0.5 * m->busbw * m->eff[a][p]);
    case SIM_NCCL_NVLS:
        /* one pass through the switch, Simple only; the bandwidth in nccl-tests' bus
         * convention, as the catalogue's figure was measured */
        if (m->nvls_busbw <= 0 || p != SIM_NCCL_SIMPLE)
            return -1;
        return m->hop[a][p] + n * share / m->nvls_busbw;
    default:
        return -1;
    }
}

double sim_nccl_best(const sim_nccl_t *m, sim_nccl_coll_t c, int algo, int proto, double n,
                     sim_nccl_algo_t *a, sim_nccl_proto_t *p)
{
    double best = -1;
    for (int i = 0; i < SIM_NCCL_ALGOS; i++)
        for (int j = 0; j < SIM_NCCL_PROTOS; j++) {
            if ((algo >= 0 && i != algo) || (proto >= 0 && j != proto))
                continue;
            double t = sim_nccl_time(m, c, (sim_nccl_algo_t)i, (sim_nccl_proto_t)j, n);
            if (t >= 0 && (best < 0 || t < best)) {
                best = t;
                if (a)
                    *a = (sim_nccl_algo_t)i;
                if (p)
                    *p = (sim_nccl_proto_t)j;
            }
        }
    return best;
}

const char *sim_nccl_algo_name(sim_nccl_algo_t a)
{
    static const char *const names[SIM_NCCL_ALGOS] = {"ring", "tree", "nvls"};
    return (int)a >= 0 && a < SIM_NCCL_ALGOS ? names[a] : "?";
}

const char *sim_nccl_proto_name(sim_nccl_proto_t p)
{
    static const char *const names[SIM_NCCL_PROTOS] = {"ll", "ll128", "simple"};
    return (int)p >= 0 && p < SIM_NCCL_PROTOS ? names[p] : "?";
}
