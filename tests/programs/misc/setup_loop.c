/* A code with a set-up, a time-step loop and a tear-down, the shape `--phase loop` is for:
 * four set-up collectives 30 ms apart (reading input, building a decomposition), then STEPS
 * time steps of (a short computation, MPI_Comm_rank right before an MPI_Allreduce, a ring
 * MPI_Sendrecv, a short computation, an MPI_Alltoall) with an MPI_Bcast every tenth step,
 * then 30 ms before a closing MPI_Reduce.
 * Usage: setup_loop [STEPS] (default 60). Prints the reduced sum on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static double work(int step, int rank, long n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += (double)((i * 7 + step * 13 + rank) % 101) * 1e-3;
    return s;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, me;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 60;
    int params[2] = {steps, 20000}, all[64] = {0}, prefix = 0;
    pause_ms(30);
    MPI_Bcast(params, 2, MPI_INT, 0, MPI_COMM_WORLD);
    pause_ms(30);
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    pause_ms(30);
    MPI_Scan(&rank, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    pause_ms(30);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0.0, out[64], in[64];
    for (int i = 0; i < 64; i++) out[i] = rank + i;
    for (int s = 0; s < params[0]; s++) {
        double local = work(s, rank, params[1]), sum = 0.0, got = 0.0;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Sendrecv(&sum, 1, MPI_DOUBLE, (me + 1) % size, 0, &got, 1, MPI_DOUBLE,
                     (me + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        total += got + work(s, rank, params[1] / 2) * 1e-9;
        MPI_Alltoall(out, 64 / size, MPI_DOUBLE, in, 64 / size, MPI_DOUBLE, MPI_COMM_WORLD);
        if (s % 10 == 9) MPI_Bcast(&total, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    pause_ms(30);
    double sum = 0.0;
    MPI_Reduce(&total, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("setup_loop: %d steps on %d ranks, sum %.3f\n", params[0], size, sum);
    MPI_Finalize();
    return 0;
}
