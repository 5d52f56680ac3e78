/* A small MPI program for the SimGrid TI export test: point-to-point (blocking, non-blocking,
 * wildcard receives), a few collectives and compute loops between them. Run with 4 ranks. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void compute(long n) {
  double x = 0.0;
  for (long i = 0; i < n; i++) x += (double)i * 0.5;
  sink = x;
}

int main(int argc, char **argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    fprintf(stderr, "ti_sample needs at least 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double *a = calloc(4096, sizeof(double));
  double *b = calloc(4096, sizeof(double));
  MPI_Request rq[4];
  MPI_Status st;

  compute(2000000);
  /* Blocking exchange between pairs, with a wildcard receive. */
  if (rank % 2 == 0 && rank + 1 < size) {
    MPI_Send(a, 1024, MPI_DOUBLE, rank + 1, 10, MPI_COMM_WORLD);
    MPI_Recv(b, 1024, MPI_DOUBLE, MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &st);
  } else if (rank % 2 == 1) {
    MPI_Recv(b, 1024, MPI_DOUBLE, rank - 1, 10, MPI_COMM_WORLD, &st);
    MPI_Send(a, 1024, MPI_DOUBLE, rank - 1, 11, MPI_COMM_WORLD);
  }
  compute(1000000);
  /* Ring with non-blocking calls, completed one by one then all at once. */
  for (int it = 0; it < 3; it++) {
    MPI_Irecv(b, 512, MPI_DOUBLE, left, 20 + it, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(a, 512, MPI_DOUBLE, right, 20 + it, MPI_COMM_WORLD, &rq[1]);
    compute(300000);
    if (it == 0) {
      MPI_Wait(&rq[0], &st);
      MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    } else {
      MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    }
  }
  /* A wildcard non-blocking receive, polled with MPI_Test. */
  MPI_Irecv(b, 64, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[0]);
  MPI_Send(a, 64, MPI_INT, right, 30, MPI_COMM_WORLD);
  int flag = 0;
  while (!flag) {
    MPI_Test(&rq[0], &flag, &st);
    compute(10000);
  }
  MPI_Sendrecv(a, 100, MPI_DOUBLE, right, 40, b, 100, MPI_DOUBLE, left, 40, MPI_COMM_WORLD, &st);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Bcast(a, 2048, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  compute(500000);
  MPI_Allreduce(a, b, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Reduce(a, b, 128, MPI_INT, MPI_MAX, size - 1, MPI_COMM_WORLD);
  MPI_Allgather(a, 16, MPI_DOUBLE, b, 16, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Alltoall(a, 8, MPI_DOUBLE, b, 8, MPI_DOUBLE, MPI_COMM_WORLD);
  MPI_Gather(a, 32, MPI_DOUBLE, b, 32, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD);
  double t = MPI_Wtime();
  compute(1000000);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("ti_sample done (%d ranks, %.3f s)\n", size, MPI_Wtime() - t);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
