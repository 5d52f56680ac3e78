/* How fast a strided message moves between two bound ranks, from memory (docs/BENCHMARKS.md,
 * "Joint packs"): rank 0 sends an MPI vector of BLOCK-byte blocks every STRIDE bytes, TOTAL
 * bytes in all, received contiguous by rank 1, which answers with an empty message. Both
 * ranks flush their caches before each of 40 samples; prints the median rate. Arguments:
 * BLOCK STRIDE TOTAL [SEND_OFFSET [RECV_OFFSET]] (offsets in bytes from the allocation). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES 40
#define FLUSH_BYTES (64 << 20)

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc < 4) {
        if (me == 0) fprintf(stderr, "usage: %s BLOCK STRIDE TOTAL [SEND_OFFSET [RECV_OFFSET]]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long block = atol(argv[1]), stride = atol(argv[2]), total = atol(argv[3]);
    long send_off = argc > 4 ? atol(argv[4]) : 0, recv_off = argc > 5 ? atol(argv[5]) : 0;
    long blocks = total / block;
    char *send_base = malloc(stride * blocks + 8192), *recv_base = malloc(total + 8192);
    char *flush = malloc(FLUSH_BYTES);
    double *send = (double *)(send_base + send_off), *recv = (double *)(recv_base + recv_off);
    memset(send_base, 1, stride * blocks + 8192);
    memset(recv_base, 0, total + 8192);
    memset(flush, 0, FLUSH_BYTES);
    MPI_Datatype vector;
    MPI_Type_vector(blocks, block / 8, stride / 8, MPI_DOUBLE, &vector);
    MPI_Type_commit(&vector);
    double t[SAMPLES];
    for (int i = 0; i < SAMPLES; i++) {
        for (size_t j = 0; j < FLUSH_BYTES; j += 64) flush[j]++;
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        if (me == 0) {
            MPI_Send(send, 1, vector, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (me == 1) {
            MPI_Recv(recv, total / 8, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        t[i] = MPI_Wtime() - start;
    }
    if (me == 0) {
        qsort(t, SAMPLES, sizeof t[0], by_value);
        printf("block %ld stride %ld total %ld offsets %ld %ld: %.2f GB/s\n", block, stride,
               total, send_off, recv_off, total / t[SAMPLES / 2] / 1e9);
    }
    MPI_Type_free(&vector);
    MPI_Finalize();
    return 0;
}
