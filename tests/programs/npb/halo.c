/* A halo exchange on a ring: per iteration a computation, receives posted from both
 * neighbours, sends to both, a wait for all four; every NORM iterations an allreduce.
 * Usage: halo [ITERS] [NORM] (defaults 100 10). Prints the final norm on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 512

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 100, norm = argc > 2 ? atoi(argv[2]) : 10;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double u[N + 2], sum = 0.0;
    for (int i = 0; i < N + 2; i++) u[i] = rank + i * 1e-3;
    for (int it = 1; it <= iters; it++) {
        for (int i = 1; i <= N; i++) u[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
        MPI_Request r[4];
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(&u[N + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &r[1]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &r[2]);
        MPI_Isend(&u[N], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &r[3]);
        MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        if (it % norm == 0) {
            double local = u[N / 2];
            MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("halo: %d iterations on %d ranks, norm %.6f\n", iters, size, sum);
    MPI_Finalize();
    return 0;
}
