/* Collectives for differential tests of the simulator against SimGrid: every collective the
 * TI format replays, at sizes that cross the selectors' thresholds. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int counts[] = {1, 100, 2000, 20000, 300000};
    int maxc = 300000;
    double *a = calloc((size_t)maxc * size, sizeof(double)), *b = calloc((size_t)maxc * size, sizeof(double));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++) {
        int c = counts[i];
        MPI_Bcast(a, c, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Reduce(a, b, c, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Allreduce(a, b, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (c <= 20000) {
            MPI_Alltoall(a, c / 4 + 1, MPI_DOUBLE, b, c / 4 + 1, MPI_DOUBLE, MPI_COMM_WORLD);
            MPI_Allgather(a, c / 4 + 1, MPI_DOUBLE, b, c / 4 + 1, MPI_DOUBLE, MPI_COMM_WORLD);
            MPI_Gather(a, c / 4 + 1, MPI_DOUBLE, b, c / 4 + 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            MPI_Scatter(a, c / 4 + 1, MPI_DOUBLE, b, c / 4 + 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
