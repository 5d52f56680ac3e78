/* MPI from several threads (MPI_THREAD_MULTIPLE), for the recorder's end-to-end tests
 * (crates/cli/tests/record_c.rs mirrors this program's logic: keep them in step).
 *
 * MPI_Init_thread(MPI_THREAD_MULTIPLE); without it, rank 0 prints a note and every rank
 * finalizes and exits 0. Otherwise NTHREADS pthreads per rank; thread t does ITERS x
 * Sendrecv of t+1 ints to (r+1)%n with tag 10+t, from (r-1+n)%n with tag 10+t. The main
 * thread makes no MPI call while they run; after joining them: Allreduce of {checksum,
 * errors} (2 longs, SUM); rank 0 prints.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 3
#define ITERS 20

static int rank, size;
static long sums[NTHREADS];
static long errs[NTHREADS];

static void *worker(void *arg) {
    int t = (int)(long)arg;
    int next = (rank + 1) % size, prev = (rank - 1 + size) % size;
    int a[NTHREADS + 1], b[NTHREADS + 1];
    for (int it = 0; it < ITERS; it++) {
        MPI_Status st;
        for (int i = 0; i <= t; i++) a[i] = 1000 * rank + 100 * t + it + i;
        MPI_Sendrecv(a, t + 1, MPI_INT, next, 10 + t, b, t + 1, MPI_INT, prev, 10 + t, MPI_COMM_WORLD, &st);
        if (st.MPI_SOURCE != prev || st.MPI_TAG != 10 + t) errs[t]++;
        for (int i = 0; i <= t; i++) {
            if (b[i] != 1000 * prev + 100 * t + it + i) errs[t]++;
            sums[t] += b[i];
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided = -1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", provided);
        MPI_Finalize();
        return 0;
    }
    pthread_t th[NTHREADS];
    for (long t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    long local[2] = {0, 0}, total[2] = {0, 0};
    for (int t = 0; t < NTHREADS; t++) {
        local[0] += sums[t];
        local[1] += errs[t];
        if (errs[t]) printf("rank %d ERROR thread %d: %ld errors\n", rank, t, errs[t]);
    }
    MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("threads: size=%d threads=%d checksum=%ld errors=%ld\n", size, NTHREADS, total[0], total[1]);
        fflush(stdout);
    }
    MPI_Finalize();
    return total[1] == 0 ? 0 : 1;
}
