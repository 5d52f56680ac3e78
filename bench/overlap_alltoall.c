/* Overlap of MPI_Alltoall with a computation that sleeps (no CPU contention).
 * Usage: overlap_alltoall MODE BYTES_PER_PEER SLEEP_US REPS, MODE = blocking | ialltoall.
 * Under LD_PRELOAD=libmpiscope_overlap_*.so, "blocking" measures T-NBC.
 * Rank 0 prints medians: comm (collective alone, then every received byte read),
 * total (collective, sleep, read) and overlap = (comm + sleep - total) / comm. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }

static volatile long sink;

static double once(int ialltoall, char *s, char *r, int n, int size, int sleep_us) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Request q;
    if (ialltoall) MPI_Ialltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD, &q);
    else MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    if (sleep_us) usleep(sleep_us);
    if (ialltoall) MPI_Wait(&q, MPI_STATUS_IGNORE);
    long acc = 0;
    for (long i = 0; i < (long)n * size; i += 512) acc += r[i];
    sink = acc;
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 5) { fprintf(stderr, "usage: %s blocking|ialltoall BYTES SLEEP_US REPS\n", argv[0]); MPI_Abort(MPI_COMM_WORLD, 2); }
    int ia = strcmp(argv[1], "ialltoall") == 0, n = atoi(argv[2]), sl = atoi(argv[3]), reps = atoi(argv[4]);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *s = malloc((size_t)n * size), *r = malloc((size_t)n * size);
    memset(s, rank + 1, (size_t)n * size);
    double *c = malloc(reps * sizeof *c), *t = malloc(reps * sizeof *t);
    once(ia, s, r, n, size, 0);
    for (int i = 0; i < reps; i++) {
        c[i] = once(ia, s, r, n, size, 0);
        t[i] = once(ia, s, r, n, size, sl);
    }
    double mc = median(c, reps), mt = median(t, reps), ov = (mc + sl * 1e-6 - mt) / mc;
    if (rank == 0)
        printf("mode %s bytes %d sleep_us %d comm_us %.1f total_us %.1f overlap_pct %.1f\n", argv[1], n, sl, mc * 1e6, mt * 1e6, ov * 100);
    MPI_Finalize();
    return 0;
}
