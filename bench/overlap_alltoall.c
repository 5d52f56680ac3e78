/* Overlap micro-benchmark of MPI_Alltoall ([Li 2010], section 6.2 and Table 1).
 *
 * Usage: overlap_alltoall MODE BYTES_PER_PEER REPS CURC_US CRC_US KIND
 *   MODE   blocking | ialltoall (under LD_PRELOAD=libmpiscope_overlap_*.so, "blocking" is T-NBC)
 *   CURC_US  communication-unrelated computation after the call (touches no received byte)
 *   CRC_US   communication-related computation: the received blocks are consumed in order
 *            0..P-1, each read page by page and followed by CRC_US / P of computation
 *   KIND   sleep (computation without CPU contention: usleep) | spin (busy loop on the CPU)
 *
 * Every repetition, after a barrier, times three things on every rank:
 *   pure: the collective, then every received page read (Ialltoall + Wait for MODE ialltoall);
 *   cpu:  the computation alone (CURC, then CRC over the already received buffer);
 *   ovrl: the collective followed by the computation (for ialltoall: Ialltoall, computation,
 *         Wait before the CRC), with init = the time the call takes to return.
 * Rank 0 prints the medians over REPS of the maximum over ranks, and the overlap the OSU way,
 * 100 * max(0, 1 - (ovrl - cpu) / pure), and the IMB way, 100 * (pure + cpu - ovrl) /
 * min(pure, cpu). A checksum of the received data is compared against the expected one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }

static volatile long sink;
static int spin_kind;

/* Computation of `us` microseconds: asleep, or spinning on the CPU. */
static void compute(double us) {
    if (us <= 0) return;
    if (!spin_kind) { usleep((useconds_t)us); return; }
    double end = MPI_Wtime() + us * 1e-6;
    long acc = 0;
    while (MPI_Wtime() < end)
        for (int i = 0; i < 100; i++) acc += i * i;
    sink = acc;
}

/* Reads every page of `n` bytes at `p` (the access that T-NBC's guard waits on). */
static long touch(const char *p, long n) {
    long acc = 0;
    for (long i = 0; i < n; i += 512) acc += p[i];
    if (n) acc += p[n - 1];
    return acc;
}

struct times { double pure, cpu, ovrl, init; long check; };

static struct times once(int ia, char *s, char *r, int n, int size, double curc, double crc) {
    struct times t = {0};
    MPI_Request q;
    long total = (long)n * size;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (ia) { MPI_Ialltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
    else MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    sink = touch(r, total);
    t.pure = MPI_Wtime() - t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    compute(curc);
    for (int b = 0; b < size; b++) { sink += touch(r + (long)b * n, n); compute(crc / size); }
    t.cpu = MPI_Wtime() - t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (ia) MPI_Ialltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD, &q);
    else MPI_Alltoall(s, n, MPI_BYTE, r, n, MPI_BYTE, MPI_COMM_WORLD);
    t.init = MPI_Wtime() - t0;
    compute(curc);
    if (ia) MPI_Wait(&q, MPI_STATUS_IGNORE);
    long check = 0;
    for (int b = 0; b < size; b++) { check += touch(r + (long)b * n, n); compute(crc / size); }
    t.ovrl = MPI_Wtime() - t0;
    t.check = check;
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 7) {
        fprintf(stderr, "usage: %s blocking|ialltoall BYTES REPS CURC_US CRC_US sleep|spin\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int ia = strcmp(argv[1], "ialltoall") == 0, n = atoi(argv[2]), reps = atoi(argv[3]);
    double curc = atof(argv[4]), crc = atof(argv[5]);
    spin_kind = strcmp(argv[6], "spin") == 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *s = malloc((size_t)n * size), *r = malloc((size_t)n * size);
    /* Block for peer j holds (rank * 31 + j) & 127 everywhere: the expected checksum of the
     * received buffer is then known without communication. */
    for (int j = 0; j < size; j++) memset(s + (long)j * n, (rank * 31 + j) & 127, n);
    long expect = 0;
    for (int src = 0; src < size; src++) {
        long per = 0, v = (src * 31 + rank) & 127;
        for (long i = 0; i < n; i += 512) per += v;
        if (n) per += v;
        expect += per;
    }
    double *v[4];
    for (int k = 0; k < 4; k++) v[k] = malloc(reps * sizeof(double));
    int bad = 0;
    once(ia, s, r, n, size, 0, 0);
    for (int i = 0; i < reps; i++) {
        struct times t = once(ia, s, r, n, size, curc, crc);
        double loc[4] = {t.pure, t.cpu, t.ovrl, t.init}, max[4];
        MPI_Allreduce(loc, max, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (int k = 0; k < 4; k++) v[k][i] = max[k];
        bad |= t.check != expect;
    }
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    double pure = median(v[0], reps), cpu = median(v[1], reps), ovrl = median(v[2], reps), init = median(v[3], reps);
    double osu = 100 * (1 - (ovrl - cpu) / pure);
    if (osu < 0) osu = 0;
    double lo = pure < cpu ? pure : cpu;
    double imb = lo > 0 ? 100 * (pure + cpu - ovrl) / lo : 0;
    if (rank == 0)
        printf("mode %s ranks %d bytes %d curc_us %.0f crc_us %.0f kind %s pure_us %.1f cpu_us %.1f ovrl_us %.1f init_us %.1f overlap_osu %.1f overlap_imb %.1f data %s\n",
               argv[1], size, n, curc, crc, argv[6], pure * 1e6, cpu * 1e6, ovrl * 1e6, init * 1e6, osu, imb,
               anybad ? "WRONG" : "ok");
    MPI_Finalize();
    return anybad ? 1 : 0;
}
