/* FT-like access pattern for T-NBC access-order tracing: ITERS times, an MPI_Alltoall whose
 * received blocks are read in order 0..P-1 with computation between them (as NPB FT's
 * transpose), then an MPI_Bcast whose segments are read from the last to the first.
 * Usage: ft_like ITERS BYTES_PER_PEER. Rank 0 prints "CHECKSUM <n>" (the same with and without
 * T-NBC) and "TIME <s>", the slowest rank's time for the iterations. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double work(const unsigned char *p, long n) {
    double acc = 0;
    for (long i = 0; i < n; i += 64) acc += p[i] * 1e-3 + (double)(i & 7);
    return acc;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 5;
    long n = argc > 2 ? atol(argv[2]) : 262144;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char *s = malloc(n * size), *r = malloc(n * size);
    long bn = 1 << 20; /* broadcast: 1 MiB, read in 64 KiB segments from the end */
    unsigned char *b = malloc(bn);
    double sum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        for (long i = 0; i < n * size; i++) s[i] = (unsigned char)(rank * 7 + i / n + it);
        MPI_Alltoall(s, (int)n, MPI_BYTE, r, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        for (int blk = 0; blk < size; blk++) sum += work(r + blk * n, n);
        if (rank == 0) for (long i = 0; i < bn; i++) b[i] = (unsigned char)(i * 13 + it);
        MPI_Bcast(b, (int)bn, MPI_BYTE, 0, MPI_COMM_WORLD);
        for (long seg = bn / 65536 - 1; seg >= 0; seg--) sum += work(b + seg * 65536, 65536);
    }
    double t = MPI_Wtime() - t0, tmax = 0, total = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("CHECKSUM %.3f\nTIME %.6f\n", total, tmax);
    free(s); free(r); free(b);
    MPI_Finalize();
    return 0;
}
