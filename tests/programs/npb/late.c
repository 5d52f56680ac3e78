/* Wait states with known sizes, for `mpiscope report`'s balance. After a first barrier,
 * rank 0 computes 50 ms before sending to rank 1, which is already waiting (late sender,
 * about 50 ms); a second barrier (ranks 2.. wait about 50 ms for rank 0); then the last
 * rank computes 30 ms before a third barrier (the others wait about 30 ms each). Needs at
 * least 3 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static void busy(double seconds) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < seconds);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, v = 42;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        busy(0.050);
        MPI_Send(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) busy(0.030);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("late: %d ranks, value %d\n", size, v);
    MPI_Finalize();
    return 0;
}
