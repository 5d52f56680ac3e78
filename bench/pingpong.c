/* Small-message latency, for what a preloaded library costs every MPI call: REPS repetitions
 * of ITERS round trips of BYTES between ranks 0 and 1 (MPI_Send / MPI_Recv); prints on rank 0
 * the best repetition's half round trip in microseconds.
 * Usage: pingpong [BYTES [ITERS [REPS]]] (defaults 8, 2000, 20). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int bytes = argc > 1 ? atoi(argv[1]) : 8;
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    int reps = argc > 3 ? atoi(argv[3]) : 20;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *b = calloc(bytes > 0 ? bytes : 1, 1);
    double best = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(b, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(b, bytes, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(b, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(b, bytes, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
        t = (MPI_Wtime() - t) / iters / 2 * 1e6;
        if (t < best) best = t;
    }
    if (rank == 0) printf("%.3f\n", best);
    free(b);
    MPI_Finalize();
    return 0;
}
