/* A program as users run them, for T-NBC's "do no harm" measurement: ITERS iterations of an
 * MPI_Alltoall, then computation unrelated to the received data (CURC), then the received
 * blocks consumed in order with computation after each (CRC), with no barrier anywhere. The
 * time is the whole loop's, the slowest rank's.
 *
 * KIND is how the computation spends its time: sleep (usleep: a free core for the progress
 * thread), spin (a busy loop) or io (writing to a scratch file: 64 KiB writes from a private
 * buffer during CURC, and each received block written out, through stdio, during CRC).
 *
 * Usage: noharm BYTES_PER_PEER ITERS CURC_US CRC_US sleep|spin|io
 * Prints on rank 0: "total_s <s> per_iter_us <us> data ok|WRONG". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;
static int kind; /* 0 sleep, 1 spin, 2 io */
static FILE *scratch;
static char chunk[65536];

static void compute(double us) {
    if (us <= 0) return;
    double end = MPI_Wtime() + us * 1e-6;
    if (kind == 0) { usleep((useconds_t)us); return; }
    long acc = 0;
    while (MPI_Wtime() < end) {
        if (kind == 2) {
            if (fwrite(chunk, 1, sizeof chunk, scratch) != sizeof chunk) MPI_Abort(MPI_COMM_WORLD, 3);
            if (ftell(scratch) > (64L << 20)) rewind(scratch);
        } else {
            for (int i = 0; i < 100; i++) acc += i * i;
        }
    }
    sink = acc;
}

static long consume(const char *p, long n) {
    long acc = 0;
    for (long i = 0; i < n; i += 512) acc += p[i];
    if (n) acc += p[n - 1];
    if (kind == 2 && n) {
        if (fwrite(p, 1, n, scratch) != (size_t)n) MPI_Abort(MPI_COMM_WORLD, 3);
        if (ftell(scratch) > (64L << 20)) rewind(scratch);
    }
    return acc;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 6) {
        fprintf(stderr, "usage: %s BYTES_PER_PEER ITERS CURC_US CRC_US sleep|spin|io\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long n = atol(argv[1]);
    int iters = atoi(argv[2]);
    double curc = atof(argv[3]), crc = atof(argv[4]);
    kind = strcmp(argv[5], "spin") == 0 ? 1 : strcmp(argv[5], "io") == 0 ? 2 : 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (kind == 2) {
        char path[] = "/tmp/mpiscope-noharm-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) { perror("mkstemp"); MPI_Abort(MPI_COMM_WORLD, 2); }
        unlink(path);
        scratch = fdopen(fd, "w");
        memset(chunk, rank & 127, sizeof chunk);
    }
    char *s = malloc(n * size), *r = malloc(n * size);
    for (int j = 0; j < size; j++) memset(s + j * n, (rank * 31 + j) & 127, n);
    long expect = 0;
    for (int src = 0; src < size; src++) {
        long v = (src * 31 + rank) & 127, per = 0;
        for (long i = 0; i < n; i += 512) per += v;
        if (n) per += v;
        expect += per;
    }
    int bad = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        MPI_Alltoall(s, (int)n, MPI_BYTE, r, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        compute(curc);
        long check = 0;
        for (int b = 0; b < size; b++) { check += consume(r + b * n, n); compute(crc / size); }
        bad |= check != expect;
    }
    double mine = MPI_Wtime() - t0, t = 0;
    MPI_Reduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("total_s %.6f per_iter_us %.1f data %s\n", t, t / iters * 1e6, anybad ? "WRONG" : "ok");
    if (scratch) fclose(scratch);
    MPI_Finalize();
    return anybad ? 1 : 0;
}
