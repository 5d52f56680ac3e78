/* Sampling, filter, window and plugin test program (any even number of ranks; tests use 2).
 *
 *   probe_loop ITERATIONS SENDS [PAUSE_MS [PAUSED_SENDS]]
 *
 * Even rank r pairs with r + 1. In order:
 *   1. SENDS times: MPI_Send of i+1 ints, tag 5, even -> odd (MPI_Recv on the odd rank);
 *   2. ITERATIONS times: MPI_Iprobe(MPI_ANY_SOURCE, tag 99) on every rank (never matches);
 *   3. sleep PAUSE_MS (default 0), then MPI_Barrier;
 *   4. SENDS times: MPI_Send of i+1 ints, tag 6, even -> odd;
 *   5. MPI_Bcast (4 ints, root 0), MPI_Allreduce (1 long, MPI_SUM);
 *   6. MPI_Pcontrol(0); PAUSED_SENDS (default 3) sends of 1 int, tag 7, even -> odd;
 *      MPI_Barrier; MPI_Pcontrol(1);
 *   7. MPI_Reduce of the checksum to rank 0, which prints one line; MPI_Finalize.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void pause_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iterations = argc > 1 ? atol(argv[1]) : 1000;
    int sends = argc > 2 ? atoi(argv[2]) : 5;
    long pause = argc > 3 ? atol(argv[3]) : 0;
    int paused_sends = argc > 4 ? atoi(argv[4]) : 3;
    int partner = rank % 2 == 0 ? rank + 1 : rank - 1;
    int have_partner = partner < size;
    long sum = 0;
    int buf[64];

    for (int phase_tag = 5; phase_tag <= 6; phase_tag++) {
        if (phase_tag == 6) {
            if (pause > 0)
                pause_ms(pause);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        for (int i = 0; i < sends && have_partner; i++) {
            int n = i % 64 + 1;
            if (rank % 2 == 0) {
                for (int j = 0; j < n; j++)
                    buf[j] = rank * 1000 + i * 10 + j;
                MPI_Send(buf, n, MPI_INT, partner, phase_tag, MPI_COMM_WORLD);
            } else {
                MPI_Recv(buf, n, MPI_INT, partner, phase_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (int j = 0; j < n; j++)
                    sum += buf[j];
            }
        }
        if (phase_tag == 5) {
            long flags = 0;
            for (long k = 0; k < iterations; k++) {
                int flag = 0;
                MPI_Status st;
                MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, &st);
                flags += flag;
            }
            sum += flags * 1000000;
        }
    }

    int b[4] = {0, 0, 0, 0};
    if (rank == 0)
        for (int j = 0; j < 4; j++)
            b[j] = 7 * j + 1;
    MPI_Bcast(b, 4, MPI_INT, 0, MPI_COMM_WORLD);
    long one = rank + 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    sum += b[0] + b[1] + b[2] + b[3] + all;

    MPI_Pcontrol(0);
    for (int i = 0; i < paused_sends && have_partner; i++) {
        if (rank % 2 == 0) {
            buf[0] = 40 + i;
            MPI_Send(buf, 1, MPI_INT, partner, 7, MPI_COMM_WORLD);
        } else {
            MPI_Recv(buf, 1, MPI_INT, partner, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sum += buf[0];
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);

    long total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks %d iterations %ld sends %d checksum %ld\n", size, iterations, sends, total);
    MPI_Finalize();
    return 0;
}
