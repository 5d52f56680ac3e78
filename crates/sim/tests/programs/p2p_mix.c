/* Point-to-point patterns for differential tests of the simulator against SimGrid:
 * ping-pong over a range of sizes (eager and rendezvous), a ring of Isend/Irecv/Waitall,
 * a deterministic pseudo-random exchange pattern with blocking and non-blocking calls, and
 * simultaneous transfers that contend for links. No computation, so SimGrid's traces are
 * deterministic. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

static unsigned lcg(unsigned *s) { *s = *s * 1103515245u + 12345u; return (*s >> 16) & 0x7fff; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int max = 4 << 20;
    char *a = calloc(max, 1), *b = calloc(max, 1);
    MPI_Request req[64];

    /* Ping-pong 0 <-> size-1 over sizes 1 B .. 4 MiB. */
    for (int s = 1; s <= max; s *= 8) {
        if (rank == 0) {
            MPI_Send(a, s, MPI_CHAR, size - 1, 1, MPI_COMM_WORLD);
            MPI_Recv(b, s, MPI_CHAR, size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == size - 1) {
            MPI_Recv(b, s, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(a, s, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    /* Ring: everyone sends to the right and receives from the left, two sizes. */
    for (int s = 1000; s <= 1000000; s *= 1000) {
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        MPI_Irecv(b, s, MPI_CHAR, left, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(a, s, MPI_CHAR, right, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    /* Pseudo-random pairs: in each round a permutation pairs ranks; sizes vary. */
    unsigned seed = 42;
    for (int round = 0; round < 12; round++) {
        int shift = 1 + lcg(&seed) % (size - 1);
        int s = 1 + (lcg(&seed) * 97) % 300000;
        int to = (rank + shift) % size, from = (rank + size - shift) % size;
        if (round % 3 == 0) {
            MPI_Sendrecv(a, s, MPI_CHAR, to, 3, b, s, MPI_CHAR, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Irecv(b, s, MPI_CHAR, from, 4, MPI_COMM_WORLD, &req[0]);
            MPI_Send(a, s, MPI_CHAR, to, 4, MPI_COMM_WORLD);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        }
    }
    /* Contention: every rank sends 1 MB to rank 0 at once. */
    if (rank == 0) {
        for (int i = 1; i < size && i < 64; i++) MPI_Irecv(b, 1000000, MPI_CHAR, i, 5, MPI_COMM_WORLD, &req[i - 1]);
        MPI_Waitall(size - 1 < 64 ? size - 1 : 63, req, MPI_STATUSES_IGNORE);
    } else if (rank < 64) {
        MPI_Send(a, 1000000, MPI_CHAR, 0, 5, MPI_COMM_WORLD);
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
