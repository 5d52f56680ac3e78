/* A 1-D Jacobi relaxation with halo exchange: the bundled example of mpiscope.
 *
 * Each rank owns a slice of a rod; every iteration exchanges one-cell halos with its
 * neighbours (MPI_Sendrecv), relaxes its cells (a compute burst) and, every 10 iterations,
 * checks convergence with MPI_Allreduce. Rank 0 broadcasts the parameters first.
 *
 *   mpicc -O2 -o halo halo.c -lm && mpirun -np 4 ./halo [iterations]
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int params[2] = {argc > 1 ? atoi(argv[1]) : 200, 20000}; /* iterations, cells per rank */
    MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int iters = params[0], n = params[1];

    double *u = calloc(n + 2, sizeof(double)), *v = calloc(n + 2, sizeof(double));
    if (rank == 0) u[0] = 1.0; /* hot left end */
    int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;

    double residual = 0.0;
    for (int it = 0; it < iters; it++) {
        MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[n + 1], 1, MPI_DOUBLE, right, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[n], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 0) u[0] = 1.0;
        double local = 0.0;
        for (int i = 1; i <= n; i++) {
            v[i] = 0.5 * (u[i - 1] + u[i + 1]);
            local += fabs(v[i] - u[i]);
        }
        double *t = u; u = v; v = t;
        if (it % 10 == 9) MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("halo: %d ranks, %d iterations, residual %.6e\n", size, iters, residual);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
