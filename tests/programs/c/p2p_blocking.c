/* Blocking point-to-point calls with known peers, tags and sizes, for the recorder's
 * end-to-end tests (crates/cli/tests/record_c.rs mirrors this program's logic: keep them in
 * step).
 *
 * Phases (n = size, r = rank, next = (r+1)%n, prev = (r-1+n)%n):
 *   1 ring (n >= 2): Send 10*(r+1) ints, tag 100+r, to next; Recv (count 100) from prev,
 *     tag 100+prev. Rank 0 sends first, the others receive first.
 *   2 pairs (2k, 2k+1): even Ssend 5 doubles tag 200 then Recv 5 doubles tag 201; odd the
 *     reverse. A last unpaired rank does nothing.
 *   3 Buffer_attach, Bsend 8 ints tag 300 to next, Recv 8 ints from prev, Buffer_detach.
 *   4 Irecv 6 ints from prev tag 400, Barrier, Rsend 6 ints to next tag 400, Wait(status).
 *   5 Sendrecv: 4 ints to next tag 500+r, 4 ints from prev tag 500+prev.
 *   6 Sendrecv_replace: 3 longs to prev tag 600, from next tag 600.
 *   7 wildcards: ranks != 0 Send 2*r ints tag 700+r to 0; rank 0 loops n-1 times Probe(ANY,
 *     ANY) + Get_count(MPI_INT) + Recv(count 64, st.MPI_SOURCE, ANY_TAG). Barrier. Ranks != 0
 *     Send r ints tag 750+r to 0; rank 0 loops n-1 times Recv(count 64, ANY, ANY).
 *   8 PROC_NULL: Send 5 ints tag 800, Recv 5 ints tag 800 (status: PROC_NULL, ANY_TAG, 0).
 *   9 zero bytes (n >= 2): ring as in 1 with 0 ints tag 900, Recv count 10.
 *  10 MPI_Type_contiguous(3, MPI_DOUBLE): Sendrecv 2 elements to next / from prev, tag 1000.
 *  end: Allreduce of {checksum, errors} (2 longs, SUM); rank 0 prints.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;
static long checksum = 0;
static long errors = 0;

#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            printf("rank %d ERROR line %d: ", rank, __LINE__); \
            printf(__VA_ARGS__);                          \
            printf("\n");                                 \
            fflush(stdout);                               \
            errors++;                                     \
        }                                                 \
    } while (0)

static void check_status(MPI_Status *st, MPI_Datatype t, int src, int tag, int count) {
    int c = -1;
    MPI_Get_count(st, t, &c);
    CHECK(st->MPI_SOURCE == src, "source %d, expected %d", st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "tag %d, expected %d", st->MPI_TAG, tag);
    CHECK(c == count, "count %d, expected %d", c, count);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = size, r = rank;
    const int next = (r + 1) % n, prev = (r - 1 + n) % n;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Status st;
    int ibuf[128], rbuf[128];
    double dbuf[16], drbuf[16];

    /* 1: ring. */
    if (n >= 2) {
        int cnt = 10 * (r + 1);
        for (int i = 0; i < cnt; i++) ibuf[i] = r * 1000 + i;
        if (r != 0) {
            MPI_Recv(rbuf, 100, MPI_INT, prev, 100 + prev, w, &st);
            check_status(&st, MPI_INT, prev, 100 + prev, 10 * (prev + 1));
        }
        MPI_Send(ibuf, cnt, MPI_INT, next, 100 + r, w);
        if (r == 0) {
            MPI_Recv(rbuf, 100, MPI_INT, prev, 100 + prev, w, &st);
            check_status(&st, MPI_INT, prev, 100 + prev, 10 * (prev + 1));
        }
        for (int i = 0; i < 10 * (prev + 1); i++) {
            CHECK(rbuf[i] == prev * 1000 + i, "ring value %d", i);
            checksum += rbuf[i];
        }
    }

    /* 2: Ssend pairs. */
    {
        int partner = (r % 2 == 0) ? r + 1 : r - 1;
        if (partner < n) {
            for (int i = 0; i < 5; i++) dbuf[i] = r + 0.5 * i;
            if (r % 2 == 0) {
                MPI_Ssend(dbuf, 5, MPI_DOUBLE, partner, 200, w);
                MPI_Recv(drbuf, 5, MPI_DOUBLE, partner, 201, w, &st);
                check_status(&st, MPI_DOUBLE, partner, 201, 5);
            } else {
                MPI_Recv(drbuf, 5, MPI_DOUBLE, partner, 200, w, &st);
                check_status(&st, MPI_DOUBLE, partner, 200, 5);
                MPI_Ssend(dbuf, 5, MPI_DOUBLE, partner, 201, w);
            }
            for (int i = 0; i < 5; i++) {
                CHECK(drbuf[i] == partner + 0.5 * i, "ssend value %d", i);
                checksum += (long)(2 * drbuf[i]);
            }
        }
    }

    /* 3: Bsend. */
    {
        int bsize = 8 * (int)sizeof(int) + MPI_BSEND_OVERHEAD + 64;
        char *bbuf = malloc(bsize);
        void *det;
        int detsize;
        MPI_Buffer_attach(bbuf, bsize);
        for (int i = 0; i < 8; i++) ibuf[i] = 3 * r + i;
        MPI_Bsend(ibuf, 8, MPI_INT, next, 300, w);
        MPI_Recv(rbuf, 8, MPI_INT, prev, 300, w, &st);
        check_status(&st, MPI_INT, prev, 300, 8);
        for (int i = 0; i < 8; i++) {
            CHECK(rbuf[i] == 3 * prev + i, "bsend value %d", i);
            checksum += rbuf[i];
        }
        MPI_Buffer_detach(&det, &detsize);
        CHECK(det == bbuf && detsize == bsize, "detach");
        free(bbuf);
    }

    /* 4: Rsend after a pre-posted Irecv. */
    {
        MPI_Request req;
        MPI_Irecv(rbuf, 6, MPI_INT, prev, 400, w, &req);
        MPI_Barrier(w);
        for (int i = 0; i < 6; i++) ibuf[i] = 40 * r + i;
        MPI_Rsend(ibuf, 6, MPI_INT, next, 400, w);
        MPI_Wait(&req, &st);
        check_status(&st, MPI_INT, prev, 400, 6);
        for (int i = 0; i < 6; i++) {
            CHECK(rbuf[i] == 40 * prev + i, "rsend value %d", i);
            checksum += rbuf[i];
        }
    }

    /* 5: Sendrecv. */
    {
        for (int i = 0; i < 4; i++) ibuf[i] = 50 * r + i;
        MPI_Sendrecv(ibuf, 4, MPI_INT, next, 500 + r, rbuf, 4, MPI_INT, prev, 500 + prev, w, &st);
        check_status(&st, MPI_INT, prev, 500 + prev, 4);
        for (int i = 0; i < 4; i++) {
            CHECK(rbuf[i] == 50 * prev + i, "sendrecv value %d", i);
            checksum += rbuf[i];
        }
    }

    /* 6: Sendrecv_replace. */
    {
        long lb[3];
        for (int i = 0; i < 3; i++) lb[i] = 60L * r + i;
        MPI_Sendrecv_replace(lb, 3, MPI_LONG, prev, 600, next, 600, w, &st);
        check_status(&st, MPI_LONG, next, 600, 3);
        for (int i = 0; i < 3; i++) {
            CHECK(lb[i] == 60L * next + i, "replace value %d", i);
            checksum += lb[i];
        }
    }

    /* 7: wildcards. */
    {
        if (r != 0) {
            for (int i = 0; i < 2 * r; i++) ibuf[i] = 70 * r + i;
            MPI_Send(ibuf, 2 * r, MPI_INT, 0, 700 + r, w);
        } else {
            for (int k = 0; k < n - 1; k++) {
                int c = -1;
                MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st);
                MPI_Get_count(&st, MPI_INT, &c);
                int s = st.MPI_SOURCE;
                CHECK(s >= 1 && s < n && st.MPI_TAG == 700 + s && c == 2 * s, "probe %d %d %d", s, st.MPI_TAG, c);
                MPI_Recv(rbuf, 64, MPI_INT, s, MPI_ANY_TAG, w, &st);
                check_status(&st, MPI_INT, s, 700 + s, 2 * s);
                for (int i = 0; i < 2 * s; i++) {
                    CHECK(rbuf[i] == 70 * s + i, "wildcard value %d", i);
                    checksum += rbuf[i];
                }
            }
        }
        MPI_Barrier(w);
        if (r != 0) {
            for (int i = 0; i < r; i++) ibuf[i] = 75 * r + i;
            MPI_Send(ibuf, r, MPI_INT, 0, 750 + r, w);
        } else {
            for (int k = 0; k < n - 1; k++) {
                MPI_Recv(rbuf, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, w, &st);
                int s = st.MPI_SOURCE;
                check_status(&st, MPI_INT, s, 750 + s, s);
                CHECK(s >= 1 && s < n, "any source %d", s);
                for (int i = 0; i < s; i++) {
                    CHECK(rbuf[i] == 75 * s + i, "any value %d", i);
                    checksum += rbuf[i];
                }
            }
        }
    }

    /* 8: PROC_NULL. */
    {
        MPI_Send(ibuf, 5, MPI_INT, MPI_PROC_NULL, 800, w);
        MPI_Recv(rbuf, 5, MPI_INT, MPI_PROC_NULL, 800, w, &st);
        check_status(&st, MPI_INT, MPI_PROC_NULL, MPI_ANY_TAG, 0);
    }

    /* 9: zero-byte ring. */
    if (n >= 2) {
        if (r != 0) {
            MPI_Recv(rbuf, 10, MPI_INT, prev, 900, w, &st);
            check_status(&st, MPI_INT, prev, 900, 0);
        }
        MPI_Send(ibuf, 0, MPI_INT, next, 900, w);
        if (r == 0) {
            MPI_Recv(rbuf, 10, MPI_INT, prev, 900, w, &st);
            check_status(&st, MPI_INT, prev, 900, 0);
        }
        checksum += 1;
    }

    /* 10: derived datatype of 24 bytes. */
    {
        MPI_Datatype t3;
        MPI_Type_contiguous(3, MPI_DOUBLE, &t3);
        MPI_Type_commit(&t3);
        for (int i = 0; i < 6; i++) dbuf[i] = 100.0 * r + i;
        MPI_Sendrecv(dbuf, 2, t3, next, 1000, drbuf, 2, t3, prev, 1000, w, &st);
        check_status(&st, t3, prev, 1000, 2);
        for (int i = 0; i < 6; i++) {
            CHECK(drbuf[i] == 100.0 * prev + i, "t3 value %d", i);
            checksum += (long)drbuf[i];
        }
        MPI_Type_free(&t3);
    }

    long local[2] = {checksum, errors}, total[2] = {0, 0};
    MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, w);
    if (rank == 0) {
        printf("p2p_blocking: size=%d checksum=%ld errors=%ld\n", n, total[0], total[1]);
        fflush(stdout);
    }
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
