/* Randomized MPI_Alltoall correctness under T-NBC: sizes, counts, datatypes, sub-communicators,
 * unaligned receive buffers, and receive-buffer accesses at once, late, from another thread,
 * through writev(2) (and the send buffer through pwrite(2)) and in reverse block order; buffers freed right after the call (the memory
 * then reused must not be overwritten by late sub-messages). Expected values are computed arithmetically.
 * Usage: alltoall_random ITERATIONS SEED. Prints "OK <checked bytes>" on rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static uint32_t val(int src, int dst, long k, int it) {
    return (uint32_t)(src * 2654435761u) ^ (uint32_t)(dst * 40503u) ^ (uint32_t)(k * 2246822519u) ^ (uint32_t)it;
}

struct check { const uint32_t *buf; int size, rank, it; long cnt; long bad; };

static long check_block(const uint32_t *buf, int src, int rank, long cnt, int it) {
    long bad = 0;
    for (long k = 0; k < cnt; k++)
        if (buf[src * cnt + k] != val(src, rank, k, it)) bad++;
    return bad;
}

static void *thread_check(void *p) {
    struct check *c = p;
    for (int s = 0; s < c->size; s++) c->bad += check_block(c->buf, s, c->rank, c->cnt, c->it);
    return NULL;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 20, seed = argc > 2 ? atoi(argv[2]) : 1;
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    srand(seed); /* same sequence on every rank: collective decisions agree */
    long total = 0, bad = 0;
    for (int it = 0; it < iters; it++) {
        int split = rand() % 3, mode = rand() % 7;
        long cnt = 1 + rand() % 40000; /* uint32 per peer: up to ~160 KB */
        if (rand() % 4 == 0) cnt = 1 + rand() % 300;
        int off = (rand() % 7) * 4; /* unaligned receive buffer */
        MPI_Comm comm = MPI_COMM_WORLD;
        if (split) MPI_Comm_split(MPI_COMM_WORLD, split == 1 ? wrank % 2 : 0, -wrank, &comm);
        int rank, size;
        MPI_Comm_rank(comm, &rank);
        MPI_Comm_size(comm, &size);
        uint32_t *send = malloc(size * cnt * 4);
        char *raw = malloc(size * cnt * 4 + 64);
        uint32_t *recv = (uint32_t *)(raw + off);
        for (int d = 0; d < size; d++)
            for (long k = 0; k < cnt; k++) send[d * cnt + k] = val(rank, d, k, it);
        memset(recv, 0xEE, size * cnt * 4);
        if (rand() % 2)
            MPI_Alltoall(send, cnt, MPI_UINT32_T, recv, cnt, MPI_UINT32_T, comm);
        else
            MPI_Alltoall(send, cnt * 4, MPI_BYTE, recv, cnt * 4, MPI_BYTE, comm);
        if (mode == 5) {
            /* Both buffers released at once; the reused memory must keep what is written. */
            free(send);
            free(raw);
            long n = size * cnt * 4;
            unsigned char *again = malloc(n + 64);
            memset(again, 0x5A, n + 64);
            usleep(2000);
            for (long i = 0; i < n + 64; i++) bad += again[i] != 0x5A;
            free(again);
            total += n;
            if (split) MPI_Comm_free(&comm);
            continue;
        }
        if (mode == 3) {
            /* The send buffer straight to the kernel (pwrite): it must read what was sent. */
            char spath[] = "/tmp/mpiscope-overlap-XXXXXX";
            int sfd = mkstemp(spath);
            unlink(spath);
            long n = size * cnt * 4;
            if (pwrite(sfd, send, n, 0) != n) bad++;
            uint32_t *sback = malloc(n);
            if (pread(sfd, sback, n, 0) != n) bad++;
            for (int d = 0; d < size; d++)
                for (long k = 0; k < cnt; k++) bad += sback[d * cnt + k] != val(rank, d, k, it);
            free(sback);
            close(sfd);
        }
        if (mode == 6) free(send); /* the send buffer released at once, not written */
        else memset(send, 0, size * cnt * 4); /* the send buffer is free again at once */
        if (mode == 0 || mode == 6) {
            for (int s = 0; s < size; s++) bad += check_block(recv, s, rank, cnt, it);
        } else if (mode == 1) {
            usleep(3000);
            for (int s = 0; s < size; s++) bad += check_block(recv, s, rank, cnt, it);
        } else if (mode == 2) {
            struct check c = {recv, size, rank, it, cnt, 0};
            pthread_t t;
            pthread_create(&t, NULL, thread_check, &c);
            pthread_join(t, NULL);
            bad += c.bad;
        } else if (mode == 3) {
            char path[] = "/tmp/mpiscope-overlap-XXXXXX";
            int fd = mkstemp(path);
            unlink(path);
            long n = size * cnt * 4;
            /* Two pieces through writev (each may lie on pages still protected). */
            struct iovec iov[2] = {{recv, n / 2}, {(char *)recv + n / 2, n - n / 2}};
            if (writev(fd, iov, 2) != n) { bad++; }
            uint32_t *back = malloc(n);
            if (pread(fd, back, n, 0) != n) bad++;
            close(fd);
            for (int s = 0; s < size; s++) bad += check_block(back, s, rank, cnt, it);
            free(back);
        } else {
            for (int s = size - 1; s >= 0; s--) bad += check_block(recv, s, rank, cnt, it);
        }
        total += size * cnt * 4;
        if (mode != 6) free(send);
        free(raw);
        if (split) MPI_Comm_free(&comm);
    }
    long gbad = 0;
    MPI_Allreduce(&bad, &gbad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (wrank == 0) printf(gbad ? "BAD %ld\n" : "OK %ld\n", gbad ? gbad : total);
    MPI_Finalize();
    return gbad != 0;
}
