/* One-way latency and bandwidth between MPI ranks, to check what the shaped-link testbed
 * (tests/testbed/README.md) gives against what it was told to give.
 *
 * usage: mpirun ... pingpong [--small BYTES] [--large BYTES] [--count N] [--reps N] [--all]
 *
 * For each pair (rank 0 and every other rank; every pair with --all), one pair at a time:
 * - latency: half the median round trip of a --small message (default 1 byte) over --reps
 *   round trips (default 20), after 10 unmeasured ones;
 * - bandwidth: the first rank sends --count messages of --large bytes (default 8 and 1 MB) at
 *   once and waits for the second's answer that all arrived, then does the same with one
 *   message (after one unmeasured message that opens the TCP window), three times:
 *   bandwidth is (count - 1) x large bytes over the difference of the two fastest times, in
 *   which the latencies and Open MPI's rendezvous handshake cancel. (Timing the receiver
 *   between its first and last completion does not work: Open MPI interleaves the messages'
 *   fragments.)
 * One line a pair: `pair A B latency_ms X bandwidth_Mbps Y latency_min_ms Z` (megabits of MPI
 * payload per second, 1 Mbps = 1e6 bit/s as dtsim writes it; Z: half the fastest round trip). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct options {
    long small, large;
    int count, reps, all;
} options_t;

static int parse_options(int argc, char **argv, options_t *o)
{
    *o = (options_t){.small = 1, .large = 1 << 20, .count = 8, .reps = 20, .all = 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end = NULL;
        long v = 0;
        if (!strcmp(a, "--all")) {
            o->all = 1;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        v = strtol(argv[++i], &end, 10);
        if (*end || v < 1 || v > (1L << 30))
            return -1;
        if (!strcmp(a, "--small"))
            o->small = v;
        else if (!strcmp(a, "--large"))
            o->large = v;
        else if (!strcmp(a, "--count") && v >= 2)
            o->count = (int)v;
        else if (!strcmp(a, "--reps"))
            o->reps = (int)v;
        else
            return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Half the median round trip of a small message between ranks a and b, on rank a; *fastest:
 * half the fastest. */
static double measure_latency(int me, int a, int b, const options_t *o, char *buf, double *rtt,
                              double *fastest)
{
    for (int i = -10; i < o->reps; i++) {
        double t0 = MPI_Wtime();
        if (me == a) {
            MPI_Send(buf, (int)o->small, MPI_CHAR, b, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)o->small, MPI_CHAR, b, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 0)
                rtt[i] = MPI_Wtime() - t0;
        } else {
            MPI_Recv(buf, (int)o->small, MPI_CHAR, a, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)o->small, MPI_CHAR, a, 1, MPI_COMM_WORLD);
        }
    }
    if (me != a)
        return 0;
    qsort(rtt, (size_t)o->reps, sizeof *rtt, cmp_double);
    *fastest = rtt[0] / 2;
    return rtt[o->reps / 2] / 2;
}

/* Seconds, on rank a, from sending k messages of --large bytes to b at once to b's one-byte
 * answer that all have arrived. */
static double timed_burst(int me, int a, int b, int k, const options_t *o, char *buf,
                          MPI_Request *req)
{
    char token = 0;
    int peer = me == a ? b : a;
    double t0 = MPI_Wtime();
    for (int i = 0; i < k; i++) {
        char *p = buf + (size_t)i * o->large;
        if (me == a)
            MPI_Isend(p, (int)o->large, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[i]);
        else
            MPI_Irecv(p, (int)o->large, MPI_CHAR, peer, 2, MPI_COMM_WORLD, &req[i]);
    }
    MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
    if (me == a)
        MPI_Recv(&token, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(&token, 1, MPI_CHAR, peer, 3, MPI_COMM_WORLD);
    return MPI_Wtime() - t0;
}

/* Bytes per second from a to b, on rank a: the time of a burst of --count messages less that
 * of a burst of one (each the fastest of three), so that the latencies, the answer and Open
 * MPI's rendezvous handshake (the same in both) cancel, leaving the time of count - 1 messages
 * on the wire. */
static double measure_bandwidth(int me, int a, int b, const options_t *o, char *buf,
                                MPI_Request *req)
{
    timed_burst(me, a, b, 1, o, buf, req); /* opens the TCP window */
    double one = 1e30, many = 1e30;
    for (int i = 0; i < 3; i++) { /* the fastest of three: delays only ever add */
        double t = timed_burst(me, a, b, 1, o, buf, req);
        one = t < one ? t : one;
        t = timed_burst(me, a, b, o->count, o, buf, req);
        many = t < many ? t : many;
    }
    return (double)(o->count - 1) * (double)o->large / (many - one);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    options_t o;
    if (parse_options(argc, argv, &o) < 0 || size < 2) {
        if (me == 0)
            fprintf(stderr, "usage: mpirun -n P pingpong [--small BYTES] [--large BYTES] "
                            "[--count N>=2] [--reps N] [--all]   (P >= 2)\n");
        MPI_Finalize();
        return 2;
    }
    size_t bytes = (size_t)o.count * (size_t)o.large;
    char *buf = calloc(bytes > (size_t)o.small ? bytes : (size_t)o.small, 1);
    double *rtt = calloc((size_t)o.reps, sizeof *rtt);
    MPI_Request *req = calloc((size_t)o.count, sizeof *req);
    if (!buf || !rtt || !req) {
        fprintf(stderr, "pingpong: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int a = 0; a < (o.all ? size - 1 : 1); a++)
        for (int b = a + 1; b < size; b++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (me != a && me != b)
                continue;
            double fastest = 0, lat = measure_latency(me, a, b, &o, buf, rtt, &fastest);
            double bw = measure_bandwidth(me, a, b, &o, buf, req);
            if (me == a) {
                printf("pair %d %d latency_ms %.4f bandwidth_Mbps %.2f latency_min_ms %.4f\n", a, b,
                       lat * 1e3, bw * 8 / 1e6, fastest * 1e3);
                fflush(stdout);
            }
        }
    free(req);
    free(rtt);
    free(buf);
    MPI_Finalize();
    return 0;
}
