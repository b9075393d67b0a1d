/* One MPI_Allreduce of N floats (MPI_SUM), for tests/bench/smpi.sh to run under SimGrid's
 * SMPI (smpicc, smpirun). Rank r contributes r + 1 everywhere, so every element of the
 * result must be size (size + 1) / 2. Prints on rank 0: the simulated seconds from the
 * start of the call to the last rank's end of it.
 * usage: smpirun ... ./smpi_allreduce N */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 1 ? atol(argv[1]) : 0;
    if (n <= 0 || n > 1L << 30) {
        if (rank == 0)
            fprintf(stderr, "smpi_allreduce: usage: smpi_allreduce N (floats, 1 .. 2^30)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *in = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)n);
    if (!in || !out)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 0; i < n; i++)
        in[i] = (float)(rank + 1);

    double start = MPI_Wtime();
    MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double end = MPI_Wtime(), first_start, last_end;

    long wrong = 0;
    float expect = (float)size * (float)(size + 1) / 2.0f;
    for (long i = 0; i < n; i++)
        wrong += out[i] != expect;
    long wrong_all = 0;
    MPI_Reduce(&start, &first_start, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&end, &last_end, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&wrong, &wrong_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (wrong_all)
            fprintf(stderr, "smpi_allreduce: %ld wrong sums\n", wrong_all);
        printf("%.9f\n", last_end - first_start);
    }
    free(in);
    free(out);
    MPI_Finalize();
    return wrong_all ? 1 : 0;
}
