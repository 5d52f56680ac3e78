/* What a large MPI_Alltoall costs the cores, against the wall time it takes
   (scripts/bench-netlab.sh; docs/BENCHMARKS.md, "An emulated cluster network").
   Usage: netlab-alltoall BYTES_PER_PEER ITERATIONS MODE
   MODE `wait`: ITERATIONS blocking MPI_Alltoall (the MPI library waits as it likes, which
   for Open MPI and MPICH is polling: a core per rank). MODE `sleep`: MPI_Ialltoall, then
   MPI_Test every 50 us with the core given up in between (nanosleep): the CPU the transfer
   itself needs, as a rank that computes meanwhile would see it.
   Per rank: wall time (MPI_Wtime) and user + system CPU time of the whole process, all its
   threads (getrusage) over the timed loop, after one untimed call. Rank 0 prints one line:
     bytes=<sent per rank> wall_s=<slowest rank> cpu_s=<mean over ranks> cpu_per_wall=<cpu/wall>
     ns_per_kib=<CPU ns per KiB sent, both sides' work> gbit_s=<per-rank send rate> */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_seconds(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec * 1e-6;
}

static void one(const char *s, char *r, int n, int sleeping) {
  if (!sleeping) {
    MPI_Alltoall(s, n, MPI_CHAR, r, n, MPI_CHAR, MPI_COMM_WORLD);
    return;
  }
  MPI_Request q;
  int done = 0;
  struct timespec pause = {0, 50000};
  MPI_Ialltoall(s, n, MPI_CHAR, r, n, MPI_CHAR, MPI_COMM_WORLD, &q);
  for (;;) {
    MPI_Test(&q, &done, MPI_STATUS_IGNORE);
    if (done) break;
    nanosleep(&pause, NULL);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (argc != 4 || atol(argv[1]) <= 0 || atol(argv[1]) > (1L << 30) || atoi(argv[2]) <= 0 ||
      (strcmp(argv[3], "wait") != 0 && strcmp(argv[3], "sleep") != 0)) {
    if (rank == 0) fprintf(stderr, "usage: netlab-alltoall BYTES_PER_PEER ITERATIONS wait|sleep\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int n = (int)atol(argv[1]), iters = atoi(argv[2]), sleeping = strcmp(argv[3], "sleep") == 0;
  char *s = malloc((size_t)n * np), *r = malloc((size_t)n * np);
  if (!s || !r) {
    fprintf(stderr, "netlab-alltoall: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(s, rank + 1, (size_t)n * np);
  memset(r, 0, (size_t)n * np);
  one(s, r, n, sleeping);
  MPI_Barrier(MPI_COMM_WORLD);
  double c0 = cpu_seconds(), t0 = MPI_Wtime();
  for (int i = 0; i < iters; i++) one(s, r, n, sleeping);
  double wall = MPI_Wtime() - t0, cpu = cpu_seconds() - c0;
  for (int p = 0; p < np; p++)
    if (r[(size_t)p * n] != p + 1 || r[(size_t)p * n + n - 1] != p + 1) {
      fprintf(stderr, "netlab-alltoall: rank %d received wrong data from %d\n", rank, p);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  double maxwall, sumcpu;
  MPI_Reduce(&wall, &maxwall, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&cpu, &sumcpu, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double sent = (double)n * (np - 1) * iters; /* per rank */
    double meancpu = sumcpu / np;
    printf("bytes=%.0f wall_s=%.6f cpu_s=%.6f cpu_per_wall=%.3f ns_per_kib=%.1f gbit_s=%.3f\n", sent,
           maxwall, meancpu, meancpu / maxwall, sumcpu / (sent * np / 1024.0) * 1e9,
           sent * 8 / maxwall / 1e9);
  }
  free(s);
  free(r);
  MPI_Finalize();
  return 0;
}
