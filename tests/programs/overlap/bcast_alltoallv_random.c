/* Randomized MPI_Bcast and MPI_Alltoallv correctness under T-NBC: sizes, roots, counts
 * (zeros included), displacements that tile the buffer or leave gaps (the blocking path),
 * sub-communicators, unaligned buffers, and accesses at once, late, from another thread,
 * through write(2), in reverse order, and buffers released right after the call. Expected
 * values are computed arithmetically on every rank.
 * Usage: bcast_alltoallv_random ITERATIONS SEED. Prints "OK <checked bytes>" on rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t val(int src, int dst, long k, int it) {
    return (uint32_t)(src * 2654435761u) ^ (uint32_t)(dst * 40503u) ^ (uint32_t)(k * 2246822519u) ^ (uint32_t)it;
}

/* Words rank `src` sends to rank `dst` in iteration `it` (the same on both sides). */
static long words(int src, int dst, int it, int small) {
    uint32_t h = (uint32_t)(src * 7919 + dst * 104729 + it * 1299709);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    if (h % 9 == 0) return 0;
    return small ? 1 + h % 300 : 1 + h % 30000;
}

struct check { const uint32_t *buf; long n; int it, root; long bad; };

static void *thread_check(void *p) {
    struct check *c = p;
    for (long k = 0; k < c->n; k++) c->bad += c->buf[k] != val(c->root, 0, k, c->it);
    return NULL;
}

/* Reads `n` words of `buf` the way `mode` says; returns mismatches against want(k). */
static long verify_bcast(const uint32_t *buf, long n, int root, int it, int mode) {
    long bad = 0;
    if (mode == 1) usleep(2000);
    if (mode == 2) {
        struct check c = {buf, n, it, root, 0};
        pthread_t t;
        pthread_create(&t, NULL, thread_check, &c);
        pthread_join(t, NULL);
        return c.bad;
    }
    if (mode == 3) {
        char path[] = "/tmp/mpiscope-overlap-XXXXXX";
        int fd = mkstemp(path);
        unlink(path);
        if (write(fd, buf, n * 4) != n * 4) bad++;
        uint32_t *back = malloc(n * 4 + 4);
        if (pread(fd, back, n * 4, 0) != n * 4) bad++;
        close(fd);
        for (long k = 0; k < n; k++) bad += back[k] != val(root, 0, k, it);
        free(back);
        return bad;
    }
    if (mode == 4) {
        for (long k = n - 1; k >= 0; k--) bad += buf[k] != val(root, 0, k, it);
        return bad;
    }
    for (long k = 0; k < n; k++) bad += buf[k] != val(root, 0, k, it);
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20, seed = argc > 2 ? atoi(argv[2]) : 1;
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    srand(seed); /* same sequence on every rank: collective decisions agree */
    long total = 0, bad = 0;
    for (int it = 0; it < iters; it++) {
        int split = rand() % 3, mode = rand() % 6, which = rand() % 2, small = rand() % 5 == 0;
        int off = (rand() % 7) * 4;
        MPI_Comm comm = MPI_COMM_WORLD;
        if (split) MPI_Comm_split(MPI_COMM_WORLD, split == 1 ? wrank % 2 : 0, -wrank, &comm);
        int rank, size;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        if (which == 0) {
            long n = small ? 1 + rand() % 300 : 1 + rand() % 200000; /* words: up to 800 KB */
            int root = rand() % size;
            char *raw = malloc(n * 4 + 64);
            uint32_t *buf = (uint32_t *)(raw + off);
            for (long k = 0; k < n; k++) buf[k] = rank == root ? val(root, 0, k, it) : 0xEEEEEEEEu;
            if (rand() % 2) MPI_Bcast(buf, (int)n, MPI_UINT32_T, root, comm);
            else MPI_Bcast(buf, (int)n * 4, MPI_BYTE, root, comm);
            if (rank == root && mode == 5) {
                free(raw); /* the root's buffer released at once */
            } else {
                if (rank == root) for (long k = 0; k < n; k += 997) buf[k] = val(root, 0, k, it); /* rewrite, same data */
                bad += verify_bcast(buf, n, root, it, mode);
                free(raw);
            }
            total += n * 4;
        } else {
            int gaps = rand() % 4 == 0;
            int *sc = malloc(size * sizeof(int)), *sd = malloc(size * sizeof(int));
            int *rc = malloc(size * sizeof(int)), *rd = malloc(size * sizeof(int));
            long st = 0, rt = 0;
            for (int j = 0; j < size; j++) {
                sc[j] = (int)words(rank, j, it, small);
                rc[j] = (int)words(j, rank, it, small);
            }
            /* Send blocks in reverse peer order, receive blocks in order (gaps: 3 words). */
            for (int j = size - 1; j >= 0; j--) { sd[j] = (int)st; st += sc[j] + (gaps ? 3 : 0); }
            for (int j = 0; j < size; j++) { rd[j] = (int)rt; rt += rc[j] + (gaps ? 3 : 0); }
            uint32_t *send = malloc(st * 4 + 4);
            char *raw = malloc(rt * 4 + 64);
            uint32_t *recv = (uint32_t *)(raw + off);
            for (int j = 0; j < size; j++)
                for (long k = 0; k < sc[j]; k++) send[sd[j] + k] = val(rank, j, k, it);
            for (long k = 0; k < rt; k++) recv[k] = 0xEEEEEEEEu;
            MPI_Alltoallv(send, sc, sd, MPI_UINT32_T, recv, rc, rd, MPI_UINT32_T, comm);
            if (mode == 5) free(send);
            else memset(send, 0, st * 4 + 4);
            if (mode == 1) usleep(2000);
            int order = mode == 4 ? -1 : 1;
            for (int i = 0; i < size; i++) {
                int j = order > 0 ? i : size - 1 - i;
                for (long k = 0; k < rc[j]; k++) bad += recv[rd[j] + k] != val(j, rank, k, it);
                if (gaps && rd[j] + rc[j] < rt) /* the gap after each block is untouched */
                    for (int g = 0; g < 3; g++) bad += recv[rd[j] + rc[j] + g] != 0xEEEEEEEEu;
            }
            total += rt * 4;
            if (mode != 5) free(send);
            free(raw);
            free(sc); free(sd); free(rc); free(rd);
        }
        if (split) MPI_Comm_free(&comm);
    }
    long gbad = 0;
    MPI_Allreduce(&bad, &gbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) printf(gbad ? "BAD %ld\n" : "OK %ld\n", gbad ? gbad : total);
    MPI_Finalize();
    return gbad != 0;
}
