/* FT-like: the communication pattern of NAS FT's 3-D FFT ([Li 2010]'s FT benchmark). Each of
 * ITERS iterations transposes a slab-distributed complex grid with MPI_Alltoall, then evolves
 * the next time step's spectrum (work that does not read the transposed data, as FT's evolve),
 * then runs 1-D FFT passes over the received blocks in order (work that reads them).
 *
 * MODE blocking calls MPI_Alltoall (under T-NBC's preload this is the transparent overlap);
 * MODE ialltoall places MPI_Ialltoall before the evolve and MPI_Wait after it, by hand.
 *
 * Usage: ft_overlap MODE BYTES_PER_PEER ITERS EVOLVE_PASSES FFT_PASSES
 * The work is real arithmetic on doubles: EVOLVE_PASSES sweeps over a private array as large as
 * the receive buffer, FFT_PASSES radix-2 butterfly sweeps over each received block.
 * Prints on rank 0: "mode <m> ranks <p> bytes <n> total_s <t> checksum <c>" (the checksum is the
 * same in every mode). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One radix-2 butterfly sweep over n complex values (in place, stride halving). */
static void butterflies(double *z, long n, int passes) {
    for (int p = 0; p < passes; p++) {
        long half = n / 2 > 0 ? n / 2 : 1;
        for (long i = 0; i + half < n; i++) {
            double ar = z[2 * i], ai = z[2 * i + 1], br = z[2 * (i + half)], bi = z[2 * (i + half) + 1];
            double c = cos(0.001 * (double)(i % 1024)), s = sin(0.001 * (double)(i % 1024));
            double tr = br * c - bi * s, ti = br * s + bi * c;
            z[2 * i] = 0.5 * (ar + tr);
            z[2 * i + 1] = 0.5 * (ai + ti);
            z[2 * (i + half)] = 0.5 * (ar - tr);
            z[2 * (i + half) + 1] = 0.5 * (ai - ti);
        }
    }
}

/* The evolve step: multiplies the spectrum by decaying exponentials (reads only `w`). */
static void evolve(double *w, long n, int passes, int it) {
    for (int p = 0; p < passes; p++)
        for (long i = 0; i < n; i++) w[i] *= exp(-1e-6 * (double)((i + it + p) % 97));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 6) {
        fprintf(stderr, "usage: %s blocking|ialltoall BYTES_PER_PEER ITERS EVOLVE_PASSES FFT_PASSES\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int ia = strcmp(argv[1], "ialltoall") == 0;
    long n = atol(argv[2]) / 16 * 16; /* bytes per peer, whole complex values */
    int iters = atoi(argv[3]), ev = atoi(argv[4]), ff = atoi(argv[5]);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long per = n / 8, total = per * size; /* doubles */
    double *u = malloc(total * 8), *v = malloc(total * 8), *w = malloc(total * 8);
    for (long i = 0; i < total; i++) {
        u[i] = sin(0.01 * (double)(i + rank * total));
        w[i] = 1.0 + 0.001 * (double)(i % 1000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        MPI_Request q;
        if (ia) MPI_Ialltoall(u, (int)n, MPI_BYTE, v, (int)n, MPI_BYTE, MPI_COMM_WORLD, &q);
        else MPI_Alltoall(u, (int)n, MPI_BYTE, v, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        evolve(w, total, ev, it);
        if (ia) MPI_Wait(&q, MPI_STATUS_IGNORE);
        /* The transposed blocks, in order: FFT passes, the result feeds the next transpose. */
        for (int b = 0; b < size; b++) {
            butterflies(v + b * per, per / 2, ff);
            for (long i = 0; i < per; i++) u[b * per + i] = v[b * per + i] * w[b * per + i];
        }
    }
    double mine = MPI_Wtime() - t0, t = 0, sum = 0, all = 0;
    for (long i = 0; i < total; i += 7) sum += u[i];
    MPI_Reduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mode %s ranks %d bytes %ld total_s %.6f checksum %.12e\n", argv[1], size, n, t, all);
    MPI_Finalize();
    return 0;
}
