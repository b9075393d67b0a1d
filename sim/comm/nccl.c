/* NCCL's collectives inside a server and between servers in closed form (nccl.h). The
 * figures are NCCL's tuning model's (NVIDIA/nccl, src/graph/tuning.cc, 2.19-2.21: baseLat,
 * hwLat[NVLINK] and hwLat[NET], llMaxBws and its "model refinements" of the bus bandwidth),
 * used with attribution; the bus bandwidths themselves come from the device catalogue and
 * the platform, calibrated on published nccl-tests runs. */
#include "nccl.h"

#include <math.h>
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

/* NCCL's network latency a step (us), hwLat[NET]: ring 2.7, 4.0, 14; tree 5.0, 8.5, 28 */
static const double net_hop_us[SIM_NCCL_ALGOS][SIM_NCCL_PROTOS] = {
    {2.7, 4.0, 14.0}, {5.0, 8.5, 28.0}, {0, 0, 0}};
/* Between servers NCCL makes a ring's step inside a server at least the network's per-step
 * overhead (1 us with an Intel CPU, 3 us for
 * Simple); LL's bandwidth is capped at llMaxBws (Intel CPUs: 39.0 GB/s on 2 servers, 20.4
 * on more); LL128 keeps 120/128 of the tree's bandwidth (7/9 inside a server), and the
 * ring's LL128 only 0.7 with one GPU a server (NCCL's ppn < 2 discount). */
#define NET_OVERHEAD_US 1.0
#define LL_MAX_2_NODES 39.0e9
#define LL_MAX_NODES 20.4e9

static void fill(sim_nccl_t *m, int ranks, double busbw, double nvls_busbw)
{
    m->ranks = ranks;
    m->nodes = 1;
    m->busbw = busbw;
    m->tree_busbw = busbw;
    m->nvls_busbw = nvls_busbw;
    m->net_busbw = 0;
    m->ll_max = INFINITY;
    for (int a = 0; a < SIM_NCCL_ALGOS; a++)
        for (int p = 0; p < SIM_NCCL_PROTOS; p++) {
            m->eff[a][p] = eff_nvlink[a][p];
            m->net_hop[a][p] = 0;
        }
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

void sim_nccl_net(sim_nccl_t *m, int ranks, int nodes, double nvlink_busbw, double net_busbw)
{
    sim_nccl_nvlink(m, ranks, nvlink_busbw, 0);
    if (nodes < 2)
        return;
    int local = ranks / nodes;
    m->nodes = nodes;
    m->net_busbw = net_busbw;
    /* the ring crosses the network at every server's edge, one channel a NIC: the slower
     * of NVLink and the NICs; the trees on 2 servers send each byte across once each way
     * (where a ring sends it twice), so there the NICs carry twice the bus bandwidth */
    double tree_net = (nodes == 2 ? 2.0 : 1.0) * net_busbw;
    m->busbw = local > 1 && nvlink_busbw < net_busbw ? nvlink_busbw : net_busbw;
    m->tree_busbw = local > 1 && nvlink_busbw < tree_net ? nvlink_busbw : tree_net;
    m->ll_max = nodes == 2 ? LL_MAX_2_NODES : LL_MAX_NODES;
    m->eff[SIM_NCCL_RING][SIM_NCCL_LL128] = local < 2 ? 0.7 : 0.92;
    m->eff[SIM_NCCL_TREE][SIM_NCCL_LL128] = 0.92 * 120.0 / 128.0;
    for (int a = 0; a < SIM_NCCL_ALGOS; a++)
        for (int p = 0; p < SIM_NCCL_PROTOS; p++) {
            double hop = hop_us[a][p];
            double overhead = NET_OVERHEAD_US * (p == SIM_NCCL_SIMPLE ? 3.0 : 1.0);
            if (a == SIM_NCCL_RING && hop < overhead)
                hop = overhead;
            m->hop[a][p] = hop * 1e-6;
            m->net_hop[a][p] = net_hop_us[a][p] * 1e-6;
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

/* floor(log2(n)), NCCL's log2i */
static int log2_floor(int n)
{
    int l = 0;
    while (n >= 2) {
        n /= 2;
        l++;
    }
    return l;
}

/* The bandwidth of algorithm a with protocol p on a bus of busbw bytes/s: NCCL's protocol
 * efficiency, LL capped at NCCL's llMaxBw */
static double proto_bw(const sim_nccl_t *m, sim_nccl_algo_t a, sim_nccl_proto_t p, double busbw)
{
    double bw = busbw * m->eff[a][p];
    return p == SIM_NCCL_LL && bw > m->ll_max ? m->ll_max : bw;
}

double sim_nccl_time(const sim_nccl_t *m, sim_nccl_coll_t c, sim_nccl_algo_t a, sim_nccl_proto_t p,
                     double n)
{
    double T = m->ranks, N = m->nodes, half = (T - 1) / T; /* a GPU's share, each way */
    /* the ring's 2 (T-1) steps for an all-reduce, T-1 for either half of it; of them NCCL
     * counts 2 N (N-1 for either half) as crossing the network between servers */
    double steps = c == SIM_NCCL_ALLREDUCE ? 2 * (T - 1) : T - 1;
    double inter = N < 2 ? 0 : c == SIM_NCCL_ALLREDUCE ? 2 * N : N - 1;
    double share = c == SIM_NCCL_ALLREDUCE ? 2 * half : half;
    if (inter > steps)
        inter = steps;
    switch (a) {
    case SIM_NCCL_RING:
        return m->base[a][p] + (steps - inter) * m->hop[a][p] + inter * m->net_hop[a][p] +
               n * share / proto_bw(m, a, p, m->busbw);
    case SIM_NCCL_TREE:
        /* a chain inside each server, reduced up and broadcast down (2 (T/N - 1) steps), and
         * between servers two binary trees, each a half of the bytes (2 log2 N steps); the
         * tuner's algorithm bandwidth of half the bus bandwidth (NCCL's trees all-reduce
         * only) */
        if (c != SIM_NCCL_ALLREDUCE)
            return -1;
        return m->base[a][p] +
               2 * ((T / N - 1) * m->hop[a][p] + log2_floor(m->nodes) * m->net_hop[a][p]) +
               n / (0.5 * proto_bw(m, a, p, m->tree_busbw));
    case SIM_NCCL_NVLS:
        /* one pass through the switch, Simple only; the bandwidth in nccl-tests' bus
         * convention, as the catalogue's figure was measured */
        if (m->nvls_busbw <= 0 || p != SIM_NCCL_SIMPLE || m->nodes > 1)
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
