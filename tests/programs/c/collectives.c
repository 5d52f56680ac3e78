/* Every blocking collective, MPI_IN_PLACE variants, a few non-blocking collectives and a
 * user-defined reduction on MPI_COMM_WORLD, with known counts and roots, for the recorder's
 * end-to-end tests (crates/cli/tests/record_c.rs mirrors this program's logic: keep them in
 * step). Works for any number of ranks n; r is the rank.
 *
 *   Barrier
 *   Bcast 10 ints, root 0
 *   Reduce 5 doubles SUM, root 1 % n
 *   Allreduce 3 ints MAX
 *   Gather 2 ints / 2 ints, root n-1
 *   Gatherv r+1 ints, recvcounts[i] = i+1, root 0
 *   Scatter 3 ints / 3 ints, root n/2
 *   Scatterv sendcounts[i] = 2i+1 ints, recvcount 2r+1, root 0
 *   Allgather 2 ints / 2 ints
 *   Allgatherv r+1 doubles, recvcounts[i] = i+1
 *   Alltoall 2 ints / 2 ints
 *   Alltoallv sendcounts[j] = (r+j)%3+1 ints, recvcounts[j] = (j+r)%3+1 ints
 *   Alltoallw 1 element to each j of type T(j), 1 element from each i of type T(r), where
 *     T(x) = MPI_INT for even x, MPI_DOUBLE for odd x
 *   Reduce_scatter recvcounts[i] = i+1 ints SUM
 *   Reduce_scatter_block 2 ints SUM
 *   Scan 2 longs SUM
 *   Exscan 2 ints SUM
 *   Allreduce MPI_IN_PLACE 4 ints SUM
 *   Allgather MPI_IN_PLACE (sendcount 0, MPI_DATATYPE_NULL), 3 ints
 *   Op_create(absmax, commute 1); Allreduce 2 ints with it; Op_free
 *   Ibarrier; Wait
 *   Ibcast 6 ints root 1 % n; Wait
 *   Iallreduce 2 doubles SUM; Ialltoall 1 int / 1 int; Waitall(2)
 *   Igatherv r+1 ints, recvcounts[i] = i+1, root 0; Wait
 *   end: Allreduce of {checksum, errors} (2 longs, SUM); rank 0 prints.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Largest absolute value, keeping its sign. */
static void absmax(void *in, void *inout, int *len, MPI_Datatype *t) {
    (void)t;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        int x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        if (x > y) b[i] = a[i];
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = size, r = rank;
    MPI_Comm w = MPI_COMM_WORLD;
    int *ia = calloc(4 * n * n + 64, sizeof(int));
    int *ib = calloc(4 * n * n + 64, sizeof(int));
    double *da = calloc(4 * n * n + 64, sizeof(double));
    double *db = calloc(4 * n * n + 64, sizeof(double));
    int *cnt = calloc(n, sizeof(int)), *dsp = calloc(n, sizeof(int));
    int *cnt2 = calloc(n, sizeof(int)), *dsp2 = calloc(n, sizeof(int));
    MPI_Datatype *st = calloc(n, sizeof(MPI_Datatype)), *rt = calloc(n, sizeof(MPI_Datatype));

    MPI_Barrier(w);

    /* Bcast */
    for (int i = 0; i < 10; i++) ia[i] = (r == 0) ? 7 * i + 1 : -1;
    MPI_Bcast(ia, 10, MPI_INT, 0, w);
    for (int i = 0; i < 10; i++) {
        CHECK(ia[i] == 7 * i + 1, "bcast %d", i);
        checksum += ia[i];
    }

    /* Reduce */
    {
        int root = 1 % n;
        for (int i = 0; i < 5; i++) da[i] = r + i;
        MPI_Reduce(da, db, 5, MPI_DOUBLE, MPI_SUM, root, w);
        if (r == root)
            for (int i = 0; i < 5; i++) {
                double e = n * (n - 1) / 2.0 + n * i;
                CHECK(db[i] == e, "reduce %d", i);
                checksum += (long)db[i];
            }
    }

    /* Allreduce MAX */
    for (int i = 0; i < 3; i++) ia[i] = (r * 13 + i * 5) % 17;
    MPI_Allreduce(ia, ib, 3, MPI_INT, MPI_MAX, w);
    for (int i = 0; i < 3; i++) {
        int e = 0;
        for (int k = 0; k < n; k++)
            if ((k * 13 + i * 5) % 17 > e) e = (k * 13 + i * 5) % 17;
        CHECK(ib[i] == e, "allreduce max %d", i);
        checksum += ib[i];
    }

    /* Gather */
    {
        int root = n - 1;
        ia[0] = r;
        ia[1] = 100 + r;
        MPI_Gather(ia, 2, MPI_INT, ib, 2, MPI_INT, root, w);
        if (r == root)
            for (int k = 0; k < n; k++) {
                CHECK(ib[2 * k] == k && ib[2 * k + 1] == 100 + k, "gather %d", k);
                checksum += ib[2 * k] + ib[2 * k + 1];
            }
    }

    /* Gatherv */
    {
        for (int i = 0, d = 0; i < n; i++) {
            cnt[i] = i + 1;
            dsp[i] = d;
            d += i + 1;
        }
        for (int i = 0; i <= r; i++) ia[i] = 10 * r + i;
        MPI_Gatherv(ia, r + 1, MPI_INT, ib, cnt, dsp, MPI_INT, 0, w);
        if (r == 0)
            for (int k = 0; k < n; k++)
                for (int i = 0; i <= k; i++) {
                    CHECK(ib[dsp[k] + i] == 10 * k + i, "gatherv %d %d", k, i);
                    checksum += ib[dsp[k] + i];
                }
    }

    /* Scatter */
    {
        int root = n / 2;
        if (r == root)
            for (int i = 0; i < 3 * n; i++) ia[i] = 3 * i + 2;
        MPI_Scatter(ia, 3, MPI_INT, ib, 3, MPI_INT, root, w);
        for (int i = 0; i < 3; i++) {
            CHECK(ib[i] == 3 * (3 * r + i) + 2, "scatter %d", i);
            checksum += ib[i];
        }
    }

    /* Scatterv */
    {
        for (int i = 0, d = 0; i < n; i++) {
            cnt[i] = 2 * i + 1;
            dsp[i] = d;
            d += 2 * i + 1;
        }
        if (r == 0)
            for (int i = 0; i < n * n; i++) ia[i] = i * i % 101;
        MPI_Scatterv(ia, cnt, dsp, MPI_INT, ib, 2 * r + 1, MPI_INT, 0, w);
        for (int i = 0; i < 2 * r + 1; i++) {
            int g = r * r + i; /* displacement of rank r is r*r */
            CHECK(ib[i] == g * g % 101, "scatterv %d", i);
            checksum += ib[i];
        }
    }

    /* Allgather */
    ia[0] = 3 * r;
    ia[1] = 3 * r + 1;
    MPI_Allgather(ia, 2, MPI_INT, ib, 2, MPI_INT, w);
    for (int k = 0; k < n; k++) {
        CHECK(ib[2 * k] == 3 * k && ib[2 * k + 1] == 3 * k + 1, "allgather %d", k);
        checksum += ib[2 * k] + ib[2 * k + 1];
    }

    /* Allgatherv */
    {
        for (int i = 0, d = 0; i < n; i++) {
            cnt[i] = i + 1;
            dsp[i] = d;
            d += i + 1;
        }
        for (int i = 0; i <= r; i++) da[i] = 0.5 * r + i;
        MPI_Allgatherv(da, r + 1, MPI_DOUBLE, db, cnt, dsp, MPI_DOUBLE, w);
        for (int k = 0; k < n; k++)
            for (int i = 0; i <= k; i++) {
                CHECK(db[dsp[k] + i] == 0.5 * k + i, "allgatherv %d %d", k, i);
                checksum += (long)(2 * db[dsp[k] + i]);
            }
    }

    /* Alltoall */
    for (int j = 0; j < n; j++) {
        ia[2 * j] = 1000 * r + j;
        ia[2 * j + 1] = -(1000 * r + j);
    }
    MPI_Alltoall(ia, 2, MPI_INT, ib, 2, MPI_INT, w);
    for (int k = 0; k < n; k++) {
        CHECK(ib[2 * k] == 1000 * k + r && ib[2 * k + 1] == -(1000 * k + r), "alltoall %d", k);
        checksum += ib[2 * k] + 3 * ib[2 * k + 1];
    }

    /* Alltoallv */
    {
        for (int j = 0, d = 0, e = 0; j < n; j++) {
            cnt[j] = (r + j) % 3 + 1;
            dsp[j] = d;
            d += cnt[j];
            cnt2[j] = (j + r) % 3 + 1;
            dsp2[j] = e;
            e += cnt2[j];
            for (int i = 0; i < cnt[j]; i++) ia[dsp[j] + i] = 100 * r + 10 * j + i;
        }
        MPI_Alltoallv(ia, cnt, dsp, MPI_INT, ib, cnt2, dsp2, MPI_INT, w);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < cnt2[k]; i++) {
                CHECK(ib[dsp2[k] + i] == 100 * k + 10 * r + i, "alltoallv %d %d", k, i);
                checksum += ib[dsp2[k] + i];
            }
    }

    /* Alltoallw: slots of 8 bytes in da (sent) and db (received). */
    {
        for (int j = 0; j < n; j++) {
            cnt[j] = 1;
            dsp[j] = 8 * j;
            st[j] = (j % 2 == 0) ? MPI_INT : MPI_DOUBLE;
            cnt2[j] = 1;
            dsp2[j] = 8 * j;
            rt[j] = (r % 2 == 0) ? MPI_INT : MPI_DOUBLE;
            char *slot = (char *)da + 8 * j;
            if (j % 2 == 0)
                *(int *)slot = 50 * r + j;
            else
                *(double *)slot = 50.0 * r + j;
        }
        MPI_Alltoallw(da, cnt, dsp, st, db, cnt2, dsp2, rt, w);
        for (int k = 0; k < n; k++) {
            char *slot = (char *)db + 8 * k;
            long v = (r % 2 == 0) ? *(int *)slot : (long)*(double *)slot;
            CHECK(v == 50 * k + r, "alltoallw %d: %ld", k, v);
            checksum += v;
        }
    }

    /* Reduce_scatter */
    {
        int tot = n * (n + 1) / 2;
        for (int i = 0; i < n; i++) cnt[i] = i + 1;
        for (int i = 0; i < tot; i++) ia[i] = r + i;
        MPI_Reduce_scatter(ia, ib, cnt, MPI_INT, MPI_SUM, w);
        int off = r * (r + 1) / 2;
        for (int i = 0; i <= r; i++) {
            CHECK(ib[i] == n * (n - 1) / 2 + n * (off + i), "reduce_scatter %d", i);
            checksum += ib[i];
        }
    }

    /* Reduce_scatter_block */
    for (int i = 0; i < 2 * n; i++) ia[i] = i - r;
    MPI_Reduce_scatter_block(ia, ib, 2, MPI_INT, MPI_SUM, w);
    for (int i = 0; i < 2; i++) {
        CHECK(ib[i] == n * (2 * r + i) - n * (n - 1) / 2, "reduce_scatter_block %d", i);
        checksum += ib[i];
    }

    /* Scan, Exscan */
    {
        long la[2] = {r + 1, 2 * r}, lb[2] = {0, 0};
        MPI_Scan(la, lb, 2, MPI_LONG, MPI_SUM, w);
        CHECK(lb[0] == (long)(r + 1) * (r + 2) / 2 && lb[1] == (long)r * (r + 1), "scan");
        checksum += lb[0] + lb[1];
        ia[0] = r + 1;
        ia[1] = 1;
        ib[0] = ib[1] = -7;
        MPI_Exscan(ia, ib, 2, MPI_INT, MPI_SUM, w);
        if (r > 0) {
            CHECK(ib[0] == r * (r + 1) / 2 && ib[1] == r, "exscan");
            checksum += ib[0] + ib[1];
        }
    }

    /* In place */
    for (int i = 0; i < 4; i++) ib[i] = r * i;
    MPI_Allreduce(MPI_IN_PLACE, ib, 4, MPI_INT, MPI_SUM, w);
    for (int i = 0; i < 4; i++) {
        CHECK(ib[i] == i * n * (n - 1) / 2, "allreduce in place %d", i);
        checksum += ib[i];
    }
    for (int i = 0; i < 3 * n; i++) ib[i] = -1;
    for (int i = 0; i < 3; i++) ib[3 * r + i] = 20 * r + i;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ib, 3, MPI_INT, w);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < 3; i++) {
            CHECK(ib[3 * k + i] == 20 * k + i, "allgather in place %d %d", k, i);
            checksum += ib[3 * k + i];
        }

    /* User op */
    {
        MPI_Op op;
        MPI_Op_create(absmax, 1, &op);
        ia[0] = (r % 2 == 0) ? -r : r;
        ia[1] = 5 - r;
        MPI_Allreduce(ia, ib, 2, MPI_INT, op, w);
        int m = n - 1;
        CHECK(ib[0] == ((m % 2 == 0) ? -m : m), "user op 0: %d", ib[0]);
        CHECK(ib[1] == ((5 >= m - 5) ? 5 : 5 - m), "user op 1: %d", ib[1]);
        checksum += ib[0] + ib[1];
        MPI_Op_free(&op);
    }

    /* Non-blocking */
    {
        MPI_Request rq[2];
        MPI_Ibarrier(w, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);

        int root = 1 % n;
        for (int i = 0; i < 6; i++) ia[i] = (r == root) ? 11 * i : 0;
        MPI_Ibcast(ia, 6, MPI_INT, root, w, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        for (int i = 0; i < 6; i++) {
            CHECK(ia[i] == 11 * i, "ibcast %d", i);
            checksum += ia[i];
        }

        da[0] = r;
        da[1] = 1.0;
        for (int j = 0; j < n; j++) ia[j] = 7 * r + j;
        MPI_Iallreduce(da, db, 2, MPI_DOUBLE, MPI_SUM, w, &rq[0]);
        MPI_Ialltoall(ia, 1, MPI_INT, ib, 1, MPI_INT, w, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(db[0] == n * (n - 1) / 2.0 && db[1] == n, "iallreduce");
        checksum += (long)db[0] + (long)db[1];
        for (int k = 0; k < n; k++) {
            CHECK(ib[k] == 7 * k + r, "ialltoall %d", k);
            checksum += ib[k];
        }

        for (int i = 0, d = 0; i < n; i++) {
            cnt[i] = i + 1;
            dsp[i] = d;
            d += i + 1;
        }
        for (int i = 0; i <= r; i++) ia[i] = 30 * r + i;
        MPI_Igatherv(ia, r + 1, MPI_INT, ib, cnt, dsp, MPI_INT, 0, w, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        if (r == 0)
            for (int k = 0; k < n; k++)
                for (int i = 0; i <= k; i++) {
                    CHECK(ib[dsp[k] + i] == 30 * k + i, "igatherv %d %d", k, i);
                    checksum += ib[dsp[k] + i];
                }
    }

    long local[2] = {checksum, errors}, total[2] = {0, 0};
    MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, w);
    if (rank == 0) {
        printf("collectives: size=%d checksum=%ld errors=%ld\n", n, total[0], total[1]);
        fflush(stdout);
    }
    free(ia);
    free(ib);
    free(da);
    free(db);
    free(cnt);
    free(dsp);
    free(cnt2);
    free(dsp2);
    free(st);
    free(rt);
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
