/* The communication pattern of NPB IS ([Grosclaude 2012], Figure 3): per iteration, local bucket
 * counting, an allreduce of the bucket sizes, an alltoall of the send counts and an
 * alltoallv of the keys; after the loop a reduce, a send of the boundary key to the next
 * rank, and a final reduce of the verification.
 * Usage: is [ITERS] (default 11). Prints the verification on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define KEYS 4096
#define BUCKETS 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 11;
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *keys = malloc(KEYS * sizeof(int)), *recv = malloc(KEYS * size * sizeof(int));
    int *scount = malloc(size * sizeof(int)), *rcount = malloc(size * sizeof(int));
    int *sdisp = malloc(size * sizeof(int)), *rdisp = malloc(size * sizeof(int));
    int local[BUCKETS], global[BUCKETS];
    unsigned seed = 12345u + (unsigned)rank;
    long checksum = 0;
    for (int it = 1; it <= iters; it++) {
        for (int i = 0; i < KEYS; i++) {
            seed = seed * 1103515245u + 12345u;
            keys[i] = (int)((seed >> 8) % (BUCKETS * 1024));
        }
        for (int b = 0; b < BUCKETS; b++) local[b] = 0;
        for (int i = 0; i < KEYS; i++) local[keys[i] / 1024]++;
        MPI_Allreduce(local, global, BUCKETS, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++) scount[p] = 0;
        for (int i = 0; i < KEYS; i++) scount[(keys[i] / 1024) % size]++;
        MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
        sdisp[0] = rdisp[0] = 0;
        for (int p = 1; p < size; p++) {
            sdisp[p] = sdisp[p - 1] + scount[p - 1];
            rdisp[p] = rdisp[p - 1] + rcount[p - 1];
        }
        MPI_Alltoallv(keys, scount, sdisp, MPI_INT, recv, rcount, rdisp, MPI_INT, MPI_COMM_WORLD);
        checksum += global[it % BUCKETS];
    }
    long total = 0;
    MPI_Reduce(&checksum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    int boundary = keys[KEYS - 1], from_prev = -1;
    if (rank + 1 < size) MPI_Send(&boundary, 1, MPI_INT, rank + 1, 7, MPI_COMM_WORLD);
    if (rank > 0) MPI_Recv(&from_prev, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int ok = 1, all_ok = 0;
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("is: %d iterations on %d ranks, checksum %ld, %d ok\n", iters, size, total, all_ok);
    free(keys); free(recv); free(scount); free(rcount); free(sdisp); free(rdisp);
    MPI_Finalize();
    return 0;
}
