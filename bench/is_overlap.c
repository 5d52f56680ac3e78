/* IS-like: the communication pattern of NAS IS ([Li 2010]'s IS benchmark), a bucket sort. Each
 * of ITERS iterations generates this rank's keys, counts them per destination bucket, exchanges
 * the counts (MPI_Alltoall, small) and the keys (MPI_Alltoallv, large), generates the next
 * iteration's keys (work that does not read the received keys), then ranks the received keys
 * block by block with a counting pass (work that reads them).
 *
 * MODE blocking calls MPI_Alltoallv (under T-NBC's preload this is the transparent overlap);
 * MODE ialltoallv places MPI_Ialltoallv before the next keys' generation and MPI_Wait after.
 *
 * Usage: is_overlap MODE KEYS_PER_RANK ITERS GEN_PASSES RANK_PASSES
 * Prints on rank 0: "mode <m> ranks <p> keys <k> total_s <t> checksum <c>" (the same in every
 * mode). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_KEY (1 << 20)

static unsigned rng(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 8) & (MAX_KEY - 1);
}

/* Fills `keys` (GEN_PASSES passes of generation, as IS's key generator costs). */
static void generate(int *keys, long k, unsigned seed, int passes) {
    for (int p = 0; p < passes; p++) {
        unsigned s = seed + (unsigned)p;
        for (long i = 0; i < k; i++) keys[i] = (int)((rng(&s) + rng(&s) + rng(&s) + rng(&s)) / 4);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 6) {
        fprintf(stderr, "usage: %s blocking|ialltoallv KEYS_PER_RANK ITERS GEN_PASSES RANK_PASSES\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int ia = strcmp(argv[1], "ialltoallv") == 0;
    long k = atol(argv[2]);
    int iters = atoi(argv[3]), gp = atoi(argv[4]), rp = atoi(argv[5]);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *keys = malloc(k * sizeof(int)), *next = malloc(k * sizeof(int)), *sorted = malloc(k * sizeof(int));
    long cap = 2 * k + 1024;
    int *recv = malloc(cap * sizeof(int));
    int *sc = calloc(size, sizeof(int)), *rc = calloc(size, sizeof(int));
    int *sd = calloc(size, sizeof(int)), *rd = calloc(size, sizeof(int));
    int *hist = calloc(MAX_KEY / size + 1, sizeof(int));
    long checksum = 0;
    generate(keys, k, 7u + (unsigned)rank * 1000u, gp);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        /* Bucket the keys by destination rank (contiguous key ranges). */
        memset(sc, 0, size * sizeof(int));
        long span = MAX_KEY / size + 1;
        for (long i = 0; i < k; i++) sc[keys[i] / span]++;
        for (int j = 1; j < size; j++) sd[j] = sd[j - 1] + sc[j - 1];
        int *fill = calloc(size, sizeof(int));
        for (long i = 0; i < k; i++) {
            int d = keys[i] / span;
            sorted[sd[d] + fill[d]++] = keys[i];
        }
        free(fill);
        MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
        for (int j = 1; j < size; j++) rd[j] = rd[j - 1] + rc[j - 1];
        long got = rd[size - 1] + rc[size - 1];
        if (got > cap) { fprintf(stderr, "bucket overflow\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
        MPI_Request q;
        if (ia) MPI_Ialltoallv(sorted, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, MPI_COMM_WORLD, &q);
        else MPI_Alltoallv(sorted, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, MPI_COMM_WORLD);
        generate(next, k, 7u + (unsigned)rank * 1000u + (unsigned)(it + 1) * 77u, gp);
        if (ia) MPI_Wait(&q, MPI_STATUS_IGNORE);
        /* Rank the received keys, block by block (counting sort passes over the key range). */
        for (int p = 0; p < rp; p++) {
            memset(hist, 0, (MAX_KEY / size + 1) * sizeof(int));
            for (int j = 0; j < size; j++)
                for (long i = rd[j]; i < rd[j] + rc[j]; i++) hist[recv[i] - rank * span]++;
        }
        for (long i = 0; i < MAX_KEY / size + 1; i += 97) checksum += hist[i] * (i % 13);
        int *t = keys; keys = next; next = t;
    }
    double mine = MPI_Wtime() - t0, tmax = 0;
    long all = 0;
    MPI_Reduce(&mine, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&checksum, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("mode %s ranks %d keys %ld total_s %.6f checksum %ld\n", argv[1], size, k, tmax, all);
    MPI_Finalize();
    return 0;
}
