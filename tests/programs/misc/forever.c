/* Runs until killed: MPI_Iprobe and a small MPI_Sendrecv with the partner rank (rank ^ 1),
 * forever, printing nothing. Run on an even number of ranks.
 *
 *   forever PIDFILE_PREFIX
 *
 * Each rank writes its process id to PIDFILE_PREFIX.<rank> once MPI is initialized and the
 * first exchange is done (so the trace has started), for the test to kill it.
 */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int partner = rank ^ 1;
    if (partner >= size)
        partner = MPI_PROC_NULL;
    int out = rank, in = -1, flag = 0;
    for (unsigned long i = 0;; i++) {
        MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        out = (int)i;
        MPI_Sendrecv(&out, 1, MPI_INT, partner, 3, &in, 1, MPI_INT, partner, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        if (i == 0 && argc > 1) {
            char path[4096];
            snprintf(path, sizeof path, "%s.%d", argv[1], rank);
            char tmp[4200];
            snprintf(tmp, sizeof tmp, "%s.tmp", path);
            FILE *f = fopen(tmp, "w");
            if (f) {
                fprintf(f, "%d\n", (int)getpid());
                fclose(f);
                rename(tmp, path);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
