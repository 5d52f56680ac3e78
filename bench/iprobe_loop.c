/* Recorder overhead benchmark: a tight MPI_Iprobe loop ([Polivanov 2012]: HPL polls with Iprobe
 * thousands of times per message).
 *
 *   iprobe_loop CALLS REPS
 *
 * Runs REPS repetitions of CALLS MPI_Iprobe calls and prints one line per repetition:
 * "rep <i> <ns per call>". Run it with and without the recorder and compare medians.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long calls = argc > 1 ? atol(argv[1]) : 1000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    int flag;
    MPI_Status st;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        for (long i = 0; i < calls; i++) MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st);
        double t1 = MPI_Wtime();
        if (rank == 0) printf("rep %d %.3f\n", r, (t1 - t0) / calls * 1e9);
    }
    MPI_Finalize();
    return 0;
}
