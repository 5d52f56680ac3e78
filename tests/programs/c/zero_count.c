/* Zero-count collectives among ordinary calls, the shape of GROMACS mdrun's trace (which
 * broadcasts zero elements): for the SimGrid TI export's differential test (export, then
 * `smpirun -replay` and `mpiscope replay` of the export must agree). Any number of ranks n;
 * r is the rank. Each of ROUNDS rounds (argument 1, default 5):
 *
 *   1 ms of computation (2 ms on rank 0, so that the others wait)
 *   Bcast 0 ints, root 0; Bcast 256 doubles, root 0
 *   Sendrecv 1000 bytes to r+1, from r-1 (ring)
 *   Reduce 0 doubles, root n-1; Allreduce 0 ints; Allreduce 1 double
 *   Alltoall 0 ints; Allgather 0 ints; Gather 0 ints, root 0; Scatter 0 ints, root 0
 *   Allgatherv all-zero counts; Reduce_scatter all-zero counts
 *   Alltoallv all-zero counts; Gatherv all-zero counts, root 0
 *   Scan 0 ints; Exscan 0 ints
 *   Send 0 bytes to r+1, Recv 0 bytes from r-1 (Isend, Recv, Wait)
 *   Barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
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
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int *zeros = calloc((size_t)n, sizeof(int));
    int *displs = calloc((size_t)n, sizeof(int));
    int ibuf[4] = {0};
    double d[256] = {0}, one = 1.0, sum = 0.0;
    char out[1000] = {0}, in[1000];
    int right = (r + 1) % n, left = (r + n - 1) % n;
    for (int k = 0; k < rounds; k++) {
        busy(r == 0 ? 0.002 : 0.001);
        MPI_Bcast(ibuf, 0, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Bcast(d, 256, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Sendrecv(out, 1000, MPI_BYTE, right, 7, in, 1000, MPI_BYTE, left, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Reduce(d, d + 1, 0, MPI_DOUBLE, MPI_SUM, n - 1, MPI_COMM_WORLD);
        MPI_Allreduce(ibuf, ibuf + 1, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoall(ibuf, 0, MPI_INT, ibuf + 1, 0, MPI_INT, MPI_COMM_WORLD);
        MPI_Allgather(ibuf, 0, MPI_INT, ibuf + 1, 0, MPI_INT, MPI_COMM_WORLD);
        MPI_Gather(ibuf, 0, MPI_INT, ibuf + 1, 0, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Scatter(ibuf, 0, MPI_INT, ibuf + 1, 0, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Allgatherv(ibuf, 0, MPI_INT, ibuf + 1, zeros, displs, MPI_INT, MPI_COMM_WORLD);
        MPI_Reduce_scatter(ibuf, ibuf + 1, zeros, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Alltoallv(ibuf, zeros, displs, MPI_INT, ibuf + 1, zeros, displs, MPI_INT,
                      MPI_COMM_WORLD);
        MPI_Gatherv(ibuf, 0, MPI_INT, ibuf + 1, zeros, displs, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Scan(ibuf, ibuf + 1, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Exscan(ibuf, ibuf + 1, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Request q;
        MPI_Isend(out, 0, MPI_BYTE, right, 8, MPI_COMM_WORLD, &q);
        MPI_Recv(in, 0, MPI_BYTE, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (r == 0) printf("zero_count: %d ranks, %d rounds, sum %g\n", n, rounds, sum);
    free(zeros);
    free(displs);
    MPI_Finalize();
    return 0;
}
