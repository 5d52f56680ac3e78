/* Non-blocking point-to-point calls and every completion function, for the recorder's
 * end-to-end tests (crates/cli/tests/record_c.rs mirrors this program's logic: keep them in
 * step). Needs at least 2 ranks. Every message goes from prev = (r-1+n)%n to r (or, in B,
 * also from next = (r+1)%n), with a tag unique to its phase.
 *
 *   A Irecv 8 ints prev tag 10 (ra); Isend 8 ints next tag 10 (sa); Wait(ra, &st);
 *     Wait(sa, STATUS_IGNORE).
 *   B Irecv 4 ints prev tag 20; Irecv 4 ints next tag 21; Isend 4 ints next tag 20; Isend 4
 *     ints prev tag 21; Waitall(4, statuses). Same with tags 22/23 and 3 ints, Waitall with
 *     MPI_STATUSES_IGNORE.
 *   C Irecv from prev tags 30, 31, 32 with 1, 2, 3 ints; Isend the same to next; 3 x
 *     Waitany(3 recvs, &st); Waitall(3 sends, STATUSES_IGNORE).
 *   D Irecv 2 ints from prev tags 40, 41; Isend to next; Waitsome(2 recvs) until both done;
 *     Waitall(2 sends, statuses).
 *   E Irecv 5 ints prev tag 50; Test (flag 0: nothing was sent yet); Barrier; Send 5 ints
 *     next tag 50; Test until flag 1.
 *   F Irecv 6 ints prev tag 60; Isend 6 ints next tag 60; Testall(2) until flag 1.
 *   G Irecv 1 int prev tags 70, 71; Isend next; Testany(2 recvs) until both completed;
 *     Waitall(2 sends, STATUSES_IGNORE).
 *   H Irecv 2 ints prev tags 80, 81; Isend next; Testsome(2 recvs) until both completed;
 *     Waitall(2 sends, STATUSES_IGNORE).
 *   I Send_init 5 ints next tag 90 (ps); Recv_init 5 ints prev tag 90 (pr); 3 x {Start(pr);
 *     Start(ps); Wait(pr, &st); Wait(ps, STATUS_IGNORE)}; 2 x {Startall(2, {pr, ps});
 *     Waitall(2, statuses)}; Request_free(pr); Request_free(ps).
 *   J Irecv 16 ints ANY_SOURCE ANY_TAG; Isend 3 ints next tag 100+r; Wait(recv,
 *     STATUS_IGNORE); Wait(send, STATUS_IGNORE); Barrier.
 *   K Isend 7 ints next tag 110; Iprobe(ANY_SOURCE, 110) until flag; Recv 7 ints from the
 *     probed source tag 110; Wait(send, STATUS_IGNORE).
 *   L Isend 9 ints next tag 120; Mprobe(prev, 120); Get_count; Mrecv(count); Wait(send).
 *   M Isend 11 ints next tag 130; Improbe(ANY_SOURCE, 130) until flag; Imrecv 11 ints;
 *     Wait(imrecv, &st); Wait(send, STATUS_IGNORE).
 *   end: Allreduce of {checksum, errors} (2 longs, SUM); rank 0 prints.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;
static long checksum = 0;
static long errors = 0;

#define CHECK(cond, ...)                                       \
    do {                                                       \
        if (!(cond)) {                                         \
            printf("rank %d ERROR line %d: ", rank, __LINE__); \
            printf(__VA_ARGS__);                               \
            printf("\n");                                      \
            fflush(stdout);                                    \
            errors++;                                          \
        }                                                      \
    } while (0)

/* Fills a send buffer with values that identify sender, tag and position. */
static void fill(int *b, int cnt, int from, int tag) {
    for (int i = 0; i < cnt; i++) b[i] = from * 10000 + tag * 10 + i;
}

/* Checks a received buffer and adds it to the checksum. */
static void verify(const int *b, int cnt, int from, int tag) {
    for (int i = 0; i < cnt; i++) {
        CHECK(b[i] == from * 10000 + tag * 10 + i, "tag %d value %d: %d", tag, i, b[i]);
        checksum += b[i];
    }
}

static void check_status(MPI_Status *st, int src, int tag, int count) {
    int c = -1;
    MPI_Get_count(st, MPI_INT, &c);
    CHECK(st->MPI_SOURCE == src, "source %d, expected %d", st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "tag %d, expected %d", st->MPI_TAG, tag);
    CHECK(c == count, "count %d, expected %d", c, count);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = size, r = rank;
    if (n < 2) {
        if (r == 0) printf("p2p_nonblocking: needs at least 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    const int next = (r + 1) % n, prev = (r - 1 + n) % n;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Status st, sts[8];
    MPI_Request rq[8];
    int sb[8][32], rb[8][32];

    /* A */
    fill(sb[0], 8, r, 10);
    MPI_Irecv(rb[0], 8, MPI_INT, prev, 10, w, &rq[0]);
    MPI_Isend(sb[0], 8, MPI_INT, next, 10, w, &rq[1]);
    MPI_Wait(&rq[0], &st);
    check_status(&st, prev, 10, 8);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    CHECK(rq[0] == MPI_REQUEST_NULL && rq[1] == MPI_REQUEST_NULL, "A requests not freed");
    verify(rb[0], 8, prev, 10);

    /* B */
    for (int round = 0; round < 2; round++) {
        int t0 = 20 + 2 * round, t1 = t0 + 1, c = 4 - round;
        fill(sb[0], c, r, t0);
        fill(sb[1], c, r, t1);
        MPI_Irecv(rb[0], c, MPI_INT, prev, t0, w, &rq[0]);
        MPI_Irecv(rb[1], c, MPI_INT, next, t1, w, &rq[1]);
        MPI_Isend(sb[0], c, MPI_INT, next, t0, w, &rq[2]);
        MPI_Isend(sb[1], c, MPI_INT, prev, t1, w, &rq[3]);
        if (round == 0) {
            MPI_Waitall(4, rq, sts);
            check_status(&sts[0], prev, t0, c);
            check_status(&sts[1], next, t1, c);
        } else {
            MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        }
        verify(rb[0], c, prev, t0);
        verify(rb[1], c, next, t1);
    }

    /* C */
    for (int k = 0; k < 3; k++) {
        fill(sb[k], k + 1, r, 30 + k);
        MPI_Irecv(rb[k], k + 1, MPI_INT, prev, 30 + k, w, &rq[k]);
    }
    for (int k = 0; k < 3; k++) MPI_Isend(sb[k], k + 1, MPI_INT, next, 30 + k, w, &rq[3 + k]);
    {
        int seen = 0;
        for (int k = 0; k < 3; k++) {
            int idx = -1;
            MPI_Waitany(3, rq, &idx, &st);
            CHECK(idx >= 0 && idx < 3 && !(seen & (1 << idx)), "waitany index %d", idx);
            if (idx >= 0 && idx < 3) {
                seen |= 1 << idx;
                check_status(&st, prev, 30 + idx, idx + 1);
                verify(rb[idx], idx + 1, prev, 30 + idx);
            }
        }
    }
    MPI_Waitall(3, &rq[3], MPI_STATUSES_IGNORE);

    /* D */
    for (int k = 0; k < 2; k++) {
        fill(sb[k], 2, r, 40 + k);
        MPI_Irecv(rb[k], 2, MPI_INT, prev, 40 + k, w, &rq[k]);
    }
    for (int k = 0; k < 2; k++) MPI_Isend(sb[k], 2, MPI_INT, next, 40 + k, w, &rq[2 + k]);
    {
        int done = 0, idx[2];
        while (done < 2) {
            int out = -1;
            MPI_Waitsome(2, rq, &out, idx, sts);
            CHECK(out >= 1 && out <= 2 - done, "waitsome outcount %d", out);
            for (int j = 0; j < out && j < 2; j++) {
                check_status(&sts[j], prev, 40 + idx[j], 2);
                verify(rb[idx[j]], 2, prev, 40 + idx[j]);
            }
            done += out > 0 ? out : 2;
        }
    }
    MPI_Waitall(2, &rq[2], sts);

    /* E */
    {
        int flag = -1;
        fill(sb[0], 5, r, 50);
        MPI_Irecv(rb[0], 5, MPI_INT, prev, 50, w, &rq[0]);
        MPI_Test(&rq[0], &flag, &st);
        CHECK(flag == 0, "first test flag %d", flag);
        MPI_Barrier(w);
        MPI_Send(sb[0], 5, MPI_INT, next, 50, w);
        do {
            MPI_Test(&rq[0], &flag, &st);
        } while (!flag);
        check_status(&st, prev, 50, 5);
        verify(rb[0], 5, prev, 50);
    }

    /* F */
    {
        int flag = 0;
        fill(sb[0], 6, r, 60);
        MPI_Irecv(rb[0], 6, MPI_INT, prev, 60, w, &rq[0]);
        MPI_Isend(sb[0], 6, MPI_INT, next, 60, w, &rq[1]);
        do {
            MPI_Testall(2, rq, &flag, sts);
        } while (!flag);
        check_status(&sts[0], prev, 60, 6);
        verify(rb[0], 6, prev, 60);
    }

    /* G */
    for (int k = 0; k < 2; k++) {
        fill(sb[k], 1, r, 70 + k);
        MPI_Irecv(rb[k], 1, MPI_INT, prev, 70 + k, w, &rq[k]);
    }
    for (int k = 0; k < 2; k++) MPI_Isend(sb[k], 1, MPI_INT, next, 70 + k, w, &rq[2 + k]);
    {
        int done = 0;
        while (done < 2) {
            int idx = -1, flag = 0;
            MPI_Testany(2, rq, &idx, &flag, &st);
            if (flag) {
                CHECK(idx >= 0 && idx < 2, "testany index %d", idx);
                if (idx < 0 || idx >= 2) break;
                check_status(&st, prev, 70 + idx, 1);
                verify(rb[idx], 1, prev, 70 + idx);
                done++;
            }
        }
    }
    MPI_Waitall(2, &rq[2], MPI_STATUSES_IGNORE);

    /* H */
    for (int k = 0; k < 2; k++) {
        fill(sb[k], 2, r, 80 + k);
        MPI_Irecv(rb[k], 2, MPI_INT, prev, 80 + k, w, &rq[k]);
    }
    for (int k = 0; k < 2; k++) MPI_Isend(sb[k], 2, MPI_INT, next, 80 + k, w, &rq[2 + k]);
    {
        int done = 0, idx[2];
        while (done < 2) {
            int out = -1;
            MPI_Testsome(2, rq, &out, idx, sts);
            CHECK(out >= 0 && out <= 2 - done, "testsome outcount %d", out);
            if (out < 0 || out > 2) break;
            for (int j = 0; j < out; j++) {
                check_status(&sts[j], prev, 80 + idx[j], 2);
                verify(rb[idx[j]], 2, prev, 80 + idx[j]);
            }
            done += out;
        }
    }
    MPI_Waitall(2, &rq[2], MPI_STATUSES_IGNORE);

    /* I */
    {
        MPI_Request p[2];
        MPI_Recv_init(rb[0], 5, MPI_INT, prev, 90, w, &p[0]);
        MPI_Send_init(sb[0], 5, MPI_INT, next, 90, w, &p[1]);
        for (int it = 0; it < 5; it++) {
            fill(sb[0], 5, r, 90);
            sb[0][0] += it; /* varies per round */
            if (it < 3) {
                MPI_Start(&p[0]);
                MPI_Start(&p[1]);
                MPI_Wait(&p[0], &st);
                MPI_Wait(&p[1], MPI_STATUS_IGNORE);
                check_status(&st, prev, 90, 5);
            } else {
                MPI_Startall(2, p);
                MPI_Waitall(2, p, sts);
                check_status(&sts[0], prev, 90, 5);
            }
            CHECK(p[0] != MPI_REQUEST_NULL && p[1] != MPI_REQUEST_NULL, "persistent request freed");
            rb[0][0] -= it;
            verify(rb[0], 5, prev, 90);
        }
        MPI_Request_free(&p[0]);
        MPI_Request_free(&p[1]);
    }

    /* J */
    {
        fill(sb[0], 3, r, 100 + r);
        MPI_Irecv(rb[0], 16, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &rq[0]);
        MPI_Isend(sb[0], 3, MPI_INT, next, 100 + r, w, &rq[1]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        verify(rb[0], 3, prev, 100 + prev);
        MPI_Barrier(w);
    }

    /* K */
    {
        int flag = 0;
        fill(sb[0], 7, r, 110);
        MPI_Isend(sb[0], 7, MPI_INT, next, 110, w, &rq[1]);
        do {
            MPI_Iprobe(MPI_ANY_SOURCE, 110, w, &flag, &st);
        } while (!flag);
        check_status(&st, prev, 110, 7);
        MPI_Recv(rb[0], 7, MPI_INT, st.MPI_SOURCE, 110, w, &st);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        verify(rb[0], 7, prev, 110);
    }

    /* L */
    {
        MPI_Message msg;
        int c = -1;
        fill(sb[0], 9, r, 120);
        MPI_Isend(sb[0], 9, MPI_INT, next, 120, w, &rq[1]);
        MPI_Mprobe(prev, 120, w, &msg, &st);
        MPI_Get_count(&st, MPI_INT, &c);
        CHECK(c == 9, "mprobe count %d", c);
        MPI_Mrecv(rb[0], c, MPI_INT, &msg, &st);
        check_status(&st, prev, 120, 9);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        verify(rb[0], 9, prev, 120);
    }

    /* M */
    {
        MPI_Message msg;
        int flag = 0;
        fill(sb[0], 11, r, 130);
        MPI_Isend(sb[0], 11, MPI_INT, next, 130, w, &rq[1]);
        do {
            MPI_Improbe(MPI_ANY_SOURCE, 130, w, &flag, &msg, &st);
        } while (!flag);
        MPI_Imrecv(rb[0], 11, MPI_INT, &msg, &rq[0]);
        MPI_Wait(&rq[0], &st);
        check_status(&st, prev, 130, 11);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        verify(rb[0], 11, prev, 130);
    }

    long local[2] = {checksum, errors}, total[2] = {0, 0};
    MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, w);
    if (rank == 0) {
        printf("p2p_nonblocking: size=%d checksum=%ld errors=%ld\n", n, total[0], total[1]);
        fflush(stdout);
    }
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
