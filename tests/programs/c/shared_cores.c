/* Ranks that compute a fixed amount of CPU work between collectives: ITERS iterations of
 * WORK_MS milliseconds of this thread's CPU time (measured with CLOCK_THREAD_CPUTIME_ID,
 * so the work is the same whatever the load), each followed by an MPI_Allreduce. Run with
 * more ranks than cores, each burst's wall time includes its wait for a core; its CPU time
 * does not (the end-to-end test of `mpiscope trace --cpu-time`).
 * Usage: shared_cores [ITERS] [WORK_MS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int iters = argc > 1 ? atoi(argv[1]) : 40;
  double work = (argc > 2 ? atof(argv[2]) : 10.0) * 1e-3;
  volatile double x = 1.0;
  double sum = 0.0;
  for (int i = 0; i < iters; i++) {
    double end = cpu_s() + work;
    while (cpu_s() < end) {
      for (int k = 0; k < 1000; k++) x = x * 1.0000001 + 1e-9;
    }
    double v = x, s;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    sum += s;
  }
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) printf("shared_cores: %d iterations, sum %g\n", iters, sum);
  MPI_Finalize();
  return 0;
}
