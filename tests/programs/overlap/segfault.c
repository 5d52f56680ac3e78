/* A genuine segfault after an overlapped Alltoall must still kill the program with SIGSEGV. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long cnt = 65536;
    int *s = calloc(size * cnt, sizeof(int)), *r = calloc(size * cnt, sizeof(int));
    MPI_Alltoall(s, cnt, MPI_INT, r, cnt, MPI_INT, MPI_COMM_WORLD);
    volatile int *p = (volatile int *)(argc > 1 ? atol(argv[1]) : 0);
    *p = r[0] + 1; /* NULL */
    printf("ALIVE\n");
    MPI_Finalize();
    return 0;
}
