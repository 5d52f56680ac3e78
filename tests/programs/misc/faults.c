/* Programs that end badly, for the fault suite.
 *
 *   faults MODE ITERATIONS [PIDFILE_PREFIX]
 *
 * Every mode first runs ITERATIONS rounds of work (an MPI_Sendrecv with each neighbour on a
 * ring and an MPI_Allreduce), then, once every rank wrote its process id to
 * PIDFILE_PREFIX.<rank> (so a test knows the work is recorded and where to send signals):
 *
 *   deadlock  rank 0 receives from rank 1 (tag 91), rank 1 from rank 0 (tag 92): a wait-for
 *             cycle; other ranks wait in MPI_Barrier. Never ends.
 *   abort     rank 1 calls MPI_Abort(MPI_COMM_WORLD, 3); the others wait in MPI_Barrier.
 *   catch     SIGTERM is caught by the program (sigaction after MPI_Init, as codes that
 *             checkpoint do): the ranks go on with MPI_Allreduce until one of them got it,
 *             then stop cleanly, print "stopped cleanly" and finalize.
 *   steady    prints a checksum of the work and finalizes (for file-system faults: the output
 *             must not change under tracing).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got_term = 0;

static void on_term(int sig) {
    (void)sig;
    got_term = 1;
}

static void write_pid(const char *prefix, int rank) {
    if (!prefix)
        return;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s.%d", prefix, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        rename(tmp, path);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0)
            fprintf(stderr, "usage: faults deadlock|abort|catch|steady ITERATIONS [PIDFILE]\n");
        MPI_Finalize();
        return 2;
    }
    const char *mode = argv[1];
    long iters = atol(argv[2]);
    const char *prefix = argc > 3 ? argv[3] : NULL;
    if (strcmp(mode, "catch") == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double sum = 0;
    for (long i = 0; i < iters; i++) {
        double out = rank + i, in = 0, tot = 0;
        MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, 1, &in, 1, MPI_DOUBLE, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Allreduce(&in, &tot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        sum += tot;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    write_pid(prefix, rank);
    int x = 0;
    if (strcmp(mode, "deadlock") == 0) {
        if (rank == 0)
            MPI_Recv(&x, 1, MPI_INT, 1, 91, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else if (rank == 1)
            MPI_Recv(&x, 1, MPI_INT, 0, 92, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "abort") == 0) {
        if (rank == 1) {
            sleep(2);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(mode, "catch") == 0) {
        long rounds = 0;
        for (;;) {
            int mine = got_term, any = 0;
            MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            rounds++;
            if (any)
                break;
            usleep(1000);
        }
        if (rank == 0)
            printf("stopped cleanly after %s\n", rounds > 0 ? "SIGTERM" : "?");
    } else if (rank == 0) {
        printf("checksum %.1f\n", sum);
    }
    MPI_Finalize();
    return 0;
}
