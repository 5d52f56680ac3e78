/* The communication pattern of NPB EP ([Grosclaude 2012], Figure 2): a broadcast of the parameters,
 * a barrier, then ITERS rounds of independent computation each ended by an allreduce.
 * Usage: ep [ITERS] (default 4). Prints the reduced sum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double work(int round, int rank, long n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += (double)((i * 7 + round * 13 + rank) % 101) * 1e-3;
    return s;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int params[2] = {argc > 1 ? atoi(argv[1]) : 4, 20000};
    MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0.0;
    for (int r = 0; r < params[0]; r++) {
        double local = work(r, rank, params[1]), sum = 0.0;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        total += sum;
    }
    if (rank == 0) printf("ep: %d rounds on %d ranks, sum %.3f\n", params[0], size, total);
    MPI_Finalize();
    return 0;
}
