/* One collective, named by argv[1], at sizes that cross the selectors' thresholds, for
 * differential tests of the simulator against SimGrid (one trace per collective, so that a
 * collective SimGrid 3.32 cannot replay does not hide the others). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* "NAME_large" runs only the sizes from 20000 doubles up (SimGrid 3.32 aborts on some
     * small ones). */
    char what[64] = "barrier";
    if (argc > 1) strncpy(what, argv[1], sizeof what - 1);
    size_t wl = strlen(what);
    int large_only = wl > 6 && !strcmp(what + wl - 6, "_large");
    if (large_only) what[wl - 6] = 0;
    const int counts[] = {1, 100, 2000, 20000, 300000};
    const int maxc = 300000;
    double *a = calloc((size_t)maxc * size, sizeof(double));
    double *b = calloc((size_t)maxc * size, sizeof(double));
    int *cnt = malloc(sizeof(int) * size), *disp = malloc(sizeof(int) * size);
    for (int i = 0; i < 5; i++) {
        int c = counts[i];
        if (large_only && c < 20000) continue;
        /* Per-peer blocks stay below 2.4 MB in the all-to-all patterns. */
        int per = strcmp(what, "bcast") && strcmp(what, "reduce") && strcmp(what, "allreduce") &&
                          strcmp(what, "reduce_scatter") && strcmp(what, "scan")
                      ? c / 4 + 1
                      : c;
        if (per > 20000 && per != c) continue;
        for (int p = 0; p < size; p++) {
            cnt[p] = per / (1 + (p + rank) % 3) + 1; /* uneven, as v-collectives are used */
            disp[p] = p * per;
        }
        if (!strcmp(what, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
        else if (!strcmp(what, "bcast")) MPI_Bcast(a, c, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "reduce")) MPI_Reduce(a, b, c, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "allreduce")) MPI_Allreduce(a, b, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else if (!strcmp(what, "alltoall"))
            MPI_Alltoall(a, per, MPI_DOUBLE, b, per, MPI_DOUBLE, MPI_COMM_WORLD);
        else if (!strcmp(what, "allgather"))
            MPI_Allgather(a, per, MPI_DOUBLE, b, per, MPI_DOUBLE, MPI_COMM_WORLD);
        else if (!strcmp(what, "gather"))
            MPI_Gather(a, per, MPI_DOUBLE, b, per, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "scatter"))
            MPI_Scatter(a, per, MPI_DOUBLE, b, per, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else if (!strcmp(what, "allgatherv")) {
            int mine = per / (1 + rank % 3) + 1;
            for (int p = 0; p < size; p++) cnt[p] = per / (1 + p % 3) + 1;
            MPI_Allgatherv(a, mine, MPI_DOUBLE, b, cnt, disp, MPI_DOUBLE, MPI_COMM_WORLD);
        } else if (!strcmp(what, "alltoallv")) {
            /* rank r sends cnt_r[p] to p; p must expect the same: use a symmetric count. */
            for (int p = 0; p < size; p++) cnt[p] = per / (1 + (p + rank) % 3) + 1;
            MPI_Alltoallv(a, cnt, disp, MPI_DOUBLE, b, cnt, disp, MPI_DOUBLE, MPI_COMM_WORLD);
        } else if (!strcmp(what, "reduce_scatter")) {
            for (int p = 0; p < size; p++) cnt[p] = c / size + 1;
            MPI_Reduce_scatter(a, b, cnt, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        } else if (!strcmp(what, "scan")) MPI_Scan(a, b, c, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else {
            if (rank == 0) fprintf(stderr, "coll_one: unknown collective %s\n", what);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(a);
    free(b);
    free(cnt);
    free(disp);
    MPI_Finalize();
    return 0;
}
