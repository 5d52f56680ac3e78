/* Communicators other than MPI_COMM_WORLD: ranks used on them must be recorded as world
 * ranks. For the recorder's end-to-end tests (crates/cli/tests/record_c.rs mirrors this
 * program's logic: keep them in step). Needs an even number of ranks n >= 4; r is the
 * world rank, c = r % 2 its colour, h = r / 2 its rank in its half, m = n / 2.
 *
 *   1 Comm_split(WORLD, c, r) -> half (world ranks c, c+2, c+4, ...).
 *     On half: h == 0 Send 3 ints tag 5 to half rank (h+1)%m then Recv from (h-1+m)%m; the
 *     others Recv first. Bcast 4 ints root 1. Reduce 1 int SUM root 0. Allreduce 1 int SUM.
 *   2 Comm_dup(WORLD) -> dup. Sendrecv 2 ints to (r+1)%n tag 7, from (r-1+n)%n tag 7.
 *     Allreduce 1 int SUM. Comm_free(dup).
 *   3 Comm_group(WORLD) -> wg; Group_incl(wg, n-1, {n-1, n-2, ..., 1}) -> g;
 *     Comm_create(WORLD, g) -> rev (MPI_COMM_NULL on world rank 0). On rev (v = n-1-r):
 *     Sendrecv 1 int to (v+1)%(n-1) tag 8, from (v-1+n-1)%(n-1) tag 8; Bcast 2 ints root 0;
 *     Gather 1 int / 1 int root 2. Comm_free(rev). Group_free(g); Group_free(wg).
 *   4 Intercomm_create(half, 0, WORLD, remote leader 1-c, tag 77) -> inter. Even side: Send
 *     4 ints tag 9 to remote rank h, then Recv 4 ints tag 10 from remote rank h; odd side
 *     the reverse. Bcast 3 ints from the even group's rank 0 (root MPI_ROOT on world 0,
 *     MPI_PROC_NULL on the other evens, 0 on the odds).
 *     Intercomm_merge(inter, high = c) -> merged (world ranks 0, 2, 4, ..., 1, 3, ...).
 *     On merged (rank q): Sendrecv 1 int to (q+1)%n tag 11, from (q-1+n)%n tag 11;
 *     Allreduce 1 int SUM. Comm_free(merged); Comm_free(inter).
 *   5 Cart_create(WORLD, 1 dim of n, not periodic, no reorder) -> cart; Cart_shift(cart, 0,
 *     1) -> (src, dst) = (r-1 or PROC_NULL, r+1 or PROC_NULL); Sendrecv 2 ints to dst tag
 *     12, from src tag 12. Comm_free(cart).
 *   6 Comm_free(half).
 *   end: Allreduce of {checksum, errors} (2 longs, SUM) on WORLD; rank 0 prints.
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

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = size, r = rank, c = r % 2, h = r / 2, m = n / 2;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Status st;
    int a[16], b[16];
    if (n < 4 || n % 2 != 0) {
        if (r == 0) printf("comms: needs an even number of ranks >= 4\n");
        MPI_Finalize();
        return 0;
    }

    /* 1: split */
    MPI_Comm half;
    MPI_Comm_split(w, c, r, &half);
    {
        int hr, hn;
        MPI_Comm_rank(half, &hr);
        MPI_Comm_size(half, &hn);
        CHECK(hr == h && hn == m, "half rank %d size %d", hr, hn);
        int hnext = (h + 1) % m, hprev = (h - 1 + m) % m;
        for (int i = 0; i < 3; i++) a[i] = 10 * r + i;
        if (h != 0) MPI_Recv(b, 3, MPI_INT, hprev, 5, half, &st);
        MPI_Send(a, 3, MPI_INT, hnext, 5, half);
        if (h == 0) MPI_Recv(b, 3, MPI_INT, hprev, 5, half, &st);
        CHECK(st.MPI_SOURCE == hprev, "half source %d", st.MPI_SOURCE);
        for (int i = 0; i < 3; i++) {
            CHECK(b[i] == 10 * (2 * hprev + c) + i, "half ring %d", i);
            checksum += b[i];
        }
        for (int i = 0; i < 4; i++) a[i] = (h == 1) ? 40 + i + c : 0;
        MPI_Bcast(a, 4, MPI_INT, 1, half);
        for (int i = 0; i < 4; i++) {
            CHECK(a[i] == 40 + i + c, "half bcast %d", i);
            checksum += a[i];
        }
        a[0] = r;
        b[0] = -1;
        MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, 0, half);
        if (h == 0) {
            CHECK(b[0] == m * (m - 1) + c * m, "half reduce %d", b[0]);
            checksum += b[0];
        }
        MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, half);
        CHECK(b[0] == m * (m - 1) + c * m, "half allreduce %d", b[0]);
        checksum += b[0];
    }

    /* 2: dup */
    {
        MPI_Comm dup;
        MPI_Comm_dup(w, &dup);
        int next = (r + 1) % n, prev = (r - 1 + n) % n;
        a[0] = r;
        a[1] = 2 * r;
        MPI_Sendrecv(a, 2, MPI_INT, next, 7, b, 2, MPI_INT, prev, 7, dup, &st);
        CHECK(b[0] == prev && b[1] == 2 * prev && st.MPI_SOURCE == prev, "dup sendrecv");
        checksum += b[0] + b[1];
        MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, dup);
        CHECK(b[0] == n * (n - 1) / 2, "dup allreduce");
        checksum += b[0];
        MPI_Comm_free(&dup);
    }

    /* 3: create from a reversed group without rank 0 */
    {
        MPI_Group wg, g;
        MPI_Comm rev;
        int *ranks = malloc((n - 1) * sizeof(int));
        for (int i = 0; i < n - 1; i++) ranks[i] = n - 1 - i;
        MPI_Comm_group(w, &wg);
        MPI_Group_incl(wg, n - 1, ranks, &g);
        MPI_Comm_create(w, g, &rev);
        if (r == 0) {
            CHECK(rev == MPI_COMM_NULL, "rank 0 in rev");
        } else {
            int v = n - 1 - r, k = n - 1, vr;
            MPI_Comm_rank(rev, &vr);
            CHECK(vr == v, "rev rank %d", vr);
            int to = (v + 1) % k, from = (v - 1 + k) % k;
            a[0] = 5 * r;
            MPI_Sendrecv(a, 1, MPI_INT, to, 8, b, 1, MPI_INT, from, 8, rev, &st);
            CHECK(b[0] == 5 * (n - 1 - from), "rev sendrecv %d", b[0]);
            checksum += b[0];
            a[0] = (v == 0) ? 77 : 0;
            a[1] = (v == 0) ? 78 : 0;
            MPI_Bcast(a, 2, MPI_INT, 0, rev);
            CHECK(a[0] == 77 && a[1] == 78, "rev bcast");
            checksum += a[0] + a[1];
            a[0] = r;
            MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, 2, rev);
            if (v == 2)
                for (int i = 0; i < k; i++) {
                    CHECK(b[i] == n - 1 - i, "rev gather %d", i);
                    checksum += b[i];
                }
            MPI_Comm_free(&rev);
        }
        MPI_Group_free(&g);
        MPI_Group_free(&wg);
        free(ranks);
    }

    /* 4: intercommunicator between the halves */
    {
        MPI_Comm inter, merged;
        MPI_Intercomm_create(half, 0, w, 1 - c, 77, &inter);
        int rs;
        MPI_Comm_remote_size(inter, &rs);
        CHECK(rs == m, "remote size %d", rs);
        for (int i = 0; i < 4; i++) a[i] = 100 * r + i;
        if (c == 0) {
            MPI_Send(a, 4, MPI_INT, h, 9, inter);
            MPI_Recv(b, 4, MPI_INT, h, 10, inter, &st);
        } else {
            MPI_Recv(b, 4, MPI_INT, h, 9, inter, &st);
            MPI_Send(a, 4, MPI_INT, h, 10, inter);
        }
        int partner = 2 * h + (1 - c);
        CHECK(st.MPI_SOURCE == h, "inter source %d", st.MPI_SOURCE);
        for (int i = 0; i < 4; i++) {
            CHECK(b[i] == 100 * partner + i, "inter value %d", i);
            checksum += b[i];
        }
        int root = (c == 1) ? 0 : (h == 0 ? MPI_ROOT : MPI_PROC_NULL);
        for (int i = 0; i < 3; i++) a[i] = (r == 0) ? 90 + i : 0;
        MPI_Bcast(a, 3, MPI_INT, root, inter);
        if (c == 1)
            for (int i = 0; i < 3; i++) {
                CHECK(a[i] == 90 + i, "inter bcast %d", i);
                checksum += a[i];
            }

        MPI_Intercomm_merge(inter, c, &merged);
        int q, qn;
        MPI_Comm_rank(merged, &q);
        MPI_Comm_size(merged, &qn);
        CHECK(q == c * m + h && qn == n, "merged rank %d", q);
        int to = (q + 1) % n, from = (q - 1 + n) % n;
        a[0] = r;
        MPI_Sendrecv(a, 1, MPI_INT, to, 11, b, 1, MPI_INT, from, 11, merged, &st);
        int from_world = (from < m) ? 2 * from : 2 * (from - m) + 1;
        CHECK(b[0] == from_world, "merged sendrecv %d", b[0]);
        checksum += b[0];
        MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, merged);
        CHECK(b[0] == n * (n - 1) / 2, "merged allreduce");
        checksum += b[0];
        MPI_Comm_free(&merged);
        MPI_Comm_free(&inter);
    }

    /* 5: Cartesian topology */
    {
        MPI_Comm cart;
        int dims[1] = {n}, periods[1] = {0}, src, dst;
        MPI_Cart_create(w, 1, dims, periods, 0, &cart);
        MPI_Cart_shift(cart, 0, 1, &src, &dst);
        CHECK(src == (r == 0 ? MPI_PROC_NULL : r - 1), "cart src %d", src);
        CHECK(dst == (r == n - 1 ? MPI_PROC_NULL : r + 1), "cart dst %d", dst);
        a[0] = 3 * r;
        a[1] = 3 * r + 1;
        b[0] = b[1] = -5;
        MPI_Sendrecv(a, 2, MPI_INT, dst, 12, b, 2, MPI_INT, src, 12, cart, &st);
        if (r > 0) {
            CHECK(b[0] == 3 * (r - 1) && b[1] == 3 * (r - 1) + 1, "cart values");
            checksum += b[0] + b[1];
        } else {
            CHECK(st.MPI_SOURCE == MPI_PROC_NULL && b[0] == -5, "cart proc null");
        }
        MPI_Comm_free(&cart);
    }

    MPI_Comm_free(&half);

    long local[2] = {checksum, errors}, total[2] = {0, 0};
    MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, w);
    if (rank == 0) {
        printf("comms: size=%d checksum=%ld errors=%ld\n", n, total[0], total[1]);
        fflush(stdout);
    }
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
