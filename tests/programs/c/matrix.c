/* Known traffic for the communication matrix (crates/cli/tests/matrix.rs computes the
 * expected rank x rank bytes from this description: keep them in step). Any n >= 2 ranks.
 *
 *   Send 1000 bytes r -> (r+1) % n, Recv from (r-1+n) % n                      (point-to-point)
 *   Comm_split(color r % 2, key -r): members in decreasing world rank order
 *   on the half: Bcast 100 bytes from comm rank 0 (the largest world rank of the half)
 *   on the half: Gather 8 bytes per rank to comm rank 1 (when the half has two members)
 *   on world:    Alltoallv sendcounts[j] = (r+1)*(j+1) ints
 *   on world:    Allreduce 4 ints (16 bytes) SUM
 *   on world:    Barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char out[1000] = {0}, in[1000];
    MPI_Send(out, 1000, MPI_CHAR, (r + 1) % n, 7, MPI_COMM_WORLD);
    MPI_Recv(in, 1000, MPI_CHAR, (r - 1 + n) % n, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, -r, &half);
    int hr, hn;
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    char b[100] = {0};
    MPI_Bcast(b, 100, MPI_CHAR, 0, half);
    if (hn > 1) {
        double g = r, all[64];
        MPI_Gather(&g, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 1, half);
    }

    int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int));
    int *rc = malloc(n * sizeof(int)), *rd = malloc(n * sizeof(int));
    int st = 0, rt = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = (r + 1) * (j + 1);
        rc[j] = (j + 1) * (r + 1);
        sd[j] = st;
        rd[j] = rt;
        st += sc[j];
        rt += rc[j];
    }
    int *sb = calloc(st, sizeof(int)), *rb = calloc(rt, sizeof(int));
    MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD);
    int v[4] = {r, r, r, r}, s[4];
    MPI_Allreduce(v, s, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_free(&half);
    if (r == 0) printf("matrix: n=%d sum=%d\n", n, s[0]);
    free(sc); free(sd); free(rc); free(rd); free(sb); free(rb);
    MPI_Finalize();
    return 0;
}
