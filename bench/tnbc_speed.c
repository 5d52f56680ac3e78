/* A collective with nothing to overlap, for comparing T-NBC's with the MPI library's own:
 * REPS times, after a barrier, the collective and a read of every received page (under T-NBC
 * the read waits for the data), timed on every rank; rank 0 prints the median over REPS of
 * the slowest rank's time. COLL is alltoall, alltoallv (the same counts as alltoall, through
 * MPI_Alltoallv) or bcast (BYTES from rank 0).
 *
 * Usage: tnbc_speed alltoall|alltoallv|bcast BYTES_PER_PEER REPS
 * Prints: "coll <c> ranks <p> bytes <n> median_us <t> data ok|WRONG". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 4) {
        fprintf(stderr, "usage: %s alltoall|alltoallv|bcast BYTES_PER_PEER REPS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *coll = argv[1];
    long n = atol(argv[2]);
    int reps = atoi(argv[3]), rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int bcast = strcmp(coll, "bcast") == 0, v = strcmp(coll, "alltoallv") == 0;
    long total = bcast ? n : n * size;
    char *s = malloc(total), *r = malloc(total);
    int *counts = malloc(size * sizeof(int)), *displs = malloc(size * sizeof(int));
    for (int j = 0; j < size; j++) { counts[j] = (int)n; displs[j] = (int)(j * n); }
    double *t = malloc(reps * sizeof(double));
    int bad = 0;
    for (int i = -1; i < reps; i++) {
        for (int j = 0; j < (bcast ? 1 : size); j++) memset(s + j * n, (rank * 7 + j + i) & 127, n);
        if (bcast && rank == 0) memcpy(r, s, n);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (bcast) MPI_Bcast(r, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (v) MPI_Alltoallv(s, counts, displs, MPI_BYTE, r, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
        else MPI_Alltoall(s, (int)n, MPI_BYTE, r, (int)n, MPI_BYTE, MPI_COMM_WORLD);
        long acc = 0;
        for (long k = 0; k < total; k += 4096) acc += r[k];
        acc += r[total - 1];
        double mine = MPI_Wtime() - t0, max = 0;
        MPI_Allreduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0) t[i] = max;
        for (int j = 0; j < (bcast ? 1 : size); j++) {
            char want = bcast ? (char)(i & 127) : (char)((j * 7 + rank + i) & 127);
            if (r[j * n] != want || r[j * n + n - 1] != want) bad = 1;
        }
        sink = acc;
    }
    qsort(t, reps, sizeof(double), cmp);
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coll %s ranks %d bytes %ld median_us %.1f data %s\n", coll, size, n, t[reps / 2] * 1e6,
               anybad ? "WRONG" : "ok");
    MPI_Finalize();
    return anybad ? 1 : 0;
}
