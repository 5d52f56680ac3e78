/* The communication pattern of NPB LU ([Grosclaude 2012], Figure 4) on a chain of ranks: ten
 * broadcasts of the parameters; per SSOR iteration a lower-triangular wavefront over PLANES
 * planes (receive from the previous rank, compute, send to the next), the upper-triangular
 * wavefront back, and a halo exchange (Irecv, Send, Wait with both neighbours); every NORM
 * iterations an allreduce of the residual; a final allreduce and barrier. The first and
 * last ranks have fewer partners: three classes of ranks.
 * Usage: lu [ITERS] [PLANES] [NORM] (defaults 10 6 5). Prints the residual on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256

static void compute(double *v, int k) {
    for (int i = 0; i < N; i++) v[i] = v[i] * 0.999 + (double)((i + k) % 7) * 1e-3;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int p[10] = {argc > 1 ? atoi(argv[1]) : 10, argc > 2 ? atoi(argv[2]) : 6, argc > 3 ? atoi(argv[3]) : 5};
    for (int i = 0; i < 10; i++) MPI_Bcast(&p[i], 1, MPI_INT, 0, MPI_COMM_WORLD);
    int iters = p[0], planes = p[1], norm = p[2];
    int prev = rank - 1, next = rank + 1;
    double v[N], halo[2][N];
    for (int i = 0; i < N; i++) v[i] = rank + i * 1e-3;
    double residual = 0.0;
    for (int it = 1; it <= iters; it++) {
        for (int k = 0; k < planes; k++) {
            if (prev >= 0) MPI_Recv(halo[0], N, MPI_DOUBLE, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            compute(v, k);
            if (next < size) MPI_Send(v, N, MPI_DOUBLE, next, 1, MPI_COMM_WORLD);
        }
        for (int k = planes - 1; k >= 0; k--) {
            if (next < size) MPI_Recv(halo[1], N, MPI_DOUBLE, next, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            compute(v, k);
            if (prev >= 0) MPI_Send(v, N, MPI_DOUBLE, prev, 2, MPI_COMM_WORLD);
        }
        MPI_Request r[2];
        int nr = 0;
        if (prev >= 0) MPI_Irecv(halo[0], N, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD, &r[nr++]);
        if (next < size) MPI_Irecv(halo[1], N, MPI_DOUBLE, next, 3, MPI_COMM_WORLD, &r[nr++]);
        if (prev >= 0) MPI_Send(v, N, MPI_DOUBLE, prev, 3, MPI_COMM_WORLD);
        if (next < size) MPI_Send(v, N, MPI_DOUBLE, next, 3, MPI_COMM_WORLD);
        MPI_Waitall(nr, r, MPI_STATUSES_IGNORE);
        if (it % norm == 0) {
            double local = v[0] * v[0], sum = 0.0;
            MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            residual = sum;
        }
    }
    double local = v[N - 1], sum = 0.0;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("lu: %d iterations, %d planes on %d ranks, residual %.6f, sum %.6f\n", iters, planes, size, residual, sum);
    MPI_Finalize();
    return 0;
}
